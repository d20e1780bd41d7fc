"""The 3 × 3 stencil experiment's script: which extra cells it times, and how it judges them."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("stencil_grid_script", ROOT / "scripts" / "stencil_grid.py")
grid = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(grid)
_relax_spec = importlib.util.spec_from_file_location("stencil_grid_relax", ROOT / "libraries" / "stencil" / "relax.py")
relax = importlib.util.module_from_spec(_relax_spec)
_relax_spec.loader.exec_module(relax)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 600), st.integers(1, 12), st.integers(0, 80))
def test_the_effective_extra_is_what_the_layout_gives_the_edge_blocks(interior, parts, extra):
    # Two requests with the same effective value cut the grid alike, and the
    # effective value itself cuts it as the request does.
    assert relax._cuts(interior, parts, extra) == relax._cuts(interior, parts, grid.effective(extra, interior, parts))
    if parts < 3:
        assert grid.effective(extra, interior, parts) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(7, 600), st.integers(0, 80))
def test_a_sweep_holds_the_choice_its_neighbours_and_each_value_once(interior, chosen):
    values = grid.sweep(chosen, interior, 3)
    assert values == sorted(set(values)) and values[0] == 0
    for wanted in (chosen - 1, chosen, chosen + 1, 64):
        if wanted >= 0:
            assert grid.effective(wanted, interior, 3) in values
    assert all(grid.effective(v, interior, 3) == v for v in values)  # no value the layout would cut down


def test_points_are_drawn_within_the_bounds():
    rng = random.Random(3)
    for _ in range(500):
        height, width, iterations = grid.draw_point(rng, 64, 512, 1, 64)
        assert 64 <= height <= 512 and 64 <= width <= 512 and 1 <= iterations <= 64


def _timings(seconds: dict[str, float], rounds: int = 5, noise: float = 0.01,
             seed: int = 0) -> dict[str, dict[int, float]]:
    """Round-by-round timings with a host slowdown shared by a round's candidates."""
    rng = np.random.default_rng(seed)
    slow = 1 + rng.uniform(0, 0.5, rounds)
    return {name: dict(enumerate(value * slow * (1 + rng.uniform(-noise, noise, rounds))))
            for name, value in seconds.items()}


def test_a_choice_within_the_tolerance_is_right_and_one_beyond_is_wrong():
    base = {"uniprocessor": 3.0, "strips": 1.5, "blocks(0,0)": 1.2, "blocks(4,0)": 1.0, "blocks(8,0)": 1.01}
    judged = grid._judge(_timings(base, noise=0.002), "blocks(8,0)", "blocks(8,0)")
    assert judged["extras_right"] and judged["layout_right"] and judged["best_blocks"] == "blocks(4,0)"
    assert judged["extras_gain"] > 0.15 and judged["fastest"] == "blocks(4,0)"
    judged = grid._judge(_timings(base, noise=0.002), "blocks(0,0)", "strips")
    assert not judged["extras_right"] and judged["extras_penalty"] > 0.15
    assert not judged["layout_right"] and judged["layout_penalty"] > 0.4


def test_a_round_that_slows_everything_does_not_change_the_verdict():
    # The paired ratios cancel what a round shares: even when the rounds'
    # slowdowns are far larger than the candidates' differences.
    base = {"uniprocessor": 3.0, "strips": 1.0, "blocks(0,0)": 1.02}
    for seed in range(20):
        timings = _timings(base, rounds=5, noise=0.001, seed=seed)
        judged = grid._judge(timings, "blocks(0,0)", "strips")
        assert judged["layout_right"] and judged["extras_right"] and judged["fastest"] == "strips"


def test_the_confirming_rounds_time_the_chosen_the_close_and_those_that_beat_it():
    base = {"uniprocessor": 3.0, "strips": 1.5, "blocks(0,0)": 1.2, "blocks(4,0)": 1.0, "blocks(8,0)": 1.05,
            "blocks(16,0)": 1.3}
    found = grid.contenders(_timings(base, noise=0.002), ["blocks(16,0)", "strips"])
    assert found == {"blocks(16,0)", "strips", "blocks(4,0)", "blocks(8,0)", "blocks(0,0)"}


def test_rounds_timed_again_count_only_where_both_were_timed():
    timings = {"a": {0: 1.0, 1: 1.0, 2: 1.0, 5: 2.0}, "b": {0: 2.0, 1: 2.0, 2: 2.0}}
    assert grid.ratio(timings, "a", "b") == 0.5
