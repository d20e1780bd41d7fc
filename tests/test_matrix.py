"""The test matrix script: what it claims, where it looks, how it reports."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("test_matrix_script", ROOT / "scripts" / "test_matrix.py")
matrix = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # its dataclasses look it up
_spec.loader.exec_module(matrix)


def test_the_claimed_pythons_include_this_one_and_the_requirements_have_lower_bounds():
    versions, requirements = matrix.claims()
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in versions
    constraints = matrix.lowest_constraints(requirements)
    assert len(constraints) == len(requirements)  # every requirement declares a lower bound
    assert "numpy==1.26.*" in constraints and "setuptools==68.*" in constraints


def test_a_missing_interpreter_is_skipped_with_where_it_was_looked_for():
    interpreter, looked = matrix.find_interpreter("3.99")
    assert interpreter is None and "python3.99" in looked and "pyenv" in looked
    outcome = matrix.Outcome("CPython 3.99", problem=looked, absent=True)
    assert outcome.ok and outcome.line().startswith("CPython 3.99: skipped (no python3.99 on PATH")


def test_each_run_s_line_has_its_counts_and_a_failure_fails():
    right = matrix.Outcome("CPython 3.12.1, subset", versions="numpy 2.5.5", passed=380, skipped=2, seconds=181)
    assert right.ok and right.line() == "CPython 3.12.1, subset [numpy 2.5.5]: 380 passed, 0 failed, 2 skipped in 181 s"
    assert not matrix.Outcome("x", passed=3, failed=1).ok
    assert not matrix.Outcome("x", problem="could not set up .venv-3.13").ok
