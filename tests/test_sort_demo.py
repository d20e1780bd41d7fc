"""The demo's timings (benchmarks/sort_demo.py): every column timed in each
round, the rounds taking them in turn, a column's time the median of its."""

from __future__ import annotations

import benchmark_scripts
import numpy as np

demo = benchmark_scripts.load("sort_demo")


class Recorder:
    """A built sort and its module whose calls say which column they are
    timed for, and take a long time in one round of one column."""

    def __init__(self, width: int):
        self.width = width
        self.order: list[str] = []

    def variables_sort(self, keys):
        return {"n": len(keys), "width": self.width}

    def sort(self, keys):
        self.order.append("dispatched")

    def radix_sort(self, keys, bpd):
        self.order.append("radix")

    def counting_sort(self, keys):
        self.order.append("counting")

    def narrow_sort(self, keys):
        self.order.append("narrow")


def test_each_round_times_every_column_once_starting_one_further_along(monkeypatch):
    recorder = Recorder(width=20)
    monkeypatch.setattr(demo.np, "sort", lambda keys: recorder.order.append("numpy"))
    monkeypatch.setattr(demo, "repeat_count", lambda call: 1)
    timings = demo.measure(recorder, recorder, np.arange(10), radix_bpd=8)
    names = ["dispatched", "radix", "narrow", "numpy", "counting"]
    assert set(timings) == set(names)
    rounds = [recorder.order[k:k + len(names)] for k in range(0, len(recorder.order), len(names))]
    assert len(rounds) == demo.ROUNDS
    for turn, taken in enumerate(rounds):
        assert taken == names[turn % len(names):] + names[:turn % len(names)]


def test_a_slow_round_of_one_column_does_not_make_its_time(monkeypatch):
    recorder = Recorder(width=30)  # no counting sort past 24 bits
    monkeypatch.setattr(demo.np, "sort", lambda keys: None)
    monkeypatch.setattr(demo, "repeat_count", lambda call: 1)
    clock = iter(range(10_000))
    seconds = {name: 1.0 for name in ("dispatched", "radix", "narrow", "numpy")}

    def timed(call, number):
        before = len(recorder.order)
        call()
        name = recorder.order[-1] if len(recorder.order) > before else "numpy"
        return seconds[name] * (100.0 if name == "radix" and next(clock) == 0 else 1.0)

    monkeypatch.setattr(demo.timeit, "timeit", timed)
    timings = demo.measure(recorder, recorder, np.arange(10), radix_bpd=8)
    assert "counting" not in timings
    assert timings == {"dispatched": 1.0, "radix": 1.0, "narrow": 1.0, "numpy": 1.0}
