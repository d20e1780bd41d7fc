"""Waiting for the host's usual pace: the meter's budget, and rounds taken again after a slow spell."""

from __future__ import annotations

import pytest

from hlc.artefacts.samples import Sample, Samples
from hlc.calibrate import engine, harness, timing
from hlc.calibrate.engine import HOST_RETAKES
from hlc.calibrate.harness import Implementation, Interface
from hlc.calibrate.host import LINK_CALLS, LINK_TOLERANCE, MEMORY_TOLERANCE, TOLERANCE, HostMeter
from hlc.calibrate.tasks import Context


class Scripted:
    """Readings from a script (the last one repeats), on a clock that each reading moves on by ``step``."""

    def __init__(self, readings: list[float], step: float = 0.01):
        self.readings = list(readings)
        self.step = step
        self.now = 0.0

    def read(self) -> float:
        self.now += self.step
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]

    def clock(self) -> float:
        return self.now


def meter(script: Scripted, **options) -> HostMeter:
    return HostMeter(reading=script.read, clock=script.clock, **options)


def test_a_steady_host_is_not_waited_for():
    script = Scripted([1.0])
    host = meter(script)
    assert host.settle() == 1.0 and host.settle() == 1.0
    assert host.waited == 0.0


def test_settle_waits_out_a_slow_spell():
    script = Scripted([1.0, 1.9, 1.8, 1.9, 1.05, 1.0])
    host = meter(script)
    assert host.slowdown() == 1.0  # the first reading sets the best pace
    assert host.settle() == pytest.approx(1.05)  # within the tolerance of 1.0: the spell is over
    assert host.waited == pytest.approx(0.03)  # from the first slow reading to the good one
    assert host.best == 1.0


def test_the_best_pace_is_the_fastest_reading():
    script = Scripted([2.0, 1.0, 1.5])
    host = meter(script)
    assert host.slowdown() == 1.0 and host.slowdown() == 1.0 and host.slowdown() == 1.5


def test_the_best_pace_is_a_low_quantile_not_an_outlier():
    """One reading far faster than the host ever runs again does not make
    the host slow for the rest of the run: the best pace is the tenth
    percentile of the readings, and the meter waits only while it has
    fewer than ten readings that say so."""
    script = Scripted([0.8] + [1.0] * 200)
    host = meter(script)
    assert host.slowdown() == 1.0
    assert host.settle() == 1.0
    assert host.waited <= 0.1 + 1e-9  # nine readings (0.09 s), then 1.0 is the tenth percentile
    for _ in range(50):
        assert host.settle() == 1.0
    assert host.best == 1.0 and host.waited <= 0.1 + 1e-9
    slow = meter(Scripted([1.0] * 50 + [1.3, 1.3, 1.0]))
    for _ in range(50):
        slow.slowdown()
    assert slow.settle() == 1.0 and slow.waited == pytest.approx(0.02)  # a spell is still waited out


def test_a_memory_spell_is_read_but_not_waited_for():
    """The memory yardstick's slowdown counts beyond MEMORY_TOLERANCE, scaled
    to the meter's tolerance; settle() reads the core's yardstick only."""
    core = Scripted([1.0])
    memory = Scripted([1.0, 1.0 + MEMORY_TOLERANCE, 2.0, 1.0])
    host = HostMeter(reading=core.read, memory=memory.read, clock=core.clock, memory_interval=0.0)
    assert host.memory_slowdown() == 1.0
    assert host.memory_slowdown() == pytest.approx(1 + TOLERANCE)  # just steady
    assert host.settle() == 1.0 and host.waited == 0.0
    assert host.memory_slowdown() == pytest.approx(1 + TOLERANCE / MEMORY_TOLERANCE)
    assert host.memory_slowdown() == 1.0


def test_a_memory_reading_stands_for_its_interval():
    core = Scripted([1.0])
    memory = Scripted([1.0, 2.0])
    host = HostMeter(reading=core.read, memory=memory.read, clock=core.clock, memory_interval=0.05)
    assert host.memory_slowdown() == 1.0 and host.memory_slowdown() == 1.0  # one reading
    core.now += 0.05
    assert host.memory_slowdown() > 1.0


