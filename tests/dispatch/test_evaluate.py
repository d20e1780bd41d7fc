"""hlc evaluate: held-out points, every alternative measured, the figures."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import statistics
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hlc
from hlc.artefacts import evaluation as artefact
from hlc.artefacts.models import Fingerprint, Models
from hlc.artefacts.models import load as load_models
from hlc.artefacts.samples import Evaluated, Sample, Samples
from hlc.calibrate.harness import Implementation
from hlc.calibrate.run import ProfileError
from hlc.calibrate.timing import MINIMUM_TIMING
from hlc.cli import main
from hlc.evaluation import judge, ratio, ratio_of, summarize, turns_on_the_input
from hlc.evaluation.oracle import (
    AGAIN,
    CONFIRM_ROUNDS,
    DISPATCHED,
    ORACLE_TIMING,
    PROBES,
    SETTLE_ROUNDS,
    Evaluator,
    median_interval,
    probes,
    verdict_interval,
)
from hlc.evaluation.replay import changed_sources, rejudge, replay, replay_oracle
from hlc.evaluation.text import probe_row, summary_rows
from hlc.model.fingerprint import machine_differences

DESCRIPTIONS = Path(__file__).resolve().parents[1] / "descriptions"


def parsed(label: str) -> dict:
    """``b k=2`` → implementation and parameters."""
    implementation, *settings = label.split()
    return {"implementation": implementation, "parameters": {k: int(v) for k, v in (s.split("=") for s in settings)}}


def record(chosen: str, times: dict[str, float], index: int = 0, candidates: list[dict] | None = None) -> Evaluated:
    """An evaluation line: the chosen label, and each candidate's seconds (or the candidates themselves)."""
    return Evaluated.from_record({
        "kind": "evaluation", "interface": "f", "P": 1, "index": index, "point": {"i": index},
        "variables": {"n": index}, "chosen": parsed(chosen),
        "candidates": candidates or [{"label": k, **parsed(k), "seconds": v} for k, v in times.items()]})


def test_judge_compares_the_chosen_alternative_with_the_fastest():
    line = record("b k=2", {"a": 2.0, "b k=2": 1.1, "b k=1": 1.0, DISPATCHED: 0.5, AGAIN: 1.9})
    point = judge(line, 0.03)
    assert point.chosen_label == "b k=2"
    assert point.best_label == "b k=1"  # the dispatched call and the second reference timing are no alternatives
    assert point.penalty == pytest.approx(0.1)
    assert point.right is False
    assert point.dispatched.seconds == 0.5 and point.again.seconds == 1.9
    assert judge(record("b k=2", {"b k=2": 1.02, "b k=1": 1.0}), 0.03).right is True


def timed(seconds: list[float]) -> dict:
    """A candidate timed in rounds 1, 2, …"""
    return {"seconds": statistics.median(seconds), "rounds": [[r, t] for r, t in enumerate(seconds, start=1)]}


def test_ratio_is_taken_round_by_round():
    # A slow spell hits a from round 3 and b from round 4: the medians say a is
    # twice as slow, the rounds say the two are the same.
    a, b = timed([1.0, 1.0, 2.0, 2.0, 2.0]), timed([1.0, 1.0, 1.0, 2.0, 2.0])
    assert a["seconds"] / b["seconds"] == 2.0
    assert ratio(a, b) == 1.0
    # only the rounds both were timed in count (b was timed again in round 9)
    b["rounds"].append([9, 100.0])
    assert ratio(a, b) == 1.0
    # too few shared rounds, or lines without rounds: the ratio of medians
    assert ratio(timed([1.0, 3.0]), timed([1.0, 1.0])) == 2.0
    assert ratio({"seconds": 3.0}, {"seconds": 1.5}) == 2.0


@given(st.lists(st.floats(1e-6, 1.0), min_size=3, max_size=15), st.floats(0.5, 2.0), st.data())
def test_a_spell_that_slows_both_candidates_cancels(base, factor, data):
    """Each round's host speed multiplies both timings of the round: the round-by-round ratio is exact."""
    speeds = data.draw(st.lists(st.floats(0.5, 3.0), min_size=len(base), max_size=len(base)))
    a = timed([t * factor * s for t, s in zip(base, speeds, strict=True)])
    b = timed([t * s for t, s in zip(base, speeds, strict=True)])
    assert ratio(a, b) == pytest.approx(factor)
    assert ratio(a, a) == 1.0


def test_judge_compares_round_by_round():
    line = record("b k=2", {}, candidates=[{"label": "b k=2", **parsed("b k=2"), **timed([1.0, 1.0, 2.0, 2.0, 2.0])},
                                           {"label": "b k=1", **parsed("b k=1"), **timed([1.0, 1.0, 1.0, 2.0, 2.0])},
                                           {"label": "a", **parsed("a"), **timed([0.9, 0.9, 1.8, 1.8, 1.8])}])
    point = judge(line, 0.03)
    assert point.best_label == "a" and point.penalty == pytest.approx(1 / 0.9 - 1)
    assert judge(replace(line, candidates=line.candidates[:2]), 0.03).right is True


