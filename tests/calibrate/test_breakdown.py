"""Where a build's time goes: the account of activities, and the one a profile and a build keep."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

import hlc
from hlc.artefacts.samples import Account, Samples
from hlc.calibrate import breakdown
from hlc.calibrate.breakdown import MEASURING, Breakdown
from hlc.calibrate.run import profile

from .test_profile import DESCRIPTIONS


@pytest.fixture
def clock(monkeypatch):
    """A scripted clock: ``clock.advance(s)`` moves it on by s seconds."""

    class Clock:
        now = 0.0

        def advance(self, seconds: float) -> None:
            self.now += seconds

    scripted = Clock()
    monkeypatch.setattr(breakdown.time, "perf_counter", lambda: scripted.now)
    return scripted


def test_a_block_counts_its_time_less_what_is_counted_inside_it(clock):
    spent = Breakdown()
    with spent.spending("warm-up"):
        clock.advance(1.0)
        with spent.spending("inputs"):
            clock.advance(0.25)
        spent.add(MEASURING, 2.0)
        clock.advance(2.0 + 0.5)
    with spent.spending("checks"):
        clock.advance(0.125)
    assert spent.seconds == {"inputs": 0.25, MEASURING: 2.0, "warm-up": 1.5, "checks": 0.125}


def test_the_unaccounted_rest_of_the_wall_time_is_other():
    spent = Breakdown({MEASURING: 3.0, "warm-up": 1.0}, wall=10.0)
    closed = spent.closed()
    assert closed.seconds["other"] == pytest.approx(6.0) and closed.wall == 10.0
    assert closed.measuring_share == pytest.approx(0.3)
    assert closed.closed().seconds == closed.seconds  # closing twice changes nothing
    text = closed.text("where the time went")
    assert text.splitlines()[0] == "where the time went: 10.0 s, 30% of it measuring"
    assert [line.split()[0] for line in text.splitlines()[1:]] == ["other", MEASURING, "warm-up"]


def test_accounts_round_trip_and_add_up():
    first = Breakdown({MEASURING: 1.5, "sizing": 0.5}, wall=3.0, restarts=1)
    second = Breakdown({MEASURING: 2.0}, wall=4.0)
    assert Breakdown.from_dict(first.as_dict()) == first
    records = Samples.of_records([{"kind": "breakdown", "P": 1, **first.as_dict()},
                                  {"kind": "point", "interface": "f", "P": 1, "verify": False, "index": 0},
                                  {"kind": "breakdown", "P": 2, **second.as_dict()}])
    assert [a.P for a in records.accounts] == [1, 2] and isinstance(records.accounts[0], Account)
    total = Breakdown.of_samples(records.accounts)
    assert total.seconds == {MEASURING: 3.5, "sizing": 0.5} and total.wall == 7.0 and total.restarts == 1


def test_an_unknown_activity_is_a_value_error():
    with pytest.raises(ValueError, match="activity: 'lunch'"):
        Breakdown().add("lunch", 1.0)


def test_a_profile_accounts_for_its_time(tmp_path):
    """The program writes its account into the samples file; the parent adds
    compiling and process starts; the parts never exceed the whole."""
    library = hlc.parse_file(DESCRIPTIONS / "vector.hl")
    samples = tmp_path / "samples.jsonl"
    result = profile(library, samples, tmp_path / "build")
    records = Samples.read(samples)
    (written,) = records.accounts
    program = Breakdown.of_account(written)
    timed = sum(sum(s.timings) * s.repeat for s in records.samples)
    # Measuring is the timings the samples keep (timings dropped for a slow host are 'retaken').
    # A sample records its last repeat count only: a timing that fell short grew it for the
    # block's later timings, so its earlier ones ran fewer calls than `timed` counts for them.
    # Leaving one of a block's three timings out of the account would lose a third.
    # (the account keeps milliseconds)
    assert 0.8 * timed - 1e-3 <= program.seconds[MEASURING] <= timed + 1e-3
    for activity in ("warm-up", "checks", "inputs", "host waits"):
        assert program.seconds[activity] > 0, activity
    assert program.accounted <= program.wall
    spent = result.breakdown.closed()
    assert spent.seconds["process starts"] > 0 and spent.restarts == 0
    assert spent.seconds[MEASURING] == pytest.approx(program.seconds[MEASURING], rel=1e-3)
    assert sum(spent.seconds.values()) == pytest.approx(spent.wall, rel=1e-6)


def test_a_command_counts_from_its_process_s_start(tmp_path):
    """A process's start is read from the system: what ran before hlc was
    imported counts too."""
    code = ("import time; time.sleep(0.5); from hlc.calibrate.breakdown import process_started; "
            "print(time.monotonic() - process_started())")
    age = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 0.5 <= age < 30
    assert breakdown.process_started() <= time.monotonic()


def test_a_build_accounts_for_the_time_before_it_was_called(tmp_path):
    """`hlc build` passes its process's start: the build's seconds, its
    account's wall and its ``start`` include what came before the call."""
    before = time.monotonic() - 2.0
    result = hlc.build(DESCRIPTIONS / "squares.hl", out=tmp_path / "squares", quick=True, started=before)
    assert result.breakdown.seconds["start"] >= 2.0
    assert result.seconds >= result.breakdown.wall >= 2.0 + result.breakdown.seconds.get(MEASURING, 0.0)
    assert "start" in result.breakdown.text()
    called = hlc.build(DESCRIPTIONS / "squares.hl", out=tmp_path / "again", quick=True)
    assert called.breakdown.seconds["start"] < 1.0  # a call from Python counts from the call
