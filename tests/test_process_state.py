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
    rows = state.summary([timings(1.0, 0.01), timings(2.5, 0.03), timings(1.2, 0.02)], state.CASES)
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
    monkeypatch.setattr(state, "measure", lambda build, seed, cases: timings(next(scales), 0.004))
    monkeypatch.setattr(sys, "argv", ["process_state.py", "build/sort", "--processes", "3"])
    state.main()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"{state.label(state.CASES[0])}: max/min 2.00 over 3 processes, 0.4% within one"
    assert re.fullmatch(r".+: max/min \d+\.\d\d over \d+ processes, \d+\.\d% within one", last)


def test_cases_given_on_the_command_line_replace_the_stored_ones(monkeypatch, capsys):
    asked = []

    def measure(build, seed, cases):
        asked.append(cases)
        return [[1e-3 * seed, 1e-3 * seed] for _ in cases]

    monkeypatch.setattr(state, "measure", measure)
    monkeypatch.setattr(sys, "argv", ["process_state.py", "build/sort", "--processes", "2",
                                      "--cases", "1048576:22:11", "1048576:22"])
    state.main()
    assert asked == [[(1048576, 22, 11), (1048576, 22, None)]] * 2
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "radix_sort 1048576 keys of 22 bits, bpd 11: max/min 2.00 over 2 processes, 0.0% within one"


@pytest.mark.parametrize("text", ["1048576", "1048576:22:11:3", "a:22", "-5:22"])
def test_a_case_that_is_not_keys_bits_and_a_digit_width_is_refused(text):
    with pytest.raises(state.argparse.ArgumentTypeError, match="a case is KEYS:BITS:BPD or KEYS:BITS"):
        state.parse_case(text)


def test_a_child_is_given_the_cases_it_times(monkeypatch):
    ran = []

    class Said:
        stdout = "[[0.001, 0.001]]"

    monkeypatch.setattr(state.subprocess, "run", lambda command, **options: ran.append(command) or Said())
    assert state.measure("B", 3, [(1048576, 22, 11), (939, 25, None)]) == [[0.001, 0.001]]
    assert ran[0][-5:] == ["--child", "3", "--cases", "1048576:22:11", "939:25"]


def test_a_call_timed_back_to_back_is_its_time_per_call():
    seconds = state.seconds_per_call(lambda: time.sleep(0.001))
    assert 0.0009 < seconds < 0.01
