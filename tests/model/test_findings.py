"""What the fitter found, weighed: the findings that make most of a prediction first."""

from __future__ import annotations

import pytest

from hlc.artefacts.models import Discovered, Factor, TimeModel
from hlc.language.expressions import unparse
from hlc.language.parse import parse
from hlc.model.findings import LEAST_SHARE, MOST_LISTED, Finding, findings, in_words, listed
from hlc.model.predict import Predictor
from hlc.model.terms import discovered_in_words, model_terms

DESCRIPTION = """
library passes "One pass."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)
    reference scan

    impl scan = numpy.sum "a pass"
        time ~ 1 + n

    profile
        for i in 4 .. 20 ++
        values = ones(1 << i)
"""

#: Found in the order a fit may keep them: a negligible change first, the one
#: that doubles the cost per element past 2^12 elements last.
TINY = Discovered("n", (Factor("step", "n", 6.0, True),))
MIDDLE = Discovered("n", (Factor("hinge", "n", 16.0, True),))
LARGE = Discovered("n", (Factor("step", "n", 12.0, True),))
BETAS = {TINY: 1e-13, MIDDLE: 5e-11, LARGE: 1e-9}


@pytest.fixture
def fitted():
    library = parse(DESCRIPTION)
    implementation = library.interfaces[0].implementations[0]
    found = (TINY, MIDDLE, LARGE)
    texts = [unparse(term) for term in model_terms(implementation.model("time"), found)]
    coefficients = {"1": 2e-6, "n": 1e-9, **{text: BETAS[term] for term, text in zip(found, texts[-3:], strict=True)}}
    entry = TimeModel("fitted", discovered=found, terms=tuple(texts), kept=tuple(texts), coefficients=coefficients)
    return Predictor(library, {"scan": entry}), implementation, entry


def at(n: float) -> dict[str, float]:
    return {"n": n, "P": 1, "logP": 0.0}


def test_the_findings_are_weighed_by_the_largest_part_of_a_prediction_they_make(fitted):
    predictor, implementation, entry = fitted
    weighed = findings(predictor, implementation, entry, [at(2.0**k) for k in range(4, 21)])
    assert [f.words for f in weighed] == [
        "the cost per n rises by 1 ns from n = 2^12 (4,096)",
        "the cost per n grows by 50 ps per octave of n beyond n = 2^16 (65,536)",
        "the cost per n rises by 0.1 ps from n = 2^6 (64)"]
    large, middle, tiny = weighed
    # The step makes most of a prediction at 2^16 elements, just before the
    # hinge adds to the cost per element: 1 ns of 2 ns (and 0.1 ps), 2 us a call.
    n = 2.0**16
    assert large.share == pytest.approx(1e-9 * n / (2e-6 + (2e-9 + 1e-13) * n))
    assert large.seconds == pytest.approx(1e-9 * n)
    n = 2.0**20  # the hinge, 4 octaves past its knot, at the largest point
    assert middle.share == pytest.approx(4 * 5e-11 * n / (2e-6 + (2.2e-9 + 1e-13) * n))
    assert tiny.share < LEAST_SHARE


def test_one_point_weighs_the_findings_there_and_counts_those_that_add_nothing(fitted):
    predictor, implementation, entry = fitted
    assert in_words(predictor, implementation, entry, [at(2.0**10)]) == [
        "3 findings, none 1% of the prediction here"]
    assert in_words(predictor, implementation, entry, [at(2.0**20)]) == [
        "the cost per n rises by 1 ns from n = 2^12 (4,096): +1.05 ms here",
        "the cost per n grows by 50 ps per octave of n beyond n = 2^16 (65,536): +210 µs here",
        "and 1 more, none 1% of the prediction here"]


def test_a_build_s_findings_say_the_most_each_makes_of_a_sample_s_time(fitted):
    predictor, implementation, entry = fitted
    assert in_words(predictor, implementation, entry, [at(2.0**k) for k in range(4, 21)]) == [
        "the cost per n rises by 1 ns from n = 2^12 (4,096): up to 49% of a sample's predicted time",
        "the cost per n grows by 50 ps per octave of n beyond n = 2^16 (65,536): up to 9% of a sample's "
        "predicted time",
        "and 1 more, none 1% of the prediction at any sample"]


def test_at_most_a_few_findings_are_listed_and_the_rest_counted():
    many = [Finding(f"finding {k}", 0.5 - k / 100, 1e-6) for k in range(MOST_LISTED + 3)]
    lines = listed(many, at_one_point=False)
    assert lines[:-1] == [f"finding {k}: up to {0.5 - k / 100:.0%} of a sample's predicted time"
                          for k in range(MOST_LISTED)]
    assert lines[-1] == "and 3 more, each a smaller part of the prediction at any sample"
    offset = listed([Finding("a hinge", 2.5, 1e-3)], at_one_point=False)
    assert offset == ["a hinge: up to 250% of a sample's predicted time, other terms taking time off there"]


def test_without_a_description_to_weigh_them_the_findings_keep_the_order_found(fitted):
    _, _, entry = fitted
    assert in_words(None, None, entry, []) == discovered_in_words(entry)
    assert discovered_in_words(entry)[0] == "the cost per n rises by 0.1 ps from n = 2^6 (64)"
