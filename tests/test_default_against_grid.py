"""The paired comparison of default and whole-grid builds: its order, its
evaluations, and its verdict against the pairs' own spread."""

from __future__ import annotations

import argparse
import random

import benchmark_scripts
import pytest

pairs_script = benchmark_scripts.load("default_against_grid")
Built = pairs_script.Built


def build(method: str, seed: int, right: dict[int, float], penalty: dict[int, float]) -> Built:
    figures = {(evaluation, P): (right[P], penalty[P]) for evaluation in ("seed 1 before", "seed 1 after")
               for P in right}
    return Built(method, seed, 50.0 if method == "default" else 60.0, 0.6 if method == "default" else 0.75, figures)


def drawn(rng: random.Random, shift: float, count: int = 12) -> list[tuple[Built, Built]]:
    """Pairs whose grid builds choose right at 93% ± 1 and whose default
    builds are ``shift`` off them, with noise of their own."""
    found = []
    for seed in range(count):
        grid = {1: rng.gauss(0.93, 0.01), 2: rng.gauss(0.91, 0.01)}
        default = {P: value + shift + rng.gauss(0, 0.005) for P, value in grid.items()}
        found.append((build("default", seed, default, {P: 0.1 * (1 - v) for P, v in default.items()}),
                      build("grid", seed, grid, {P: 0.1 * (1 - v) for P, v in grid.items()})))
    return found


def test_the_methods_alternate_from_pair_to_pair():
    assert [pairs_script.order(i) for i in range(4)] == [("default", "grid"), ("grid", "default")] * 2


def test_the_evaluations_are_seed_one_at_every_rank_count_and_seed_two_at_one():
    assert pairs_script.evaluation_plan([2, 1]) == [(1, [1, 2]), (2, [1])]
    assert pairs_script.evaluation_plan([1]) == [(1, [1]), (2, [1])]


def test_a_build_s_figure_is_the_mean_over_its_evaluations_at_a_rank_count_or_all():
    one = Built("default", 0, 50.0, 0.6, {("a", 1): (0.9, 0.02), ("b", 1): (1.0, 0.0), ("a", 2): (0.8, 0.04)})
    assert pairs_script.share(one, 0, 1) == pytest.approx(0.95)
    assert pairs_script.share(one, 1, 2) == pytest.approx(0.04)
    assert pairs_script.share(one, 0) == pytest.approx(0.9)


def test_a_clear_shortfall_is_worse_and_equal_methods_are_as_good():
    rng = random.Random(5)
    worse = drawn(rng, -0.02)
    right, penalty = pairs_script.compare(worse, 0), pairs_script.compare(worse, 1)
    assert right.difference == pytest.approx(-0.02, abs=0.005) and right.shortfall < 0.01
    assert penalty.difference > 0 and penalty.shortfall < 0.01
    assert pairs_script.verdict(right, penalty) == "worse"
    better = drawn(rng, 0.01)
    assert pairs_script.verdict(pairs_script.compare(better, 0), pairs_script.compare(better, 1)) == "as good"
    assert pairs_script.last_line("sort", better).endswith(": as good")


def test_equal_methods_are_rarely_judged_worse():
    """Drawn alike, the verdict says worse about as often as the two tests' level allows."""
    rng = random.Random(11)
    worse = sum(pairs_script.verdict(pairs_script.compare(p, 0), pairs_script.compare(p, 1)) == "worse"
                for p in (drawn(rng, 0.0, 8) for _ in range(300)))
    assert worse <= 0.15 * 300


def test_the_last_line_gives_medians_means_and_the_verdict():
    pairs = [(build("default", s, {1: 0.95}, {1: 0.01}), build("grid", s, {1: 0.94 + 0.001 * s}, {1: 0.012}))
             for s in range(4)]
    line = pairs_script.last_line("sort", pairs)
    assert line.startswith("sort: default builds 50.0 s (60% measuring) against whole-grid builds 60.0 s (75%), "
                           "4 pairs: right 95.0% against 94.2%, expected penalty 1.00% against 1.20% (p = ")
    assert line.endswith(": as good")
    assert pairs_script.verdict(*(pairs_script.compare(pairs[:1], w) for w in (0, 1))) == "too few pairs to judge"


def test_the_table_has_each_rank_count_and_all():
    lines = pairs_script.table(drawn(random.Random(2), 0.0, 4))
    assert [line.split()[0] for line in lines[1:]] == ["P=1", "P=1", "P=2", "P=2", "all", "all"]


def test_keep_copies_what_a_replay_and_a_refit_read_and_nothing_else(tmp_path):
    build_folder = tmp_path / "build"
    (build_folder / "source").mkdir(parents=True)
    (build_folder / "source" / "sort.hl").write_text("library sort")
    for name in ("samples.jsonl", "models.json", "dispatch_sort.c"):
        (build_folder / name).write_text(name)
    pairs_script.keep_build(build_folder, tmp_path / "kept")
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["models.json", "samples.jsonl", "source"]
    assert (tmp_path / "kept" / "source" / "sort.hl").read_text() == "library sort"


def test_rank_counts_are_positive_integers_and_anything_else_is_refused():
    assert pairs_script.rank_counts("2,1,2") == [1, 2]
    for bad in ("a", "1,,2", "0,1", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            pairs_script.rank_counts(bad)
