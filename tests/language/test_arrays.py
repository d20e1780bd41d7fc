"""Expressions valued over arrays give, at every point, what evaluate gives there."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from hlc.language import ast
from hlc.language.arrays import ArrayUnavailable, evaluate_over
from hlc.language.expressions import EvaluationError, evaluate

from .test_expressions import expressions, parse_expression

#: Points whose values meet at powers of two, zero, negatives and fractions.
POINTS = [{"n": 1000, "width": 28, "bpd": 7, "x": 2.5, "y": -3.0},
          {"n": 131072, "width": 17, "bpd": 1, "x": 0.0, "y": 0.5},
          {"n": 1, "width": 0, "bpd": 16, "x": -2.25, "y": 7.0},
          {"n": 22, "width": 40, "bpd": 8, "x": 1e-3, "y": -0.0}]
ARRAYS = {name: np.array([point[name] for point in POINTS], dtype=float) for name in POINTS[0]}


@settings(max_examples=600, deadline=None)
@given(expressions)
def test_over_arrays_each_point_gets_what_evaluate_gives_it(expression):
    """Where the arrays give values, evaluate gives each point the same
    number, exactly; where evaluate fails at some point, the arrays refuse."""
    try:
        values = evaluate_over(expression, ARRAYS, len(POINTS))
    except ArrayUnavailable:
        return
    for point, value in zip(POINTS, values, strict=True):
        try:
            expected = evaluate(expression, point)
        except EvaluationError as error:
            pytest.fail(f"evaluate failed at {point} ({error}) where the arrays gave {value}")
        assert not isinstance(expected, complex)
        assert value == float(expected), f"at {point}"


@pytest.mark.parametrize("text", [
    "ceil(width / max(ceil(width / bpd), 1))",
    "n * ceil(width / bpd) * max(0, log2(n) - 17)",
    "n * (log2(n) >= 17) * (width >= 16)",
    "2 ** width * (1 - exp(-n / 2 ** width))",
    "max(1, min(n, 2 ** bpd)) // 3 + n % 7",
    "not (n > 10 and width < 20) or bpd == 7",
    "sqrt(n) + ln(n) + log(n, 10) + abs(y) + floor(x)",
    "2.25 ** 2.25 + abs(x) ** 1.5 + n ** (1 / 3)",  # NumPy 1.26's power gave 2.25 ** 2.25 one ulp low
    "23 ** 10.0 + bpd ** 12 + (-3) ** bpd",  # and 23.0 ** 10.0 as 41426511213648.99 on AVX-512
])
def test_the_terms_models_are_made_of_are_valued_over_arrays(text):
    expression = parse_expression(text)
    values = evaluate_over(expression, ARRAYS, len(POINTS))
    assert values.tolist() == [float(evaluate(expression, point)) for point in POINTS]


def test_a_step_at_a_power_of_two_sees_its_logarithm_exactly():
    """log2 goes through Python's math, as evaluate's does: 2**k gives k."""
    sizes = np.array([2.0**k for k in range(1, 40)])
    values = evaluate_over(parse_expression("log2(n) >= k"), {"n": sizes, "k": np.arange(1.0, 40.0)}, sizes.size)
    assert values.tolist() == [1.0] * sizes.size


@pytest.mark.parametrize("text, why", [
    ("1 / (n - 22)", "a division by zero at one point"),
    ("log2(n - 1)", "a logarithm of zero"),
    ("(-8) ** x", "a complex power"),
    ("2 ** (n * 100)", "a power evaluate refuses as too large: it overflows"),
    ("exp(n)", "an overflow"),
    ("n * n * n * n", "a value beyond 2**53, exact only as Python's integer"),
    ("2 ** 64", "the same"),
    ("n << 2", "a shift"),
    ("len(keys)", "an argument function"),
    ("radix(n, 7)", "a model"),
    ("n + z", "a name without values"),
])
def test_what_cannot_be_valued_as_evaluate_values_it_is_refused(text, why):
    with pytest.raises(ArrayUnavailable):
        evaluate_over(parse_expression(text), ARRAYS, len(POINTS))


def test_a_value_the_same_at_every_point_fills_the_array():
    assert evaluate_over(ast.Number(0, 0, 3), ARRAYS, 4).tolist() == [3.0] * 4
    assert evaluate_over(parse_expression("c * 2"), {"c": 1.5}, 2).tolist() == [3.0, 3.0]