def test_the_oracle_times_again_each_alternative_that_beat_the_chosen_one():
    """Confirmation rounds go to the chosen alternative, to those within CLOSE of
    the fastest, and to any that was faster than the chosen one round by round
    (here x: slow by its median, faster in two rounds of three), not to the rest."""
    evaluator = object.__new__(Evaluator)
    evaluator.rounds = [[1, 2, 3] for _ in range(4)]
    confirmed: list[list[int]] = []
    evaluator.time_round = lambda interface, ready, positions, *rest: confirmed.append(positions)
    ready = [(Implementation("f", None, None, None, None), {"k": k}, 1) for k in (1, 2, 3, 4)]
    timings = [[1.0, 3.0, 1.0],   # chosen: f k=1
               [0.9, 2.9, 5.0],   # x: median 2.9, yet faster than the chosen in rounds 1 and 2
               [1.5, 3.5, 1.6],   # slower in every round
               [0.5, 0.5, 0.5]]   # the fastest
    choice = SimpleNamespace(implementation="f", settings={"f": {"k": 1}}, parameters={"k": 1})
    evaluator.confirm(None, ready, timings, (), {}, choice)
    assert confirmed == [[0, 1, 3]] * CONFIRM_ROUNDS


def test_the_interval_of_a_median_takes_order_statistics_by_the_binomial_tail():
    values = [float(v) for v in range(1, 10)]  # nine values: P(B(9, 1/2) <= 1) = 0.02, P(<= 2) = 0.09
    assert median_interval(values, 0.9) == (2.0, 8.0)
    assert median_interval(values[:5], 0.9) == (1.0, 5.0)  # P(B(5, 1/2) = 0) = 0.03
    assert median_interval(values[:3], 0.9) == (-math.inf, math.inf)  # 0.125: too few to bound it
    assert median_interval(list(reversed(values)), 0.5) == (3.0, 7.0)  # P(<= 2) = 0.09, P(<= 3) = 0.25


def test_the_interval_of_a_median_holds_it_as_often_as_it_says():
    """Over many samples of a skewed distribution, the 90% interval holds the
    true median in at least 90% of them (it is conservative: the binomial
    tail is discrete), and not in all."""
    rng = np.random.default_rng(7)
    for n in (6, 9, 15, 24):
        held = sum(low <= 1.0 <= high for low, high in
                   (median_interval(rng.lognormal(0.0, 0.3, n).tolist(), 0.9) for _ in range(4000)))
        assert 0.9 <= held / 4000 < 1.0


def settling(timings: list[list[float]], names: list[str], chosen: int, exhaustive: bool = False,
             then: list[float] | None = None,
             rounds: list[list[int]] | None = None) -> tuple[Evaluator, list[list[int]]]:
    """An evaluator that has timed ``timings`` in rounds 1, 2, … (or in
    ``rounds``), and whose further rounds give each candidate the seconds in
    ``then``; returns it and the positions of each settling round."""
    evaluator = object.__new__(Evaluator)
    evaluator.rounds = rounds or [list(range(1, len(t) + 1)) for t in timings]
    evaluator.tolerance = 0.03
    evaluator.exhaustive = exhaustive
    settled: list[list[int]] = []

    def time_round(interface, ready, positions, round_, timings, *rest):
        settled.append(positions)
        number = max(max(r) for r in evaluator.rounds) + 1
        for position in positions:
            timings[position].append(then[position])
            evaluator.rounds[position].append(number)

    evaluator.time_round = time_round
    ready = [(Implementation(name, None, None, None, None), {"k": k}, 1) for k, name in enumerate(names)]
    choice = SimpleNamespace(implementation=names[chosen], settings={names[chosen]: {"k": chosen}},
                             parameters={"k": chosen})
    evaluator.settle(None, ready, timings, (), {}, choice)
    return evaluator, settled


def test_a_verdict_near_the_tolerance_gets_more_rounds_on_either_side():
    """The chosen alternative a hair slower than the tolerance allows, or a
    hair faster, with rounds that spread either way: both get more rounds,
    side by side with their rival, not the third alternative, far slower;
    here the further rounds put the two 1% apart, and the rounds stop once
    the verdict is clear."""
    spread = [0.94, 1.12, 0.97, 1.09, 1.0, 1.08, 0.95, 1.1, 1.04]  # median 1.04, wide
    for hair in (1.0, 0.98):
        timings = [[hair * t for t in spread], [1.0] * 9, [2.0] * 9]
        evaluator, settled = settling(timings, ["a", "b", "c"], chosen=0, then=[1.01, 1.0, 2.0])
        assert settled and all(positions == [0, 1] for positions in settled)
        assert len(settled) < SETTLE_ROUNDS  # decided once the interval lies below 1.03
        assert len(timings[0]) == 9 + len(settled) and len(timings[2]) == 9


def test_a_clear_verdict_gets_no_more_rounds():
    """Clearly right (a tight 1.00), clearly wrong (1.20, outside the band):
    no settling rounds."""
    rounds = [1.0, 1.01, 0.99, 1.0, 1.0, 1.01]
    for ratio_ in (1.0, 1.2):
        _, settled = settling([[ratio_ * t for t in rounds], list(rounds)], ["a", "b"], chosen=0, then=[1.0, 1.0])
        assert settled == []


def test_a_verdict_from_three_rounds_is_settled_when_their_range_spans_the_tolerance():
    """A setting timed in three rounds only has no 90% interval for its
    median: its ratios' range stands in.  Three ratios of 1.29, 0.98 and
    1.4 (a radix sort's spread at a million keys) span 1.03 and are timed
    again; 1.2, 1.25 and 1.3 do not, nor do 1.0, 1.01 and 0.99."""
    spans = verdict_interval([1.29, 0.98, 1.4])
    assert spans == (0.98, 1.4)
    assert verdict_interval([1.0] * 5) == median_interval([1.0] * 5)
    _, settled = settling([[1.29, 0.98, 1.4], [1.0] * 3], ["a", "b"], chosen=0, then=[1.0, 1.0])
    assert settled and all(positions == [0, 1] for positions in settled)
    assert len(settled) < SETTLE_ROUNDS
    for clear in ([1.2, 1.25, 1.3], [1.0, 1.01, 0.99]):
        _, settled = settling([clear, [1.0] * 3], ["a", "b"], chosen=0, then=[1.0, 1.0])
        assert settled == []


