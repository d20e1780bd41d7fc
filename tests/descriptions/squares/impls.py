"""Implementations of the squares test library."""

import numpy as np


def values_of(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(count)


def loop_sum(values: np.ndarray) -> float:
    total = 0.0
    for value in values.tolist():
        total += value * value
    return total


def dot_sum(values: np.ndarray) -> float:
    return float(np.dot(values, values))


def chunked_sum(values: np.ndarray, block: int) -> float:
    size = 1 << block
    return float(sum(np.dot(values[start:start + size], values[start:start + size])
                     for start in range(0, len(values), size)))
