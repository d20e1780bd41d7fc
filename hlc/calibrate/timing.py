"""Robust timing of one task (thesis §3.4, made stricter).

* The clock's resolution and the cost of reading it are measured once; the
  reading cost is subtracted from every timing.
* A timing repeats the task enough times to last at least
  max(1 ms, 1000 × resolution); the repeat count is divided out.
* A sample's time is the median of k timings (k = 3 by default): a median is
  wrong only if two of the three timings are disturbed.  When no other timing
  agrees with the median within 5%, or one is more than 10% faster than it,
  the sample is timed again, up to 3k timings, and flagged noisy if it still
  has not settled.
* The garbage collector is off while a timing runs.
* A timing may start with untimed calls of the task, for WARM_SECONDS at
  least, so that the candidate is timed with its own data in the caches,
  whatever was timed just before it (the oracle warms every timing).
* The profiler warms a candidate by timing it: the leading timings of its
  block that lie more than AGREEMENT above the median of the timings after
  them were taken while its data came back into the caches, and are
  dropped (``cold_timings``).  A candidate that needs no warm-up then costs
  none, and one that needs much gets as much as its timings show.  Where
  one short call (the checking call) is all that warmed a candidate, its
  block's first timing is kept only when it lies within FIRST_AGREEMENT
  of the rest: timings of a millisecond that all start a little cold are
  not caught by AGREEMENT.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MINIMUM_TIMING = 1e-3  # seconds one timing must last at least
RESOLUTION_FACTOR = 1000  # ... and at least this many clock ticks
MAXIMUM_REPEAT = 1_000_000
# A median is trusted when another timing agrees with it this closely; otherwise
# the sample is timed again (up to RETAKES × k timings in all), then flagged noisy.
AGREEMENT = 0.05
RETAKES = 3
# ... and when a timing lies more than this far below the median.
FASTER = 0.10
# The first timing of a block that one short call warmed (its checking
# call) is kept when it lies no more than this above the median of those
# after it.  In a default sort build's 938 such one-rank blocks, that first
# timing lay 0.3% above the block's median in the median block, more than 2%
# above it in a third of them, more than 5% in 13%; kept by this rule
# (68% of them), the blocks' medians moved by -0.1% on average, by at most
# 1.2% down and 0.7% up in nine blocks of ten; by the 5% rule, +0.05% and
# 1.3% up, +0.2% and 2.1% up at two ranks.
FIRST_AGREEMENT = 0.02
# Untimed calls before each timing last at least this long.  One call is not
# enough: after a task that swept the caches, a radix sort of 140,000 keys
# took 0.86 ms after one warm-up call, 0.54 ms after four and 0.44 ms after
# ten (the steady pace), on a machine whose last-level cache other tenants
# share; it takes a few milliseconds of the task's own accesses to win its
# data back.
WARM_SECONDS = 5e-3
MAXIMUM_WARM_CALLS = 100_000


@dataclass(frozen=True)
class Clock:
    """What the timer can do on this machine."""

    resolution: float  # seconds between distinguishable readings
    overhead: float  # seconds one pair of readings adds to a timing
    least: float = MINIMUM_TIMING  # seconds a timing lasts at least, whatever the clock

    @property
    def minimum_timing(self) -> float:
        """How long one timing must last for the clock's error to be negligible."""
        return max(self.least, RESOLUTION_FACTOR * self.resolution)

    def as_dict(self) -> dict[str, float]:
        """As a run's header records it: how long its timings lasted at least too."""
        return {"resolution": self.resolution, "overhead": self.overhead, "least": self.least}


def calibrate_clock(readings: int = 2000) -> Clock:
    """Measure the resolution (smallest non-zero step seen, and never below
    the resolution the OS reports) and the overhead (median cost of a reading)."""
    counter = time.perf_counter
    steps = []
    costs = []
    for _ in range(readings):
        first = counter()
        second = counter()
        while second == first:
            second = counter()
        steps.append(second - first)
        start = counter()
        counter()
        costs.append(counter() - start)
    reported = time.get_clock_info("perf_counter").resolution
    return Clock(resolution=max(min(steps), reported), overhead=max(statistics.median(costs) / 2, 0.0))


