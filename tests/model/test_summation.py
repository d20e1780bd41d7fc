"""How a model's sum is split for the searches of its parameters (hlc.model.summation)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hlc.artefacts.models import TimeModel
from hlc.language.expressions import evaluate, unparse
from hlc.language.parse import parse
from hlc.model.predict import Predictor
from hlc.model.summation import add_up, summation, varying_names
from hlc.model.terms import model_terms

RADIX = """
library split "A radix-like model with a searched digit width."

from numpy import ones

interface sort(keys: int[]) -> int[] "Sort."
    n = len(keys)
    width = bitwidth(keys)
    reference numpy

    impl numpy = numpy.sort "no parameter"
        time ~ 1 + n + n * log2(max(n, 2))

    impl radix(bpd: int in 1 .. 16) = numpy.sort "passes of bpd bits"
        let iter = ceil(width / bpd)
        let bits = width / max(iter, 1)
        let logn = log2(max(n, 2))
        time ~ 1 + n + iter + n * iter + n * iter * max(0, bits - 9) * max(0, logn - 19)
               + n * logn + n * iter * max(0, logn - 12) + iter * (width >= 33) * max(0, bits - 9)
        choose bpd minimizing time

    profile
        for i in 4 .. 16 ++
        for bpd in 1 .. 16 ++
        keys = ones(1 << i)
"""


@pytest.fixture(scope="module")
def library():
    return parse(RADIX)


def _terms(library, name):
    implementation = library.interface("sort").implementation(name)
    return implementation, model_terms(implementation.model("time"))


def test_the_helpers_of_a_parameter_vary_with_it_and_the_others_do_not(library):
    implementation, _ = _terms(library, "radix")
    assert varying_names(implementation) == {"bpd", "iter", "bits"}


def test_terms_group_by_the_product_of_their_varying_factors(library):
    implementation, terms = _terms(library, "radix")
    sums = summation(implementation, terms)
    assert [text for text, _ in sums.fixed] == ["n", "n * logn"]
    assert [group.text for group in sums.groups] == ["iter", "iter * max(0, bits - 9)"]
    first, second = sums.groups
    # n * iter and n * iter * max(0, logn - 12) share the factor iter: one weight
    assert [(part.text, part.fixed and unparse(part.fixed)) for part in first.parts] == [
        ("iter", None), ("n * iter", "n"), ("n * iter * max(0, logn - 12)", "n * max(0, logn - 12)")]
    assert [(part.text, part.fixed and unparse(part.fixed)) for part in second.parts] == [
        ("n * iter * max(0, bits - 9) * max(0, logn - 19)", "n * max(0, logn - 19)"),
        ("iter * (width >= 33) * max(0, bits - 9)", "width >= 33")]


def test_without_a_parameter_the_sum_keeps_the_models_order(library):
    implementation, terms = _terms(library, "numpy")
    sums = summation(implementation, terms)
    assert not sums.split and [text for text, _ in sums.fixed] == [unparse(t) for t in terms]


@given(st.integers(1, 1 << 24), st.integers(1, 64), st.integers(1, 16), st.randoms(use_true_random=False))
def test_the_split_sum_is_the_models_sum(library, n, width, bpd, rng):
    implementation, terms = _terms(library, "radix")
    texts = [unparse(t) for t in terms]
    coefficients = {text: rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, -6) for text in ["1", *texts]
                    if rng.random() < 0.9}
    deviations = {text: abs(c) * rng.random() for text, c in coefficients.items() if rng.random() < 0.5}
    environment = {"n": n, "width": width, "bpd": bpd}
    for let in implementation.lets:
        environment[let.name] = evaluate(let.value, environment)
    values = {text: float(evaluate(term, environment)) for text, term in zip(texts, terms, strict=True)}
    expected = coefficients.get("1", 0.0) + sum(coefficients.get(t, 0.0) * values[t] for t in texts)
    spread = deviations.get("1", 0.0) + sum(deviations.get(t, 0.0) * values[t] for t in texts)
    total, deviation = add_up(summation(implementation, terms), coefficients, deviations,
                              lambda term: float(evaluate(term, environment)))
    scale = abs(coefficients.get("1", 0.0)) + sum(abs(coefficients.get(t, 0.0) * values[t]) for t in texts)
    assert total == pytest.approx(expected, rel=1e-12, abs=1e-12 * scale)
    assert deviation == pytest.approx(spread, rel=1e-12, abs=1e-12 * (scale + 1e-30))


def test_the_predictor_adds_up_as_the_split_says(library):
    """The Python predictor's sums are the summation's, operation for
    operation: the compiled module adds in the same order."""
    implementation, terms = _terms(library, "radix")
    rng = random.Random(3)
    texts = ["1", *(unparse(t) for t in terms)]
    entry = TimeModel("fitted", coefficients={t: rng.uniform(0.1, 1) * 1e-9 for t in texts},
                      deviations={t: rng.uniform(0.1, 1) * 1e-10 for t in texts[::2]}, risk=2.0)
    predictor = Predictor(library, {"radix": entry})
    environment = {"n": 3_000_000, "width": 29, "bpd": 10}
    for let in implementation.lets:
        environment[let.name] = evaluate(let.value, environment)
    predicted, planned = predictor.prediction_and_planned("radix", {"n": 3_000_000, "width": 29, "bpd": 10})
    total, deviation = add_up(summation(implementation, terms), entry.coefficients, entry.plan_deviations,
                              lambda term: float(evaluate(term, environment)))
    assert predicted == total and planned == total + deviation
    assert math.isfinite(planned) and planned > predicted
