"""The refit-and-replay benchmark: stored builds fitted two ways, judged
against stored exhaustive evaluations, paired build by build."""

from __future__ import annotations

from pathlib import Path

import benchmark_scripts
import pytest

from hlc.evaluation.replay import replay
from hlc.model import calibration
from hlc.model.calibration import fit_samples

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "tests" / "data" / "sort-epyc"  # a folder with a build's samples.jsonl
EVALUATION = BUILD / "evaluation-1.json"
DESCRIPTION = ROOT / "libraries" / "sort.hl"
refit_replay = benchmark_scripts.load("refit_replay")


@pytest.fixture(autouse=True)
def _one_search(monkeypatch):
    """What is tested here is the pairing and the replays, which any fit
    serves: one search a model, without the bags (half the time)."""
    monkeypatch.setattr(calibration, "BAGS", 0)


def test_a_description_against_itself_differs_by_nothing(capsys):
    refit_replay.main(["--builds", str(BUILD), "--evaluations", str(EVALUATION),
                       "--description", str(DESCRIPTION), "--versus", str(DESCRIPTION)])
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("B against A over 1 build: right +0.00 points (SE nan), expected penalty +0.00%"), last


def test_the_difference_is_that_of_the_two_fits_replayed(tmp_path, capsys):
    """B defaults to the description without discovery: the benchmark's
    difference is the one two separate fits and replays give."""
    shares = []
    for discovering in (True, False):
        path = tmp_path / f"models-{discovering}.json"
        fit_samples(BUILD / "samples.jsonl", description=DESCRIPTION, discovering=discovering).save(path)
        shares.append(replay(path, EVALUATION).interfaces["sort"].summary.right_share)
    refit_replay.main(["--builds", str(BUILD), "--evaluations", str(EVALUATION), "--description", str(DESCRIPTION)])
    out = capsys.readouterr().out
    assert f"right {100 * (shares[1] - shares[0]):+.2f} points" in out.splitlines()[-1], out
    assert f"{shares[0]:>8.1%} {shares[1]:>8.1%}" in out


def test_a_build_without_models_at_a_rank_count_is_judged_at_the_others(tmp_path):
    """A grid build cut short before it reached two ranks has no two-rank
    models: its two-rank points judge nothing, and its one-rank ones still count."""
    build = tmp_path / "one-rank"
    build.mkdir()
    lines = (ROOT / "tests" / "data" / "sort" / "samples.jsonl").read_text().splitlines()
    (build / "samples.jsonl").write_text("\n".join(line for line in lines if '"P":2' not in line.replace(" ", "")))
    evaluation = ROOT / "tests" / "data" / "sort" / "evaluation-1.json"  # one and two ranks
    found = refit_replay.judged(build, DESCRIPTION, [evaluation], True)
    assert set(found) == {("evaluation-1", "sort", 1)}
    right, expected, optimal = found["evaluation-1", "sort", 1]
    assert 0.9 <= right <= 1.0 and 0 <= expected < 0.05 and 0.8 <= optimal <= 1.0


def test_the_stored_corpora_of_a_library_are_its_folders_with_samples_and_evaluations(tmp_path):
    """A folder named after the library, or after it and a dash, is a group;
    each of its samples files is a build, judged by its own evaluations only."""
    for folder, files in {"sort": ["samples.jsonl", "evaluation-1.json"],
                          "sort-b": ["samples-2.jsonl", "samples.jsonl", "evaluation-2.json", "evaluation-1.json",
                                     "runtime_samples.jsonl", "notes.md"],
                          "sort-c": ["samples.jsonl"],  # nothing to judge it by
                          "sorting": ["samples.jsonl", "evaluation-1.json"]}.items():
        (tmp_path / folder).mkdir()
        for name in files:
            (tmp_path / folder / name).write_text("")
    groups = refit_replay.stored_groups("sort", tmp_path)
    assert [(name, [p.name for p in samples], [p.name for p in evaluations]) for name, samples, evaluations in groups] \
        == [("sort", ["samples.jsonl"], ["evaluation-1.json"]),
            ("sort-b", ["samples-2.jsonl", "samples.jsonl"], ["evaluation-1.json", "evaluation-2.json"])]
    with pytest.raises(SystemExit, match="no samples and evaluations of a library 'stencil'"):
        refit_replay.stored_groups("stencil", tmp_path)


