"""Hypothesis under ``mpiexec``: the same examples on every rank, one verdict.

Every rank runs the same test function with ``derandomize``: it draws the
same examples in the same order as long as every rank sees each example end
the same way.  So each example's inputs are drawn for all ranks at once (a
rank takes its own part), the test body judges its own rank, and the ranks
agree on one verdict before the example passes or fails.  Hypothesis then
shrinks a failure in lock step on every rank, and reports the smallest
example with every rank's part.

A test script imports this module (``sys.path`` holds this folder) and runs
its ``@spmd_given`` functions; each prints ``passed`` on rank 0 when done.
"""

from __future__ import annotations

import functools
import traceback

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hlc.runtime import world

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
#: Shapes of the keys that sorts get wrong, for all ranks together.
SHAPES = ["random", "sorted", "reversed", "equal", "extremes", "skewed", "narrow", "empty here"]


def spmd_given(max_examples: int, **strategies):
    """``@given(**strategies)`` with settings that every rank shares, and one
    verdict: the decorated function returns the problems of its rank (empty
    when right); the example fails on every rank when it failed on one."""
    team = world()

    def decorate(check):
        @settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck), print_blob=False)
        @given(**strategies)
        @functools.wraps(check)
        def run(**example):
            try:
                problems = list(check(**example))
            except Exception:  # only this rank raised: the others must hear of it
                problems = [traceback.format_exc()]
            failed = team.reduce(np.array([len(problems)], dtype=np.int64), "max")[0]
            if failed:
                raise AssertionError(f"rank {team.rank}: " + ("; ".join(problems) or "right, but another rank failed"))

        @functools.wraps(check)
        def main():
            run()
            if team.rank == 0:
                print(f"{check.__name__}: passed")

        return main

    return decorate


def shaped(values: np.ndarray, shape: str) -> np.ndarray:
    """The keys ``values`` made into one of SHAPES (but "empty here"), in their
    dtype.  Every constant is made in the dtype from a Python int: NumPy 2.5
    refuses a Python int beyond int64 beside an array, and NumPy 1.26 turns
    uint64 and a Python int into float64."""
    dtype = values.dtype
    info = np.iinfo(dtype)

    def typed(value: int) -> np.ndarray:
        return np.array(value, dtype=dtype)

    low, high = typed(info.min), typed(info.max)
    if shape == "sorted":
        return np.sort(values)
    if shape == "reversed":
        return np.sort(values)[::-1].copy()
    if shape == "equal":
        return np.full_like(values, values[0] if values.size else high)
    if shape == "extremes":
        return np.where(values % typed(2) == 0, low, high)
    if shape == "skewed":  # most keys equal, a few far away
        return np.where(values % typed(7) == 0, values, typed(info.min + 1))
    if shape == "narrow":  # a narrow span far from zero
        return values % typed(37) + typed(info.max - 40)
    return values


@st.composite
def rank_keys(draw, ranks: int, max_count: int = 300, dtypes=tuple(DTYPES)) -> list[np.ndarray]:
    """Keys of one dtype for each of ``ranks`` ranks, together in one of SHAPES;
    sometimes a few thousand random keys a rank (the parallel passes then
    move long runs), else small arrays hypothesis can shrink."""
    dtype = draw(st.sampled_from(dtypes))
    info = np.iinfo(dtype)
    shape = draw(st.sampled_from(SHAPES))
    if shape == "random" and draw(st.booleans()):
        seed = draw(st.integers(0, 2**32 - 1))
        width = draw(st.integers(1, info.bits))
        rng = np.random.default_rng(seed)
        low = int(info.min) if width == info.bits else max(int(info.min), -(1 << (width - 1)))
        return [rng.integers(low, low + (1 << width) - 1, size=int(rng.integers(0, 5000)), dtype=dtype,
                             endpoint=True) for _ in range(ranks)]
    elements = st.integers(int(info.min), int(info.max))
    parts = [draw(hnp.arrays(dtype, st.integers(0, max_count), elements=elements)) for _ in range(ranks)]
    if shape == "empty here":  # some ranks hold no keys at all
        empty = draw(st.lists(st.booleans(), min_size=ranks, max_size=ranks))
        return [part[:0] if gone else part for part, gone in zip(parts, empty, strict=True)]
    cuts = np.cumsum([len(p) for p in parts])[:-1]
    return np.split(shaped(np.concatenate(parts), shape), cuts)


def my_part(parts: list[np.ndarray], rank: int, result: np.ndarray, keys: np.ndarray) -> str | None:
    """What is wrong with ``result``, rank ``rank``'s answer, given every
    rank's keys: it should hold the positions of the sorted keys of all ranks
    that this rank's count of keys covers, in the dtype of its keys."""
    start = sum(len(p) for p in parts[:rank])
    expected = np.sort(np.concatenate(parts))[start:start + len(keys)]
    if not isinstance(result, np.ndarray) or result.dtype != keys.dtype or not np.array_equal(result, expected):
        return f"got {result!r}, expected {expected!r}"
    return None
