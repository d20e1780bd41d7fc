"""Watching the host's speed, so that timings are taken at its usual pace.

A shared machine can run the same code at two speeds for seconds at a time
(measured on the hosts hlc was developed on: a 4096-element NumPy sum took
1.8 µs or 3.0 µs, in spells of one to ten seconds, with the other tenants'
load).  The median of a sample's timings (thesis §3.4) rejects disturbances
shorter than a timing, not spells longer than a whole point: every timing
of the point is slow alike, and the sample lands off the model by the
spell's factor.  No yardstick can correct such a timing, because the spell
slows different code by different factors (1.2× to 1.7× measured), but a
yardstick can tell when a spell is on.

:class:`HostMeter` times a short fixed task, remembers the fastest reading
(the host's unhindered pace), and before each round of timings waits until
the host is back within a tolerance of it, or until its patience is spent:
a round waits at most ``patience`` seconds, and all waiting together at
most ``share`` of the time since the meter started, so a host that stays
slow costs a bounded part of the profiling time and no more.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy

#: A reading's slowdown is acceptable up to this factor over the fastest reading.
TOLERANCE = 0.10
#: Seconds one wait may last.
PATIENCE = 1.0
#: Waiting may take at most this share of the time since the meter started ...
SHARE = 0.25
#: ... plus this many seconds (so that the first rounds may wait too).
ALLOWANCE = 2.0


def _yardstick() -> Callable[[], float]:
    """Seconds of a short CPU-bound task: the least of three batches of twenty
    sums of 4096 doubles (about 40 µs each), so that one interrupt does not count."""
    values = numpy.random.default_rng(0).standard_normal(4096)
    counter = time.perf_counter

    def reading() -> float:
        least = float("inf")
        for _ in range(3):
            start = counter()
            for _ in range(20):
                values.sum()
            least = min(least, counter() - start)
        return least

    return reading


class HostMeter:
    """How much slower than its best the host runs now, and waiting until it is not."""

    def __init__(self, tolerance: float = TOLERANCE, patience: float = PATIENCE, share: float = SHARE,
                 allowance: float = ALLOWANCE, reading: Callable[[], float] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.tolerance = tolerance
        self.patience = patience
        self.share = share
        self.allowance = allowance
        self.reading = reading or _yardstick()
        self.clock = clock
        self.started = clock()
        self.best = float("inf")
        self.waited = 0.0  # seconds spent in settle() so far

    def slowdown(self) -> float:
        """The current reading over the fastest seen (1.0: the host's best pace)."""
        value = self.reading()
        self.best = min(self.best, value)
        return value / self.best if self.best > 0 else 1.0

    def steady(self, slowdown: float) -> bool:
        return slowdown <= 1 + self.tolerance

    def settle(self) -> float:
        """Wait until the host runs within the tolerance of its best pace, or the
        patience or the waiting budget is spent; the last slowdown read."""
        slowdown = self.slowdown()
        start = self.clock()
        while not self.steady(slowdown):
            now = self.clock()
            budget = self.allowance + self.share * (now - self.started) - self.waited
            if now - start >= min(self.patience, budget):
                break
            slowdown = self.slowdown()
        self.waited += self.clock() - start
        return slowdown
