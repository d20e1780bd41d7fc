"""Bisection towards the region boundaries the measurements show (hlc.boundaries)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import hlc
from hlc.artefacts.samples import Sample
from hlc.boundaries import STAKE, boundaries, by_proposal, in_range, label, measured_candidates, midpoint
from hlc.language.nest import constant_values, loop_values

DESCRIPTIONS = Path(__file__).resolve().parent / "descriptions"
CROSSING = hlc.parse_file(DESCRIPTIONS / "crossing.hl")  # for count in 1 .. 2048 *= 1.12: drawn log
LOOP = CROSSING.interfaces[0].profile.loops[0]

NESTED = hlc.parse("""
library nested "Two loops, the inner one's range set by the outer."
from "squares/impls.py" import values_of, loop_sum, dot_sum
interface run(values: float64[]) -> float "."
    n = len(values)
    impl f = loop_sum "."
        time ~ 1 + n
    impl g = dot_sum "."
        time ~ 1 + n
    profile
        for r in 8 .. 64 += 8
        for c in 1 .. r += 4
        values = values_of(r * c, seed)
""", filename=str(DESCRIPTIONS / "nested.hl"))

#: A block size set by a search over the number of blocks, as the radix
#: sort's digit width is set over its passes: three blocks are 9 values
#: each at 25 values, 10 at 29.
SEARCHED = hlc.parse("""
library searched "A parameter set by a search over the blocks."
from "squares/impls.py" import values_of, chunked_sum, dot_sum
interface run(values: float64[]) -> float "."
    n = len(values)
    impl chunked(block: int in 1 .. 16) = chunked_sum "."
        let blocks = ceil(n / block)
        time ~ 1 + blocks + n
        choose block minimizing time
            over i in 1 .. min(n, 16)
            with block = max(1, ceil(n / i))
    impl dot = dot_sum "."
        time ~ 1 + n
    profile
        for c in 21 .. 33 += 4
        for block in 1 .. 16 ++
        values = values_of(c, seed)
