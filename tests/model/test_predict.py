"""Evaluating models in Python (hlc.model.predict): hybrid terms follow the models they call."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hlc.artefacts.models import TimeModel
from hlc.artefacts.samples import Samples
from hlc.language.expressions import EvaluationError
from hlc.language.parse import parse, parse_file
from hlc.language.parser import parse_syntax
from hlc.model import predict
from hlc.model.predict import Predictor, term_columns, term_values

ROOT = Path(__file__).resolve().parents[2]

HYBRID = """
library hybrid "A model that calls another."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)
    reference local

    impl local = numpy.sum "a pass"
        time ~ 1 + n

    impl spread = numpy.sum "the pass, and an exchange"
        time ~ 1 + local(n) + n * logP

    profile
        for i in 4 .. 16 ++
        values = ones(1 << i)
"""


def _fitted(**coefficients: float) -> TimeModel:
    return TimeModel("fitted", coefficients=coefficients)


def test_a_hybrid_term_follows_a_refit_of_the_model_it_calls():
    library = parse(HYBRID)
    calibration = {"local": _fitted(**{"1": 1.0, "n": 2.0}),
                   "spread": _fitted(**{"1": 0.5, "local(n)": 3.0, "n * logP": 1.0})}
    predictor = Predictor(library, calibration)
    at = {"n": 10.0, "P": 2, "logP": 1.0}
    assert predictor.evaluate("spread", at) == pytest.approx(0.5 + 3.0 * 21.0 + 10.0)
    assert predictor.evaluate("spread", at) == pytest.approx(0.5 + 3.0 * 21.0 + 10.0)  # asked again
    calibration["local"] = _fitted(**{"1": 1.0, "n": 5.0})  # local refitted
    assert predictor.evaluate("spread", at) == pytest.approx(0.5 + 3.0 * 51.0 + 10.0)
    calibration["spread"] = _fitted(**{"1": 0.0, "local(n)": 1.0})  # spread refitted, local's terms only
    assert predictor.evaluate("spread", at) == pytest.approx(51.0)
    # the called model sees its caller's P and logP, and is asked at each of them apart
    assert predictor.evaluate("spread", {"n": 10.0, "P": 4, "logP": 2.0}) == pytest.approx(51.0)


HELPERS = """
library helpers "Two libraries whose terms read alike and differ by a helper."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)
    reference local

    impl local = numpy.sum "a pass"
        let m = n * {factor}
        time ~ 1 + m

    impl spread = numpy.sum "the pass, and an exchange"
        time ~ 1 + local(n) + m * logP
        let m = n

    profile
        for i in 4 .. 16 ++
        values = ones(1 << i)
"""


def test_term_values_are_kept_for_terms_that_call_no_model_only():
    """A term's value is kept across predictors (an adaptive build refits
    after every round): by implementation, so that another library's term
    of the same text reads its own helpers, and never for a term that calls
    a model, whose value follows that model's fit."""
    first, second = parse(HELPERS.format(factor=2)), parse(HELPERS.format(factor=3))
    at = {"n": 10.0, "P": 2, "logP": 1.0}
    for library, factor in ((first, 2), (second, 3), (first, 2)):
        predictor = Predictor(library, {"local": _fitted(**{"1": 1.0, "m": 2.0})})
        local = library.interfaces[0].implementation("local")
        assert term_values(predictor, local, local.model("time").terms, at) == {"m": 10.0 * factor}
    spread = first.interfaces[0].implementation("spread")
    terms = spread.model("time").terms
    for slope in (2.0, 5.0):  # local refitted: its caller's term follows
        predictor = Predictor(first, {"local": _fitted(**{"1": 1.0, "m": slope})})
        assert term_values(predictor, spread, terms, at) == {"local(n)": 1.0 + slope * 20.0, "m * logP": 10.0}


def _terms(texts: list[str]):
    """Expressions from their texts, as the grammar reads them."""
    return [let.value for let in parse_syntax("library probe\n" + "".join(f"let t{i} = {text}\n"
                                                                          for i, text in enumerate(texts))).constants]