def test_a_verdict_its_shared_rounds_and_the_medians_disagree_on_is_settled():
    """Three shared rounds in a slow spell put a 36% behind b; a's four
    rounds of its own, seconds later, put it a quarter ahead: the pair is
    timed again side by side.  Where both say the same, it is not."""
    rounds = [[1, 2, 3, 10, 11, 12, 13], [1, 2, 3, 4, 5, 6]]
    a = [6.4, 6.8, 6.3, 3.8, 3.8, 3.7, 3.8]
    b = [4.7, 4.8, 5.1, 5.0, 4.9, 5.0]
    _, settled = settling([list(a), list(b)], ["a", "b"], chosen=0, then=[3.8, 5.0],
                          rounds=[list(r) for r in rounds])
    assert settled and all(positions == [0, 1] for positions in settled)
    _, settled = settling([[6.4, 6.8, 6.3, 6.5, 6.6, 6.4, 6.5], list(b)], ["a", "b"], chosen=0,
                          then=[3.8, 5.0], rounds=[list(r) for r in rounds])
    assert settled == []


def test_a_verdict_that_stays_undecided_stops_after_the_settling_rounds():
    spread = [0.94, 1.12, 0.97, 1.09, 1.0, 1.08, 0.95, 1.1, 1.04]
    timings = [list(spread), [1.0] * 9]
    _, settled = settling(timings, ["a", "b"], chosen=0, then=[1.03, 1.0])
    assert len(settled) == SETTLE_ROUNDS


def test_exhaustive_settles_each_implementation_s_own_parameters_too():
    """With every setting timed, an implementation's setting at the module's
    parameters (its first) against another of its settings decides whether
    its parameters are optimal, chosen or not: that pair is settled too."""
    spread = [0.94, 1.12, 0.97, 1.09, 1.0, 1.08, 0.95, 1.1, 1.04]
    timings = [[0.5] * 9,  # a: chosen, far the fastest
               list(spread),  # b at the module's parameters
               [1.0] * 9]  # b at another setting
    _, settled = settling(timings, ["a", "b", "b"], chosen=0, exhaustive=True, then=[0.5, 1.0, 1.0])
    assert settled and all(positions == [1, 2] for positions in settled)
    _, settled = settling([list(t) for t in timings], ["a", "b", "b"], chosen=0, exhaustive=False,
                          then=[0.5, 1.0, 1.0])
    assert settled == []


def test_the_oracle_times_the_fastest_and_the_chosen_again_on_another_input():
    """The second input's contenders: the alternatives within CLOSE (10%) of
    the fastest, each implementation's fastest within REACH (50%) of it, and
    the chosen one however slow; never the dispatched call or the
    reference's second timing."""
    evaluator = object.__new__(Evaluator)
    evaluator.rounds = [[1, 2, 3] for _ in range(9)]
    names = ["f", "f", "f", "f", "g", "g", "h"]
    ready = [(Implementation(name, None, None, None, None), {"k": k}, 1) for k, name in enumerate(names, start=1)]
    ready += [(Implementation(DISPATCHED, None, None, None, None), {}, 1),
              (Implementation(AGAIN, None, None, None, None), {}, 1)]
    timings = [[2.0] * 3,  # f k=1: chosen
               [1.0] * 3,  # f k=2: the fastest
               [1.09] * 3,  # f k=3: within 10%
               [1.2] * 3,  # f k=4: neither
               [1.45] * 3,  # g k=5: g's fastest, within 50%
               [1.46] * 3,  # g k=6: not g's fastest
               [1.6] * 3,  # h: its fastest, beyond 50%
               [0.5] * 3, [1.0] * 3]
    choice = SimpleNamespace(implementation="f", settings={"f": {"k": 1}}, parameters={"k": 1})
    assert evaluator.contenders(ready, timings, choice) == [0, 1, 2, 4]


def test_an_evaluation_line_keeps_the_hosts_worst_slowdown_over_both_inputs():
    """The host's slowdown an evaluation line records is the worst of all the
    point's rounds: the first input's (a slow spell here) as well as the
    second input's, whose rounds start the engine's count afresh."""
    written: list = []

    def time_rounds(interface, ready, arguments, point, rounds):
        engine.slowdown = 1.6  # a spell during the first input's rounds
        return [[1.0, 1.0, 1.0] for _ in ready]

    def other_input(*arguments):
        engine.slowdown = 1.02  # the second input's rounds: the count starts again
        return ()

    engine = SimpleNamespace(slowdown=1.0, time_rounds=time_rounds,
                             warm_up=lambda interface, candidates, *rest: [(*c, 1) for c in candidates])
    evaluator = object.__new__(Evaluator)
    evaluator.engine = engine
    evaluator.context = SimpleNamespace(size=1, rank=0)
    evaluator.state = SimpleNamespace(excluded=set())
    evaluator.program_run = SimpleNamespace(inputs=lambda interface, seed, point: ((), {"n": 4}),
                                            write=written.extend, seed=1)
    evaluator.module = SimpleNamespace(
        sort=None, choose_sort_at=lambda **variables: SimpleNamespace(implementation="a", parameters={},
                                                                      settings={}, seconds=1.0))
    evaluator.candidates = lambda *rest: [(Implementation("a", None, None, None, None), {})]
    evaluator.confirm = lambda *rest: None
    evaluator.settle = lambda *rest: None
    evaluator.other_input = other_input
    evaluator.timed_candidates = lambda *rest: ()
    evaluator.measure(SimpleNamespace(name="sort", reference="a"), True, 0, {"q": 1})
    [line] = [entry for entry in written if isinstance(entry, Evaluated)]
    assert line.host == 1.6