def test_the_default_meter_watches_the_memory_too():
    host = HostMeter()
    assert host.memory is not None and host.memory_slowdown() == 1.0 and 0 < host.memory_best < 0.01
    assert HostMeter(reading=lambda: 1.0).memory is None


def test_a_host_that_stays_slow_costs_a_bounded_share_of_the_time():
    """A host that ran at its pace for ten seconds, then slows down for good."""
    script = Scripted([1.0] * 1000 + [3.0], step=0.01)
    host = meter(script, patience=1.0, share=0.25, allowance=2.0)
    for _ in range(1000):
        host.slowdown()
    script.now = host.started
    assert host.settle() == 3.0  # gives up after its patience
    assert host.waited == pytest.approx(1.0, abs=0.02)
    for _ in range(100):  # 100 rounds of 0.5 s of work, each preceded by a wait
        script.now += 0.5
        host.settle()
        assert host.waited <= 2.0 + 0.25 * (script.now - host.started) + 0.02
    assert host.waited > 0.2 * script.now  # it did use what it was allowed


def test_rounds_taken_again_share_the_budget_with_waits():
    """A host slow on every round: the rounds dropped and the waits together
    stay within the budget, and once it is spent neither is allowed."""
    script = Scripted([1.0] * 100 + [3.0], step=0.01)
    host = meter(script, patience=1.0, share=0.25, allowance=2.0)
    for _ in range(100):
        host.slowdown()
    script.now = host.started
    assert host.may_retake(1.5) and not host.may_retake(2.5)
    host.drop(1.5)
    assert host.spare() == pytest.approx(0.5)
    # what was left, and a quarter of the time waited: 0.5 / (1 - 0.25)
    assert host.settle() == 3.0 and host.waited == pytest.approx(0.5 / 0.75, abs=0.02)
    assert not host.may_retake(0.1)
    script.now += 4.0  # four seconds of work give one second more
    assert host.may_retake(0.9) and not host.may_retake(1.1)
    while host.may_retake(0.3):
        host.drop(0.3)
        script.now += 0.3
    assert host.waited + host.dropped <= 2.0 + 0.25 * (script.now - host.started) + 1e-9


def test_a_pace_the_host_keeps_becomes_its_best():
    """Once nine readings in ten are slower, the slower pace is the host's
    usual one: waiting for the old one would cost a share of the time on
    every round of the rest of the run."""
    script = Scripted([1.0] * 10 + [2.0], step=0.01)
    host = meter(script, patience=10.0, share=1.0)
    for _ in range(10):
        host.slowdown()
    assert host.settle() == 1.0  # 91 readings at 2.0 make it the tenth percentile: at it
    assert host.waited == pytest.approx(0.9)
    assert host.best == 2.0


# ---- in the profiler -------------------------------------------------------------------


def profile_one_point(tmp_path, readings_after_calls, monkeypatch, host_slow_above: float = 1,
                      memory: float = 1.0, budget: float = 2.0, waits: bool = True,
                      second_blocks: bool = False, unit: float = 2e-3) -> tuple[list[Sample], list[float]]:
    """Profile one implementation at one point; ``readings_after_calls(n)``: how
    many times slower than ``unit`` seconds (by default 2 ms, longer than the
    clock's minimum timing) the task's n-th call runs; the meter reads the
    host as slow just after a call more than ``host_slow_above`` times slower.
    Returns the samples and each call's duration.  ``budget``: the meter's
    seconds for waits and rounds taken again (its allowance; no share),
    with ``waits`` (the program's ``--host-waits``); without, the profiler's
    own (none).  Every block is short; without ``second_blocks``, none is
    confirmed by a later timing (engine.SHORT_BLOCK), so that each test
    sees one block alone.

    The timing clock is scripted: each reading moves it on by 0.1 µs, and a
    call by its duration, so the test does not depend on how busy the host
    running it is."""
    calls: list[float] = []
    spell = {"pending": False}
    clock = {"now": 0.0}

    def perf_counter() -> float:
        clock["now"] += 1e-7
        return clock["now"]

    def task(x):
        duration = readings_after_calls(len(calls) + 1)
        spell["pending"] = duration > host_slow_above
        calls.append(duration * unit)
        clock["now"] += duration * unit
        return x

    def reading() -> float:
        slow, spell["pending"] = spell["pending"], False
        return 3.0 if slow else 1.0

    def meter(tolerance: float, **given) -> HostMeter:
        host = HostMeter(tolerance=tolerance, reading=reading, patience=0.05, memory=lambda: memory,
                         share=0.0, allowance=budget if waits else budget_of_profiler(**given))
        host.memory_readings = [1.0]  # as if read at its best before: ``memory`` times slower now
        return host

    monkeypatch.setattr(harness, "HostMeter", meter)
    monkeypatch.setattr(timing.time, "perf_counter", perf_counter)
    if not second_blocks:
        monkeypatch.setattr(engine, "SHORT_BLOCK", 0.0)
    implementation = Implementation("busy", task, lambda v: True, lambda p, v: [{}], lambda r, p, v: {})
    interface = Interface("f", lambda: iter([{"i": 0}]), lambda rng: {"i": 0}, lambda p, seed, size: (1,),
                          lambda x, P: {"n": 1}, [implementation], "busy", verify=0, repeat=3)
    out = tmp_path / "samples.jsonl"
    assert harness.main("lib", "lib.hl", [interface], ["--out", str(out)] + (["--host-waits"] if waits else [])) == 0
    return list(Samples.read(out).samples), calls


