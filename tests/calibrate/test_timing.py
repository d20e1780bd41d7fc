"""The timing rules: repeat counts, medians, when a sample has settled."""

from __future__ import annotations

import statistics
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hlc.calibrate.timing import (
    MAXIMUM_REPEAT,
    WARM_SECONDS,
    Clock,
    Timing,
    calibrate_clock,
    cold_timings,
    repeat_count,
    time_calls,
)


def test_clock_is_measured():
    clock = calibrate_clock(200)
    assert 0 < clock.resolution < 1e-3
    assert 0 <= clock.overhead < 1e-4
    assert clock.minimum_timing >= 1e-3


@given(st.floats(1e-9, 10.0), st.sampled_from([1e-3, 4e-3]))
def test_repeat_count_makes_a_timing_last_the_minimum(single, least):
    clock = Clock(resolution=1e-8, overhead=0.0, least=least)  # the profiler's timings, and the oracle's
    assert clock.minimum_timing == least
    repeat = repeat_count(single, clock)
    assert 1 <= repeat <= MAXIMUM_REPEAT
    assert repeat * single >= clock.minimum_timing or repeat == MAXIMUM_REPEAT
    assert repeat == 1 or (repeat - 1) * single < clock.minimum_timing


def test_time_calls_divides_out_the_repeat_count():
    clock = Clock(resolution=1e-9, overhead=0.0)
    seconds = time_calls(time.sleep, [(0.002,)] * 3, clock)
    assert 0.002 <= seconds < 0.02


def test_time_calls_warms_up_untimed_first():
    clock = Clock(resolution=1e-9, overhead=0.0)
    called = []

    def task(seconds):
        called.append(seconds)
        time.sleep(seconds)

    assert time_calls(task, [(0.002,)] * 2, clock, warm=(0.1,)) < 0.05
    assert called == [0.1, 0.002, 0.002]


def test_the_warm_up_lasts_its_minimum_and_the_ranks_agree_on_its_calls():
    """A short task is called untimed until WARM_SECONDS have passed; ``agree``
    sees the count this process wants and decides it (under MPI: one count
    for all ranks, so that every rank makes as many collective calls)."""
    clock = Clock(resolution=1e-9, overhead=0.0)
    called = []
    asked = []

    def task(seconds):
        called.append(seconds)
        time.sleep(seconds)

    def agree(count):
        asked.append(count)
        return count + 2

    start = time.perf_counter()
    time_calls(task, [(0.0,)], clock, warm=(WARM_SECONDS / 4,), agree=agree)
    assert time.perf_counter() - start >= WARM_SECONDS
    (wanted,) = asked
    assert 1 <= wanted <= 3  # the first call took a quarter of the warm-up, or more
    assert called == [WARM_SECONDS / 4] * (1 + wanted + 2) + [0.0]


@pytest.mark.parametrize(("timings", "settled"), [
    ((1.0, 1.01, 3.0), True),       # two agree: the median is one of them
    ((1.0, 2.0, 3.0), False),       # none agree
    ((1.4, 1.5, 1.52, 9.0), True),  # even count: the two middle timings agree
    ((1.4, 1.45, 1.6, 9.0), False),
    ((2.0,), False),
    ((8.37, 8.47, 2.76), False),    # two agree, but both were slowed: one is far faster
    ((1.0, 1.09, 1.1), True),       # the fastest within 10% of the median
    ((1.0, 1.12, 1.13), False),
])
def test_a_sample_settles_when_another_timing_agrees_with_its_median(timings, settled):
    assert Timing(timings, repeat=1).settled is settled


def test_median_and_spread():
    timing = Timing((3.0, 1.0, 2.0), repeat=10)
    assert timing.seconds == 2.0
    assert timing.spread == pytest.approx(1.0)


@pytest.mark.parametrize(("timings", "cold"), [
    ((1.0, 1.0, 1.0), 0),
    ((1.04, 1.0, 1.0), 0),              # within the agreement: the median copes
    ((3.0, 2.0, 1.0, 1.0, 1.0), 2),     # the caches warmed over two timings
    ((1.0, 3.0, 1.0), 0),               # a later disturbance is no warm-up
    ((2.0, 1.0), 1),
    ((2.0,), 0),
])
def test_leading_timings_slower_than_the_rest_are_cold(timings, cold):
    assert cold_timings(timings) == cold


@pytest.mark.parametrize(("timings", "cold"), [
    ((1.04, 1.0, 1.0), 1),              # the first is held to 2%
    ((1.015, 1.0, 1.0), 0),
    ((1.03, 1.04, 1.0, 1.0), 1),        # the later ones to 5%
    ((1.03, 1.06, 1.0, 1.0), 2),
])
def test_the_first_timing_may_be_held_to_a_closer_agreement(timings, cold):
    assert cold_timings(timings, first=0.02) == cold


@given(st.lists(st.floats(0.5, 2.0), min_size=1, max_size=12))
def test_what_is_left_after_the_cold_timings_starts_within_the_agreement(timings):
    cold = cold_timings(timings)
    rest = timings[cold:]
    assert rest
    assert len(rest) == 1 or rest[0] <= 1.05 * statistics.median(rest[1:])


