"""The fitter against the thesis's worked example and synthetic models."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlc.artefacts.models import TimeModel
from hlc.model.fit import FitError, RankWarning, confidence_band, fit, mean_relative_error
from hlc.model.predict import Covariance

# Thesis §2.2, Table 2-2: car weight (1000 lb) and fuel use (gallons per 100 miles).
WEIGHT = [3.4, 3.8, 4.1, 2.2, 2.6, 2.9, 2.0, 2.7, 1.9, 3.4]
GALLONS = [5.5, 5.9, 6.5, 3.3, 3.6, 4.6, 2.9, 3.6, 3.1, 4.9]


class TestWorkedExample:
    """The figures the thesis prints, to the digits it prints."""

    def test_absolute_fit_with_constant(self):
        result = fit({"weight": WEIGHT}, GALLONS, relative=False, prune=False)
        assert result.coefficients["1"] == pytest.approx(-0.363, abs=5e-4)
        assert result.coefficients["weight"] == pytest.approx(1.64, abs=5e-3)
        assert result.r2 == pytest.approx(0.954, abs=5e-4)
        assert result.mre == pytest.approx(1.053, abs=5e-4)

    def test_the_constants_interval_includes_zero(self):
        result = fit({"weight": WEIGHT}, GALLONS, relative=False, prune=False)
        assert abs(result.coefficients["1"]) < result.half_widths["1"]
        assert abs(result.coefficients["weight"]) > result.half_widths["weight"]

    def test_relevance_rule_drops_the_constant(self):
        result = fit({"weight": WEIGHT}, GALLONS, relative=False)
        assert result.dropped == ["1"]
        assert result.coefficients == {"weight": pytest.approx(1.52, abs=5e-3)}
        assert result.coefficient("1") == 0.0
        assert result.r2 == pytest.approx(0.948, abs=1e-3)
        assert result.mre == pytest.approx(1.058, abs=5e-4)

    def test_relative_fit_through_the_origin(self):
        result = fit({"weight": WEIGHT}, GALLONS, relative=True, constant=False)
        assert result.coefficients["weight"] == pytest.approx(1.495, abs=5e-4)
        # The relevance rule reaches the same model when the constant is offered.
        assert fit({"weight": WEIGHT}, GALLONS).coefficients == pytest.approx(result.coefficients)

    def test_half_width_uses_the_two_sided_t_quantile(self):
        # t(0.975, 8) = 2.306; h = t · sqrt(V · C_ii) with V = Σr²/(n − r).
        x = np.column_stack([np.ones(10), WEIGHT])
        result = fit({"weight": WEIGHT}, GALLONS, relative=False, prune=False)
        variance = np.sum(result.residuals**2) / 8
        expected = 2.306004135 * np.sqrt(variance * np.diag(np.linalg.inv(x.T @ x)))
        assert [result.half_widths["1"], result.half_widths["weight"]] == pytest.approx(expected, rel=1e-8)

    def test_summary_is_text(self):
        text = fit({"weight": WEIGHT}, GALLONS, relative=False).summary()
        assert "weight" in text and "dropped as irrelevant: 1" in text and "R² = 0.9486" in text


def synthetic(rng: np.random.Generator, count: int, noise: float):
    """Times of a known model (3 relevant terms) with multiplicative noise,
    and two irrelevant terms offered beside them."""
    n = rng.integers(16, 1 << 20, count).astype(float)
    width = rng.integers(4, 33, count).astype(float)
    terms = {"n": n, "n*width": n * width, "width": width, "junk": rng.uniform(0, 100, count),
             "n*junk2": n * rng.uniform(0, 1e-3, count)}
    truth = 5e-6 + 2e-9 * n + 3e-10 * n * width
    return terms, truth * rng.lognormal(0.0, noise, count)


def test_synthetic_model_keeps_the_true_terms_and_predicts_held_out_samples():
    rng = np.random.default_rng(7)
    terms, times = synthetic(rng, 400, 0.02)
    result = fit(terms, times)
    assert {"1", "n", "n*width"} <= set(result.coefficients)
    assert "junk" in result.dropped
    assert result.coefficients["n"] == pytest.approx(2e-9, rel=0.05)
    assert result.coefficients["n*width"] == pytest.approx(3e-10, rel=0.05)
    held_terms, held_times = synthetic(rng, 200, 0.02)
    assert result.mre_on(held_terms, held_times) < 1.03


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.1, 100.0), min_size=3, max_size=3), st.integers(0, 2**32 - 1))
def test_exact_data_is_recovered(coefficients, seed):
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(1, 50, 60), rng.uniform(1, 50, 60)
    times = coefficients[0] + coefficients[1] * x1 + coefficients[2] * x1 * x2
    result = fit({"x1": x1, "x1*x2": x1 * x2}, times)
    assert [result.coefficient(t) for t in ("1", "x1", "x1*x2")] == pytest.approx(coefficients, rel=1e-6)
    assert result.mre == pytest.approx(1.0, abs=1e-9)


def test_a_column_the_samples_cannot_tell_from_earlier_ones_is_left_out_by_name():
    """One rank count profiled: logP is a multiple of the constant, n * logP
    of n.  The earlier term keeps the weight; the later one is named, not
    given half of it."""
    rng = np.random.default_rng(3)
    n = rng.uniform(1, 1000, 80)
    logp = np.ones(80)
    times = 1.0 + 4.0 * n
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankWarning)  # nothing left for the minimum-norm solution to share
        result = fit({"n": n, "logP": logp, "n * logP": n * logp, "n again": 2 * n}, times)
    assert result.aliases == {"logP": ["1"], "n * logP": ["n"], "n again": ["n"]}
    assert result.coefficients == pytest.approx({"1": 1.0, "n": 4.0})
    assert "left out: the samples cannot tell logP from 1: 1 carries its weight" in result.summary()
    # a combination of several earlier columns is named with all of them
    both = fit({"n": n, "m": n**2, "n + m": 3 * n + n**2}, times)
    assert both.aliases == {"n + m": ["n", "m"]}


def test_nearly_dependent_columns_are_not_called_identical():
    rng = np.random.default_rng(5)
    n = rng.uniform(1, 1000, 80)
    times = (1.0 + 4.0 * n) * rng.lognormal(0, 0.01, 80)
    result = fit({"n": n, "n bent": n * (1 + 1e-3 * np.sin(n))}, times)
    assert result.aliases == {}


def test_zero_variance_columns_do_not_break_the_fit():
    rng = np.random.default_rng(4)
    n = rng.uniform(1, 1000, 50)
    times = 2.0 + 3.0 * n * rng.lognormal(0, 0.01, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankWarning)
        result = fit({"n": n, "zeros": np.zeros(50), "constant again": np.full(50, 7.0)}, times)
    assert "zeros" in result.dropped
    assert result.coefficient("n") == pytest.approx(3.0, rel=0.01)
    assert np.isfinite(result.predict({"n": n, "zeros": np.zeros(50), "constant again": np.full(50, 7.0)})).all()


@pytest.mark.parametrize("seed", range(4))
def test_a_column_of_zeros_changes_nothing(seed):
    # A hinge beyond the profiled range (width - 22 with widths up to 22) is
    # all zeros.  Among many hinge columns of very different scales, rounding
    # in the SVD once gave such a column a tiny coefficient with a tinier
    # half-width, and it was kept.
    rng = np.random.default_rng(seed)
    n = np.round(2 ** rng.uniform(4, 20, 90))
    width = rng.integers(4, 23, 90).astype(float)
    values = 2 ** width
    logn = np.log2(n)
    present = 1 - np.exp(-n / values)
    terms = {"n": n, "values": values,
             **{f"n * max(0, width - {k})": n * np.maximum(0, width - k) for k in (10, 13, 16, 19, 22)},
             **{f"values * max(0, width - {k})": values * np.maximum(0, width - k) for k in (18, 21)},
             **{f"n * max(0, logn - {k})": n * np.maximum(0, logn - k) for k in (15, 18)},
             "values * (4 * n >= values)": values * (4 * n >= values),
             "values * (n >= 6 * values)": values * (n >= 6 * values),
             "values * present": values * present,
             "values * present * (1 - present)": values * present * (1 - present)}
    times = (2e-6 + 4e-10 * n + 3e-10 * values + 4e-11 * terms["n * max(0, width - 10)"]
             + 1e-10 * terms["values * max(0, width - 21)"]
             + 1e-9 * terms["values * present * (1 - present)"]) * rng.lognormal(0, 0.03, 90)
    zeros = "n * max(0, width - 22)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankWarning)
        padded = fit(terms, times)
        plain = fit({term: column for term, column in terms.items() if term != zeros}, times)
    assert padded.dropped == [zeros, *plain.dropped]
    assert padded.coefficients == plain.coefficients


def test_too_few_samples_is_a_clear_error():
    with pytest.raises(FitError, match="3 samples cannot fit 3 terms: at least 4 are needed"):
        fit({"a": [1, 2, 3], "b": [3, 1, 2]}, [1.0, 2.0, 3.0])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="term 'a' has 2 values, times have 3"):
        fit({"a": [1, 2]}, [1.0, 2.0, 3.0])
    with pytest.raises(FitError, match="positive times"):
        fit({"a": [1, 2, 3]}, [1.0, 0.0, 3.0])
    with pytest.raises(ValueError, match="confidence"):
        fit({"a": [1, 2, 3, 4]}, [1.0, 2.0, 3.0, 4.0], confidence=95)


def test_mean_relative_error_is_a_geometric_mean():
    assert mean_relative_error(np.array([1.0, 2.0]), np.array([1.1, 1.8])) == pytest.approx(np.sqrt(1.1 * 1.1))


class TestConfidenceBand:
    """ŷ ± t·sqrt(xᵀΣx), Σ = V·(AᵀA)⁻¹ in the fit's weighted coordinates."""

    def test_one_term_band_is_the_term_times_its_half_width(self):
        rng = np.random.default_rng(21)
        n = rng.uniform(1, 1000, 40)
        times = 3e-9 * n * rng.lognormal(0, 0.05, 40)
        result = fit({"n": n}, times, constant=False)
        points = np.array([-7.0, 0.0, 1.0, 250.0, 5e4])
        assert result.kept == ["n"]
        assert result.band({"n": points}) == pytest.approx(np.abs(points) * result.half_widths["n"], rel=1e-12)
        constant_only = fit({}, times)
        assert constant_only.band({}) == pytest.approx([constant_only.half_widths["1"]], rel=1e-12)

    def test_covariance_diagonal_reproduces_the_half_widths(self):
        rng = np.random.default_rng(22)
        terms, times = synthetic(rng, 300, 0.03)
        for relative in (True, False):
            result = fit(terms, times, relative=relative)
            assert set(result.covariance) == set(result.coefficients)
            assert all(set(row) == set(result.coefficients) for row in result.covariance.values())
            for term, half in result.half_widths.items():
                assert (half / result.quantile) ** 2 == pytest.approx(result.covariance[term][term], rel=1e-9)
            for a in result.kept:  # symmetric
                for b in result.kept:
                    assert result.covariance[a][b] == pytest.approx(result.covariance[b][a], rel=1e-9)

    def test_band_of_the_worked_example_by_the_textbook_formula(self):
        x = np.column_stack([np.ones(10), WEIGHT])
        result = fit({"weight": WEIGHT}, GALLONS, relative=False, prune=False)
        assert result.quantile == pytest.approx(2.306004135, rel=1e-9)
        variance = np.sum(result.residuals**2) / 8
        points = np.array([1.5, 2.0, 3.0, 4.5])
        rows = np.column_stack([np.ones(4), points])
        expected = result.quantile * np.sqrt(variance * np.einsum("ij,jk,ik->i", rows, np.linalg.inv(x.T @ x), rows))
        assert result.band({"weight": points}) == pytest.approx(expected, rel=1e-9)
        # the same from the stored form (what models.json holds)
        assert confidence_band(result.covariance, result.quantile, {"weight": points}) == pytest.approx(expected)
        # and from the matrix a planner keeps for a model it asks at many points
        kept = Covariance.of(TimeModel("fitted", covariance=result.covariance, quantile=result.quantile))
        assert [kept.band({"weight": w}) for w in points] == pytest.approx(expected, rel=1e-9)

    @pytest.mark.parametrize("relative", [False, True])
    def test_band_covers_the_true_mean_about_as_often_as_its_confidence(self, relative):
        rng = np.random.default_rng(23)
        x = np.linspace(1, 50, 30)
        z = rng.uniform(0, 10, 30)
        terms = {"x": x, "x*z": x * z}
        mean = 2.0 + 0.5 * x + 0.3 * x * z
        covered = []
        for _ in range(200):
            noise = rng.standard_normal(30)
            times = mean * (1 + 0.05 * noise) if relative else mean + 3.0 * noise
            result = fit(terms, times, relative=relative, prune=False)
            covered.append(np.abs(result.predict(terms) - mean) <= result.band(terms))
        assert 0.85 <= np.mean(covered) <= 1.0