def budget_of_profiler(share: float | None = None, allowance: float | None = None) -> float:
    """The allowance the harness gives the profiler's meter (share and allowance both none)."""
    assert share == 0.0 and allowance == 0.0
    return 0.0


def test_a_block_the_host_slowed_down_is_taken_again(tmp_path, monkeypatch):
    # every call lasts the clock's minimum, so the checking call (1) is the
    # block's first timing and calls 2 and 3 complete it; call 3 falls in a
    # spell, which the meter sees at the block's end: the block is taken
    # again (4, 5, 6), with no checking call this time
    samples, calls = profile_one_point(tmp_path, lambda n: 3 if n == 3 else 1, monkeypatch)
    assert len(calls) == 3 + 3
    (sample,) = samples
    assert len(sample.timings) == 3 and max(sample.timings) < 5e-3  # the spell's timing was dropped
    assert min(sample.timings) == pytest.approx(2e-3, rel=1e-3)  # on the scripted clock
    assert sample.host == 1.0


def test_the_profiler_marks_a_block_the_host_slowed_down_and_measures_on(tmp_path, monkeypatch):
    """Without --host-waits, the profiler takes no block again: the sample
    keeps the spell's timing and says so, and the fit decides (it leaves
    such samples out, unless they are more than a quarter of them)."""
    samples, calls = profile_one_point(tmp_path, lambda n: 3 if n == 3 else 1, monkeypatch, waits=False)
    assert len(calls) == 3
    (sample,) = samples
    assert sample.host == 3.0 and max(sample.timings) > 5e-3


def test_the_evaluator_always_waits_and_the_profiler_on_request():
    one = Context(1)
    options = harness.parser("lib").parse_args([])
    assert harness.host_meter(options, one).spare() == 0.0
    options = harness.parser("lib").parse_args(["--host-waits"])
    assert harness.host_meter(options, one).spare() > 0.0
    options = harness.parser("lib").parse_args(["--evaluate", "build"])
    assert harness.host_meter(options, one).spare() > 0.0


class Ranks:
    """A stand-in for a context of two ranks: its all-reduces are counted, its maxima are the values."""

    size = 2

    def __init__(self):
        self.reduced = 0
        self.world = self

    def reduce(self, vector, operation="sum", out=None):
        assert operation == "max" and vector.size == 1
        self.reduced += 1
        return vector

    def maxima(self, *values: float) -> list[float]:
        return [float(v) for v in values]


def test_the_link_between_ranks_is_watched_on_several_ranks_only():
    options = harness.parser("lib").parse_args([])
    assert harness.host_meter(options, Context(1)).link is None
    assert HostMeter().link_slowdown() == 1.0
    ranks = Ranks()
    host = harness.host_meter(options, ranks)
    assert host.link is not None and host.link_slowdown() == 1.0
    assert ranks.reduced == 3 * LINK_CALLS  # three batches, the least of them counts
    assert 0 < host.link_readings[0] < 0.01


