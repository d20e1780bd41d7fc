"""The evaluation-agreement benchmark: two evaluations of the same points,
each's fastest judged by the other's timings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import benchmark_scripts

from hlc.artefacts import evaluation as artefact

ROOT = Path(__file__).resolve().parent.parent
EVALUATION = ROOT / "tests" / "data" / "sort-epyc" / "evaluation-1.json"
agreement = benchmark_scripts.load("evaluation_agreement")


def slowed(path: Path, every: int) -> artefact.EvaluationDocument:
    """The evaluation with, at every ``every``-th point, its fastest candidate
    timed twice as long in every round."""
    document = artefact.load(path)
    part = document.interfaces["sort"]
    points = []
    for index, point in enumerate(part.points):
        if index % every == 0:
            best = agreement.fastest(point)
            point = replace(point, candidates=tuple(
                replace(c, seconds=2 * c.seconds, rounds=tuple((r, 2 * s) for r, s in c.rounds))
                if c.label == best else c for c in point.candidates))
        points.append(point)
    return replace(document, interfaces={"sort": replace(part, points=points)})


def test_an_evaluation_agrees_with_itself(capsys):
    assert agreement.main([str(EVALUATION), str(EVALUATION)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("ceiling of right choices on this machine: 100.0% of")


def test_each_point_whose_fastest_ran_slow_the_second_time_lowers_the_ceiling(tmp_path, capsys):
    document = slowed(EVALUATION, 10)
    second = tmp_path / "evaluation.json"
    document.save(second)
    assert agreement.main([str(EVALUATION), str(second)]) == 0
    points = len(document.interfaces["sort"].points)
    slowed_points = len(range(0, points, 10))
    last = capsys.readouterr().out.splitlines()[-1]
    share = float(last.split(": ")[1].split("%")[0]) / 100
    # each slowed point is wrong one way or the other; a slowed fastest may leave another within 3%
    assert share <= 1 - 0.5 * slowed_points / points
    assert share < 1.0


def test_only_the_points_both_timed_are_judged(capsys):
    """Evaluations at two seeds draw different points: none, or the few
    both drew at the same place of their streams, are judged, and the
    others are counted."""
    second = ROOT / "tests" / "data" / "sort-epyc" / "evaluation-2.json"
    first = len(artefact.load(EVALUATION).interfaces["sort"].points)
    try:
        agreement.main([str(EVALUATION), str(second)])
    except SystemExit:  # none shared
        assert "share no point" in capsys.readouterr().err
        return
    first_line = capsys.readouterr().out.splitlines()[0]
    shared = int(first_line.split(": ")[1].split()[0])
    assert 0 < shared < first and f"({first - shared} and" in first_line
