"""Timing candidates at a point: the engine the profiler and the oracle share.

:class:`TimingEngine` does everything it takes to time one task well, and
to time several side by side (hlc.calibrate.timing has the single timing):

* a checking call of each candidate, its result compared with the reference
  implementation's; a candidate that raises or returns a wrong result is
  excluded (the engine's owner records why), and the others go on;
* a first repeat count from that call, grown while a timing falls short of
  the clock's minimum;
* blocks (the profiler's): a candidate timed back to back until k timings
  agree, its cold leading timings dropped (accounted as cold timings);
* rounds (the oracle's): every candidate timed once per round, the rounds
  numbered, so that two candidates can be compared round by round;
* a block or a round starts when the host runs at its usual pace
  (hlc.calibrate.host) and is taken again when it slowed down meanwhile;
* before each timed task an event names it, so that the parent process can
  blame a crash or a hang on the right implementation;
* every rank times the same candidates and sees the slowest rank's time.

The profiler (hlc.calibrate.harness) and the oracle (hlc.evaluation.oracle)
each hold one: what they time and what they write of it differ, how a
task is timed does not.  Where the time goes is kept in ``spent``.
"""

from __future__ import annotations

import copy
import functools
import gc
import statistics
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hlc.calibrate.breakdown import MEASURING, Breakdown
from hlc.calibrate.host import HostMeter
from hlc.calibrate.tasks import Context, Implementation, Interface, describe, described, same_result
from hlc.calibrate.timing import (
    AGREEMENT,
    FIRST_AGREEMENT,
    MAXIMUM_REPEAT,
    RETAKES,
    WARM_SECONDS,
    Clock,
    Timing,
    cold_timings,
    repeat_count,
    time_calls,
)

# A block or round during which the host slowed down is taken again at most this often.
HOST_RETAKES = 2
# A block may take this many timings beyond RETAKES × k while its first ones are cold.
COLD_TIMINGS = 6
#: A block whose timings took less than this many seconds is confirmed by
#: one more timing after the point's other blocks (TimingEngine.confirmed).
SHORT_BLOCK = 0.02
#: Seconds after which the task that runs is told to the parent again, though unchanged.
TASK_REFRESH = 1.0

Exclude = Callable[[Interface, Implementation, str, dict], None]  # (…, cause, point): record an exclusion