""", filename=str(DESCRIPTIONS / "searched.hl"))


def test_halfway_is_in_the_loops_own_scale():
    assert midpoint(LOOP, 15, 17) == 16
    assert midpoint(LOOP, 1024, 4096) == 2048  # geometric: a log-scale loop
    rows = NESTED.interfaces[0].profile.loops[0]
    assert midpoint(rows, 8, 64) == 36  # arithmetic
    assert midpoint(rows, 15, 16) is None and midpoint(rows, 15, 17) == 16


def test_a_midpoint_must_lie_within_the_ranges_the_outer_loops_set():
    loops = NESTED.interfaces[0].profile.loops
    constants = constant_values(NESTED)
    assert in_range(loops, {"r": 16, "c": 13}, constants)
    assert not in_range(loops, {"r": 12, "c": 13}, constants)  # c goes up to r


def crossing(samples: dict[int, tuple[float, float]]):
    """The points and measurements of the crossing library at the counts given, as (dot, loop) seconds."""
    points = {("square_sum", 1, i): {"count": count} for i, count in enumerate(sorted(samples))}
    measured = {key: {label("dot", {}): samples[point["count"]][0], label("loop", {}): samples[point["count"]][1]}
                for key, point in points.items()}
    return points, measured


def test_a_boundary_is_bisected_where_the_winner_changes_and_enough_is_at_stake():
    points, measured = crossing({10: (1.0, 0.5), 20: (1.0, 0.9), 40: (1.0, 1.5), 80: (1.0, 3.0)})
    found = boundaries(CROSSING, points, measured)
    assert [(b.low, b.high, b.point) for b in found] == [(20, 40, {"count": 28})]
    assert found[0].implementations and math.isclose(found[0].stake, 0.5)
    # near-equal alternatives at both ends: nothing worth a measurement
    points, measured = crossing({20: (1.0, 0.99), 40: (1.0, 1.02)})
    assert boundaries(CROSSING, points, measured) == []
    # a point between them known but not measured yet: it is the midpoint
    points, measured = crossing({10: (1.0, 0.5), 20: (1.0, 0.9), 30: (1.0, 1.2), 40: (1.0, 1.5)})
    del measured["square_sum", 1, 2]
    found = boundaries(CROSSING, points, measured)
    assert [(b.low, b.high, b.point, b.key) for b in found] == [(20, 40, {"count": 30}, ("square_sum", 1, 2))]


def test_across_points_not_measured_the_one_nearest_halfway_in_the_loops_scale_is_bisected():
    """Measured at 10 and 80 only: the grid points between are not measured
    yet, and the one nearest the geometric mean (28.3) is taken, not the
    arithmetic (45) nor a new point."""
    counts = {10: (1.0, 0.5), 20: (1.0, 0.9), 25: (1.0, 1.0), 40: (1.0, 1.5), 50: (1.0, 1.9), 80: (1.0, 3.0)}
    points, measured = crossing(counts)
    keys = {point["count"]: key for key, point in points.items()}
    for count in (20, 25, 40, 50):
        del measured[keys[count]]
    [found] = boundaries(CROSSING, points, measured)
    assert (found.low, found.high, found.point, found.key) == (10, 80, {"count": 25}, keys[25])
    measured[keys[25]] = {label("dot", {}): 1.0, label("loop", {}): 1.0 * 1.2}
    [found] = boundaries(CROSSING, points, measured)  # dot wins at 25 now: between 10 and 25
    assert (found.low, found.high, found.point["count"]) == (10, 25, 20)


def test_the_boundaries_of_each_loop_are_found_on_a_two_loop_nest():
    """r × c: g wins where r * c > 300; a boundary along each loop."""
    points, measured = {}, {}
    for rows in (16, 32):
        for cols in (5, 9, 13):
            key = ("run", 1, len(points))
            points[key] = {"r": rows, "c": cols}
            cells = rows * cols
            measured[key] = {label("f", {}): cells, label("g", {}): 300.0}
    found = {(b.variable, b.low, b.high, tuple(b.point.values())) for b in boundaries(NESTED, points, measured)}
    assert found == {("r", 16, 32, (24, 13)), ("c", 9, 13, (32, 11))}  # 416 cells at (32, 13) only


def test_a_setting_that_changes_is_a_boundary_after_the_implementations():
    points = {("square_sum", 1, 0): {"count": 10}, ("square_sum", 1, 1): {"count": 40},
              ("square_sum", 1, 2): {"count": 100}}
    measured = {("square_sum", 1, 0): {label("dot", {"b": 1}): 1.0, label("dot", {"b": 2}): 2.0},
                ("square_sum", 1, 1): {label("dot", {"b": 1}): 2.0, label("dot", {"b": 2}): 1.0},
                ("square_sum", 1, 2): {label("dot", {"b": 2}): 1.5, label("loop", {}): 1.0}}
    found = boundaries(CROSSING, points, measured)
    assert [(b.low, b.implementations) for b in found] == [(40, True), (10, False)]


@settings(max_examples=60, deadline=None)
@given(st.floats(1.5, 1900.0))  # within the loop's values, 1 .. 1984
def test_bisection_closes_in_on_the_crossover(crossover):
    """Costs that cross at ``crossover``: bisecting every boundary until
    none is left brackets it between neighbouring integers, or between two
    points where the alternatives are within STAKE of each other."""
    def cost(count: int) -> tuple[float, float]:
        return crossover, float(count)  # dot flat, loop growing: they cross at the crossover

    samples = {count: cost(count) for count in loop_values(LOOP, {})}
    for _ in range(64):
        found = boundaries(CROSSING, *crossing(samples))
        if not found:
            break
        for boundary in found:
            samples[boundary.point["count"]] = cost(boundary.point["count"])
    else:
        raise AssertionError("bisection did not end")
    below = max(count for count in samples if count < crossover)  # the loop wins; dot wins a tie
    above = min(count for count in samples if count >= crossover)
    assert above - below == 1 or max(crossover / below, above / crossover) - 1 <= STAKE


def test_the_measurements_of_a_point_are_the_median_of_its_takes():
    records = [Sample("f", "a", False, 1, 3, {"b": 2}, {"n": 8}, seconds) for seconds in (3.0, 1.0, 2.0)]
    records.append(replace(records[0], verify=True, seconds=0.1))
    assert measured_candidates(records) == {("f", 1, 3): {("a", (("b", 2),)): 2.0}}


def searched_points(at_29: dict[int, float]) -> tuple[dict, dict, dict]:
    """Two points of the searched library, 25 and 29 values, and their
    measurements: three blocks 1.0 and two 1.5 at 25; ``at_29`` by blocks."""
    points = {("run", 1, 0): {"c": 25}, ("run", 1, 1): {"c": 29}}
    variables = {("run", 1, 0): {"n": 25}, ("run", 1, 1): {"n": 29}}
    measured = {("run", 1, 0): {label("chunked", {"block": 9}): 1.0, label("chunked", {"block": 13}): 1.5,
                                label("dot", {}): 3.0},
                ("run", 1, 1): {label("chunked", {"block": math.ceil(29 / blocks)}): seconds
                                for blocks, seconds in at_29.items()} | {label("dot", {}): 3.0}}
    return points, variables, measured


def test_a_searched_setting_is_labelled_by_the_search_s_proposal():
    points, variables, measured = searched_points({3: 1.1, 2: 1.6})
    relabelled = by_proposal(SEARCHED, variables, measured)
    assert relabelled[("run", 1, 0)] == {label("chunked", {"block:i": 3}): 1.0, label("chunked", {"block:i": 2}): 1.5,
                                         label("dot", {}): 3.0}
    assert set(relabelled[("run", 1, 1)]) == {label("chunked", {"block:i": 3}), label("chunked", {"block:i": 2}),
                                              label("dot", {})}
    # A value no i proposes at the point, and a point without its variables, keep their labels.
    odd = {("run", 1, 0): {label("chunked", {"block": 10}): 1.0}, ("run", 1, 5): {label("chunked", {"block": 9}): 1.0}}
    assert by_proposal(SEARCHED, variables, odd) == odd


def test_the_same_proposal_winning_at_both_ends_is_no_boundary():
    """Three blocks win at 25 values (9 each) and at 29 (10 each): the same
    choice, which the block sizes alone take for a boundary whose stake
    neither end timed."""
    points, variables, measured = searched_points({3: 1.1, 2: 1.6})
    [spurious] = boundaries(SEARCHED, points, measured)
    assert not spurious.implementations and spurious.stake > 0.5
    assert boundaries(SEARCHED, points, by_proposal(SEARCHED, variables, measured)) == []


def test_a_boundary_between_proposals_has_its_stake_measured_at_both_ends():
    """Three blocks win at 25 values, two at 29: each end timed both, at
    its own block sizes, and the stake is the larger of the two ends'."""
    points, variables, measured = searched_points({3: 1.3, 2: 1.0})
    [found] = boundaries(SEARCHED, points, by_proposal(SEARCHED, variables, measured))
    assert (found.variable, found.low, found.high, found.point) == ("c", 25, 29, {"c": 27})
    assert not found.implementations and math.isclose(found.stake, 0.5)
