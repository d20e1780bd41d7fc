"""Integer root finding and minimization (thesis §5.1), and the radix example of §5.3."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hlc.optimize import COARSE, SCAN_LIMIT, integer_minimum, integer_minimum_over, integer_root


def radix_model(keys: int, width: int, log_p: int):
    """The CM-5 radix sort model of the thesis (eq. 37), in microseconds."""
    def time(bpd: int) -> float:
        return 11.41 * 2**bpd + 9.92 * math.ceil(width / bpd) * keys + 77.36 * log_p
    return time


def digit_width(width: int):
    return lambda passes: math.ceil(width / passes)


def test_thesis_radix_example_minimized_over_passes_gives_seven_bits():
    time = radix_model(keys=1000, width=28, log_p=6)
    assert integer_minimum_over(time, 1, 28, digit_width(28)) == 7
    # "10 bits is 0.31 ms slower" (thesis §5.3.2, footnote)
    assert time(10) - time(7) == pytest.approx(303.4, abs=0.1)


def test_short_ranges_are_searched_exhaustively_so_several_minima_do_no_harm():
    time = radix_model(keys=1000, width=8, log_p=6)
    assert time(4) < min(time(3), time(5))  # a local minimum: two passes of 4 bits
    assert integer_minimum(time, 1, 16) == 8  # one pass of 8 bits is faster
    assert integer_minimum_over(time, 1, 8, digit_width(8)) == 8


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=SCAN_LIMIT), st.integers(-100, 100))
def test_a_short_range_gives_the_first_global_minimum(values, lo):
    best = integer_minimum(lambda x: values[x - lo], lo, lo + len(values) - 1)
    assert best - lo == values.index(min(values))


@pytest.mark.parametrize("width", range(1, 33))
@pytest.mark.parametrize("keys", [10, 100, 1000, 10_000, 100_000])
def test_minimizing_over_passes_is_always_optimal_for_the_radix_model(width, keys):
    time = radix_model(keys, width, log_p=6)
    chosen = integer_minimum_over(time, max(1, math.ceil(width / 16)), width, digit_width(width))
    assert time(chosen) == min(time(bpd) for bpd in range(1, 17))


@given(st.integers(-1000, 1000), st.integers(0, 2000), st.floats(-50, 50), st.floats(0.01, 10))
def test_minimum_of_a_convex_function(lo, span, centre, curvature):
    hi = lo + span
    calls = []

    def f(x):
        calls.append(x)
        return curvature * (x - centre) ** 2

    best = integer_minimum(f, lo, hi)
    if span >= SCAN_LIMIT:  # each narrowing leaves at most 2 / (COARSE - 1) of the range and a value
        narrowings = math.ceil(math.log(span / SCAN_LIMIT + 1, (COARSE - 1) / 2)) + 1
        assert len(calls) <= COARSE * narrowings + SCAN_LIMIT
    else:
        assert len(calls) == span + 1
    assert lo <= best <= hi
    assert f(best) == min(f(x) for x in range(lo, hi + 1))


def blocked_product(n: int, per_block: float = 1e-6, growth: float = 1e-9):
    """A product of n × n matrices in ⌈n / block⌉² blocks: each block costs
    ``per_block`` and larger blocks a little more per octave, as a fitted
    model with a hinge in log2(block) says.  Flat over each run of blocks of
    one count, least where one block holds the whole matrix."""
    def time(block: int) -> float:
        return math.ceil(n / block) ** 2 * per_block + growth * math.log2(block) + 1e-3
    return time


@pytest.mark.parametrize("n", [20, 50, 100, 300, 600])
def test_a_cost_flat_over_runs_of_a_wide_range_is_minimized_in_the_right_run(n):
    """Bisecting on the forward difference, which the hinge makes rise
    within each run, took blocks 10, 10, 13, 30 and 40 here, up to 22%
    slower by the model; the spread values find the run of fewest blocks."""
    time = blocked_product(n)
    best = integer_minimum(time, 8, 512)
    assert time(best) == min(time(block) for block in range(8, 513))
    assert best == math.ceil(n / math.ceil(n / 512))  # the least block of the fewest


@given(st.integers(-10**15, 10**15), st.integers(SCAN_LIMIT, 10**15), st.floats(0, 1))
def test_a_wide_range_finds_the_least_step_of_a_staircase(lo, span, where):
    """A cost that falls by steps to its least level, then rises by steps
    (one basin of flat runs, as counts of blocks make): the search finds a
    value of the least level, whose run the spread values land in or next to."""
    hi = lo + span
    edges = sorted(lo + int(span * u) for u in (where * 0.5, where * 0.5 + 0.25, where * 0.5 + 0.5))

    def f(x):
        return sum(1.0 for edge in edges[:1] if x < edge) + sum(1.0 for edge in edges[1:] if x > edge)

    assert f(integer_minimum(f, lo, hi)) == 0.0


@given(st.integers(-1000, 1000), st.integers(1, 2000), st.floats(-3000, 3000), st.booleans())
def test_root_of_a_monotone_function_is_the_integer_before_the_crossing(lo, span, crossing, decreasing):
    hi = lo + span
    sign = -1 if decreasing else 1

    def f(x):
        return sign * (x - crossing)

    root = integer_root(f, lo, hi)
    if crossing < lo:
        assert root == (lo - 1 if decreasing else hi + 1)
    elif crossing > hi:
        assert root == (hi + 1 if decreasing else lo - 1)
    elif crossing == int(crossing):
        assert root == int(crossing)
    else:
        assert root == math.floor(crossing)


def test_root_conventions_without_a_sign_change():
    assert integer_root(lambda x: -1.0, 3, 9) == 2
    assert integer_root(lambda x: +1.0, 3, 9) == 10
    assert integer_root(lambda x: x - 5, 5, 9) == 5
    assert integer_root(lambda x: x - 9, 5, 9) == 9


def test_empty_ranges_are_errors():
    with pytest.raises(ValueError):
        integer_minimum(abs, 3, 2)
    with pytest.raises(ValueError):
        integer_root(abs, 3, 2)
