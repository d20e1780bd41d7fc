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

:class:`HostMeter` times a short fixed task, keeps its readings, and takes
a low quantile of them (BEST_QUANTILE) as the host's usual unhindered pace;
before each round of timings it waits until the host is back within a
tolerance of that pace, or until its patience is spent:
a round waits at most ``patience`` seconds.  A round the host slowed down
during is taken again (:mod:`hlc.calibrate.engine`).  Waiting and the
rounds taken again together cost at most ``share`` of the time since the
meter started, so a host that stays slow costs a bounded part of the
profiling time and no more: on a host whose every other round was slow,
a sort build measured for 29% of its time and spent as much on rounds it
dropped, half of whose second takes were slow again.  So only the
evaluator waits and retakes by default; the profiler's meter has no
budget for either (:func:`hlc.calibrate.harness.host_meter` says why), and
its readings mark the samples a spell hit.

It also reads a second yardstick after each round (once per MEMORY_INTERVAL
at most), which it does not wait for: a gather of doubles at random from an
array larger than the private caches.  That one slows when the other
tenants' traffic fills the shared cache and the memory channels, which a
sum in the core's own cache never sees, and which slows exactly the code
whose cost is memory (a scatter, a table of counters).  On the development
host, over one minute, a two-second window read the gather at 2.35 times
its best while the sum read 1.08.  Waiting such spells out cost a sort
build 4.5 of its 52 seconds, and its share measuring fell from 52% to 47%;
a sample taken in one says so instead (its ``host``), and the fit leaves
it out.

Where the program runs on several ranks, a third yardstick, read after
every block and not waited for either, times a few all-reduces of one
number over the ranks.  The ranks of one host talk through shared memory,
and how fast depends on where the hypervisor runs their virtual cores at
the moment: on the development host, over 100 seconds, the two ranks'
round trip took 2.7 µs most of the time, 3.3 to 4.3 µs in spells of five to
ten seconds, and 10 µs for five seconds; an all-reduce of 32,768 doubles
took 42 µs, then 48 to 55, then 82.  In another run, through a two-second
spell in which that all-reduce ran 2.1 times as long as at its best, the
core's yardstick read 0.9 times its best and the memory's 1.0: only the
ranks' own exchange shows such a spell.  A sample taken in one says so,
as for the memory's.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy

if TYPE_CHECKING:
    from hlc.runtime.spmd import World

#: A reading's slowdown is acceptable up to this factor over the best pace ...
TOLERANCE = 0.10
#: ... which is this quantile of the readings so far, not the fastest one.
#: The fastest of thousands of readings is an outlier that the host rarely
#: reaches again: on one host, over ten quiet seconds, the sum's readings
#: lay 1.13 (tenth percentile), 1.16 (median) and 1.78 (ninetieth) times
#: above the fastest; measured against it, 96% of them were slow, and a
#: sort build spent 23 of its 60 seconds waiting for a pace that did not
#: come back and left out the samples it took meanwhile.
BEST_QUANTILE = 0.1
#: Seconds one wait may last.
PATIENCE = 1.0
#: Waiting and dropped rounds may take at most this share of the time since the meter started ...
SHARE = 0.25
#: ... plus this many seconds (so that the first rounds may wait too).
ALLOWANCE = 2.0


#: The memory yardstick's array: larger than any core's private caches.
MEMORY_BYTES = 64 << 20
#: Random elements it gathers per batch: about 100 µs.
GATHERED = 16384
#: Batches of indices it takes in turn.  A batch's lines have left the
#: caches by the time it comes round again, as they have after a task that
#: swept them, so that what a block left in the caches barely changes the
#: reading: with one batch, its 1 MiB of lines stayed cached between
#: readings, and a reading after a sort of a million keys took 1.4 to 2
#: times the best; in turn, 1.02 to 1.12.
BATCHES = 64
#: The memory yardstick's slowdown counts beyond this share only, scaled to
#: the meter's tolerance: its readings spread more than the sum's, by up to
#: 12% after a block that swept the caches, while its spells are 30% and more.
MEMORY_TOLERANCE = 0.25
#: A memory reading (about half a millisecond) stands for this many seconds:
#: the spells last seconds, and a reading after every block of a sort
#: build's 2,300 cost 1.3 s of its 53.
MEMORY_INTERVAL = 0.1

#: The link yardstick's slowdown counts beyond this share only, scaled to
#: the meter's tolerance, as the memory's: its usual readings lay within
#: 0.85 to 1.2 times its best, its spells at 1.5 to 3.9.
LINK_TOLERANCE = 0.3
#: All-reduces of one number per batch of the link yardstick (about 2 µs each
#: between two ranks of one host).
LINK_CALLS = 10


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