def test_a_link_spell_is_read_at_every_call_scaled_and_not_waited_for():
    """The link's slowdown counts beyond LINK_TOLERANCE, scaled to the
    meter's tolerance.  It is a collective: read at every call, however
    soon after the last (a rank's own clock may not decide it)."""
    core = Scripted([1.0])
    link = Scripted([1.0, 1.0 + LINK_TOLERANCE, 3.0, 1.0], step=0.0)
    host = HostMeter(reading=core.read, clock=core.clock, link=link.read)
    assert host.link_slowdown() == 1.0
    assert host.link_slowdown() == pytest.approx(1 + TOLERANCE)  # just steady
    assert host.settle() == 1.0 and host.waited == 0.0
    assert host.link_slowdown() == pytest.approx(1 + 2 * TOLERANCE / LINK_TOLERANCE)
    assert host.link_slowdown() == 1.0
    assert len(host.link_readings) == 4


def test_a_block_in_a_link_spell_is_kept_and_marked_not_taken_again():
    """The slowdown a block reports is the largest of the core's, the
    memory's and the link's, over the ranks; only the core's is waited for
    and retaken (the evaluator's meter has a budget for both)."""
    core = Scripted([1.0])
    link = Scripted([1.0, 1.0, 2.5], step=0.0)
    host = HostMeter(reading=core.read, clock=core.clock, link=link.read, memory=lambda: 1.0)
    timing_engine = engine.TimingEngine(Ranks(), None, host, {}, None, None)
    attempts = []
    outcome, slowdown = timing_engine.at_usual_pace(lambda attempt: attempts.append(attempt) or "timed")
    assert outcome == "timed" and slowdown == 1.0 and attempts == [0]
    timing_engine.at_usual_pace(lambda attempt: "timed")
    outcome, slowdown = timing_engine.at_usual_pace(lambda attempt: attempts.append(attempt) or "timed")
    assert attempts == [0, 0]
    assert slowdown == pytest.approx(1 + 1.5 * TOLERANCE / LINK_TOLERANCE) and slowdown > 1 + TOLERANCE


def test_a_short_block_a_later_timing_finds_slow_is_taken_again_and_the_faster_kept(tmp_path, monkeypatch):
    """A short block whose timings a spell slowed unseen (the meter reads
    nothing: no retake) is confirmed by one more timing after it; that
    timing runs faster, so it starts a second block, and the block with
    the lower median is kept (the other's timings count as retaken)."""
    slow_first = {1: 2, 2: 2, 3: 2}  # the whole first block in a spell: twice as long
    samples, calls = profile_one_point(tmp_path, lambda n: slow_first.get(n, 1), monkeypatch,
                                       host_slow_above=10, second_blocks=True)
    assert len(calls) == 3 + 3  # the block; then the confirming timing, the second block's first
    (sample,) = samples
    assert sample.timings == pytest.approx([2e-3] * 3, rel=1e-3)


def test_a_short_block_a_later_timing_confirms_keeps_that_timing_too(tmp_path, monkeypatch):
    samples, calls = profile_one_point(tmp_path, lambda n: 1, monkeypatch, host_slow_above=10,
                                       second_blocks=True)
    (sample,) = samples
    assert len(calls) == 4 and sample.timings == pytest.approx([2e-3] * 4, rel=1e-3)


def test_a_long_block_is_taken_once(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "SHORT_BLOCK", 5e-3)  # below the block's three timings of 2 ms
    samples, calls = profile_one_point(tmp_path, lambda n: 1, monkeypatch, host_slow_above=10,
                                       second_blocks=True)
    assert len(calls) == 3


def test_a_block_is_taken_again_only_so_often(tmp_path, monkeypatch):
    samples, calls = profile_one_point(tmp_path, lambda n: 3, monkeypatch)
    assert len(calls) == 3 * (1 + HOST_RETAKES)
    (sample,) = samples
    assert min(sample.timings) > 5e-3 and sample.host == 3.0  # kept, and marked


def test_a_block_is_not_taken_again_beyond_the_budget(tmp_path, monkeypatch):
    """With no budget for the host, a block it slowed down is kept as it was, and marked."""
    samples, calls = profile_one_point(tmp_path, lambda n: 3, monkeypatch, budget=0.0)
    assert len(calls) == 3
    (sample,) = samples
    assert sample.host == 3.0


