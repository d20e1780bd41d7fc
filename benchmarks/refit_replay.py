"""Two fits of the same stored builds, judged side by side against stored evaluations.

Builds of one library on one machine differ by several points of right
choices (the host's state, the samples the adaptive profile took), so a
change to a description, judged on one build, is mostly judged on that
build's luck.  This refits every build's stored samples twice, with the
description ``--description`` (A) and with ``--versus`` (B), replays both
fits against every stored exhaustive evaluation (``hlc evaluate --params
exhaustive``; nothing is timed), and prints, per evaluation, interface and
rank count, each build's right share, expected penalty and share of
optimal parameters (a searched parameter within the tolerance of its best
setting) under A and B,
then the mean difference B - A over the builds with its standard error
(the builds are paired: one build's two fits share its samples).

    python benchmarks/refit_replay.py --builds build/a build/b ... \\
        --evaluations E1.json E2.json [--description A.hl] [--versus B.hl]

A defaults to the description each build's samples name, B to A with
discovery off.  A library that uses another's models takes them from
build/NAME/models.json, as ``hlc fit`` does.  The last line sums it up:
each build's mean difference over the evaluations and rank counts it was
judged at, then their mean over the builds:

    B against A over N builds: right +x.xx points (SE y.yy), expected penalty +z.zz% (SE w.ww)
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from hlc.evaluation.replay import replay
from hlc.model.calibration import fit_samples

Key = tuple[str, str, int]  # evaluation, interface, rank count


def judged(build: Path, description: Path | None, evaluations: list[Path],
           discovering: bool) -> dict[Key, tuple[float, float, float]]:
    """The build's samples fitted with ``description``, replayed against each
    evaluation: (right share, expected penalty, share of optimal parameters)
    per evaluation, interface and rank count; the last NaN where no
    implementation has a parameter, else the mean over those that have.  A
    rank count at which no point could be judged (a grid build cut short
    before it reached that count has no models there) has no entry."""
    models = fit_samples(build / "samples.jsonl", description=description, discovering=discovering)
    found = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "models.json"
        models.save(path)
        used = build / "used_models.json"
        if used.exists():
            (Path(folder) / used.name).write_bytes(used.read_bytes())
        for evaluation in evaluations:
            result = replay(path, evaluation, description=description)
            for interface, entry in result.interfaces.items():
                for ranks, summary in (entry.by_ranks or {0: entry.summary}).items():
                    if summary is None:  # no point judged: the build has no models at that rank count
                        continue
                    optimal = [share.share for share in summary.optimal_parameters.values()]
                    found[evaluation.stem, interface, ranks] = (
                        summary.right_share, summary.expected_penalty,
                        statistics.fmean(optimal) if optimal else math.nan)
    return found


def mean_and_error(differences: list[float]) -> tuple[float, float]:
    """The mean of paired differences and its standard error (NaN for one)."""
    mean = statistics.fmean(differences)
    error = statistics.stdev(differences) / math.sqrt(len(differences)) if len(differences) > 1 else math.nan
    return mean, error


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, nargs="+", required=True, help="build folders (their samples.jsonl)")
    parser.add_argument("--evaluations", type=Path, nargs="+", required=True,
                        help="exhaustive evaluations of the same library on the same machine")
    parser.add_argument("--description", type=Path, help="A: the description to fit (default: the samples')")
    parser.add_argument("--versus", type=Path, help="B: another description (default: A without discovery)")
    options = parser.parse_args(argv)
    a_label = options.description.name if options.description else "the samples' description"
    b_label = options.versus.name if options.versus else "no discovery"
    print(f"A: {a_label}; B: {b_label}")
    rows: dict[Key, list[tuple[str, tuple[float, ...], tuple[float, ...]]]] = defaultdict(list)
    # per build (by its path: two builds may share a folder name), its differences over its rows
    right_all: dict[Path, list[float]] = defaultdict(list)
    expected_all: dict[Path, list[float]] = defaultdict(list)
    for build in options.builds:
        first = judged(build, options.description, options.evaluations, True)
        second = judged(build, options.versus or options.description, options.evaluations,
                        options.versus is not None)
        for key in sorted(first.keys() & second.keys()):
            rows[key].append((build.name, first[key], second[key]))
            right_all[build].append(second[key][0] - first[key][0])
            expected_all[build].append(second[key][1] - first[key][1])
    for (evaluation, interface, ranks), judged_builds in sorted(rows.items()):
        where = f"{interface}, {'all ranks' if ranks == 0 else f'P = {ranks}'}"
        print(f"\n{evaluation}: {where}")
        print(f"{'build':<24} {'right A':>8} {'right B':>8} {'expected A':>11} {'expected B':>11} "
              f"{'parameters A':>13} {'parameters B':>13}")
        for name, (right_a, expected_a, optimal_a), (right_b, expected_b, optimal_b) in judged_builds:
            print(f"{name:<24} {right_a:>8.1%} {right_b:>8.1%} {expected_a:>11.2%} {expected_b:>11.2%} "
                  f"{optimal_a:>13.1%} {optimal_b:>13.1%}")
        right, right_error = mean_and_error([100 * (b[0] - a[0]) for _, a, b in judged_builds])
        expected, expected_error = mean_and_error([100 * (b[1] - a[1]) for _, a, b in judged_builds])
        print(f"{'B - A':<24} right {right:+.2f} points (SE {right_error:.2f}), "
              f"expected penalty {expected:+.2f}% (SE {expected_error:.2f})")
    right, right_error = mean_and_error([100 * statistics.fmean(values) for values in right_all.values()])
    expected, expected_error = mean_and_error([100 * statistics.fmean(values) for values in expected_all.values()])
    builds = f"{len(right_all)} build" + ("s" if len(right_all) != 1 else "")
    print(f"\nB against A over {builds}: right {right:+.2f} points (SE {right_error:.2f}), "
          f"expected penalty {expected:+.2f}% (SE {expected_error:.2f})")


if __name__ == "__main__":
    main()