def _memory_yardstick() -> Callable[[], float]:
    """Seconds of a short memory-bound task: the least of five gathers of
    GATHERED doubles at random from MEMORY_BYTES, summed (about 100 µs each),
    each from the next of BATCHES batches of indices."""
    values = numpy.arange(MEMORY_BYTES // 8, dtype=numpy.float64)  # written: its pages are the host's memory
    batches = numpy.random.default_rng(0).integers(0, values.size, (BATCHES, GATHERED))
    counter = time.perf_counter
    turn = 0

    def reading() -> float:
        nonlocal turn
        least = float("inf")
        for _ in range(5):
            where = batches[turn % BATCHES]
            turn += 1
            start = counter()
            values.take(where).sum()
            least = min(least, counter() - start)
        return least

    return reading


def link_yardstick(world: World) -> Callable[[], float]:
    """Seconds of a short exchange between the ranks of ``world``: the least
    of three batches of LINK_CALLS all-reduces of one number.  A collective:
    every rank reads it at the same point of its program."""
    value = numpy.zeros(1)
    result = numpy.empty(1)
    counter = time.perf_counter

    def reading() -> float:
        least = float("inf")
        for _ in range(3):
            start = counter()
            for _ in range(LINK_CALLS):
                world.reduce(value, "max", out=result)
            least = min(least, counter() - start)
        return least

    return reading


class HostMeter:
    """How much slower than its best the host runs now, and waiting until it is not.

    ``reading``, ``memory`` and ``link``: the yardsticks (module doc); a
    meter given its own ``reading`` watches the memory only when given
    ``memory``, and any meter watches the link between ranks only when
    given ``link`` (link_yardstick)."""

    def __init__(self, tolerance: float = TOLERANCE, patience: float = PATIENCE, share: float = SHARE,
                 allowance: float = ALLOWANCE, reading: Callable[[], float] | None = None,
                 clock: Callable[[], float] = time.monotonic, memory: Callable[[], float] | None = None,
                 memory_interval: float = MEMORY_INTERVAL, link: Callable[[], float] | None = None):
        self.tolerance = tolerance
        self.patience = patience
        self.share = share
        self.allowance = allowance
        self.memory = memory if memory is not None or reading is not None else _memory_yardstick()
        self.reading = reading or _yardstick()
        self.clock = clock
        self.started = clock()
        self.readings: list[float] = []  # sorted
        self.memory_readings: list[float] = []  # sorted
        self.link = link
        self.link_readings: list[float] = []  # sorted
        self.memory_interval = memory_interval
        self.memory_read: tuple[float, float] | None = None  # (when, slowdown) of the last memory reading
        self.waited = 0.0  # seconds spent in settle() so far
        self.dropped = 0.0  # seconds of rounds taken again because the host slowed down during them

    @property
    def best(self) -> float:
        """The host's best pace: the BEST_QUANTILE of the core's readings so far."""
        return _low_quantile(self.readings)

    @property
    def memory_best(self) -> float:
        """The memory yardstick's best pace, as ``best``."""
        return _low_quantile(self.memory_readings)

    def slowdown(self) -> float:
        """The current reading over the best pace (1.0: at it; below 1: faster)."""
        return _against_best(self.reading(), self.readings)

    def memory_slowdown(self) -> float:
        """The memory yardstick's reading over its fastest, its excess over 1
        scaled from MEMORY_TOLERANCE to the meter's tolerance (1.0 without
        one); the last reading's within ``memory_interval`` seconds of it."""
        if self.memory is None:
            return 1.0
        now = self.clock()
        if self.memory_read is not None and now - self.memory_read[0] < self.memory_interval:
            return self.memory_read[1]
        slowdown = self._scaled(_against_best(self.memory(), self.memory_readings), MEMORY_TOLERANCE)
        self.memory_read = (now, slowdown)
        return slowdown

    def link_slowdown(self) -> float:
        """The link yardstick's reading over its best pace, its excess over 1
        scaled from LINK_TOLERANCE to the meter's tolerance (1.0 without
        one).  Read at every call: it is a collective, so whether it is read
        may not depend on a rank's own clock."""
        if self.link is None:
            return 1.0
        return self._scaled(_against_best(self.link(), self.link_readings), LINK_TOLERANCE)

    def _scaled(self, ratio: float, own: float) -> float:
        """A yardstick's ratio to its best, its excess over 1 counted beyond
        its ``own`` tolerance as the core's beyond the meter's."""
        return 1.0 + (ratio - 1.0) * self.tolerance / own

    def steady(self, slowdown: float) -> bool:
        return slowdown <= 1 + self.tolerance

    def spare(self) -> float:
        """Seconds the meter may still lose to the host: to waits and to
        rounds taken again (its budget, less what they have taken)."""
        return self.allowance + self.share * (self.clock() - self.started) - self.waited - self.dropped

    def may_retake(self, seconds: float) -> bool:
        """Whether a round of ``seconds`` the host slowed down may be taken
        again: its time fits in what is spare."""
        return seconds <= self.spare()

    def drop(self, seconds: float) -> None:
        """Count a round of ``seconds``, taken again, against the budget."""
        self.dropped += seconds

    def settle(self) -> float:
        """Wait until the host runs within the tolerance of its best pace, or the
        patience or the budget is spent; the last slowdown read."""
        slowdown = self.slowdown()
        start = self.clock()
        while not self.steady(slowdown):
            now = self.clock()
            if now - start >= min(self.patience, self.spare()):
                break
            slowdown = self.slowdown()
        self.waited += self.clock() - start
        return slowdown


def _against_best(value: float, readings: list[float]) -> float:
    """``value`` over the best pace of ``readings`` (sorted) once it is among them."""
    bisect.insort(readings, value)
    best = _low_quantile(readings)
    return value / best if best > 0 else 1.0


def _low_quantile(ordered: list[float]) -> float:
    """The BEST_QUANTILE of sorted readings (the fastest of fewer than ten); inf of none."""
    if not ordered:
        return float("inf")
    return ordered[int(BEST_QUANTILE * (len(ordered) - 1))]