def two_inputs(first: dict[str, float], second: dict[str, float], chosen: str = "a") -> Evaluated:
    """An evaluation line timed on two inputs (each candidate's seconds on each)."""
    line = record(chosen, first)
    return replace(line, other_input=tuple(c for c in record(chosen, second).candidates))


def test_a_choice_turns_on_the_input_when_no_alternative_is_right_on_both():
    # a wins the first input by 20%, b the second: whichever the models choose is wrong on one
    assert turns_on_the_input(judge(two_inputs({"a": 1.0, "b": 1.2}, {"a": 1.2, "b": 1.0}), 0.03), 0.03) is True
    # c is within 3% of the fastest on both inputs: a choice of c is right at both
    assert turns_on_the_input(judge(two_inputs({"a": 1.0, "b": 1.2, "c": 1.02}, {"a": 1.2, "b": 1.0, "c": 1.02}),
                                    0.03), 0.03) is False
    # the same winner on both
    assert turns_on_the_input(judge(two_inputs({"a": 1.0, "b": 1.5}, {"a": 1.0, "b": 1.04}), 0.03), 0.03) is False
    # a wider tolerance makes a and b both right on both
    assert turns_on_the_input(judge(two_inputs({"a": 1.0, "b": 1.2}, {"a": 1.2, "b": 1.0}), 0.03), 0.25) is False
    assert turns_on_the_input(judge(record("a", {"a": 1.0, "b": 1.2}), 0.03), 0.03) is None  # one input


def test_the_summary_says_which_choices_turn_on_the_input():
    points = [judge(line, 0.03) for line in [
        two_inputs({"a": 1.0, "b": 1.2}, {"a": 1.2, "b": 1.0}),                # turns; right on the first
        two_inputs({"a": 1.0, "b": 1.5}, {"a": 1.0, "b": 1.5}),                # decided, right
        two_inputs({"a": 1.5, "b": 1.0}, {"a": 1.5, "b": 1.0}),                # decided, wrong
        record("a", {"a": 1.0, "b": 2.0}),                                     # no second input
    ]]
    summary = summarize(points, 0.03, baseline="a", reference="a")
    assert summary.right_share == pytest.approx(3 / 4)
    assert summary.turns_on_input == artefact.Share(1 / 3, 3)
    assert summary.right_where_decided == artefact.Share(1 / 2, 2)
    assert artefact.Summary.from_json(json.loads(json.dumps(summary.to_json()))) == summary
    assert summarize(points[3:], 0.03, baseline="a", reference="a").turns_on_input is None


def test_the_summary_gives_the_right_choices_where_the_compared_timings_settled():
    def timed(chosen: str, times: dict[str, tuple[float, bool]]) -> Evaluated:
        return record(chosen, {}, candidates=[{"label": k, **parsed(k), "seconds": v, "noisy": noisy}
                                              for k, (v, noisy) in times.items()])

    points = [judge(line, 0.03) for line in [
        timed("a", {"a": (1.0, True), "b": (1.2, False)}),    # right; the chosen one's timings never agreed
        timed("a", {"a": (1.5, False), "b": (1.0, True)}),    # wrong; the fastest one's never agreed
        timed("a", {"a": (1.0, False), "b": (2.0, True)}),    # right; only a slower one's never agreed
        timed("a", {"a": (1.2, False), "b": (1.0, False)}),   # wrong
    ]]
    summary = summarize(points, 0.03, baseline="a", reference="a")
    assert summary.right_share == pytest.approx(1 / 2)
    assert summary.right_where_settled == artefact.Share(1 / 2, 2)
    assert artefact.Summary.from_json(json.loads(json.dumps(summary.to_json()))) == summary
    row = dict(summary_rows(summary))["right where timings settled"]
    assert row.startswith("  50.0% (of 2; at the other 2 the chosen or the fastest")
    settled = summarize(points[2:], 0.03, baseline="a", reference="a")
    assert settled.right_where_settled is None and "right where timings settled" not in dict(summary_rows(settled))


def test_judge_skips_points_it_cannot_judge():
    assert judge(replace(record("a", {"a": 1.0}), chosen=None), 0.03) is None
    assert judge(record("c", {"a": 1.0}), 0.03) is None  # the chosen one failed and was not measured


