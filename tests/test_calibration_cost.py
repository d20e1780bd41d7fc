"""The calibration-cost benchmark's verdict: adaptive sampling against the
grid, judged against the spread of builds of one kind."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("calibration_cost_script", ROOT / "benchmarks" / "calibration_cost.py")
cost = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cost)


def group(method: str, budget: float, shares: list[float]) -> cost.Judged:
    return cost.Judged(method, budget, 0.0, 0.0, 0.0, [sum(shares) / len(shares)], [0.0], shares)


def test_the_noise_is_the_pooled_spread_within_groups():
    spread, freedom = cost.build_noise([group("grid", 15, [0.95, 0.97]), group("grid", 30, [0.90, 0.92])])
    assert freedom == 2 and spread == pytest.approx(0.01 * 2**0.5)
    assert cost.build_noise([group("grid", 15, [0.95])])[1] == 0


def test_builds_of_one_kind_are_rarely_judged_worse():
    """Shares drawn alike for both sides: 'worse' about 5% of the time, the
    test's level, where a test on the points would find it far more often."""
    rng = random.Random(3)
    worse = 0
    for _ in range(400):
        groups = [group("grid", b, [rng.gauss(0.97, 0.012) for _ in range(2)]) for b in (15, 30, 60, 120, 240)]
        adaptive = group("adaptive", 15, [rng.gauss(0.97, 0.012) for _ in range(2)])
        noise = cost.build_noise([*groups, adaptive])
        worse += cost.verdict(adaptive, groups[1], noise).startswith("worse")
    assert worse <= 0.09 * 400


def test_a_clear_deficit_is_judged_worse_and_a_gain_as_good():
    noise = cost.build_noise([group("grid", b, [0.97, 0.975]) for b in (15, 30, 60)])
    assert cost.verdict(group("adaptive", 15, [0.93, 0.935]), group("grid", 30, [0.97, 0.975]),
                        noise).startswith("worse")
    assert cost.verdict(group("adaptive", 15, [0.98, 0.99]), group("grid", 30, [0.97, 0.975]),
                        noise) == "as good or better"
    assert "repeats" in cost.verdict(group("adaptive", 15, [0.93]), group("grid", 30, [0.97]), (float("nan"), 0))
