"""The measuring-context benchmark: the points of a build's exhaustive
evaluation timed again in the profiler's blocks, the oracle's rounds at
several warm-ups and a loop of calls, and the build's model, each against
the blocks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import benchmark_scripts
import pytest

import hlc

ROOT = Path(__file__).resolve().parent.parent
context = benchmark_scripts.load("measuring_context")


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("build") / "squares"
    hlc.build(ROOT / "tests" / "descriptions" / "squares.hl", out=folder, quick=True)
    hlc.evaluate(folder, points=3, seed=4, params="exhaustive")
    return folder


def test_every_context_is_timed_against_the_blocks(evaluated, capsys):
    assert context.main([str(evaluated), "--points", "2", "--warm", "0,5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("squares: square_sum, 2 points of its evaluation at 1 rank(s)")
    assert lines[1].split() == ["implementation", "rounds", "0", "ms", "rounds", "5", "ms", "loop", "model"]
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in lines[2:-1]}
    assert set(rows) <= {"dot", "loop", "chunked"} and "dot" in rows
    for ratios in rows.values():  # the same calls, in another context: within a factor of a few
        assert all(0.2 < r < 5 for r in ratios[:-1] if not math.isnan(r))
        assert ratios[-1] > 0  # the quick build's model: no more than a positive prediction
    base, _, rest = lines[-1].partition(": ")
    assert base.split("/")[0] == "dot"
    assert [part.rsplit(" ", 1)[0] for part in rest.split(", ")] == ["blocks", "rounds 0 ms", "rounds 5 ms", "loop",
                                                                   "model"]


def test_an_evaluation_that_timed_only_the_chosen_parameters_is_refused(evaluated, tmp_path, capsys):
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    text = (evaluated / "evaluation.json").read_text().replace('"exhaustive"', '"chosen"')
    (chosen / "evaluation.json").write_text(text)
    with pytest.raises(SystemExit):
        context.main([str(chosen)])
    assert "is not exhaustive" in capsys.readouterr().err


def test_every_setting_gets_a_row_at_the_points_within_a_range(evaluated, capsys):
    evaluation = json.loads((evaluated / "evaluation.json").read_text())["interfaces"]["square_sum"]["points"]
    sizes = sorted(point["variables"]["n"] for point in evaluation)
    low = sizes[-1]  # the largest size alone
    assert context.main([str(evaluated), "--warm", "5", "--settings", "all", "--within", f"n={low}..{low}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    kept = sizes.count(low)
    assert lines[0].startswith(f"squares: square_sum, {kept} points of its evaluation at 1 rank(s)")
    labels = {candidate["label"] for point in evaluation if point["variables"]["n"] == low
              for candidate in point["candidates"] if candidate["implementation"] in ("dot", "loop", "chunked")}
    rows = {}
    for line in lines[2:-1]:
        label = next(label for label in sorted(labels, key=len, reverse=True) if line.startswith(label + " "))
        rows[label] = [float(x) for x in line[len(label):].split()]
    assert set(rows) == labels and sum(label.startswith("chunked block=") for label in labels) >= 2
    assert all(len(ratios) == 3 for ratios in rows.values())  # rounds 5 ms, loop, model


def test_a_range_that_is_not_one_is_refused(evaluated, capsys):
    with pytest.raises(SystemExit):
        context.main([str(evaluated), "--within", "n=big"])
    assert "expected VAR=LOW..HIGH" in capsys.readouterr().err
