"""An interrupted build keeps what it measured, and ``--resume`` goes on from it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hlc import cli
from hlc.artefacts.samples import Samples
from hlc.dispatch import build as building
from hlc.dispatch.build import build
from hlc.dispatch.resume import RECORD, BuildInterrupted, ResumeError, kept_folder

ROOT = Path(__file__).resolve().parents[2]
DESCRIPTIONS = ROOT / "tests" / "descriptions"


@pytest.fixture
def crossing(tmp_path) -> Path:
    """The crossing description and its sources, copied: a test may change them."""
    shutil.copytree(DESCRIPTIONS / "squares", tmp_path / "squares", ignore=shutil.ignore_patterns("__pycache__"))
    return Path(shutil.copy(DESCRIPTIONS / "crossing.hl", tmp_path / "crossing.hl"))


def interrupting_the_profile(monkeypatch, budget: float) -> None:
    """The adaptive profile runs ``budget`` seconds, then the user interrupts."""
    profile = building._profile_adaptively

    def interrupted(*args, **options):
        profile(*args, **{**options, "budget": budget})
        raise KeyboardInterrupt

    monkeypatch.setattr(building, "_profile_adaptively", interrupted)


def interrupting_after(link: Path, samples: int):
    """A progress report that interrupts, as Ctrl-C does while the build
    follows its programs, once the build of ``link`` has taken ``samples``."""
    def progress(size: int, done: int, total: int) -> None:
        if any(len(sample_lines(p)) >= samples for p in link.parent.glob(f".{link.name}.*/samples.jsonl")):
            raise KeyboardInterrupt

    return progress


def interrupted_build(description: Path, **options) -> BuildInterrupted:
    """The interrupt of a build whose profile or fit the test interrupts.  A
    plain KeyboardInterrupt (nothing was measured) fails the test instead of
    stopping the whole run."""
    with pytest.raises(KeyboardInterrupt) as raised:
        build(description, **options)
    assert isinstance(raised.value, BuildInterrupted), "the build kept nothing"
    return raised.value


def sample_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if '"kind":"sample"' in line]


def test_an_interrupted_profile_is_kept_and_a_resumed_build_goes_on_from_it(crossing, tmp_path):
    link = tmp_path / "build" / "crossing"
    raised = interrupted_build(crossing, out=link, seed=5, progress=interrupting_after(link, 6))
    kept = kept_folder(link)
    assert raised.folder == kept and "--resume" in str(raised)
    assert not link.exists()  # no build was installed
    assert [p.name for p in link.parent.iterdir()] == [kept.name]  # nothing else was left
    record = json.loads((kept / RECORD).read_text())
    assert record["seed"] == 5 and record["adaptive"] and not record["profiled"]
    measured = sample_lines(kept / "samples.jsonl")
    assert measured

    result = build(crossing, out=link, resume=True, budget=2.0)  # seed 0 asked, the kept 5 used
    assert not kept.exists() and (link / "models.json").is_file()
    resumed = Samples.read(link / "samples.jsonl")
    assert sample_lines(link / "samples.jsonl")[:len(measured)] == measured  # kept, not measured again
    assert len(resumed.samples) > len(measured)
    assert {header.seed for header in resumed.headers} == {5}
    assert len({(s.P, s.index, s.refined) for s in resumed.surveys}) == len(resumed.surveys)  # nothing surveyed twice
    assert result.models.time("dot").usable and result.models.time("loop").usable
    assert result.resumed == len(measured)


def test_an_interrupted_grid_build_resumes_the_points_it_had_not_taken(crossing, tmp_path):
    link = tmp_path / "build" / "crossing"
    interrupted_build(crossing, out=link, adaptive=False, seed=3, progress=interrupting_after(link, 12))
    record = json.loads((kept_folder(link) / RECORD).read_text())
    assert not record["adaptive"] and record["seed"] == 3
    measured = sample_lines(kept_folder(link) / "samples.jsonl")
    assert 0 < len(Samples.read(kept_folder(link) / "samples.jsonl").points) < 57
    build(crossing, out=link, resume=True)
    samples = Samples.read(link / "samples.jsonl")
    assert sample_lines(link / "samples.jsonl")[:len(measured)] == measured
    points = [(p.interface, p.P, p.verify, p.index) for p in samples.points]
    assert len(points) == len(set(points))  # no point taken twice
    grid = sum(1 for p in samples.points if not p.verify)
    assert grid == 57  # the whole nest: 1 .. 2048 *= 1.12 has 57 values, at one rank


def test_a_build_interrupted_while_it_fits_resumes_with_the_fit(crossing, tmp_path, monkeypatch):
    link = tmp_path / "build" / "crossing"
    calibrate = building.calibrate

    def interrupted(*args, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr(building, "calibrate", interrupted)
    interrupted_build(crossing, out=link, budget=3.0)
    assert json.loads((kept_folder(link) / RECORD).read_text())["profiled"]
    measured = (kept_folder(link) / "samples.jsonl").read_text()

    def nothing_more(*args, **options):
        raise AssertionError("a resumed build whose profile had ended measures nothing")

    monkeypatch.setattr(building, "calibrate", calibrate)
    monkeypatch.setattr(building, "_profile_adaptively", nothing_more)
    monkeypatch.setattr(building, "profile", nothing_more)
    build(crossing, out=link, resume=True)
    assert (link / "samples.jsonl").read_text() == measured
    assert not kept_folder(link).exists()


def test_an_interrupt_before_anything_was_measured_keeps_nothing(crossing, tmp_path, monkeypatch):
    link = tmp_path / "build" / "crossing"
    interrupting_the_profile(monkeypatch, budget=0.0)
    with pytest.raises(KeyboardInterrupt) as raised:
        build(crossing, out=link)
    assert not isinstance(raised.value, BuildInterrupted)
    assert list(link.parent.iterdir()) == []


def test_a_changed_description_or_source_is_not_resumed(crossing, tmp_path, monkeypatch):
    link = tmp_path / "build" / "crossing"
    with pytest.raises(ResumeError, match="no interrupted build"):
        build(crossing, out=link, resume=True)
    interrupted_build(crossing, out=link, progress=interrupting_after(link, 6))
    source = crossing.parent / "squares" / "impls.py"
    original = source.read_text()
    source.write_text(original + "\n# changed\n")
    with pytest.raises(ResumeError, match=r"squares/impls\.py changed since"):
        build(crossing, out=link, resume=True)
    assert kept_folder(link).is_dir() and not link.exists()  # refused: nothing moved
    source.write_text(original)
    description = crossing.read_text()
    crossing.write_text(description.replace("verify 8", "verify 6"))
    with pytest.raises(ResumeError, match=r"crossing\.hl changed since"):
        build(crossing, out=link, resume=True)
    crossing.write_text(description)
    record = kept_folder(link) / RECORD
    record.write_text(record.read_text().replace('"format": 1', '"format": 99'))
    with pytest.raises(ResumeError, match="form 99, not 1: another version of hlc's"):
        build(crossing, out=link, resume=True)


def test_a_build_that_ends_removes_what_an_interrupted_one_kept(crossing, tmp_path, monkeypatch):
    link = tmp_path / "build" / "crossing"
    interrupted_build(crossing, out=link, progress=interrupting_after(link, 6))
    build(crossing, out=link, quick=True)  # not resumed: it supersedes what was kept
    assert not kept_folder(link).exists() and (link / "models.json").is_file()


def test_resume_refuses_settings_of_its_own(capsys):
    code = cli.main(["build", str(DESCRIPTIONS / "crossing.hl"), "--resume", "--seed", "0", "--grid"])
    assert code == cli.USER_ERROR
    assert "leave out --seed, --grid" in capsys.readouterr().err


def test_uncertain_is_a_share_that_stops_an_adaptive_build_only(capsys, tmp_path):
    crossing = str(DESCRIPTIONS / "crossing.hl")
    for bad in ("150%", "-0.1", "some"):
        with pytest.raises(SystemExit) as exited:
            cli.main(["build", crossing, "--uncertain", bad])
        assert exited.value.code == 2 and "--uncertain" in capsys.readouterr().err
    assert cli.main(["build", crossing, "--uncertain", "5%", "--grid"]) == cli.USER_ERROR
    assert "--grid measures the whole loop nest" in capsys.readouterr().err
    for options in ({"uncertain": 1.5}, {"uncertain": 0.05, "quick": True}, {"uncertain": 0.05, "adaptive": False}):
        with pytest.raises(ValueError, match="uncertain"):
            build(crossing, out=tmp_path / "crossing", **options)
    assert not (tmp_path / "crossing").exists()


def test_the_command_says_where_the_measurements_are_kept(monkeypatch, capsys, tmp_path):
    def interrupted(*args, **options):
        raise BuildInterrupted(tmp_path / ".crossing.interrupted")

    monkeypatch.setattr(building, "build", interrupted)
    assert cli.main(["build", str(DESCRIPTIONS / "crossing.hl")]) == 130
    said = capsys.readouterr().err
    assert f"interrupted: what it measured is kept in {tmp_path / '.crossing.interrupted'}" in said
    assert "add --resume to the same command" in said


def test_ctrl_c_in_a_real_build_keeps_the_samples_and_stops_every_process(crossing, tmp_path):
    """The terminal's interrupt goes to the build's whole process group: the
    profiling programs end, and the build keeps what they had written."""
    link = tmp_path / "build" / "crossing"
    # A shell without job control starts its background commands with SIGINT
    # ignored, and Python then keeps it so: the build's own run restores it,
    # as a terminal's foreground command has it.
    interruptible = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                     "from hlc.cli import main; sys.exit(main(sys.argv[1:]))")
    command = [sys.executable, "-c", interruptible, "build", str(crossing), "--out", str(link), "--budget", "60"]
    started = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not any(sample_lines(p) for p in link.parent.glob(".crossing.*/samples.jsonl")):
            assert started.poll() is None and time.monotonic() < deadline, "no sample was taken"
            time.sleep(0.1)
        os.killpg(started.pid, signal.SIGINT)
        _, said = started.communicate(timeout=60)
    finally:
        if started.poll() is None:
            os.killpg(started.pid, signal.SIGKILL)
    assert started.returncode == 130, said
    assert "add --resume to the same command to continue" in said
    assert sample_lines(kept_folder(link) / "samples.jsonl")
    survivors = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
    assert not survivors
    result = subprocess.run([*command[:-1], "2", "--resume"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (link / "models.json").is_file() and not kept_folder(link).exists()
    assert "resumed: the interrupted build had taken" in result.stdout


def test_a_recalibration_with_check_is_not_resumed(tmp_path):
    with pytest.raises(ResumeError, match="--check is not resumed"):
        building.recalibrate(tmp_path / "crossing", check=True, resume=True)