def test_the_ranks_warm_up_as_long_as_the_rank_doing_the_work_needs(tmp_path):
    """Under mpiexec, a rank that takes no part in a task returns from its
    first call at once and asks for the most warm-up calls; the ranks agree on
    the count of the rank whose first call took longest, so the one that does
    the work warms up for about WARM_SECONDS, not thousands of calls."""
    import os
    import re
    import subprocess
    import sys

    from hlc.calibrate.run import mpiexec

    script = tmp_path / "warm.py"
    script.write_text(
        "import json, time\n"
        "from hlc.calibrate.tasks import Context\n"
        "from hlc.calibrate.timing import WARM_SECONDS, Clock, time_calls\n"
        "context = Context(2)\n"
        "calls = []\n"
        "def task(seconds):\n"
        "    calls.append(seconds)\n"
        "    if context.rank == 0:  # rank 1 takes no part\n"
        "        time.sleep(seconds)\n"
        "time_calls(task, [(0.0,)], Clock(1e-9, 0.0), warm=(WARM_SECONDS / 2,), agree=context.agree_count)\n"
        "print(json.dumps([context.rank, len(calls)]))\n")
    done = subprocess.run([mpiexec(), "-n", "2", sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "HLC_PLATFORM": ""})
    assert done.returncode == 0, done.stderr
    # the ranks' lines may reach mpiexec's output run together ("[1, 3][0, 3]"): each pair wherever it lies
    counts = {int(rank): int(count) for rank, count in re.findall(r"\[(\d+), (\d+)\]", done.stdout)}
    # one first call, at most one more (it lasted half of WARM_SECONDS or longer), the timed call
    assert counts[0] == counts[1] and 2 <= counts[0] <= 3


def test_a_mutable_argument_is_copied_once_for_each_call_it_is_passed_to(monkeypatch):
    """Each timed call of a mutable argument gets its own copy, and the
    warm-up one more; a timing without warm-up makes no copy for it (a copy
    of a large array can cost as much as the call)."""
    import copy

    import numpy as np

    from hlc.calibrate.engine import TimingEngine
    from hlc.calibrate.host import HostMeter
    from hlc.calibrate.tasks import Context, Implementation, Interface

    original = np.zeros(8)
    received: list[np.ndarray] = []

    def scale(values):
        received.append(values)
        values += 1.0

    implementation = Implementation("scale", scale, lambda variables: True, lambda point, variables: [{}],
                                    lambda rng, point, variables: {})
    interface = Interface("work", lambda: iter(()), lambda rng: {}, lambda point, seed, size: (original,),
                          lambda values: {}, [implementation], "scale", mutable=(0,))
    clock = Clock(resolution=1e-9, overhead=0.0)
    timing_engine = TimingEngine(Context(1), clock, HostMeter(), {}, None, lambda **event: None)
    copies = []
    real = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda value, *rest: copies.append(value) or real(value, *rest))
    timing_engine.timed(interface, implementation, {}, (original,), {}, repeat=3, warm=0.0)
    assert len(copies) == 3 and len(received) == 3
    timing_engine.timed(interface, implementation, {}, (original,), {}, repeat=2, warm=1e-9)
    assert len(copies) == 3 + 3 and len(received) >= 3 + 3
    assert len({id(values) for values in received}) == len(copies)
    assert all(values is not original for values in received) and not original.any()


def test_the_task_is_told_to_the_parent_when_it_changes_and_again_after_a_while(monkeypatch):
    """The parent blames a hang or a crash on the task told last, and times
    a hang from the last event: a task is told when it differs from the
    last one told (implementation or point), and again TASK_REFRESH
    seconds after; the timings of one block in between tell nothing."""
    from hlc.calibrate import engine
    from hlc.calibrate.host import HostMeter
    from hlc.calibrate.tasks import Context, Implementation, Interface

    def implementation(name: str) -> Implementation:
        return Implementation(name, lambda values: values, lambda variables: True, lambda point, variables: [{}],
                              lambda rng, point, variables: {})

    first, second = implementation("a"), implementation("b")
    interface = Interface("work", lambda: iter(()), lambda rng: {}, lambda point, seed, size: (0,),
                          lambda values: {}, [first, second], "a")
    told: list[dict] = []
    now = [100.0]
    monkeypatch.setattr(engine.time, "monotonic", lambda: now[0])
    timing_engine = engine.TimingEngine(Context(1), Clock(resolution=1e-9, overhead=0.0), HostMeter(), {}, None,
                                        lambda **event: told.append(event))
    for _ in range(5):  # one block's timings
        timing_engine.task(interface, first, {"n": 1})
    timing_engine.task(interface, second, {"n": 1})  # another implementation
    timing_engine.task(interface, second, {"n": 2})  # another point
    now[0] += engine.TASK_REFRESH / 2
    timing_engine.task(interface, second, {"n": 2})
    now[0] += engine.TASK_REFRESH / 2
    timing_engine.task(interface, second, {"n": 2})  # unchanged, but long since told
    assert [(e["event"], e["implementation"], e["point"]) for e in told] == [
        ("task", "a", {"n": 1}), ("task", "b", {"n": 1}), ("task", "b", {"n": 2}), ("task", "b", {"n": 2})]
    assert all(e["interface"] == "work" for e in told)
