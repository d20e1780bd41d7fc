"""The typical deviation of a model's samples, as a sum of its own terms (hlc.model.deviation)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlc.artefacts.models import TimeModel
from hlc.model.deviation import fit_deviation
from hlc.model.fit import fit


def _samples(seed: int, scatter_a: float, scatter_b: float, count: int = 400):
    """Times a·1e-9 + b·1e-8 over random a and b, each term's part scattered
    by its own relative noise: a term's deviation should follow its noise."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(1e3, 1e6, count)
    b = rng.uniform(1e2, 1e5, count)
    times = (1e-9 * a * (1 + scatter_a * np.abs(rng.standard_normal(count)))
             + 1e-8 * b * (1 + scatter_b * np.abs(rng.standard_normal(count))))
    return {"a": a, "b": b}, times


def test_the_deviation_lies_on_the_term_whose_part_scatters():
    columns, times = _samples(1, 0.0, 0.3)
    result = fit(columns, times, constant=False)
    gamma = fit_deviation({name: columns[name] for name in result.kept}, times, result.residuals)
    # b's part scatters by 30% (about 0.24 of its coefficient on average, half-normal), a's not at all
    assert gamma.get("b", 0.0) / 1e-8 > 0.1
    assert gamma.get("a", 0.0) / 1e-9 < 0.03


def test_steady_samples_deviate_little_everywhere():
    columns, times = _samples(2, 0.0, 0.0)
    result = fit(columns, times, constant=False)
    gamma = fit_deviation({name: columns[name] for name in result.kept}, times, result.residuals)
    prediction = sum(result.coefficients[name] * columns[name] for name in result.kept)
    deviation = sum(gamma.get(name, 0.0) * columns[name] for name in result.kept)
    assert np.all(deviation <= 1e-6 * prediction)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.5), st.floats(0.0, 0.5))
def test_the_deviations_are_non_negative_and_the_same_for_the_same_samples(seed, scatter_a, scatter_b):
    columns, times = _samples(seed, scatter_a, scatter_b, count=60)
    result = fit(columns, times, constant=False)
    kept = {name: columns[name] for name in result.kept}
    gamma = fit_deviation(kept, times, result.residuals)
    assert all(value > 0 for value in gamma.values()) and set(gamma) <= set(kept)
    assert fit_deviation(kept, times, result.residuals) == gamma


def test_nothing_to_fit_gives_no_deviation():
    assert fit_deviation({}, np.array([1.0, 2.0]), np.array([0.1, 0.1])) == {}
    assert fit_deviation({"n": np.zeros(3)}, np.ones(3), np.ones(3)) == {}


def test_the_planned_time_adds_risk_typical_deviations_by_term():
    entry = TimeModel("fitted", coefficients={"1": 1e-6, "n": 2e-9}, deviations={"n": 5e-10}, risk=2.0)
    assert entry.plan_deviations == {"n": pytest.approx(1e-9)}
    assert TimeModel("fitted", coefficients={"n": 1.0}).plan_deviations == {}
    assert TimeModel.from_json(entry.to_json()).plan_deviations == entry.plan_deviations