#: Terms of the kinds discovery adds to the sort library's written ones.
DISCOVERED = ["n * max(0, log2(n) - 17)", "n * iter * (log2(n) >= 18.5)", "iter * (width >= 12)",
              "values * present * max(0, log2(n) - 19)", "n * (width >= 16) * (log2(n) >= 9)"]


def test_term_columns_are_the_term_values_of_every_sample():
    """Valued over arrays (hlc.language.arrays), each term of each sort model,
    written or of the kinds discovery adds, has at every stored sample the
    value term_values gives it there, exactly: a hybrid term too (the
    two-rank radix and counting sorts call the one-rank models)."""
    library = parse_file(ROOT / "libraries" / "sort.hl")
    samples = Samples.read(ROOT / "tests" / "data" / "sort" / "samples.jsonl").samples
    predictor = Predictor(library, {"radix": _fitted(**{"1": 1e-6, "n * iter": 1e-9}),
                                    "counting": _fitted(**{"1": 1e-6, "n": 1e-9, "values": 2e-9})})
    for implementation in library.interfaces[0].implementations:
        environments = [s.environment for s in samples if s.implementation == implementation.name]
        names = {let.name for let in implementation.lets} | set(environments[0])
        extra = [t for t, text in zip(_terms(DISCOVERED), DISCOVERED, strict=True)
                 if all(word in names for word in text.replace("(", " ").replace(")", " ").split()
                        if word.isidentifier() and word not in ("max", "log2"))]
        terms = list(implementation.model("time").terms) + extra
        columns = term_columns(predictor, implementation, terms, environments)
        predict._TERM_VALUES.clear()
        rows = [term_values(predictor, implementation, terms, environment) for environment in environments]
        assert list(columns) == list(rows[0])
        for text, values in columns.items():
            assert np.array_equal(values, [row[text] for row in rows]), f"{implementation.name}: {text}"
        over_arrays = predict.array_columns(predictor, implementation, terms, list(columns), environments)
        assert over_arrays is not None and len(over_arrays) == len(terms)  # the hybrid term's too


def test_term_columns_fail_as_term_values_fails():
    """A term that cannot be valued at one sample raises what term_values
    raises at the first such sample, whichever way the others were valued."""
    library = parse(HYBRID)
    local = library.interfaces[0].implementation("local")
    terms = _terms(["n", "log2(n - 16)"])
    environments = [{"n": float(n), "P": 1, "logP": 0.0} for n in (80, 32, 16, 8)]
    predictor = Predictor(library, {})
    with pytest.raises(EvaluationError) as expected:
        [term_values(predictor, local, terms, environment) for environment in environments]
    with pytest.raises(EvaluationError) as raised:
        term_columns(predictor, local, terms, environments)
    assert str(raised.value) == str(expected.value)
    assert term_columns(predictor, local, terms, environments[:2])["log2(n - 16)"].tolist() == [6.0, 4.0]


def test_a_hybrid_term_is_valued_over_arrays_through_the_model_it_calls():
    """local(n) over arrays is local's fitted sum at each n, as term_values
    has it; with local not calibrated, the term fails as term_values fails."""
    library = parse(HYBRID)
    spread = library.interfaces[0].implementation("spread")
    terms = list(spread.model("time").terms)
    environments = [{"n": float(n), "P": p, "logP": math.log2(p)} for n in (16, 1000, 5e5) for p in (2, 4)]
    predictor = Predictor(library, {"local": _fitted(**{"1": 3e-7, "n": 1.5e-9})})
    columns = term_columns(predictor, spread, terms, environments)
    assert predict.array_columns(predictor, spread, terms, list(columns), environments).keys() == columns.keys()
    for text, values in columns.items():
        assert values.tolist() == [term_values(predictor, spread, terms, e)[text] for e in environments]
    unfitted = Predictor(library, {})
    with pytest.raises(EvaluationError) as expected:
        term_values(unfitted, spread, terms, environments[0])
    with pytest.raises(EvaluationError) as raised:
        term_columns(unfitted, spread, terms, environments)
    assert str(raised.value) == str(expected.value)