def repeat_count(single_call: float, clock: Clock) -> int:
    """Calls per timing so that one timing lasts at least the clock's minimum."""
    if single_call <= 0 or not math.isfinite(single_call):
        return MAXIMUM_REPEAT if single_call <= 0 else 1
    repeat = math.ceil(clock.minimum_timing / single_call)
    if repeat > 1 and (repeat - 1) * single_call >= clock.minimum_timing:  # the division rounded up
        repeat -= 1
    return max(1, min(MAXIMUM_REPEAT, repeat))


def time_calls(task: Callable[..., Any], arguments: Sequence[tuple], clock: Clock,
               before: Callable[[], None] | None = None, warm: tuple | None = None,
               agree: Callable[[int], int] | None = None, warm_seconds: float = WARM_SECONDS) -> float:
    """Seconds per call of ``task`` over ``arguments`` (one tuple per call).

    ``warm``: the arguments of the untimed calls made first, as many as last
    ``warm_seconds`` (at least one), so that the task starts with its own data
    and buffers in the caches instead of in the state the previously timed
    task left them in.  ``agree`` makes the ranks of an SPMD task agree on
    the number of those calls (each passes its own and gets the agreed one).
    ``before`` runs just before the clock starts (a barrier, under MPI).  The
    collector is off while the clock runs; the clock's overhead is subtracted.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        if warm is not None:
            _warm_up(task, warm, agree, warm_seconds)
        if before is not None:
            before()
        start = time.perf_counter()
        for call_arguments in arguments:
            task(*call_arguments)
        elapsed = time.perf_counter() - start
    finally:
        if collecting:
            gc.enable()
    return max(elapsed - clock.overhead, 0.0) / len(arguments)


def _warm_up(task: Callable[..., Any], arguments: tuple, agree: Callable[[int], int] | None,
             seconds: float = WARM_SECONDS) -> None:
    """Call ``task`` on ``arguments`` for ``seconds``: once, then as many more
    times as that call's length says (the same count on every rank)."""
    start = time.perf_counter()
    task(*arguments)
    first = time.perf_counter() - start
    more = 0 if first >= seconds else min(MAXIMUM_WARM_CALLS, math.ceil(seconds / max(first, 1e-9)) - 1)
    if agree is not None:
        more = agree(more)
    for _ in range(more):
        task(*arguments)


def cold_timings(timings: Sequence[float], first: float = AGREEMENT) -> int:
    """How many leading timings of a block, taken back to back, are cold: each
    lies more than AGREEMENT above the median of the timings after it (the
    first, more than ``first``).  A cold cache only slows a task down, and
    it warms up as the task runs, so the first timings are the slow ones
    and the rest agree."""
    cold = 0
    while len(timings) - cold > 1 and timings[cold] > (1 + (first if cold == 0 else AGREEMENT)) \
            * statistics.median(timings[cold + 1:]):
        cold += 1
    return cold


@dataclass(frozen=True)
class Timing:
    """The timings of one sample and what they say together."""

    timings: tuple[float, ...]
    repeat: int

    @property
    def seconds(self) -> float:
        """The sample's time: the median of its timings."""
        return statistics.median(self.timings)

    @property
    def spread(self) -> float:
        """(max − min) / median of the timings."""
        median = self.seconds
        return (max(self.timings) - min(self.timings)) / median if median > 0 else 0.0

    @property
    def settled(self) -> bool:
        """Whether another timing lies within AGREEMENT of the median, so that
        the median is not a disturbed timing (thesis §3.4: a median of three is
        wrong only if two are hit), and no timing lies more than FASTER below
        it: a disturbance only slows a task down, so a much faster timing says
        that the two agreeing ones were both hit (a sort of 24 keys timed
        8.37, 8.47 and 2.76 µs)."""
        ordered = sorted(self.timings)
        middle = len(ordered) // 2
        if len(ordered) < 2 or ordered[0] < (1 - FASTER) * self.seconds:
            return False
        if len(ordered) % 2 == 0:  # the median is the mean of the two middle timings
            return ordered[middle] - ordered[middle - 1] <= AGREEMENT * self.seconds
        neighbours = [ordered[middle - 1]] + ordered[middle + 1:middle + 2]
        return min(abs(t - ordered[middle]) for t in neighbours) <= AGREEMENT * ordered[middle]
