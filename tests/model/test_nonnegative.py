"""Least squares with non-negative coefficients (hlc.model.nonnegative)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

from hlc.model.nonnegative import nonnegative_least_squares


def _problem(seed: int, rows: int, columns: int, positive: bool) -> tuple[np.ndarray, np.ndarray]:
    """A design of columns of unequal scale, and a target that a non-negative
    sum of them explains in part (``positive``) or not at all."""
    rng = np.random.default_rng(seed)
    design = rng.standard_normal((rows, columns)) * rng.uniform(0.1, 1.0, columns)
    if positive:
        design = np.abs(design)
    target = rng.standard_normal(rows) + np.abs(design) @ rng.uniform(0.0, 1.0, columns) * positive
    return design, target


def test_a_negative_least_squares_coefficient_is_held_at_zero():
    x = nonnegative_least_squares(np.eye(3), np.array([1.0, -2.0, 3.0]))
    np.testing.assert_allclose(x, [1.0, 0.0, 3.0])


def test_freeing_one_coefficient_moves_another_to_the_bound():
    # Unconstrained: x = (2, -1); held at x2 = 0, the best x1 is the projection.
    design = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    target = design @ np.array([2.0, -1.0])
    x = nonnegative_least_squares(design, target)
    np.testing.assert_allclose(x, [target.sum() / 3, 0.0], atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(1, 200), st.integers(1, 30), st.booleans())
def test_the_solution_meets_the_optimality_conditions(seed, rows, columns, positive):
    design, target = _problem(seed, rows, columns, positive)
    x = nonnegative_least_squares(design, target)
    assert x.shape == (columns,) and np.all(x >= 0)
    gradient = design.T @ (target - design @ x)  # minus half the objective's gradient
    scale = np.abs(design).sum(axis=0).max() * max(np.linalg.norm(target), 1.0)
    assert np.all(gradient <= 1e-9 * scale)  # no held coefficient would lower the residual
    assert np.all(np.abs(gradient[x > 0]) <= 1e-9 * scale)  # the free ones are at their optimum


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(40, 300), st.integers(1, 30), st.booleans())
def test_the_residual_is_scipys(seed, rows, columns, positive):
    design, target = _problem(seed, rows, columns, positive)
    x = nonnegative_least_squares(design, target)
    _, theirs = nnls(design, target, maxiter=10 * columns)
    assert np.linalg.norm(design @ x - target) == pytest.approx(theirs, rel=1e-9, abs=1e-12)


def test_aliased_columns_still_give_a_least_residual():
    design, target = _problem(7, 50, 4, True)
    design[:, 1] = 2 * design[:, 0]
    x = nonnegative_least_squares(design, target)
    _, theirs = nnls(design, target)
    assert np.all(x >= 0)
    assert np.linalg.norm(design @ x - target) <= theirs * (1 + 1e-9)


def test_empty_problems_have_zero_coefficients():
    assert nonnegative_least_squares(np.zeros((0, 3)), np.zeros(0)).tolist() == [0.0, 0.0, 0.0]
    assert nonnegative_least_squares(np.zeros((4, 0)), np.ones(4)).shape == (0,)
    assert nonnegative_least_squares(np.zeros((4, 2)), np.ones(4)).tolist() == [0.0, 0.0]


def test_a_target_of_another_length_is_refused():
    with pytest.raises(ValueError, match="design"):
        nonnegative_least_squares(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError, match="design"):
        nonnegative_least_squares(np.ones(3), np.ones(3))
