"""Inputs for profiling the stencil library."""

from __future__ import annotations

import numpy as np


def random_grid(height: int, width: int, seed: int) -> np.ndarray:
    """A ``height × width`` float64 grid of values uniform in [0, 1).  Every rank
    must pass the same grid, so under mpiexec the seed is rank 0's."""
    from hlc.runtime import world

    team = world()
    if team.size > 1:
        seed = int(team.broadcast(np.array([seed], dtype=np.int64))[0])
    return np.random.default_rng(seed).random((int(height), int(width)))
