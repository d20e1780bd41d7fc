"""The calibration-cost benchmark's verdict: adaptive sampling against the
grid, judged against the spread of builds of one kind."""

from __future__ import annotations

import random
from types import SimpleNamespace

import benchmark_scripts
import pytest

from hlc.calibrate.breakdown import Breakdown

cost = benchmark_scripts.load("calibration_cost")


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


def test_the_builds_that_reached_the_whole_grid_are_pooled_whatever_their_budget():
    def built(budget: float, shares: list[float], complete: bool) -> cost.Judged:
        return cost.Judged("grid", budget, budget, budget, 0.5, [sum(shares) / len(shares), 0.9], [0.01, 0.02],
                           shares, complete)

    grid = {15: built(15, [0.80, 0.82], False), 30: built(30, [0.90], True), 60: built(60, [0.94, 0.96], True)}
    whole = cost.whole_grid(grid)
    assert whole.budget is None and whole.complete and whole.builds == [0.90, 0.94, 0.96]
    assert whole.right == pytest.approx([(0.90 + 2 * 0.95) / 3, 0.9])
    assert whole.expected == pytest.approx([0.01, 0.02]) and whole.profiling == pytest.approx(50)
    assert cost.row(whole).startswith("grid        whole")
    assert cost.whole_grid({15: grid[15], 30: grid[30]}) is None  # one budget alone: nothing to pool



def test_expected_penalties_are_set_side_by_side_on_the_points_every_build_of_both_judged():
    """A grid build without a two-rank model judges only the one-rank points;
    beside an adaptive build that judged both, the comparison is over those."""
    one_rank = {("sort", 1, i): 0.01 * i for i in range(4)}  # 0, 1, 2, 3%
    two_ranks = {("sort", 2, i): 0.20 for i in range(4)}
    adaptive = cost.Judged("adaptive", 15, 0, 0, 0, [0.9], [0.1], [0.9], penalties=[[{**one_rank, **two_ranks}]])
    grid = cost.Judged("grid", 30, 0, 0, 0, [0.5], [0.015], [0.5],
                       penalties=[[{key: 0.0 for key in one_rank}], [{**one_rank, ("sort", 1, 0): 0.04}]])
    mine, theirs, common = cost.common_penalties(adaptive, grid)
    assert common == 4
    assert mine == pytest.approx(0.015)  # its one-rank points only
    assert theirs == pytest.approx((0.0 + (0.04 + 0.01 + 0.02 + 0.03) / 4) / 2)  # the mean of its two builds
    pooled = cost.pooled("grid", 30, [grid, grid])
    assert len(pooled.penalties) == 4 and cost.common_penalties(adaptive, pooled)[2] == 4
    lone = cost.Judged("grid", 30, 0, 0, 0, [0.0], [0.0], [0.0], penalties=[[{("sort", 2, 9): 0.5}]])
    assert cost.common_penalties(adaptive, lone)[2] == 0  # nothing in common: no figure


def test_keep_leaves_what_a_refit_reads_and_nothing_compiled(tmp_path, monkeypatch):
    """With --keep, a judged build's samples, models and description copy stay
    (named by kind and seed); its compiled module goes with the scratch."""
    def fake_build(description, *, out, **settings):
        out.mkdir(parents=True)
        for name in ("samples.jsonl", "models.json", "used_models.json", "breakdown.json", "sort.cpython.so"):
            (out / name).write_text(name)
        (out / "source").mkdir()
        (out / "source" / "sort.hl").write_text("library sort")
        spent = Breakdown(seconds={"fit": 2.0, "measuring": 20.0}, wall=40.0)
        return SimpleNamespace(breakdown=spent, coverage=None)

    monkeypatch.setattr(cost, "build", fake_build)
    monkeypatch.setattr(cost, "replay", lambda build, evaluation: SimpleNamespace(interfaces={}))
    monkeypatch.setattr(cost.evaluation_artefact, "load",
                        lambda path: SimpleNamespace(settings=SimpleNamespace(ranks=[1])))
    scratch, kept = tmp_path / "scratch", tmp_path / "kept"
    judged = cost.built_and_judged("sort", "adaptive", 30.0, 1, scratch, [tmp_path / "evaluation-1.json"], kept)
    assert judged.seconds == 40.0 and judged.profiling == pytest.approx(38.0)
    folder = kept / "sort" / "adaptive-30-seed1"
    assert sorted(p.name for p in folder.iterdir()) == sorted(cost.KEPT)
    assert (folder / "source" / "sort.hl").read_text() == "library sort"
    assert list(scratch.iterdir()) == []  # the build itself is gone
    cost.built_and_judged("sort", "grid", None, 0, scratch, [tmp_path / "evaluation-1.json"])
    assert sorted(p.name for p in (kept / "sort").iterdir()) == ["adaptive-30-seed1"]  # without keep, nothing
    assert cost.kind_name("grid", None, 0) == "grid-default-seed0"
