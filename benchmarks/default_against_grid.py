"""Default builds against whole-grid builds, in pairs, judged by evaluations of the same hour.

A build samples the state the host is in while it profiles, and so does an
exhaustive evaluation.  On a shared host that state moves by the hour: the
same default builds, replayed against evaluations of their own hour and of
one a few hours before, can differ by several points of right choices,
far more than the choices of two profiling methods differ.  Builds of one
kind taken in one hour and of the other in another, judged by evaluations
of a third, compare the hours.  So this script compares the default build
(``hlc build``: adaptive sampling within its default budget) with the
build of the whole grid (``hlc build --grid``) in pairs taken one after
the other, and judges both by evaluations taken among them:

1. ``--pairs`` pairs of builds at seeds ``--first-seed``, … (a default and
   a whole-grid build at each seed; which of the two goes first alternates
   from pair to pair, so that neither method always follows the other);
2. exhaustive evaluations of the first default build (``hlc evaluate
   --params exhaustive --points N``: at seed 1 over every rank count built,
   at seed 2 at one rank), taken twice: after the first pair and after the
   last, so that they bracket the builds' hour;
3. every build replayed against every evaluation, timing nothing: per build,
   its right share and expected penalty over the evaluations, per rank
   count and over all (each evaluation and rank count weighed alike); per
   figure, the mean of each method, the mean of the pairs' differences with
   its standard error, and a one-sided paired t test of a shortfall of the
   default builds.  With them, how often the two evaluations of a seed
   agree (each one's fastest candidates judged by the other): the ceiling
   any build's right share can reach in that hour.

The default builds choose as well as the grid unless a one-sided p of a
shortfall, over all rank counts, lies below ``LEVEL`` for the right share
or the expected penalty.  The last line (one line, the medians of the
build times and shares measuring, the means of the figures, the p of each
shortfall), for instance:

    sort: default builds 49.5 s (59% measuring) against whole-grid builds 59.7 s (74%), 16 pairs:
    right 92.8% against 92.4%, expected penalty 1.60% against 1.70% (p = 0.93, 0.80): as good

Run with nothing else on the machine; for the sort on two cores a pair
takes about two minutes and each set of evaluations about seven.

    python benchmarks/default_against_grid.py [--library sort] [--pairs 8] [--first-seed 30]
                                              [--ranks 1,2] [--points 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kept_builds import keep_build
from scipy import stats

from hlc.dispatch.build import build
from hlc.evaluation import evaluate
from hlc.evaluation.replay import replay, replay_oracle

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("default", "grid")
#: A one-sided p below this says the default builds choose worse.
LEVEL = 0.05

Figures = dict[tuple[str, int], tuple[float, float]]  # (evaluation, P) → (right share, expected penalty)


@dataclass(frozen=True)
class Built:
    """One build's time, its share measuring, and how it chose by each evaluation."""

    method: str
    seed: int
    seconds: float
    measuring: float
    figures: Figures


@dataclass(frozen=True)
class Compared:
    """One figure (right share or expected penalty, over some rank counts) of the pairs."""

    default: float  # the mean over the default builds
    grid: float
    difference: float  # the mean of default - grid over the pairs
    error: float  # its standard error
    shortfall: float  # one-sided paired p of the default builds being worse


def order(pair: int) -> tuple[str, str]:
    """The methods in the order pair ``pair`` builds them: alternating."""
    return METHODS if pair % 2 == 0 else METHODS[::-1]


def evaluation_plan(ranks: Sequence[int]) -> list[tuple[int, list[int]]]:
    """The (seed, rank counts) of each evaluation of a set: seed 1 at every
    rank count, seed 2 at one (the stored evaluations' settings)."""
    return [(1, sorted(ranks)), (2, [min(ranks)])]


def figures_of(build_folder: Path, evaluations: Mapping[str, Path]) -> Figures:
    """The build's right share and expected penalty by each evaluation and rank count."""
    found: Figures = {}
    for name, path in evaluations.items():
        points = [point for entry in replay(build_folder, path).document.interfaces.values()
                  for point in entry.points]
        for P in sorted({point.P for point in points}):
            mine = [point for point in points if point.P == P]
            found[name, P] = (sum(point.right for point in mine) / len(mine),
                              sum(point.penalty for point in mine) / len(mine))
    return found


