"""Loop-nest semantics: which values a loop takes, and how many points a nest has."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hlc.language.nest import NestError, count_points, loop_values, points, relevant_loops
from hlc.language.parser import parse_syntax


def profile_loops(text: str):
    library = parse_syntax(f"library x\ninterface f(a: int)\n    profile\n{text}\n")
    return library.interfaces[0].profile.loops


@pytest.mark.parametrize(("loop", "values"), [
    ("for i in 2 .. 6 ++", [2, 3, 4, 5, 6]),
    ("for j in 1 .. 100 *= 10", [1, 10, 100]),
    ("for k in 0 .. 10 += 4", [0, 4, 8]),
    ("for s in 1 .. 1 << 10 <<= 3", [1, 8, 64, 512]),
    ("for e in 5 .. 4 ++", []),
])
def test_loop_values(loop, values):
    assert loop_values(profile_loops(loop)[0], {}) == values


@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(1, 7))
def test_additive_loop_matches_range(start, stop, step):
    loop = profile_loops(f"for i in {start} .. {stop} += {step}")[0]
    assert loop_values(loop, {}) == list(range(start, stop + 1, step))


def test_runaway_loop_is_an_error():
    with pytest.raises(NestError, match="never terminates"):
        loop_values(profile_loops("for i in 0 .. 10 *= 2")[0], {})


def test_dependent_bounds_are_counted_per_outer_value():
    loops = profile_loops("for w in 1 .. 4 ++\nfor b in 1 .. w ++")
    assert count_points(loops, {}) == 1 + 2 + 3 + 4
    assert list(points(loops, {}))[:3] == [{"w": 1, "b": 1}, {"w": 2, "b": 1}, {"w": 2, "b": 2}]


def test_independent_loops_multiply():
    loops = profile_loops("for i in 1 .. 9 ++\nfor j in 1 .. 1000 *= 10\nfor k in 0 .. 6 += 3")
    assert count_points(loops, {}) == 9 * 4 * 3
    assert list(points(loops, {})) == [
        {"i": i, "j": j, "k": k} for i, j, k in itertools.product(range(1, 10), [1, 10, 100, 1000], [0, 3, 6])]


def test_implementations_skip_loops_over_other_parameters():
    library = parse_syntax(
        "library x\ninterface f(a: int)\n    impl p(u: int in 1 .. 3) = g\n        time ~ u\n"
        "    impl q(v: int in 1 .. 2) = g\n        time ~ v\n    impl r = g\n        time ~ 1\n"
        "    profile\n        for i in 1 .. 5 ++\n        for u in 1 .. 3 ++\n        for v in 1 .. 2 ++\n")
    interface = library.interfaces[0]
    assert [loop.variable for loop in relevant_loops(interface, "p")] == ["i", "u"]
    assert [loop.variable for loop in relevant_loops(interface, "q")] == ["i", "v"]
    assert [loop.variable for loop in relevant_loops(interface, "r")] == ["i"]


@given(st.integers(1, 1000), st.integers(1, 10**7), st.floats(1.01, 10.0))
def test_a_real_factor_gives_the_rounded_powers_each_once(start, stop, factor):
    loop = profile_loops(f"for i in {start} .. {stop} *= {factor!r}")[0]
    values = loop_values(loop, {})
    assert values == sorted(set(values))  # increasing, each once
    assert all(start <= v <= stop for v in values)
    expected, power = set(), 0
    while round(start * factor**power) <= stop:
        expected.add(round(start * factor**power))
        power += 1
    assert set(values) == expected


def test_a_real_factor_spreads_values_evenly_in_the_logarithm():
    values = loop_values(profile_loops("for i in 22 .. 3000000 *= 1.5")[0], {})
    assert values[:6] == [22, 33, 50, 74, 111, 167]
    ratios = [b / a for a, b in itertools.pairwise(values)]
    assert all(1.45 < r < 1.55 for r in ratios)


@pytest.mark.parametrize(("loop", "drawn"), [
    ("for i in 1 .. 9 ++", "uniform"),
    ("for i in 1 .. 9 += 2", "uniform"),
    ("for i in 1 .. 512 *= 2", "log"),
    ("for i in 1 .. 512 *= 1.5", "log"),
    ("for i in 1 .. 512 <<= 1", "log"),
    ("for i in 1 .. 512 *= 2 drawn uniform", "uniform"),
    ("for i in 1 .. 512 ++ drawn log", "log"),
])
def test_a_loop_says_how_its_random_points_are_drawn(loop, drawn):
    assert profile_loops(loop)[0].drawn == drawn