def test_summary_figures_by_hand():
    points = [judge(record(chosen, times, i), 0.03) for i, (chosen, times) in enumerate([
        ("a", {"a": 1.0, "b k=1": 2.0, "b k=2": 3.0, DISPATCHED: 1.0, AGAIN: 1.1}),  # right
        ("a", {"a": 2.0, "b k=1": 1.0, "b k=2": 1.5, DISPATCHED: 2.0, AGAIN: 2.0}),  # wrong: penalty 1.0
        ("b k=1", {"a": 4.0, "b k=1": 2.5, "b k=2": 2.0, DISPATCHED: 2.5, AGAIN: 4.4}),  # wrong: 0.25
        ("b k=2", {"a": 1.0, "b k=2": 1.0, "b k=1": 1.01, DISPATCHED: 1.0, AGAIN: 1.0}),  # right, a tie
    ])]
    summary = summarize(points, 0.03, baseline="a", reference="a")
    assert summary.points == 4
    assert summary.right_share == pytest.approx(0.5)
    assert summary.mean_penalty_when_wrong == pytest.approx((1.0 + 0.25) / 2)
    assert summary.expected_penalty == pytest.approx((0 + 1.0 + 0.25 + 0) / 4)
    assert summary.worst_penalty == pytest.approx(1.0)
    assert summary.ratio_max == pytest.approx(2.0)
    assert summary.ratio_median == pytest.approx(1.125)
    # a, always: 1/1, 2/2, 4/2.5, 1/1; b at the module's k, always: 2/1, 1/2, 2.5/2.5, 1/1
    assert summary.best_single.implementation == "b"
    assert summary.best_single.gain == pytest.approx((2 * 0.5 * 1 * 1) ** 0.25)
    assert summary.baseline.gain == pytest.approx((1 * 1 * 1.6 * 1) ** 0.25)
    # b's first-listed (the module's) k against its best k: only the third point misses (2.5 against 2.0)
    assert summary.optimal_parameters["b"].share == pytest.approx(3 / 4)
    # ... and where b was chosen (the third and fourth points), one of two: the parameters a call there runs with
    assert summary.optimal_where_chosen == {"b": artefact.Share(0.5, 2)}
    [row] = [text for label, text in summary_rows(summary) if label.startswith("optimal parameters of b")]
    assert row.endswith("of its best value; 50.0% of the 2 where it was chosen)")
    assert artefact.Summary.from_json(summary.to_json()).optimal_where_chosen == summary.optimal_where_chosen
    assert summary.noise_median == pytest.approx(0.05)  # |again / a - 1|: 0.1, 0, 0.1, 0
    assert summary.chosen == {"a": 2, "b": 2}
    assert summarize([], 0.03, baseline="a", reference="a") is None