def share(built: Built, which: int, ranks: int | None = None) -> float:
    """A build's mean figure (0: right share, 1: expected penalty) over the
    evaluations, at one rank count or over all of them."""
    values = [value[which] for (_, P), value in built.figures.items() if ranks in (None, P)]
    return statistics.fmean(values)


def compare(pairs: Sequence[tuple[Built, Built]], which: int, ranks: int | None = None) -> Compared:
    """The pairs' figure ``which`` (see ``share``) side by side."""
    default = [share(d, which, ranks) for d, _ in pairs]
    grid = [share(g, which, ranks) for _, g in pairs]
    differences = [a - b for a, b in zip(default, grid, strict=True)]
    error = statistics.stdev(differences) / math.sqrt(len(differences)) if len(differences) > 1 else math.nan
    if len(differences) < 2:
        shortfall = math.nan
    elif error == 0:  # every pair differs alike: a shortfall for certain, or none
        worse = statistics.fmean(differences) < 0 if which == 0 else statistics.fmean(differences) > 0
        shortfall = 0.0 if worse else 1.0
    else:
        # a shortfall: fewer right choices, or a larger penalty
        shortfall = float(stats.ttest_rel(default, grid, alternative="less" if which == 0 else "greater").pvalue)
    return Compared(statistics.fmean(default), statistics.fmean(grid), statistics.fmean(differences), error,
                    shortfall)


def verdict(right: Compared, penalty: Compared) -> str:
    """``as good`` unless either figure's shortfall is significant (LEVEL)."""
    if math.isnan(right.shortfall) or math.isnan(penalty.shortfall):
        return "too few pairs to judge"
    return "worse" if min(right.shortfall, penalty.shortfall) < LEVEL else "as good"


def last_line(library: str, pairs: Sequence[tuple[Built, Built]]) -> str:
    right, penalty = compare(pairs, 0), compare(pairs, 1)
    default = [d for d, _ in pairs]
    grid = [g for _, g in pairs]
    return (f"{library}: default builds {statistics.median(b.seconds for b in default):.1f} s "
            f"({100 * statistics.median(b.measuring for b in default):.0f}% measuring) against whole-grid builds "
            f"{statistics.median(b.seconds for b in grid):.1f} s "
            f"({100 * statistics.median(b.measuring for b in grid):.0f}%), {len(pairs)} pairs: right "
            f"{100 * right.default:.1f}% against {100 * right.grid:.1f}%, expected penalty "
            f"{100 * penalty.default:.2f}% against {100 * penalty.grid:.2f}% "
            f"(p = {right.shortfall:.2f}, {penalty.shortfall:.2f}): {verdict(right, penalty)}")


def table(pairs: Sequence[tuple[Built, Built]]) -> list[str]:
    """Each figure per rank count and over all: both methods' means, the
    pairs' mean difference and its standard error, the p of a shortfall."""
    ranks = sorted({P for d, _ in pairs for (_, P) in d.figures})
    lines = [f"{'':10} {'figure':16} {'default':>8} {'grid':>8} {'diff':>7} {'SE':>6} {'p short':>8}"]
    for P in [*ranks, None]:
        for which, what, scale in ((0, "right share", 100), (1, "expected penalty", 100)):
            c = compare(pairs, which, P)
            where = "all" if P is None else f"P={P}"
            lines.append(f"{where:10} {what:16} {scale * c.default:7.2f}% {scale * c.grid:7.2f}% "
                         f"{scale * c.difference:+7.2f} {scale * c.error:6.2f} {c.shortfall:8.2f}")
    return lines


def agreement(first: Path, second: Path) -> dict[int, float]:
    """The share of points where the fastest candidate ``first`` measured is
    right by ``second``'s timings, per rank count."""
    points = [point for entry in replay_oracle(first, second).document.interfaces.values() for point in entry.points]
    return {P: sum(p.right for p in points if p.P == P) / sum(1 for p in points if p.P == P)
            for P in sorted({p.P for p in points})}


def built(library: str, method: str, seed: int, ranks: Sequence[int], out: Path) -> tuple[Path, float, float]:
    """One build into ``out``: its folder, seconds and share measuring."""
    result = build(ROOT / "libraries" / f"{library}.hl", out=out, ranks=ranks, seed=seed,
                   adaptive=method == "default")
    return out, result.breakdown.wall, result.breakdown.measuring_share