class TimingEngine:
    """Checks and times candidates on the ranks of ``context`` (see the module doc).

    ``excluded``: the excluded implementations by (interface, implementation),
    shared with the owner, who records a new one with ``exclude`` (which must
    add it to ``excluded``); ``emit``: an event for the parent process."""

    def __init__(self, context: Context, clock: Clock, host: HostMeter, excluded: dict[tuple[str, str], str],
                 exclude: Exclude, emit: Callable[..., None], spent: Breakdown | None = None):
        self.context = context
        self.clock = clock
        self.host = host
        self.excluded = excluded
        self.exclude = exclude
        self.emit = emit
        self.spent = spent if spent is not None else Breakdown()  # where the time goes
        self.slowdown = 1.0  # the host's worst slowdown during the rounds since time_rounds began
        self.round_count = 0  # rounds timed so far: each round's number
        self.told: tuple | None = None  # the task told to the parent last (``task``), and when
        self.told_at = 0.0

    def task(self, interface: Interface, implementation: Implementation, point: dict) -> None:
        """Tell the parent the task that runs now, which a hang or a crash is
        blamed on: when it differs from the one told last, or TASK_REFRESH
        seconds after it (the parent times a hang from the last event).
        Told before every timing, tasks of a millisecond woke the parent a
        thousand times a second, and its share of a core slowed the ranks
        that wait for each other (hlc.calibrate.run.READ_PAUSE)."""
        key = (interface.name, implementation.name, tuple(sorted(point.items())))
        now = time.monotonic()
        if key != self.told or now - self.told_at >= TASK_REFRESH:
            self.emit(event="task", interface=interface.name, implementation=implementation.name, point=point)
            self.told, self.told_at = key, now

    def fresh(self, interface: Interface, arguments: tuple) -> tuple:
        if not interface.mutable:
            return arguments
        return tuple(copy.deepcopy(a) if i in interface.mutable else a for i, a in enumerate(arguments))

    def result_of(self, interface: Interface, returned: Any, arguments: tuple) -> Any:
        """What is compared: the return value, or the mutated arguments when it is None."""
        if returned is None and interface.mutable:
            return tuple(arguments[i] for i in interface.mutable)
        return returned

    def call(self, interface: Interface, implementation: Implementation, settings: dict, arguments: tuple,
             point: dict) -> tuple[Any, float] | None:
        """One call, timed as a timing is (after the setup and a barrier, with
        the collector off), so that a call long enough for the clock can be
        the first timing of its block; None when it raised (then it is excluded)."""
        self.task(interface, implementation, point)
        self._around(interface, "setup", point, arguments)
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.context.barrier()
            start = time.perf_counter()
            returned = implementation.call(*arguments, **settings)
            elapsed = max(time.perf_counter() - start - self.clock.overhead, 0.0)
            error = None
        except Exception as raised:  # any failure of user code excludes that implementation
            error = f"raised {type(raised).__name__}: {raised}"
            frames = traceback.extract_tb(raised.__traceback__)
            if frames:
                error += f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})"
            returned, elapsed = None, 0.0
        finally:
            if collecting:
                gc.enable()
        self._around(interface, "cleanup", point, arguments)
        if self.context.any(error is not None):
            self.exclude(interface, implementation, error or "raised on another rank", point)
            return None
        return self.result_of(interface, returned, arguments), elapsed

    def _around(self, interface: Interface, which: str, point: dict, arguments: tuple) -> None:
        """The description's ``setup`` or ``cleanup`` calls at ``point``, if any
        (a failure there is the description's: tasks.described)."""
        calls = interface.setup if which == "setup" else interface.cleanup
        if calls is not None:
            described(interface, point, which, lambda: calls(point, arguments, self.context.size))

    def warm_up(self, interface: Interface, candidates: list[tuple[Implementation, dict]], arguments: tuple,
                point: dict) -> list[tuple[Implementation, dict, int]]:
        """Check each candidate (see ``check``); the ones that passed, with their first repeat counts."""
        reference: tuple[str, Any] | None = None
        ready = []
        for implementation, settings in candidates:
            checked = self.check(interface, implementation, settings, arguments, point, reference)
            if checked is not None:
                repeat, _, result = checked
                reference = reference or (implementation.name, result)
                ready.append((implementation, settings, repeat))
        return ready

    def check(self, interface: Interface, implementation: Implementation, settings: dict, arguments: tuple,
              point: dict, reference: tuple[str, Any] | None) -> tuple[int, float, Any] | None:
        """Call the candidate once and check its result against the reference's
        (None: this is the reference).  Returns a first repeat count taken from
        that call, the call's seconds and its result; None when the candidate
        is excluded.  A first call is slower than the calls that follow it, so
        the count errs low, and a timing that falls short grows it (``timing``)."""
        if (interface.name, implementation.name) in self.excluded:
            return None
        with self.spent.spending("checks"):
            outcome = self.call(interface, implementation, settings, self.fresh(interface, arguments), point)
            if outcome is None:
                return None
            result, elapsed = outcome
            if reference is not None and self.context.any(not same_result(result, reference[1])):
                self.exclude(interface, implementation, f"wrong result {describe(result)}; the reference "
                             f"{reference[0]} returned {describe(reference[1])}", point)
                return None
            elapsed = self.context.maximum(elapsed)
        return repeat_count(elapsed, self.clock), elapsed, result

    def timed(self, interface: Interface, implementation: Implementation, settings: dict, arguments: tuple,
              point: dict, repeat: int, warm: float = WARM_SECONDS) -> float | None:
        """Seconds per call over ``repeat`` calls, the slowest rank's; None when
        it raised.  ``warm``: seconds of untimed calls first (see time_calls)."""
        with self.spent.spending("inputs"):  # the first warms the caches, when there is a warm-up
            calls = [self.fresh(interface, arguments) for _ in range(repeat + bool(warm))] if interface.mutable \
                else [arguments] * (repeat + bool(warm))
        self._around(interface, "setup", point, arguments)
        self.task(interface, implementation, point)
        task = functools.partial(implementation.call, **settings) if settings else implementation.call
        try:
            seconds = time_calls(task, calls[1:] if warm else calls, self.clock, before=self.context.barrier,
                                 warm=calls[0] if warm else None, agree=self.context.agree_count,
                                 warm_seconds=float(warm))
            failed = None
        except Exception as raised:  # failing on a later call is a failure too
            seconds, failed = 0.0, f"raised {type(raised).__name__}: {raised}"
        self._around(interface, "cleanup", point, arguments)
        if self.context.any(failed is not None):
            self.exclude(interface, implementation, failed or "raised on another rank", point)
            return None
        return self.context.maximum(seconds)

    def timing(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]], position: int,
               arguments: tuple, point: dict, warm: float = WARM_SECONDS) -> float | None:
        """One timing of the candidate at ``position``, long enough for the
        clock: a shorter one is dropped, and the candidate's repeat count grows
        (in ``candidates``) until a timing lasts the clock's minimum.  Every
        rank sees the slowest rank's time, so all make the same choices."""
        implementation, settings, repeat = candidates[position]
        while True:
            with self.spent.spending("warm-up"):  # all but the timed calls themselves
                seconds = self.timed(interface, implementation, settings, arguments, point, repeat, warm)
                if seconds is None:
                    return None
                long_enough = seconds * repeat >= self.clock.minimum_timing or repeat >= MAXIMUM_REPEAT
                self.spent.add(MEASURING if long_enough else "sizing", seconds * repeat)
            if long_enough:
                return seconds
            # Aim 20% past the minimum, so that a slightly faster timing still reaches it.
            repeat = min(MAXIMUM_REPEAT, max(repeat * 2, repeat_count(seconds * 0.8, self.clock)))
            candidates[position] = (implementation, settings, repeat)
            warm = 0.0  # the calls just made warmed it

    def time_blocks(self, interface: Interface, candidates: list[tuple[Implementation, dict]],
                    arguments: tuple, point: dict) -> list[tuple[tuple[Implementation, dict, int], list[float], float]]:
        """Check each candidate, then time it in one block: its checking call,
        when long enough for the clock, is the block's first timing; then it is
        timed back to back until k timings agree (up to RETAKES × k), the
        leading ones that are slower than the rest dropped as cold (the
        warm-up, as long as the timings show it must be).  The block starts
        when the host runs at its usual pace and is taken again, up to
        HOST_RETAKES times, when it slowed down meanwhile.  A block lasts
        milliseconds, so the host's slower drifts affect all of a candidate's
        timings alike, and a spell of the host of some tens of milliseconds
        (the yardstick at 1.4-1.7 times its pace for one to three blocks in
        a row) covers a short block whole, unseen by a meter that reads
        before and after it.  So a block shorter than SHORT_BLOCK is
        confirmed by one more timing after the point's other blocks, and
        taken again where that timing finds it slow (``confirmed``).
        Returns, for each candidate that passed its check, (candidate with
        its repeat count, timings, the host's worst slowdown during its
        block)."""
        reference: tuple[str, Any] | None = None
        timed = []
        for implementation, settings in candidates:
            ready = [(implementation, settings, 1)]

            def measure(attempt: int, implementation=implementation, settings=settings, ready=ready):
                nonlocal reference
                first = None
                if attempt == 0:
                    checked = self.check(interface, implementation, settings, arguments, point, reference)
                    if checked is None:
                        return None
                    repeat, elapsed, result = checked
                    reference = reference or (implementation.name, result)
                    ready[0] = (implementation, settings, repeat)
                    if elapsed >= self.clock.minimum_timing:  # one call is a timing
                        first = elapsed
                        self.spent.move("checks", MEASURING, elapsed)
                # A checking call too short to be a timing warmed the candidate once
                # only: the block's first timing warms it further, and is kept only
                # when it agrees closely with the rest (FIRST_AGREEMENT).
                return self.block(interface, ready, arguments, point, first,
                                  warmed_once=attempt == 0 and first is None)

            values, slowdown = self.at_usual_pace(measure)
            if values is not None:
                timed.append((ready[0], values, slowdown))
        again = [self.confirmed(interface, arguments, point, *entry) for entry in timed]
        return [entry for entry in again if entry is not None]

    def confirmed(self, interface: Interface, arguments: tuple, point: dict,
                  candidate: tuple[Implementation, dict, int], values: list[float], slowdown: float
                  ) -> tuple[tuple[Implementation, dict, int], list[float], float] | None:
        """A short block's candidate timed once more now, after the point's
        other blocks (see time_blocks).  Where that timing is AGREEMENT or
        more below the block's median, the block ran in a spell: the timing
        starts a second block, and the block with the lower median is kept
        (the other's timings count as retaken: measuring is what the
        samples keep); else the timing joins the block's, which keeps its
        last RETAKES × k.  None when the candidate failed (and is excluded).
        The timings are every rank's slowest, so every rank takes the same
        steps.

        Two profiles of tests/descriptions/vector.hl, whose blocks are all
        short, agreed within 5% at 59.2% of their samples against 46.8%
        with one block each, on a host in a spell most of the time (ten
        rounds, alternating; with a millisecond of warm-up before the
        confirming timing, 87.8% against 69.2% in a calmer hour).  A sort
        build spent 3.6-3.8% of its time on the blocks it dropped."""
        if sum(values) * candidate[2] >= SHORT_BLOCK:
            return candidate, values, slowdown
        ready = [candidate]
        confirming = self.timing(interface, ready, 0, arguments, point, warm=0.0)
        if confirming is None:
            return None
        if confirming > (1 - AGREEMENT) * statistics.median(values):
            joined = [*values, confirming]
            kept = joined[-interface.repeat * RETAKES:]
            self.spent.move(MEASURING, "retaken", sum(joined[:len(joined) - len(kept)]) * ready[0][2])
            return ready[0], kept, slowdown
        second, seen = self.at_usual_pace(
            lambda attempt: self.block(interface, ready, arguments, point, confirming if attempt == 0 else None,
                                       first_repeat=ready[0][2]))
        if second is None:
            return None
        kept, dropped = (ready[0], second, seen), values
        if statistics.median(values) <= statistics.median(second):
            kept, dropped = (candidate, values, slowdown), second
        self.spent.move(MEASURING, "retaken", sum(dropped) * ready[0][2])
        return kept

    def at_usual_pace(self, measure: Callable[[int], Any]) -> tuple[Any, float]:
        """Run ``measure(attempt)`` when the host runs at its usual pace
        (HostMeter), and again, up to HOST_RETAKES times, when it slowed down
        meanwhile and the meter's budget has room for another attempt on
        every rank; the timings of a dropped attempt count as retaken.  Returns
        the last attempt's outcome (None: it failed, and is not retaken) and
        the host's slowdown during it, the slowest rank's: the core's, or the
        memory's or the link's read after it, whichever is largest (the
        memory's and the link's spells are recorded, not waited for)."""
        for attempt in range(HOST_RETAKES + 1):
            with self.spent.spending("host waits"):
                slowdown = self.host.settle()
            before = self.spent.seconds.get(MEASURING, 0.0)
            started = self.host.clock()
            outcome = measure(attempt)
            took = self.host.clock() - started
            with self.spent.spending("host waits"):
                slowdown, memory, link, spent = self.context.maxima(max(slowdown, self.host.slowdown()),
                                                                    self.host.memory_slowdown(),
                                                                    self.host.link_slowdown(),
                                                                    0.0 if self.host.may_retake(took) else 1.0)
            if outcome is None or self.host.steady(slowdown) or attempt == HOST_RETAKES or spent:
                return outcome, max(slowdown, memory, link)
            self.host.drop(took)
            self.spent.move(MEASURING, "retaken", self.spent.seconds.get(MEASURING, 0.0) - before)
        raise AssertionError("unreachable: the last attempt returns")

    def block(self, interface: Interface, ready: list[tuple[Implementation, dict, int]], arguments: tuple,
              point: dict, first: float | None = None, warmed_once: bool = False,
              first_repeat: int = 1) -> list[float] | None:
        """The timings of one candidate's block (see time_blocks), starting with
        ``first`` when the checking call was one (or a timing of
        ``first_repeat`` calls, a confirming one); None when it failed.  The
        cold leading timings are dropped and counted as cold timings, each
        as the calls it made (``warmed_once``: one short call warmed the
        candidate, and its first timing is cold unless within
        FIRST_AGREEMENT of the rest); a block that never warms keeps its
        last k timings."""
        values: list[tuple[float, int]] = [] if first is None else [(first, first_repeat)]
        wanted = interface.repeat
        limit = wanted * RETAKES + COLD_TIMINGS
        while True:
            seconds_only = [seconds for seconds, _ in values]
            cold = cold_timings(seconds_only, FIRST_AGREEMENT if warmed_once else AGREEMENT)
            if len(values) >= limit:
                cold = min(cold, len(values) - wanted)
                break
            kept = seconds_only[cold:]
            if len(kept) >= wanted and (Timing(tuple(kept), ready[0][2]).settled or len(kept) >= wanted * RETAKES):
                break
            seconds = self.timing(interface, ready, 0, arguments, point, warm=0.0)
            if seconds is None:
                return None
            values.append((seconds, ready[0][2]))
        # A block keeps RETAKES × k timings at most, its last: the count of cold
        # leading ones may shrink as later timings come in.
        cold = max(cold, len(values) - wanted * RETAKES)
        for seconds, repeat in values[:cold]:
            self.spent.move(MEASURING, "cold timings", seconds * repeat)
        return [seconds for seconds, _ in values[cold:]]

    def time_rounds(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]],
                    arguments: tuple, point: dict, rounds: list[list[int]] | None = None) -> list[list[float]]:
        """k rounds; each round times every candidate once, starting one further
        along.  Then extra rounds, for the candidates whose median has not settled.
        ``rounds``: where each candidate's timings get their round numbers (see time_round)."""
        timings: list[list[float]] = [[] for _ in candidates]
        self.slowdown = 1.0
        for round_ in range(interface.repeat * RETAKES):
            if round_ < interface.repeat:
                pending = list(range(len(candidates)))
            else:
                pending = [p for p, values in enumerate(timings) if values
                           and not Timing(tuple(values), candidates[p][2]).settled]
                if self.context.size > 1:  # every rank must time the same candidates
                    pending = [p for p in range(len(candidates)) if self.context.any(p in pending)]
                if not pending:
                    break
            self.time_round(interface, candidates, pending, round_, timings, arguments, point, rounds)
        return timings

    def time_round(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]],
                   positions: list[int], round_: int, timings: list[list[float]], arguments: tuple,
                   point: dict, rounds: list[list[int]] | None = None) -> list[int]:
        """Time the candidates at ``positions`` once each, starting ``round_``
        places along, so that no candidate is always the first after a pause.
        The round starts when the host runs at its usual pace (HostMeter), and
        is taken again, up to HOST_RETAKES times, when it slowed down meanwhile.
        With ``rounds`` (a list per candidate, beside ``timings``), each timing's
        round number goes there too: timings of one round were taken within
        moments of each other, so their ratio is free of the host's slower
        drifts.  Returns the positions that got a timing."""

        def round_once(attempt: int) -> dict[int, float]:
            taken = {}
            for offset in range(len(positions)):
                position = positions[(round_ + offset) % len(positions)]
                if (interface.name, candidates[position][0].name) in self.excluded:
                    continue
                seconds = self.timing(interface, candidates, position, arguments, point)
                if seconds is not None:
                    taken[position] = seconds
            return taken

        taken, slowdown = self.at_usual_pace(round_once)
        self.slowdown = max(self.slowdown, slowdown)
        self.round_count += 1
        for position, seconds in taken.items():
            timings[position].append(seconds)
            if rounds is not None:
                rounds[position].append(self.round_count)
        return list(taken)
