"""Summation implementations for the vector test library."""

from __future__ import annotations

import numpy as np


def random_values(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(count)


def kahan_sum(values: np.ndarray) -> float:
    """Compensated (Kahan) summation, one element at a time."""
    total = 0.0
    compensation = 0.0
    for value in values.tolist():
        corrected = value - compensation
        running = total + corrected
        compensation = (running - total) - corrected
        total = running
    return total


def blocked_sum(values: np.ndarray, block: int = 4) -> float:
    """Sum blocks of 2**block values, then the partial sums."""
    width = 1 << block
    if len(values) == 0:
        return 0.0
    starts = np.arange(0, len(values), width)
    return float(np.add.reduceat(values, starts).sum())