def evaluations_of(folder: Path, ranks: Sequence[int], points: int, when: str, into: Path) -> dict[str, Path]:
    """A set of exhaustive evaluations of the build in ``folder`` (evaluation_plan), copied into ``into``."""
    taken = {}
    for seed, at in evaluation_plan(ranks):
        result = evaluate(folder, points=points, procs=at, seed=seed, params="exhaustive")
        name = f"seed {seed} {when}"
        taken[name] = into / f"evaluation-{seed}-{when}.json"
        shutil.copy(result.path, taken[name])
        print(f"  evaluated: {name}, ranks {at}", file=sys.stderr, flush=True)
    return taken


def rank_counts(text: str) -> list[int]:
    """``--ranks``: positive rank counts, separated by commas."""
    try:
        counts = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"rank counts separated by commas, such as 1,2, not {text!r}") from None
    if not counts or counts[0] < 1:
        raise argparse.ArgumentTypeError(f"rank counts must be at least 1, not {text!r}")
    return counts


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--library", default="sort", help="a library under libraries/ (default sort)")
    options.add_argument("--pairs", type=int, default=8, help="pairs of builds, at least 2 (default 8)")
    options.add_argument("--first-seed", type=int, default=30,
                         help="the first pair's seed; each pair after it the next (default 30)")
    options.add_argument("--ranks", type=rank_counts, default="1,2",
                         help="rank counts to build and evaluate at (default 1,2)")
    options.add_argument("--points", type=int, default=200, help="held-out points of each evaluation")
    options.add_argument("--keep", type=Path, metavar="DIR",
                         help="keep each build's samples and models under DIR/<method>-seed<N>/, and the "
                              "evaluations in DIR")
    args = options.parse_args()
    if args.pairs < 2:
        options.error("--pairs: at least 2, for a paired test")
    ranks = args.ranks
    with tempfile.TemporaryDirectory(prefix="hlc-pairs-") as scratch:
        folder = Path(scratch)
        kept = args.keep or folder / "evaluations"
        kept.mkdir(parents=True, exist_ok=True)
        made: list[dict[str, tuple[Path, float, float]]] = []
        evaluations: dict[str, Path] = {}
        for pair in range(args.pairs):
            seed = args.first_seed + pair
            made.append({})
            for method in order(pair):
                made[-1][method] = built(args.library, method, seed, ranks, folder / f"{method}-{seed}" / args.library)
                print(f"  built {method}, seed {seed}: {made[-1][method][1]:.1f} s", file=sys.stderr, flush=True)
            if pair == 0:
                evaluations.update(evaluations_of(made[0]["default"][0], ranks, args.points, "before", kept))
        evaluations.update(evaluations_of(made[0]["default"][0], ranks, args.points, "after", kept))
        pairs = []
        for pair, each in enumerate(made):
            seed = args.first_seed + pair
            judged = {method: Built(method, seed, seconds, measuring, figures_of(path, evaluations))
                      for method, (path, seconds, measuring) in each.items()}
            pairs.append((judged["default"], judged["grid"]))
            if args.keep:
                for method, (path, _, _) in each.items():
                    keep_build(path, args.keep / f"{method}-seed{seed}")
        ceilings = {seed: (agreement(evaluations[f"seed {seed} before"], evaluations[f"seed {seed} after"]),
                           agreement(evaluations[f"seed {seed} after"], evaluations[f"seed {seed} before"]))
                    for seed, _ in evaluation_plan(ranks)}
    print(f"{args.library}: {args.pairs} pairs of builds (seeds {args.first_seed}-{args.first_seed + args.pairs - 1}),"
          f" judged by {len(evaluations)} evaluations of {args.points} points; means over the evaluations")
    print("\n".join(table(pairs)))
    for seed, (forth, back) in ceilings.items():
        print(f"the evaluations at seed {seed} agree with each other: "
              + ", ".join(f"P={P} {100 * min(forth[P], back.get(P, forth[P])):.1f}%" for P in forth)
              + " (the lower direction: the ceiling of a right share)")
    print(last_line(args.library, pairs))


if __name__ == "__main__":
    main()
