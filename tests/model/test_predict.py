"""Evaluating models in Python (hlc.model.predict): hybrid terms follow the models they call."""

from __future__ import annotations

import pytest

from hlc.artefacts.models import TimeModel
from hlc.language.parse import parse
from hlc.model.predict import Predictor, term_values

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
