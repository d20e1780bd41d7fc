"""Inputs for profiling the sort library."""

from __future__ import annotations

import numpy as np


def random_keys(count: int, width: int, seed: int) -> np.ndarray:
    """``count`` keys drawn uniformly from [0, 2**width), as int64."""
    rng = np.random.default_rng(seed)
    if width <= 0:
        return np.zeros(count, dtype=np.int64)
    return rng.integers(0, 1 << min(width, 62), size=count, dtype=np.int64)
