"""Several exhaustive evaluations of the same points as one judge (hlc.evaluation.combined),
on two real evaluations of the sort library taken hours apart on one host (tests/data/sort-zen4)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from hlc.artefacts import evaluation as artefact
from hlc.cli import main
from hlc.evaluation.combined import combine
from hlc.evaluation.replay import replay_oracle
from hlc.evaluation.verdicts import ratio_of

ZEN4 = Path(__file__).parent / "data" / "sort-zen4"
FIRST, LATER, OTHER_SEED = ZEN4 / "evaluation-1.json", ZEN4 / "evaluation-1-later.json", ZEN4 / "evaluation-2.json"


@pytest.fixture(scope="module")
def documents():
    return {path: artefact.load(path) for path in (FIRST, LATER, OTHER_SEED)}


def _points(document):
    return {(p.P, p.index): p for p in document.interfaces["sort"].points}


def test_an_evaluation_combined_with_itself_judges_as_it_does(documents):
    alone = documents[FIRST]
    twice = combine([(FIRST, alone), (FIRST, alone)])
    for key, point in _points(twice).items():
        own = _points(alone)[key]
        assert [c.label for c in point.candidates] == [c.label for c in own.candidates]
        for combined, timed in zip(point.candidates, own.candidates, strict=True):
            assert combined.seconds == pytest.approx(timed.seconds, rel=1e-12)
            assert len(combined.rounds) == 2 * len(timed.rounds)
        assert (point.best_label, point.penalty) == (own.best_label, pytest.approx(own.penalty, rel=1e-12))
    assert replay_oracle(FIRST, [FIRST, FIRST]).interfaces["sort"].summary.right_share == 1.0


def _paired(a, b):
    """t_a / t_b in each round both were timed in, of one evaluation's candidates."""
    first, second = dict(a.rounds), dict(b.rounds)
    return [first[r] / second[r] for r in first.keys() & second.keys()]


def test_combined_rounds_are_every_evaluation_s_paired_within_each(documents):
    first, later = documents[FIRST], documents[LATER]
    both = _points(combine([(FIRST, first), (LATER, later)]))
    assert len(both) == 200
    for key, point in both.items():
        one = {c.label: c for c in _points(first)[key].candidates}
        two = {c.label: c for c in _points(later)[key].candidates}
        assert {c.label for c in point.candidates} == one.keys() & two.keys()
        for c in point.candidates:
            timings = [s for _, s in one[c.label].rounds] + [s for _, s in two[c.label].rounds]
            assert sorted(s for _, s in c.rounds) == sorted(timings)
            assert c.seconds == pytest.approx(statistics.median(timings), rel=1e-12)
        chosen = point.candidate(point.chosen_label)
        for other in point.candidates:
            pooled = _paired(one[chosen.label], one[other.label]) + _paired(two[chosen.label], two[other.label])
            if len(pooled) >= 3:  # rounds of one evaluation pair only with that evaluation's
                assert ratio_of(chosen, other) == pytest.approx(statistics.median(pooled), rel=1e-12)


def test_a_spell_in_one_of_three_evaluations_is_outvoted(documents, tmp_path):
    """An evaluation that timed a candidate ten times slower at a point (a
    spell of the host) moves the median of the pooled ratios by the rounds it
    adds, not by its factor."""
    first, later = documents[FIRST], documents[LATER]
    part = first.interfaces["sort"]
    point = max(part.points, key=lambda p: len(p.candidates))
    slowed_label = point.chosen_label
    slowed = replace(point, candidates=tuple(
        replace(c, seconds=c.seconds * 10, rounds=tuple((r, t * 10) for r, t in c.rounds))
        if c.label == slowed_label else c for c in point.candidates))
    spell = tmp_path / "spell.json"
    spell.write_text(json.dumps(replace(first, interfaces={"sort": replace(part, points=[
        slowed if p.index == point.index else p for p in part.points])}).to_json()))
    three = _points(combine([(FIRST, first), (LATER, later), (spell, artefact.load(spell))]))
    combined = three[point.P, point.index]
    evaluations = [{c.label: c for c in p.candidates} for p in (point, _points(later)[point.P, point.index], slowed)]
    for other in combined.candidates:
        pooled = [r for own in evaluations for r in _paired(own[slowed_label], own[other.label])]
        assert ratio_of(combined.candidate(slowed_label), other) == pytest.approx(statistics.median(pooled), rel=1e-12)
        spelled = _paired(evaluations[2][slowed_label], evaluations[2][other.label])
        if other.label != slowed_label and len(spelled) < len(pooled) / 2:
            calm = sorted(r for own in evaluations[:2] for r in _paired(own[slowed_label], own[other.label]))
            assert calm[0] <= ratio_of(combined.candidate(slowed_label), other) <= calm[-1]


def test_evaluations_that_cannot_stand_for_one_another_are_refused(documents, tmp_path):
    first = documents[FIRST]
    with pytest.raises(ValueError, match="two or more"):
        combine([(FIRST, first)])
    with pytest.raises(ValueError, match="same seed and points"):
        combine([(FIRST, first), (OTHER_SEED, documents[OTHER_SEED])])
    with pytest.raises(ValueError, match="evaluated"):
        combine([(FIRST, first), (LATER, replace(documents[LATER], library="stencil"))])
    elsewhere = replace(documents[LATER], machine={**documents[LATER].machine, "cores": 16})
    with pytest.raises(ValueError, match="different machines.*cores"):
        combine([(FIRST, first), (LATER, elsewhere)])
    name = next(iter(first.sources))
    edited = replace(documents[LATER], sources={**documents[LATER].sources, name: "another digest"})
    with pytest.raises(ValueError, match=f"different versions of {name}"):
        combine([(FIRST, first), (LATER, edited)])
    moved = documents[LATER].interfaces["sort"]
    shifted = replace(moved.points[0], variables={**moved.points[0].variables, "n": 3.0})
    with pytest.raises(ValueError, match="differ at sort's point"):
        combine([(FIRST, first), (LATER, replace(documents[LATER], interfaces={
            "sort": replace(moved, points=[shifted, *moved.points[1:]])}))])
    chosen_only = tmp_path / "chosen.json"
    chosen_only.write_text(json.dumps(replace(documents[LATER], settings=replace(
        documents[LATER].settings, params="chosen")).to_json()))
    with pytest.raises(ValueError, match="--params exhaustive"):
        replay_oracle(FIRST, [LATER, chosen_only])


def test_the_command_judges_against_several_evaluations(capsys, tmp_path):
    out = tmp_path / "judged.json"
    assert main(["evaluate", str(FIRST), "--replay", str(LATER), str(FIRST), "--json", str(out)]) == 0
    said = capsys.readouterr().out
    assert "the timings of 2 evaluations of the same points" in said and "right choices" in said
    assert artefact.load(out).replayed.evaluation == f"{LATER}, {FIRST}"
    assert main(["evaluate", str(FIRST), "--replay", str(LATER), str(OTHER_SEED)]) == 2
    assert "same seed and points" in capsys.readouterr().err