def test_stored_corpora_are_judged_group_by_group(tmp_path, monkeypatch, capsys):
    """Each group gets its tables and its own summary line, and the last
    line is over the builds of every group; a stored build is named by its
    folder and file."""
    corpus = tmp_path / "sort-epyc"
    corpus.mkdir()
    (corpus / "samples.jsonl").symlink_to(BUILD / "samples.jsonl")
    (corpus / "evaluation-1.json").symlink_to(EVALUATION)
    monkeypatch.setattr(refit_replay, "STORED", tmp_path)
    refit_replay.main(["--stored", "sort", "--description", str(DESCRIPTION), "--versus", str(DESCRIPTION)])
    lines = capsys.readouterr().out.splitlines()
    assert "#### sort-epyc: 1 build, 1 evaluation" in lines
    assert any(line.startswith("sort-epyc/samples ") for line in lines), lines
    assert any(line.startswith("sort-epyc: B against A over 1 build: right +0.00 points") for line in lines), lines
    assert lines[-1].startswith("B against A over 1 build: right +0.00 points"), lines[-1]


def test_builds_need_their_evaluations():
    with pytest.raises(SystemExit):
        refit_replay.main(["--builds", str(BUILD)])
    with pytest.raises(SystemExit):
        refit_replay.main([])


def test_a_stored_corpus_keeps_the_models_its_library_uses_beside_its_samples():
    """The stencil's models call the runtime library's: a stored stencil
    corpus is fitted and replayed with the runtime models kept beside its
    samples, not with whatever build/runtime holds."""
    stencil = ROOT / "tests" / "data" / "stencil"
    assert refit_replay.stored_used_models(stencil / "samples.jsonl", None) \
        == {"runtime": stencil / "runtime_models.json"}
    assert refit_replay.stored_used_models(BUILD / "samples.jsonl", DESCRIPTION) == {}


def test_a_setting_fits_b_with_the_constant_and_leaves_it_as_it_was(tmp_path, capsys, monkeypatch):
    """--set makes B the same description fitted with one of the fitter's
    constants changed: the difference is that of two fits, one with the
    constant set, and the constant is as it was afterwards."""
    risk = calibration.RISK
    shares = []
    for value in (risk, 0.0):
        monkeypatch.setattr(calibration, "RISK", value)
        path = tmp_path / f"models-{value}.json"
        fit_samples(BUILD / "samples.jsonl", description=DESCRIPTION).save(path)
        shares.append(replay(path, EVALUATION).interfaces["sort"].summary.expected_penalty)
    monkeypatch.setattr(calibration, "RISK", risk)
    assert shares[0] != shares[1]  # planning for the deviations changes choices on these samples
    refit_replay.main(["--builds", str(BUILD), "--evaluations", str(EVALUATION), "--description", str(DESCRIPTION),
                       "--set", "hlc.model.calibration:RISK=0"])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "A: sort.hl; B: A's with hlc.model.calibration.RISK = 0", out
    assert f"expected penalty {100 * (shares[1] - shares[0]):+.2f}%" in out.splitlines()[-1], out
    assert risk == calibration.RISK


@pytest.mark.parametrize(("setting", "said"), [
    ("hlc.model.calibration.RISK=0", "is not MODULE:NAME=VALUE"),
    ("hlc.model.nothing:RISK=0", "no module hlc.model.nothing"),
    ("hlc.model.calibration:NOTHING=0", "hlc.model.calibration has no NOTHING"),
    ("hlc.model.calibration:RISK=two", "'two' is not a Python literal"),
    ("hlc.model.calibration:RISK='2'", "hlc.model.calibration.RISK is 2.0, not a str"),
])
def test_a_setting_that_cannot_be_made_is_refused_and_says_why(setting, said, capsys):
    with pytest.raises(SystemExit) as stopped:
        refit_replay.main(["--stored", "sort", "--set", setting])
    assert stopped.value.code == 2
    assert said in capsys.readouterr().err
