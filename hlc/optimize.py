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
  minima.  A wider range is narrowed first: f at COARSE values evenly spread
  over it, then the same between the two neighbours of the least, until
  what is left is short enough to scan (O(COARSE · log(hi − lo))
  evaluations: 41 for 8 .. 512).  A cost that depends on the parameter
  through a count, such as ⌈n / block⌉ blocks, is flat over long runs of
  it; the forward difference a bisection would follow is zero there, and
  it led to the least block of the wrong run.  Ties go to the smallest x.
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
#: Values a wider range is first sampled at, evenly spread, both ends included.
COARSE = 16
#: Passes over an implementation's parameters at most (hlc.dispatch.reference):
#: the first sets each with the later ones at the low ends of their ranges;
#: the next ones set each again with the others as last chosen, until each
#: has been set again since the last change without moving.  A tile's
#: height was set for a width at its low end by the first pass alone.
SWEEPS = 4


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
    """The x in [lo, hi] minimizing ``f``: exhaustively over short ranges,
    after narrowing a wide one around the least of COARSE spread values."""
    if lo > hi:
        raise ValueError(f"empty range {lo} .. {hi}")
    while hi - lo >= SCAN_LIMIT:
        at, least = 0, f(lo)
        for j in range(1, COARSE):
            value = f(spread(lo, hi, j))
            if value < least:
                at, least = j, value
        lo, hi = spread(lo, hi, max(at - 1, 0)), spread(lo, hi, min(at + 1, COARSE - 1))
    best, least = lo, f(lo)
    for x in range(lo + 1, hi + 1):
        value = f(x)
        if value < least:
            best, least = x, value
    return best


def spread(lo: int, hi: int, j: int) -> int:
    """The j-th of COARSE values evenly spread over [lo, hi], in integers
    that cannot overflow a C long where lo and hi do not."""
    whole, part = divmod(hi - lo, COARSE - 1)
    return lo + whole * j + part * j // (COARSE - 1)


def integer_minimum_over(f: Objective, lo: int, hi: int, parameter: Callable[[int], int]) -> int:
    """The parameter value ``parameter(i)`` whose cost is least over i in [lo, hi]."""
    return parameter(integer_minimum(lambda i: f(parameter(i)), lo, hi))
