"""The whole pipeline on the sort library with the default settings, as a
user runs it: build, import, sort, explain, evaluate, report, and install
the build with pip into a fresh virtual environment.

It takes a few minutes, so it is marked ``slow``: CI deselects it, and
the quick builds of the other tests stand for it there (the same stages on
smaller nests).  Run it with ``pytest -m slow`` or ``make test-slow``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hlc
from hlc.artefacts.evaluation import load as load_evaluation
from hlc.artefacts.models import load as load_models

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_a_default_build_of_the_sort_library_sorts_explains_evaluates_and_reports(tmp_path):
    result = hlc.build(ROOT / "libraries" / "sort.hl", out=tmp_path / "sort")
    assert not result.failures and result.compiled
    assert result.breakdown.wall > 0 and result.rounds  # an adaptive profile, round by round
    models = load_models(tmp_path / "sort" / "models.json")
    assert {name for name, entry in models.times().items() if entry.usable} >= {"radix", "counting", "numpy"}
    sort = hlc.load(tmp_path / "sort")
    rng = np.random.default_rng(11)
    chosen = set()
    for n, bits in ((100, 8), (5_000, 30), (200_000, 12), (1_000_000, 40)):
        keys = rng.integers(-(1 << bits), 1 << bits, size=n, dtype=np.int64)
        chosen.add(sort.choose(keys).implementation)
        assert np.array_equal(sort.sort(keys), np.sort(keys))
        assert np.array_equal(sort.sort(keys.tolist()), np.sort(keys))  # a list is converted, losing nothing
    assert len(chosen) > 1
    assert "chosen" in sort.explain(rng.integers(0, 1000, 10_000))
    evaluation = hlc.evaluate(tmp_path / "sort", points=12, seed=3)
    summary = evaluation.summary()
    assert summary is not None and summary.points == 12 and 0 <= summary.right_share <= 1
    assert load_evaluation(tmp_path / "sort" / "evaluation.json").interfaces["sort"].summary == summary
    page = hlc.report(tmp_path / "sort")
    assert page.index.exists() and "right choices" in page.index.read_text(encoding="utf-8")
    installed_in_a_fresh_environment(tmp_path / "sort", tmp_path / "fresh")


def installed_in_a_fresh_environment(build: Path, venv: Path) -> None:
    """``pip install`` hlc and then the build into a new virtual environment,
    as a user who ships the build does, and sort there from another folder."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    for package in (ROOT, build):
        install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(package)],
                                 capture_output=True, text=True, timeout=900)
        assert install.returncode == 0, install.stderr
    check = ("import numpy, sort; keys = numpy.random.default_rng(2).integers(-5000, 5000, 30000); "
             "assert (sort.sort(keys) == numpy.sort(keys)).all(); print(sort.choose(keys).implementation)")
    result = subprocess.run([str(python), "-c", check], capture_output=True, text=True, timeout=300,
                            cwd=venv)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in sort_implementations()


def sort_implementations() -> set[str]:
    return {i.name for i in hlc.parse_file(ROOT / "libraries" / "sort.hl").implementations}
