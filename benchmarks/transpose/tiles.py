"""Transposes of a square matrix into a new, contiguous one: NumPy's copy of
the transposed view, and the same in tiles of ``tall`` × ``wide`` (read
``tall`` rows of ``wide`` columns, write them as ``wide`` rows of ``tall``),
whose best sides depend on each other and on the machine's caches."""

import numpy as np


def matrix(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, n))


def whole(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.T)


def tiles(a: np.ndarray, tall: int, wide: int) -> np.ndarray:
    rows, columns = a.shape
    out = np.empty((columns, rows), a.dtype)
    for i in range(0, rows, tall):
        for j in range(0, columns, wide):
            out[j:j + wide, i:i + tall] = a[i:i + tall, j:j + wide].T
    return out