def test_a_block_in_a_memory_spell_is_kept_and_marked_not_taken_again(tmp_path, monkeypatch):
    """The memory's spells are recorded in the sample (and the fit leaves it
    out), not waited for nor retaken: waiting them out cost too much."""
    samples, calls = profile_one_point(tmp_path, lambda n: 1, monkeypatch, memory=1.5)
    assert len(calls) == 3
    (sample,) = samples
    assert sample.host == pytest.approx(1 + 0.5 * TOLERANCE / MEMORY_TOLERANCE, abs=1e-3)
    assert sample.host > 1 + TOLERANCE


def test_cold_timings_are_dropped_and_accounted_as_such(tmp_path, monkeypatch):
    # the first calls run with cold caches (three and two times slower), then
    # the task keeps its pace: the block times on until three timings agree;
    # the two cold ones (the checking call the first) are the account's cold
    # timings, not its measuring
    samples, calls = profile_one_point(tmp_path, lambda n: {1: 3, 2: 2}.get(n, 1), monkeypatch,
                                       host_slow_above=10)
    assert len(calls) == 2 + 3
    (sample,) = samples
    assert sample.timings == pytest.approx([2e-3] * 3, rel=1e-3)
    assert not sample.noisy
    (account,) = Samples.read(tmp_path / "samples.jsonl").accounts
    assert account.seconds["cold timings"] == pytest.approx(sum(calls[:2]), abs=1e-3)  # kept in milliseconds
    assert account.seconds["measuring"] == pytest.approx(sum(calls[2:]), abs=1e-3)


def test_a_short_task_is_warmed_by_its_first_timing_kept_when_it_agrees_closely(tmp_path, monkeypatch):
    """A call shorter than the clock's minimum (0.6 ms: two calls a timing):
    the checking call (1) warmed it once, and no untimed calls follow; the
    first timing (2, 3), 1% slower than the rest, is kept."""
    samples, calls = profile_one_point(tmp_path, lambda n: 1.01 if n in (2, 3) else 1, monkeypatch,
                                       host_slow_above=10, unit=0.6e-3)
    assert len(calls) == 1 + 2 * 3
    (sample,) = samples
    assert sample.repeat == 2
    assert sample.timings == pytest.approx([0.606e-3, 0.6e-3, 0.6e-3], rel=1e-3)
    (account,) = Samples.read(tmp_path / "samples.jsonl").accounts
    assert account.seconds.get("cold timings", 0.0) == 0.0


def test_the_first_timing_after_a_short_check_is_cold_when_it_lies_above_the_first_agreement(tmp_path,
                                                                                          monkeypatch):
    """The same task with a first timing 3% slower than the rest: within the
    5% that the later timings of a block are allowed, but timings of a
    millisecond that all start a little cold are not caught by that, so the
    first is held to FIRST_AGREEMENT (2%), dropped, and one more is taken."""
    assert timing.FIRST_AGREEMENT < 0.03 < timing.AGREEMENT
    samples, calls = profile_one_point(tmp_path, lambda n: 1.03 if n in (2, 3) else 1, monkeypatch,
                                       host_slow_above=10, unit=0.6e-3)
    assert len(calls) == 1 + 2 * 4
    (sample,) = samples
    assert sample.timings == pytest.approx([0.6e-3] * 3, rel=1e-3)
    (account,) = Samples.read(tmp_path / "samples.jsonl").accounts
    assert account.seconds["cold timings"] == pytest.approx(sum(calls[1:3]), abs=1e-3)  # kept in milliseconds
    assert account.seconds["cold timings"] > 0


def test_a_block_keeps_at_most_three_k_timings_when_its_cold_ones_turn_out_warm(tmp_path, monkeypatch):
    """Timings that never settle: the first looks cold beside the next ones
    until later ones are as slow, and then none is cold.  The block still
    keeps its last 3k timings only, the others counted as warm-up."""
    durations = [2.0, 1.0, 3.0, 2.0, 2.5, 1.0, 1.0, 3.0, 1.6, 2.5]
    samples, calls = profile_one_point(tmp_path, lambda n: durations[min(n, len(durations)) - 1], monkeypatch,
                                       host_slow_above=10)
    assert len(calls) == len(durations)
    (sample,) = samples
    assert len(sample.timings) == 3 * timing.RETAKES
    assert list(sample.timings) == pytest.approx(calls[-len(sample.timings):], rel=1e-3)
