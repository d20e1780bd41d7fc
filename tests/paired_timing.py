"""Two calls timed against each other on a busy host: in turn, round after
round, so that a slow spell falls on both alike."""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable


def median_ratio(chosen: Callable[[], object], first: Callable[[], object], rounds: int = 15) -> float:
    """The median, over ``rounds`` rounds each timing both in turn, of
    ``chosen``'s time over ``first``'s; each timing repeats a call as often
    as ``first`` takes about 2 ms."""
    number = max(1, int(2e-3 / max(timeit.timeit(first, number=1), 1e-7)))
    return statistics.median(timeit.timeit(chosen, number=number) / timeit.timeit(first, number=number)
                             for _ in range(rounds))