@pytest.fixture(scope="module")
def squares(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("evaluate") / "squares"
    hlc.build(DESCRIPTIONS / "squares.hl", out=folder, quick=True)
    return folder


def test_evaluate_measures_every_alternative_at_held_out_points(squares):
    result = hlc.evaluate(squares, points=6, seed=3, params="exhaustive")
    entry = result.interfaces["square_sum"]
    points = entry.points
    assert len(points) == 6
    for point in points:
        measured = {c.label: c for c in point.candidates}
        for candidate in [*measured.values(), point.dispatched]:  # every candidate timed in the first k rounds
            rounds = [r for r, _ in candidate.rounds]
            assert len(rounds) >= 3 and rounds == sorted(set(rounds))
            assert candidate.seconds == pytest.approx(statistics.median(t for _, t in candidate.rounds))
        chosen = measured[point.chosen_label]
        slower = {name: ratio_of(chosen, c) for name, c in measured.items() if name != point.chosen_label}
        assert point.penalty == pytest.approx(max(1.0, *slower.values()) - 1)
        assert point.best_label == (max(slower, key=slower.get) if max(slower.values()) > 1
                                    else point.chosen_label)
        assert point.right == (point.penalty <= 0.03)
        chunked = [c for c in point.candidates if c.implementation == "chunked"]
        assert len(chunked) >= 3  # exhaustive: every value of the block loop, and the module's own
        for candidate in point.other_input:  # the contenders again, on another input, in rounds of their own
            assert candidate.label in measured
            assert len(candidate.rounds) >= 3 + CONFIRM_ROUNDS
            assert not {r for r, _ in candidate.rounds} & {r for c in measured.values() for r, _ in c.rounds}
    summary = result.summary()
    assert summary.right_share == pytest.approx(sum(p.right for p in points) / 6)
    assert all(point.other_input for point in points)  # n is the same on every input: each point has two
    assert summary.turns_on_input.points == sum(bool(p.other_input) for p in points)
    assert 0 <= summary.optimal_parameters["chunked"].share <= 1
    assert summary.baseline.implementation == "dot"  # the interface's reference
    saved = artefact.load(squares / "evaluation.json")
    assert saved == result.document
    assert json.loads((squares / "evaluation.json").read_text())["format"] == artefact.FORMAT
    assert "right choices" in result.table()
    # the oracle's timings last ORACLE_TIMING at least, the profile's a millisecond; each run's header says so
    assert Samples.read(squares / "evaluation.jsonl").headers[0].clock["least"] == ORACLE_TIMING
    assert Samples.read(squares / "samples.jsonl").headers[0].clock["least"] == MINIMUM_TIMING


def test_the_oracle_times_the_build_s_own_samples_again(squares):
    result = hlc.evaluate(squares, points=3, seed=8)
    fitted = {(s.implementation, tuple(s.parameters.items()), tuple(s.variables.items())): s
              for s in Samples.read(squares / "samples.jsonl").samples if not s.verify}
    probed = result.document.probes
    assert len(probed) == min(PROBES, len(fitted))
    for probe in probed:
        sample = fitted[probe.implementation, tuple(probe.parameters.items()), tuple(probe.variables.items())]
        assert probe.then == sample.seconds and probe.now > 0 and probe.P == 1
    assert artefact.load(squares / "evaluation.json").probes == probed
    assert "costs since the profile" in result.table()
    # the same samples for the same seed, another draw for another
    assert [p.variables for p in hlc.evaluate(squares, points=3, seed=8).document.probes] == \
        [p.variables for p in probed]
    assert [p.variables for p in hlc.evaluate(squares, points=3, seed=9).document.probes] != \
        [p.variables for p in probed]


def test_probes_are_fitting_samples_whose_arguments_can_be_rebuilt():
    interface = SimpleNamespace(name="sort", implementations=[SimpleNamespace(name="radix")])

    def sample(**changes):
        fields = {"interface": "sort", "implementation": "radix", "verify": False, "P": 1, "index": 0,
                  "parameters": {"bpd": 8}, "variables": {"n": 10.0}, "seconds": 1e-3, "seed": 7, "point": {"q": 1}}
        return Sample(**{**fields, **changes})

    usable = [sample(index=i) for i in range(3)]
    others = [sample(verify=True), sample(P=2), sample(seed=None), sample(point=None), sample(implementation="gone"),
              sample(interface="other"), sample(seconds=0.0)]
    assert sorted(p.index for p in probes(interface, usable + others, 1, seed=0)) == [0, 1, 2]
    many = [sample(index=i) for i in range(40)]
    chosen = probes(interface, many, 1, seed=0)
    assert len(chosen) == PROBES and chosen == probes(interface, list(reversed(many)), 1, seed=0)


def test_the_probe_row_gives_the_median_and_the_call_that_moved_most():
    def probed(then, now, n):
        return artefact.Probed("sort", "radix", 1, {"bpd": 11}, {"n": n, "P": 1, "logP": 0.0}, then, now)

    row = probe_row([probed(1.0, 1.0, 8), probed(1.0, 1.1, 16), probed(2.0, 0.5, 32)])
    assert row == ("costs since the profile", "x1.00 median over 3 of the build's samples timed again; "
                   "most x0.25 (radix bpd=11 at n = 32)")
    assert probe_row([]) is None


def test_evaluate_is_deterministic_for_a_seed_and_resumes(squares):
    first = hlc.evaluate(squares, points=4, seed=5)
    again = hlc.evaluate(squares, points=4, seed=5)

    def where(result):
        return [(p.point, p.variables, p.chosen_label) for p in result.interfaces["square_sum"].points]

    assert where(first) == where(again)
    raw = squares / "evaluation.jsonl"
    lines = raw.read_text().count("\n")
    resumed = hlc.evaluate(squares, points=4, seed=5, resume=True)
    assert where(resumed) == where(first)
    # only the header and the time account of the resumed run: no point measured twice
    assert raw.read_text().count("\n") == lines + 2
    with pytest.raises(ProfileError, match="without --resume"):
        hlc.evaluate(squares, points=4, seed=6, resume=True)
    # the near ties were timed again for a tolerance of 3%: another would judge them by other rounds
    assert Samples.read(raw).headers[0].tolerance == 0.03
    with pytest.raises(ProfileError, match="'tolerance': 0.03}, not .*'tolerance': 0.05}"):
        hlc.evaluate(squares, points=4, seed=5, tolerance=0.05, resume=True)


def test_evaluate_under_mpiexec(squares):
    result = hlc.evaluate(squares, points=3, seed=2, procs=[2])
    points = result.interfaces["square_sum"].points
    assert len(points) == 3 and all(p.P == 2 for p in points)
    assert all(math.isfinite(p.penalty) for p in points)


def test_the_command_prints_the_table_and_refuses_bad_input(squares, tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert main(["evaluate", str(squares), "--points", "3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "right choices" in printed and "gain over the best single" in printed
    assert artefact.load(out).settings.points == 3
    assert main(["evaluate", str(tmp_path / "nothing")]) == 2
    assert "no models.json" in capsys.readouterr().err
    assert main(["evaluate", str(squares), "--baseline", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_the_command_says_which_calibrated_rank_counts_it_left_out(squares, tmp_path, capsys):
    """Evaluating at one rank (the default) a build calibrated at two rank
    counts says so, and how to judge both; a build of one says nothing."""
    assert main(["evaluate", str(squares), "--points", "2"]) == 0
    assert "which this evaluation left out" not in capsys.readouterr().out
    both = shutil.copytree(squares, tmp_path / "squares")
    models = json.loads((both / "models.json").read_text())
    entry = next(iter(models["implementations"].values()))
    entry["time"]["verification_mre_by_ranks"] = {"1": 1.05, "2": 1.08}
    (both / "models.json").write_text(json.dumps(models))
    assert main(["evaluate", str(both), "--points", "2"]) == 0
    assert ("the build is calibrated at P = 2 too, which this evaluation left out: --procs 1,2 judges every rank "
            "count") in capsys.readouterr().out


def test_the_report_overlays_a_real_evaluation(squares):
    result = hlc.evaluate(squares, points=4, seed=7)
    wrong = sum(not p.right for p in result.interfaces["square_sum"].points)
    report = hlc.report(squares)
    page = report.index.read_text()
    assert f"4 points evaluated, {wrong} wrong choice" in page
    assert "costs since the profile" in page and "of the build&#x27;s samples timed again" in page
    assert not any("evaluation" in note for note in report.notes)


def test_rejudge_looks_up_the_replayed_choice_among_the_timed_candidates():
    line = record("a", {"a": 1.0, "b k=1": 1.2, "b k=2": 0.9, AGAIN: 1.0})
    stored = judge(line, 0.03)
    # other models choose b at k=1: 1.2 / 0.9 slower than the fastest
    point = rejudge(stored, "b", {"k": 1}, {"b": {"k": 1}}, 0.03)
    assert point.chosen_label == "b k=1" and point.best_label == "b k=2"
    assert point.penalty == pytest.approx(1.2 / 0.9 - 1) and point.right is False
    assert point.dispatched is None  # nothing was timed for these models
    # the implementation's first candidate is at the replayed parameters (its own is judged there)
    assert [c.label for c in point.candidates if c.implementation == "b"] == ["b k=1", "b k=2"]
    assert rejudge(stored, "b", {"k": 2}, {"b": {"k": 2}}, 0.03).right is True
    # a choice that was not timed is not judged, nor is no choice
    assert rejudge(stored, "b", {"k": 3}, {"b": {"k": 3}}, 0.03) is None
    assert rejudge(stored, None, {}, {}, 0.03) is None
    # the parameters given to another implementation were not timed: it stands for nothing there
    point = rejudge(stored, "a", {}, {"b": {"k": 7}}, 0.03)
    assert point.right is False and [c.implementation for c in point.candidates] == ["a"]


def test_replay_of_the_build_s_own_models_gives_the_evaluation_s_choices(squares, tmp_path):
    measured = hlc.evaluate(squares, points=8, seed=11, params="exhaustive")
    replayed = replay(squares)
    assert replayed.evaluation == squares / "evaluation.json"
    own, again = measured.interfaces["square_sum"], replayed.interfaces["square_sum"]
    assert again.unmeasured == 0
    assert [p.chosen_label for p in again.points] == [p.chosen_label for p in own.points]
    for figure in ("right_share", "expected_penalty", "worst_penalty"):
        assert getattr(again.summary, figure) == pytest.approx(getattr(own.summary, figure))
    assert again.summary.optimal_parameters == own.summary.optimal_parameters
    assert "nothing timed" in replayed.table()
    assert "costs since the profile" in measured.table()
    assert "costs since the profile" not in replayed.table()  # the replayed models were not profiled then

    # other models: every call to the Python loop where it applies
    models = load_models(squares / "models.json")
    constant = {name: replace(entry, time=replace(entry.time, coefficients={"1": 1.0}))
                for name, entry in models.implementations.items() if name in ("dot", "chunked")}
    other = tmp_path / "models.json"
    replace(models, implementations={**models.implementations, **constant}).save(other)
    replayed = replay(other, squares / "evaluation.json")
    points = replayed.interfaces["square_sum"].points
    assert {p.chosen_label for p in points} <= {"loop"}
    unmeasured = replayed.interfaces["square_sum"].unmeasured
    assert len(points) + unmeasured == 8
    for point, stored in zip(points, [p for p in own.points if p.variables["n"] <= 4096], strict=True):
        slower = {c.label: ratio_of(stored.candidate("loop"), c) for c in stored.candidates}
        assert point.penalty == pytest.approx(max(1.0, *slower.values()) - 1)
    # each implementation's timings against its model: the constant second is
    # the geometric mean of the timings themselves, the loop's own model near them
    offsets = {o.implementation: o for o in replayed.offsets}
    for name in ("dot", "chunked"):
        timed = [c.seconds for p in own.points for c in p.candidates if c.implementation == name]
        assert offsets[name].timings == len(timed)
        assert offsets[name].ratio == pytest.approx(math.exp(statistics.fmean(math.log(t) for t in timed)))
    assert 0.5 < offsets["loop"].ratio < 2
    assert {o.interface for o in replayed.offsets} == {"square_sum"} and {o.P for o in replayed.offsets} == {1}
    (line,) = [line for line in replayed.table().splitlines() if line.startswith("  square_sum, P=1: ")]
    assert line.index("loop") < line.index("dot") and "apart)" in line  # the largest ratio first


def test_an_evaluation_records_the_sources_it_timed_and_a_replay_says_when_they_changed(squares, tmp_path,
                                                                                       capsys):
    hlc.evaluate(squares, points=3, seed=5, params="exhaustive")
    stored = artefact.load(squares / "evaluation.json")
    impls = squares / "source" / "squares" / "impls.py"
    assert stored.sources == {"squares/impls.py": hashlib.sha256(impls.read_bytes()).hexdigest()}
    assert replay(squares).changed == ()
    assert "warning" not in replay(squares).table()

    # the same evaluation, of other kernels than those the models were fitted to
    other = tmp_path / "evaluation.json"
    replace(stored, sources={"squares/impls.py": "0" * 64}).save(other)
    replayed = replay(squares, other)
    assert replayed.changed == ("squares/impls.py",)
    assert replayed.interfaces["square_sum"].summary.points == 3  # judged all the same, and said so
    assert main(["evaluate", str(squares), "--replay", str(other)]) == 0
    assert f"warning: {other} timed other versions of squares/impls.py" in capsys.readouterr().out
    assert replay_oracle(other, squares / "evaluation.json").changed == ("squares/impls.py",)
    # an evaluation older than the record of its sources is not taken for a changed one
    replace(stored, sources={}).save(other)
    assert replay(squares, other).changed == ()
    assert replay(squares, other).other_machine == ()

    # the same evaluation, timed on another machine
    replace(stored, machine={**stored.machine, "cpu": "Another CPU"}).save(other)
    elsewhere = replay(squares, other)
    assert elsewhere.other_machine == (f"cpu: 'Another CPU' against {stored.machine['cpu']!r}",)
    assert f"warning: {other} was timed on another machine (cpu: 'Another CPU'" in elsewhere.table()
    assert replay_oracle(other, squares / "evaluation.json").other_machine == \
        (f"cpu: {stored.machine['cpu']!r} against 'Another CPU'",)


def test_machine_differences_name_what_differs():
    here = {"cpu": "A", "cores": 2, "constants": {"cache_l2": 1}, "python": "3.11"}
    assert machine_differences(here, {**here, "python": "3.12"}) == []  # versions are not the machine
    assert machine_differences(here, {**here, "cores": 16}) == ["cores: 2 against 16"]
    assert machine_differences(here, {}) == []  # a record without a machine says nothing
    assert machine_differences(here, Fingerprint(dict(here))) == []


def test_changed_sources_counts_the_files_both_know():
    assert changed_sources({"a.py": "1", "b.py": "2"}, {"a.py": "1", "b.py": "3", "c.py": "4"}) == ("b.py",)
    assert changed_sources({"a.py": "1"}, {"b.py": "2"}) == ()
    assert changed_sources({}, {"a.py": "1"}) == ()


def test_replay_refuses_what_it_cannot_judge(squares, tmp_path, capsys):
    hlc.evaluate(squares, points=3, seed=4)  # chosen parameters only
    assert main(["evaluate", str(squares), "--replay"]) == 2
    assert "--params exhaustive" in capsys.readouterr().err
    assert main(["evaluate", str(squares), "--replay", str(tmp_path / "nothing.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    hlc.evaluate(squares, points=3, seed=4, params="exhaustive")
    out = tmp_path / "replayed.json"
    assert main(["evaluate", str(squares), "--replay", "--json", str(out)]) == 0
    assert "right choices" in capsys.readouterr().out
    written = artefact.load(out)
    assert written.interfaces["square_sum"].summary.points == 3
    assert written.replayed == artefact.Replayed(str(squares / "models.json"), str(squares / "evaluation.json"))


def test_the_oracle_replayed_against_another_run_of_it(squares, tmp_path, capsys):
    """One exhaustive evaluation's fastest candidates, judged by another's
    timings of the same points: right wherever the two runs agree."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    hlc.evaluate(squares, points=6, seed=5, params="exhaustive")
    (squares / "evaluation.json").replace(first)
    hlc.evaluate(squares, points=6, seed=5, params="exhaustive")
    (squares / "evaluation.json").replace(second)
    mine, theirs = artefact.load(first).interfaces["square_sum"], artefact.load(second).interfaces["square_sum"]

    itself = replay_oracle(first, first).interfaces["square_sum"]
    assert itself.summary.right_share == 1.0 and itself.summary.worst_penalty == 0.0

    replayed = replay_oracle(first, second)
    points = replayed.interfaces["square_sum"].points
    assert len(points) == 6 and replayed.interfaces["square_sum"].unmeasured == 0
    for point, own, judged_by in zip(points, mine.points, theirs.points, strict=True):
        timed = {c.label: c for c in own.candidates}
        beaten = {name: max(1.0, *(ratio_of(timed[name], c) for c in own.candidates)) for name in timed}
        assert point.chosen_label == min(beaten, key=beaten.__getitem__)  # the first run's fastest
        slower = {c.label: ratio_of(judged_by.candidate(point.chosen_label), c) for c in judged_by.candidates}
        assert point.penalty == pytest.approx(max(1.0, *slower.values()) - 1)
    assert "the fastest candidates measured by" in replayed.table()

    assert main(["evaluate", str(first), "--replay", str(second)]) == 0
    assert "right choices" in capsys.readouterr().out
    assert main(["evaluate", str(first), "--replay"]) == 2
    assert "is an evaluation" in capsys.readouterr().err
    # A run at more rank counts is judged at the one both timed: its points at another count are left out.
    wider = tmp_path / "wider.json"
    document = artefact.load(second)
    part = document.interfaces["square_sum"]
    elsewhere = [replace(point, P=2, chosen_label=point.best_label) for point in part.points]
    wider.write_text(json.dumps(replace(document, settings=replace(document.settings, ranks=[1, 2]), interfaces={
        "square_sum": replace(part, points=part.points + elsewhere)}).to_json()))
    at_one = replay_oracle(first, wider)
    assert at_one.document.settings.ranks == [1]
    assert [p.penalty for p in at_one.interfaces["square_sum"].points] == [p.penalty for p in points]
    assert replay_oracle(wider, first).interfaces["square_sum"].summary.points == 6
    hlc.evaluate(squares, points=6, seed=6, params="exhaustive")
    with pytest.raises(ValueError, match="same seed and points at a rank count they share"):
        replay_oracle(first, squares / "evaluation.json")
    hlc.evaluate(squares, points=6, seed=5)
    with pytest.raises(ValueError, match="--params exhaustive"):
        replay_oracle(first, squares / "evaluation.json")


def test_fit_refits_a_build_from_its_stored_samples(squares, capsys):
    before = (squares / "models.json").read_text()
    assert main(["fit", str(squares), "--no-discovery"]) == 0
    assert "refitted squares from its stored samples" in capsys.readouterr().out
    assert [p.name for p in squares.parent.iterdir() if p.name.startswith(".squares.")] == []  # the old one removed
    models = load_models(squares / "models.json")
    assert models.settings.discovering is False and before != (squares / "models.json").read_text()
    assert Models.from_json(json.loads(before)).samples_header == models.samples_header  # the same samples
    module = hlc.load(squares)
    assert module.square_sum(np.arange(5.0)) == 30.0
    assert main(["fit", str(squares), "-o", "elsewhere.json"]) == 2
    assert "hlc fit: error: a build is refitted in place" in capsys.readouterr().err
