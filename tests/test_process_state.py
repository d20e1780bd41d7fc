"""benchmarks/process_state.py: one call's time over fresh processes and within one."""

from __future__ import annotations

import re
import sys
import time

import benchmark_scripts
import pytest

state = benchmark_scripts.load("process_state")


def timings(scale: float, drift: float) -> list[list[float]]:
    """A process's two timings of every case: 1 µs times ``scale`` (the first
    case only), the second timing ``drift`` apart."""
    rows = [[1e-6, 1e-6 * (1 + drift)] for _ in state.CASES]
    rows[0] = [1e-6 * scale, 1e-6 * scale * (1 + drift)]
    return rows


def test_the_summary_gives_each_case_s_range_over_processes_and_its_drift_within_one():
    rows = state.summary([timings(1.0, 0.01), timings(2.5, 0.03), timings(1.2, 0.02)])
    assert len(rows) == len(state.CASES)
    name, median, least, largest, within = rows[0]
    assert name == state.label(state.CASES[0])
    assert (median, least, largest) == pytest.approx((1.2e-6, 1e-6, 2.5e-6))
    assert within == pytest.approx(0.02)
    assert rows[1][2:4] == pytest.approx((1e-6, 1e-6))


def test_the_labels_name_the_kernel_and_its_digit_width():
    assert state.label((939, 25, 7)) == "radix_sort 939 keys of 25 bits, bpd 7"
    assert state.label((939, 25, None)) == "numpy.sort 939 keys of 25 bits"


def test_the_last_line_names_the_case_that_moved_most(monkeypatch, capsys):
    scales = iter([1.0, 2.0, 1.5])
    monkeypatch.setattr(state, "measure", lambda build, seed: timings(next(scales), 0.004))
    monkeypatch.setattr(sys, "argv", ["process_state.py", "build/sort", "--processes", "3"])
    state.main()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"{state.label(state.CASES[0])}: max/min 2.00 over 3 processes, 0.4% within one"
    assert re.fullmatch(r".+: max/min \d+\.\d\d over \d+ processes, \d+\.\d% within one", last)


def test_a_call_timed_back_to_back_is_its_time_per_call():
    seconds = state.seconds_per_call(lambda: time.sleep(0.001))
    assert 0.0009 < seconds < 0.01
