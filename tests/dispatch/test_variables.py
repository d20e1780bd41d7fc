"""Explanatory variables that use P and earlier variables work in every stage:
the profiling program, the compiled module and the pure-Python module."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hlc
from hlc.dispatch.build import package

DESCRIPTION = """\
library chained
from numpy import ones
interface f(x: float64[]) -> float
    n = len(x)
    cells = n * 2 + P
    halves = cells / 2 + logP
    impl a = numpy.sum
        time ~ 1 + cells
    impl b = math.fsum
        time ~ 1 + halves
    profile
        for i in 4 .. 10 ++
        x = ones(1 << i)
"""


def test_variables_may_use_p_and_earlier_variables(tmp_path, monkeypatch):
    description = tmp_path / "chained.hl"
    description.write_text(DESCRIPTION)
    result = hlc.build(description, out=tmp_path / "chained", quick=True)
    samples = [json.loads(line) for line in (tmp_path / "chained" / "samples.jsonl").read_text().splitlines()]
    recorded = next(s["variables"] for s in samples if s["kind"] == "sample")
    assert recorded["cells"] == 2 * recorded["n"] + 1 and recorded["halves"] == recorded["cells"] / 2
    compiled = hlc.load(tmp_path / "chained")
    x = np.ones(100)
    assert compiled.variables_f(x) == {"n": 100, "cells": 201, "halves": 100.5, "P": 1, "logP": 0}
    monkeypatch.setenv("CC", "no-such-compiler")
    (tmp_path / "python").mkdir()
    with pytest.warns(RuntimeWarning, match="no C compiler"):
        assert not package(hlc.parse_file(description), result.models, {}, tmp_path / "python")
    python = hlc.load(tmp_path / "python")
    assert python.choose(x).implementation == compiled.choose(x).implementation
    assert python.f(x) == compiled.f(x) == 100.0


def test_hlc_explain_prints_the_module_s_predictions_and_choice(tmp_path, capsys):
    from hlc.cli import main
    from hlc.dispatch.explain import _seconds

    description = tmp_path / "chained.hl"
    description.write_text(DESCRIPTION)
    hlc.build(description, out=tmp_path / "chained", quick=True)
    module = hlc.load(tmp_path / "chained")
    variables = {"n": 5000.0, "cells": 10001.0, "halves": 5000.5}
    assert main(["explain", str(tmp_path / "chained"), *(f"{k}={v}" for k, v in variables.items())]) == 0
    lines = capsys.readouterr().out.splitlines()
    choice = module.choose_f_at(**variables)
    for name in ("a", "b"):
        line = next(line for line in lines if line.startswith(f"{name} "))
        assert _seconds(module.predict(name, **variables)) in line
        assert _seconds(choice.predicted[name]) in line
        assert ("← chosen" in line) == (name == choice.implementation)
    assert main(["explain", str(tmp_path / "chained"), "n=1"]) == 2
    assert "missing cells, halves" in capsys.readouterr().err
