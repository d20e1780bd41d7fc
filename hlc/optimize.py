"""Integer root finding and minimization over a model (thesis §5.1).

The dispatcher sets integer parameters at call time by one of two searches
over a cost model; the generated C mirrors these functions line for line, and
a test compares their decisions on random inputs.

* :func:`integer_root` bisects for the integer just before a sign change of
  ``f`` (for a decreasing ``f``, the largest x with f(x) ≥ 0: the thesis's
  "rounded down" extra rows).  Without a sign change in [lo, hi] it returns
  lo − 1 when f is negative there and hi + 1 when it is positive.
* :func:`integer_minimum` evaluates every x when the range holds at most
  SCAN_LIMIT values — a model costs nanoseconds, and models may have several
  minima — and otherwise binary-searches on the sign of the forward
  difference f(m + 1) − f(m), assuming one minimum (O(log(hi − lo))
  evaluations).  Ties go to the smallest x.
* :func:`integer_minimum_over` minimizes over another variable and maps the
  best value to the parameter (thesis §5.3.1: minimizing radix sort's time
  over the number of passes i, with digit width ⌈width / i⌉, has one minimum
  where minimizing over the digit width has several).
"""

from __future__ import annotations

from collections.abc import Callable

Objective = Callable[[int], float]

#: Ranges of at most this many values are searched exhaustively.
SCAN_LIMIT = 64


def integer_root(f: Objective, lo: int, hi: int) -> int:
    """An integer root of ``f`` in [lo, hi] (see the module doc for the conventions)."""
    if lo > hi:
        raise ValueError(f"empty range {lo} .. {hi}")
    f_lo = f(lo)
    if f_lo == 0:
        return lo
    f_hi = f(hi)
    if f_hi == 0:
        return hi
    if (f_lo < 0) == (f_hi < 0):
        return lo - 1 if f_lo < 0 else hi + 1
    negative_at_lo = f_lo < 0
    while hi - lo > 1:
        middle = lo + (hi - lo) // 2
        f_middle = f(middle)
        if f_middle == 0:
            return middle
        if (f_middle < 0) == negative_at_lo:
            lo = middle
        else:
            hi = middle
    return lo


def integer_minimum(f: Objective, lo: int, hi: int) -> int:
    """The x in [lo, hi] minimizing ``f``: exhaustively over short ranges, else
    for an ``f`` with one minimum."""
    if lo > hi:
        raise ValueError(f"empty range {lo} .. {hi}")
    if hi - lo < SCAN_LIMIT:
        best, least = lo, f(lo)
        for x in range(lo + 1, hi + 1):
            value = f(x)
            if value < least:
                best, least = x, value
        return best
    while lo < hi:
        middle = lo + (hi - lo) // 2
        if f(middle + 1) < f(middle):  # still descending: the minimum is to the right
            lo = middle + 1
        else:
            hi = middle
    return lo


def integer_minimum_over(f: Objective, lo: int, hi: int, parameter: Callable[[int], int]) -> int:
    """The parameter value ``parameter(i)`` whose cost is least over i in [lo, hi]."""
    return parameter(integer_minimum(lambda i: f(parameter(i)), lo, hi))
