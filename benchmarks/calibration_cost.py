"""Decision quality against profiling time: the full grid cut short by a
budget, against adaptive sampling at the same budgets.

For each library, builds it (fresh, into a temporary folder) with the grid
at every budget and at twice it, and adaptively at every budget and with
the default budget; then judges each build's choices by replaying them
against exhaustive evaluations of this machine (nothing is timed for the
judgement: the same points and timings judge every build).  A grid build
cut short takes its points in a random order, so it samples the whole
nest, as thinly as its budget allows.

The evaluations are the stored ones of ``tests/data/<library>/`` when they
were taken on a machine like this one (the same CPU, core count and
caches) of the implementations as this checkout has them (the digests of
their source files); otherwise the script first takes its own, with the
stored ones' settings (seed, points, rank counts), of a default build, and
keeps them under ``build/calibration_cost/<library>/`` for the next run on
this machine and these sources.  Timings of another CPU cannot judge this
one's models, nor timings of other kernels these kernels' models.

Prints, per build, the profiling seconds and, per stored evaluation, the
share of right choices (within the evaluation's tolerance of the fastest
alternative; a point where the build chooses nothing, for want of models
there, counts as wrong) and the expected penalty over the points judged;
then whether adaptive sampling at each budget chose right at least as
often as the grid with twice the time, over all the stored evaluations
(the expected penalties are over the points judged, which a build without
models at a rank count leaves out; so each comparison also gives both
kinds' expected penalties over the points that every build of both judged).  Where twice the time reached the
whole grid, the grid's figure is that of every build at a budget that
reached it, pooled in the row ``whole``: they are one kind of build, whose
budgets differ only in time they did not need.  Where adaptive sampling's
share is lower, whether it is significantly so against the builds' own
noise (``verdict``); and last

    sort: build S s, measuring E% of it, right R% (seed 1), grid needs G s for the same

for the default adaptive build: its build time, the share of it spent in
timed calls, its right share on the first stored evaluation, and the least
grid budget (of those tried) that reached that share.

    python benchmarks/calibration_cost.py [--libraries sort,stencil] [--budgets 15,30,60,120] [--repeats N]
                                          [--keep DIR]

The builds are made in a temporary folder and removed once judged; with
``--keep DIR``, each one's samples, models and description copy stay under
``DIR/<library>/<method>-<budget>-seed<N>/``, so that a change to the fitter
or a description can be judged on all of them later, timing nothing
(``benchmarks/refit_replay.py --builds DIR/sort/*``).

The builds of one method and budget differ by more than their sampling:
noise in the timings moves a right share by a point or two from one build
to the next.  ``--repeats N`` builds each N times, with seeds 0 .. N-1, and
averages their figures; each repeat builds every kind in turn, so that the
host's busier and quieter stretches fall on both methods alike.  Each
stored evaluation judges every interface's points together.  A run takes
about as long as its builds (for sort on a two-core machine, about eleven
minutes per repeat).
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kept_builds import KEPT as KEPT  # re-exported: what --keep keeps
from kept_builds import keep_build
from scipy.stats import t as student

from hlc.artefacts import evaluation as evaluation_artefact
from hlc.artefacts.models import Fingerprint
from hlc.artefacts.models import load as load_models
from hlc.dispatch.build import build
from hlc.evaluation import evaluate
from hlc.evaluation.replay import replay
from hlc.language.parse import parse_file
from hlc.model.fingerprint import implementation_digests, machine, machine_differences

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CACHE = ROOT / "build" / "calibration_cost"
NOT_PROFILING = ("fit", "dispatch module", "compile")


@dataclass
class Judged:
    method: str
    budget: float | None
    seconds: float  # the whole build
    profiling: float  # of which profiling
    measuring: float  # share of the build in timed calls
    right: list[float]  # per stored evaluation
    expected: list[float]
    # per build: its right share, every stored evaluation weighed alike
    builds: list[float] = field(default_factory=list)
    complete: bool = False  # every build measured every point of the grid
    #: per build, per stored evaluation: the penalty at each point it judged,
    #: by (interface, rank count, index), to compare kinds on common points
    penalties: list[list[dict[tuple[str, int, int], float]]] = field(default_factory=list)


def evaluations(library: str) -> list[Path]:
    return sorted((DATA / library).glob("evaluation-*.json"))


def taken_here(evaluation: Path, sources: Mapping[str, str]) -> bool:
    """Whether an evaluation was taken on a machine like this one, of the
    implementations as ``sources`` (this checkout's digests) have them (an
    evaluation that does not record their digests is taken again)."""
    document = evaluation_artefact.load(evaluation)
    return same_machine(document.machine) and document.sources == sources


def references(library: str) -> list[Path]:
    """The exhaustive evaluations that judge the builds (module doc)."""
    stored = evaluations(library)
    sources = implementation_digests(parse_file(ROOT / "libraries" / f"{library}.hl"))
    if stored and all(taken_here(path, sources) for path in stored):
        return stored
    folder = CACHE / library
    own = [folder / path.name for path in stored]
    if own and all(path.exists() and taken_here(path, sources) for path in own):
        return own
    print(f"{library}: the stored evaluations were taken on another machine or of other sources of its "
          f"implementations; taking this one's (kept in {folder})", flush=True)
    shutil.rmtree(folder, ignore_errors=True)
    prepare_uses(library, folder)
    build(ROOT / "libraries" / f"{library}.hl", out=folder / library, adaptive=True)
    for path, target in zip(stored, own, strict=True):
        settings = evaluation_artefact.load(path).settings
        result = evaluate(folder / library, points=settings.points, procs=settings.ranks, seed=settings.seed,
                          params=settings.params, tolerance=settings.tolerance)
        shutil.copy(result.path, target)
        print(f"  {target.name}: seed {settings.seed}, {settings.points} points, ranks {settings.ranks}",
              flush=True)
    return own


def same_machine(recorded: Mapping[str, Any] | Fingerprint) -> bool:
    """Whether ``recorded`` (a fingerprint, or an evaluation's machine) names this machine."""
    return bool(recorded.get("cpu")) and not machine_differences(recorded, machine())


def prepare_uses(library: str, folder: Path) -> None:
    """The models of the libraries it uses (stencil uses runtime), beside the
    build: the stored corpus's when they were fitted on a machine like this
    one, else a default build's on this one (kept under CACHE)."""
    for name in parse_file(ROOT / "libraries" / f"{library}.hl").used:
        models = DATA / library / f"{name}_models.json"
        if not same_machine(load_models(models).fingerprint):
            models = CACHE / name / name / "models.json"
            if not (models.exists() and same_machine(load_models(models).fingerprint)):
                print(f"{library}: building {name} on this machine for the models it uses", flush=True)
                build(ROOT / "libraries" / f"{name}.hl", out=models.parent, adaptive=True)
        (folder / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(models, folder / name / "models.json")


def kind_name(method: str, budget: float | None, seed: int) -> str:
    """A build's folder name under ``--keep``: ``adaptive-30-seed1``, ``grid-default-seed0``."""
    return f"{method}-{'default' if budget is None else f'{budget:g}'}-seed{seed}"


def built_and_judged(library: str, method: str, budget: float | None, seed: int, folder: Path,
                     stored: list[Path], keep: Path | None = None) -> Judged:
    """One build at ``seed``, judged against ``stored``; with ``keep``, what a
    refit of it needs is kept under ``keep/<library>/`` (kind_name)."""
    ranks = sorted({size for path in stored for size in evaluation_artefact.load(path).settings.ranks})
    out = folder / f"{method}-{budget}-{seed}" / library
    prepare_uses(library, out.parent)
    result = build(ROOT / "libraries" / f"{library}.hl", out=out, ranks=ranks, budget=budget, seed=seed,
                   adaptive=method == "adaptive")
    spent = result.breakdown
    profiling = spent.wall - sum(spent.seconds.get(activity, 0.0) for activity in NOT_PROFILING)
    right, expected, penalties = [], [], []
    for evaluation in stored:
        interfaces = replay(out, evaluation).interfaces
        entries = interfaces.values()
        penalties.append({(name, point.P, point.index): point.penalty
                          for name, entry in interfaces.items() for point in entry.points})
        # Every interface's points together.  A point where the build chose
        # nothing (no model there), or something the evaluation did not
        # time, counts as a wrong choice.
        summaries = [entry.summary for entry in entries if entry.summary is not None]
        judged_points = sum(summary.points for summary in summaries)
        points = judged_points + sum(entry.unmeasured or 0 for entry in entries)
        right_points = sum(summary.right_share * summary.points for summary in summaries)
        right.append(right_points / points if points else 0.0)
        expected.append(sum(summary.expected_penalty * summary.points for summary in summaries)
                        / judged_points if judged_points else 0.0)
    if keep is not None:
        keep_build(out, keep / library / kind_name(method, budget, seed))
    shutil.rmtree(out.parent)
    return Judged(method, budget, spent.wall, profiling, spent.measuring_share, right, expected,
                  [statistics.mean(right)], complete=result.coverage is None, penalties=[penalties])


def judged_interleaved(library: str, kinds: list[tuple[str, float | None]], folder: Path, stored: list[Path],
                       repeats: int, keep: Path | None = None) -> dict[tuple[str, float | None], Judged]:
    """Every kind of build (method, budget) ``repeats`` times, seeds 0, 1, …,
    each repeat building every kind before the next begins; the figures of
    a kind are the means over its builds.  A shared host's busy spells last
    minutes: had each kind's builds run together, one method's would have
    fallen in one stretch of the host's load and the other's in another,
    and the comparison would be of the stretches."""
    builds: dict[tuple[str, float | None], list[Judged]] = {kind: [] for kind in kinds}
    for seed in range(repeats):
        for method, budget in kinds:
            one = built_and_judged(library, method, budget, seed, folder, stored, keep)
            builds[(method, budget)].append(one)
            print(f"  built {method} at {'default' if budget is None else f'{budget:g} s'}, seed {seed}: "
                  f"right {100 * one.builds[0]:.1f}%", file=sys.stderr, flush=True)
    return {kind: pooled(kind[0], kind[1], each) for kind, each in builds.items()}


def pooled(method: str, budget: float | None, groups: list[Judged]) -> Judged:
    """One figure for several builds or groups of builds of one kind: the
    means of theirs, each group weighed by its number of builds."""
    weights = [len(group.builds) for group in groups]

    def mean(values: list[float]) -> float:
        return sum(w * v for w, v in zip(weights, values, strict=True)) / sum(weights)

    return Judged(method, budget, mean([g.seconds for g in groups]), mean([g.profiling for g in groups]),
                  mean([g.measuring for g in groups]),
                  [mean(list(values)) for values in zip(*(g.right for g in groups), strict=True)],
                  [mean(list(values)) for values in zip(*(g.expected for g in groups), strict=True)],
                  [share for g in groups for share in g.builds], all(g.complete for g in groups),
                  [each for g in groups for each in g.penalties])


def common_penalties(first: Judged, second: Judged) -> tuple[float, float, int]:
    """The expected penalties of two kinds of build over the points that
    every build of both judged, each stored evaluation weighed alike, and
    how many points that is.  A build without models at a rank count judges
    none of its points; its expected penalty over the points it judged is
    then over the easier part of the evaluations, and cannot be set beside
    that of a build that judged them all."""
    builds = first.penalties + second.penalties
    firsts, seconds, counted = [], [], 0
    for place in range(len(builds[0]) if builds else 0):
        common = set.intersection(*(set(build[place]) for build in builds))
        if not common:
            continue
        counted += len(common)
        for kind, values in ((first, firsts), (second, seconds)):
            values.append(statistics.mean(statistics.mean(build[place][key] for key in common)
                                          for build in kind.penalties))
    if not counted:
        return math.nan, math.nan, 0
    return statistics.mean(firsts), statistics.mean(seconds), counted


def whole_grid(grid: Mapping[float, Judged]) -> Judged | None:
    """The builds that measured the whole grid, at whatever budget: one kind
    of build, pooled (their budgets differ only in time they did not need);
    None unless two budgets reached it."""
    complete = [judged for judged in grid.values() if judged.complete]
    return pooled("grid", None, complete) if len(complete) >= 2 else None


def build_noise(groups: list[Judged]) -> tuple[float, int]:
    """The standard deviation of one build's right share among builds of one
    kind (one method, one budget, seeds 0 .. N-1), pooled over the groups,
    and its degrees of freedom: how far a build's share moves with its
    timings' noise and its seed alone."""
    squares = sum((share - statistics.mean(g.builds)) ** 2 for g in groups for share in g.builds)
    freedom = sum(len(g.builds) - 1 for g in groups)
    return (math.sqrt(squares / freedom) if freedom else math.nan), freedom


def verdict(adaptive: Judged, grid: Judged, noise: tuple[float, int]) -> str:
    """Whether adaptive sampling chose right at least as often as the grid.

    Builds are the unit: a build's wrong choices come in clusters (one
    model off in one region turns every point there), so a test on the
    points (McNemar's) counts one cluster as many and finds two builds of
    one kind significantly different every few runs.  Lower is judged by a
    one-sided t test (5%) on the mean right shares of the builds of each
    side, against the spread of builds of one kind (``build_noise``)."""
    a, g = statistics.mean(adaptive.builds), statistics.mean(grid.builds)
    if a >= g:
        return "as good or better"
    spread, freedom = noise
    if not freedom or not spread > 0:
        return "lower (one build each: --repeats 2 or more judges it against the builds' noise)"
    error = spread * math.sqrt(1 / len(adaptive.builds) + 1 / len(grid.builds))
    p = student.sf((g - a) / error, freedom)
    return (f"{'worse' if p < 0.05 else 'as good within noise'} (builds of one kind differ by "
            f"{100 * spread:.1f} points; t test p = {p:.2f})")


def row(entry: Judged) -> str:
    budget = ("whole" if entry.method == "grid" else "default") if entry.budget is None else f"{entry.budget:g}"
    figures = "  ".join(f"{100 * r:5.1f}% {100 * e:5.2f}%" for r, e in zip(entry.right, entry.expected, strict=True))
    each = " ".join(f"{100 * share:.1f}" for share in entry.builds)
    return (f"{entry.method:<9} {budget:>7} {entry.profiling:8.1f} {entry.seconds:7.1f} "
            f"{100 * entry.measuring:5.0f}%   {figures}   builds {each}")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--libraries", default="sort,stencil")
    options.add_argument("--budgets", default="15,30,60,120")
    options.add_argument("--repeats", type=int, default=1,
                         help="builds per method and budget, with seeds 0, 1, …; their figures are averaged")
    options.add_argument("--keep", type=Path, metavar="DIR",
                         help="keep each build's samples, models and description under DIR/<library>/"
                              "<method>-<budget>-seed<N>/, to refit and replay later")
    args = options.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]
    last = []
    for library in args.libraries.split(","):
        stored = references(library)
        names = "  ".join(f"{p.stem:>16}" for p in stored)
        print(f"{library}: right share and expected penalty on {names}")
        print(f"{'method':<9} {'budget':>7} {'profile':>8} {'build':>7} {'meas.':>6}")
        grid_budgets = sorted(set(budgets) | {2 * b for b in budgets})
        kinds = [("grid", b) for b in grid_budgets] + [("adaptive", b) for b in budgets] + [("adaptive", None)]
        with tempfile.TemporaryDirectory(prefix="hlc-cost-") as scratch:
            results = judged_interleaved(library, kinds, Path(scratch), stored, args.repeats, args.keep)
        grid = {budget: results[("grid", budget)] for budget in grid_budgets}
        for budget in grid_budgets:
            print(row(grid[budget]), flush=True)
        whole = whole_grid(grid)
        if whole is not None:
            print(row(whole), flush=True)
        adaptive = {budget: results[("adaptive", budget)] for budget in budgets}
        for budget in budgets:
            print(row(adaptive[budget]), flush=True)
        default = results[("adaptive", None)]
        print(row(default), flush=True)
        # The verdicts weigh every stored evaluation alike.
        noise = build_noise([*grid.values(), *adaptive.values(), default])
        # A budget that reached the whole grid is judged by every build that did.
        judging = {b: whole if whole is not None and g.complete else g for b, g in grid.items()}
        for budget in budgets:
            a, g = adaptive[budget], judging[2 * budget]
            which = f"{2 * budget:g} s" + (" (the whole grid)" if g is whole else "")
            mine, theirs, common = common_penalties(a, g)
            print(f"  at {budget:g} s: adaptive right {100 * statistics.mean(a.right):.1f}%, expected "
                  f"{100 * statistics.mean(a.expected):.2f}%; grid at {which} right "
                  f"{100 * statistics.mean(g.right):.1f}%, expected {100 * statistics.mean(g.expected):.2f}%"
                  f"; expected over the {common} points both judged {100 * mine:.2f}% against "
                  f"{100 * theirs:.2f}% -> {verdict(a, g, noise)}")
        reaching = [b for b, g in sorted(judging.items()) if g.right[0] >= default.right[0]]
        needs = f"{grid[reaching[0]].profiling:.0f}" if reaching else f"more than {max(grid):g}"
        last.append(f"{library}: build {default.seconds:.0f} s, measuring {100 * default.measuring:.0f}% of it, "
                    f"right {100 * default.right[0]:.1f}% (seed 1), grid needs {needs} s for the same")
        print()
    for line in last[1:] + last[:1]:
        print(line)


if __name__ == "__main__":
    main()
