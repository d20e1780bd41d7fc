"""benchmarks/timing_stability.py: its pairs by the task's time, and its verdict."""

from __future__ import annotations

from pathlib import Path

import benchmark_scripts

ROOT = Path(__file__).resolve().parent.parent
stability = benchmark_scripts.load("timing_stability")


def test_pairs_are_told_apart_by_the_decade_of_the_task_and_by_their_marks():
    first = {"a": (2e-6, False), "b": (3e-6, True), "c": (4e-4, False), "gone": (1.0, False)}
    second = {"a": (2.02e-6, False), "b": (3.6e-6, False), "c": (5e-4, False)}
    pairs = sorted(stability.pairs_of(first, second))
    assert [(seconds, round(deviation, 6), marked) for seconds, deviation, marked in pairs] == \
        [(2e-6, 0.01, False), (3e-6, 0.2, True), (4e-4, 0.25, False)]
    version = stability.Version("v", ROOT, pairs=pairs)
    assert version.by_duration() == ["    tasks of 1-10 µs: 2 pairs, within 5% 50.0%, marked 50.0%",
                                     "    tasks of 0.1-1 ms: 1 pair, within 5% 0.0%, marked 0.0%"]


def test_decades_are_named_in_the_unit_that_reads_best():
    assert [stability._decade(e) for e in (-7, -6, -5, -4, -3, 0)] == \
        ["0.1-1 µs", "1-10 µs", "10-100 µs", "0.1-1 ms", "1-10 ms", "1-10 s"]


def test_the_verdict_is_worse_only_when_the_rounds_say_so():
    ahead = stability.Version("ref", ROOT, shares=[0.95, 0.94, 0.96, 0.93, 0.95, 0.94, 0.96, 0.95])
    behind = stability.Version("tree", ROOT, shares=[0.85, 0.86, 0.84, 0.88, 0.83, 0.87, 0.85, 0.86])
    mixed = stability.Version("tree", ROOT, shares=[0.97, 0.90, 0.96, 0.91, 0.95, 0.92, 0.97, 0.93])
    assert stability.verdict(behind, ahead).endswith(": worse")
    assert stability.verdict(mixed, ahead).endswith(": no worse")
