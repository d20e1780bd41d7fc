"""The evaluation artefact: stored evaluations of format 1 read, format 2 written and read back,
and files that are not evaluations refused with the file named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hlc.artefacts import evaluation as artefact
from hlc.artefacts.evaluation import EvaluationDocument, Gain, Share
from hlc.artefacts.files import ArtefactError
from hlc.evaluation.text import format_summary

DATA = Path(__file__).resolve().parents[1] / "data"
STORED = [DATA / "sort" / "evaluation-1.json", DATA / "sort" / "evaluation-2.json",
          DATA / "stencil" / "evaluation-1.json"]


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_stored_evaluations_of_format_1_load(path):
    raw = json.loads(path.read_text(encoding="utf-8"))
    document = artefact.load(path)
    assert raw["format"] == 1
    assert document.library == raw["library"]
    assert document.settings.seed == raw["seed"] and document.settings.ranks == raw["ranks"]
    assert document.settings.params == "exhaustive" and document.settings.baseline is None
    for name, part in document.interfaces.items():
        stored = raw["interfaces"][name]
        assert len(part.points) == len(stored["points"])
        assert set(part.by_ranks) == {int(size) for size in stored["by_ranks"]}
        assert part.summary.points == stored["summary"]["points"]
        assert part.summary.right_share == stored["summary"]["right_share"]
        assert sum(part.summary.chosen.values()) == part.summary.points
        assert part.unmeasured is None
        point, first = part.points[0], stored["points"][0]
        assert point.chosen_label == first["chosen_label"] and point.penalty == first["penalty"]
        assert [c.label for c in point.candidates] == [c["label"] for c in first["candidates"]]
        assert point.candidates[0].rounds[0] == tuple(first["candidates"][0]["rounds"][0])


def test_the_flat_figures_of_format_1_are_taken_apart_by_implementation():
    """``optimal_parameters_radix_spmd`` is radix_spmd's share, not a figure of
    radix; ``chosen_counting_spmd`` a count of counting_spmd."""
    summary = artefact.load(STORED[0]).interfaces["sort"].summary
    assert summary.optimal_parameters == {"radix": Share(0.865, 200), "radix_spmd": Share(0.895, 200)}
    assert summary.chosen == {"counting": 49, "counting_spmd": 85, "narrow": 82, "numpy": 67, "radix": 2,
                              "radix_spmd": 10, "sample": 105}
    assert summary.baseline == Gain("numpy", 1.4072568054982473, 200)
    assert summary.best_single is None  # no implementation applies at both rank counts
    at_one = artefact.load(STORED[0]).interfaces["sort"].by_ranks[1]
    assert at_one.best_single == Gain("numpy", 1.4072568054982473, 200)


def test_an_implementation_named_like_a_count_is_read_as_one():
    flat = {"points": 3, "tolerance": 0.03, "right_share": 1.0, "mean_penalty_when_wrong": 0.0,
            "expected_penalty": 0.0, "worst_penalty": 0.0, "ratio_median": 1.0, "ratio_p95": 1.0, "ratio_max": 1.0,
            "optimal_parameters_x": 0.5, "optimal_parameters_x_points": 2,
            "optimal_parameters_x_points_points": 3, "chosen_x": 1, "chosen_x_points": 2}
    summary = artefact.Summary.from_json(flat, version=1)
    assert summary.optimal_parameters == {"x": Share(0.5, 2), "x_points": Share(2.0, 3)}
    assert summary.chosen == {"x": 1, "x_points": 2}
    assert artefact.Summary.from_json({"points": 0}, version=1) is None


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_save_and_load_round_trip_in_format_2(path, tmp_path):
    document = artefact.load(path)
    target = tmp_path / "evaluation.json"
    document.save(target)
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written["format"] == artefact.FORMAT == 2
    assert written["settings"]["ranks"] == document.settings.ranks
    assert "optimal_parameters_radix" not in json.dumps(written)  # no figure named by a key's suffix any more
    assert artefact.load(target) == document
    assert [p.name for p in tmp_path.iterdir()] == ["evaluation.json"]  # written whole, nothing left beside it


def test_a_summary_of_no_points_and_a_replay_round_trip(tmp_path):
    document = artefact.load(STORED[1])
    part = document.interfaces["sort"]
    replayed = EvaluationDocument(
        document.library, document.settings,
        {"sort": artefact.InterfaceResult(None, {1: None, 2: part.summary}, [], unmeasured=7)},
        replayed=artefact.Replayed("models.json", str(STORED[1])), sources={"sort/radix.pyx": "0" * 64})
    target = tmp_path / "replayed.json"
    replayed.save(target)
    assert artefact.load(target) == replayed
    assert json.loads(target.read_text(encoding="utf-8"))["sources"] == {"sort/radix.pyx": "0" * 64}
    assert format_summary("sort", None, document.settings) == ["sort: no point could be judged"]


def test_a_damaged_file_is_named(tmp_path):
    damaged = tmp_path / "evaluation.json"
    damaged.write_text(STORED[1].read_text(encoding="utf-8")[:5000], encoding="utf-8")  # truncated
    with pytest.raises(ArtefactError, match=f"{damaged}:.*damaged, not JSON"):
        artefact.load(damaged)


def test_a_file_missing_a_field_is_named(tmp_path):
    document = json.loads(STORED[1].read_text(encoding="utf-8"))
    del document["interfaces"]["sort"]["points"][3]["penalty"]
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ArtefactError, match=f"{path}: damaged evaluation file \\(missing 'penalty'\\)"):
        artefact.load(path)


def test_a_newer_format_says_to_upgrade(tmp_path):
    document = json.loads(STORED[1].read_text(encoding="utf-8"))
    document["format"] = 99
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ArtefactError, match=f"{path}: evaluation format 99 .*upgrade hlc"):
        artefact.load(path)


def test_a_models_file_is_not_taken_for_an_evaluation(tmp_path):
    models = tmp_path / "models.json"
    shutil.copy(DATA / "stencil" / "runtime_models.json", models)
    with pytest.raises(ArtefactError, match=f"{models}: not an evaluation file of hlc \\(it is a models file\\)"):
        artefact.load(models)
    with pytest.raises(ArtefactError, match="no such file"):
        artefact.load(tmp_path / "nothing.json")
