"""benchmarks/pause_pace.py: calls after a pause over the pace before it."""

from __future__ import annotations

import re
import sys
import time

import benchmark_scripts

pace = benchmark_scripts.load("pause_pace")


def test_a_task_that_slows_after_a_pause_shows_it_at_its_first_calls_only():
    state = {"since": time.perf_counter()}

    def task():  # 2 ms a call; twice that while the last call ended over 20 ms ago
        idle = time.perf_counter() - state["since"]
        time.sleep(0.004 if idle > 0.02 else 0.002)
        state["since"] = time.perf_counter()

    after = pace.after_pause(task, 0.05, True, rounds=5)
    assert len(after) == pace.AFTER
    assert 1.5 < after[0] < 3.0 and all(0.7 < r < 1.4 for r in after[1:])
    steady = pace.after_pause(task, 0.0, False, rounds=5)
    assert all(0.7 < r < 1.4 for r in steady)


def test_the_last_line_names_the_copy_after_the_longest_pause(monkeypatch, capsys):
    monkeypatch.setattr(pace, "PAUSES", (0.0, 0.002))
    monkeypatch.setattr(sys, "argv", ["pause_pace.py", "--rounds", "1"])
    pace.main()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"copy after 2 ms asleep: first call \d+\.\d\d, fourth \d+\.\d\d times its pace", last)
