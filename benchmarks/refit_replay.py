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
    python benchmarks/refit_replay.py --stored sort [--description A.hl] [--versus B.hl]

A change that helps one machine's builds can harm another's: ``--stored
LIBRARY`` also judges the corpora of other machines that ``tests/data``
keeps for the library (its folders ``LIBRARY`` and ``LIBRARY-*``), each
one's samples files (``samples*.jsonl``, a build each) against its own
evaluations (``evaluation*.json``) only: timings of one machine cannot
judge another's models.  Where the library uses another's models, a
stored corpus keeps them beside its samples (``runtime_models.json``
for ``uses runtime``), and its builds are fitted and replayed with them.
Each group, the builds given and each stored folder, gets its own tables
and summary line.

A defaults to the description each build's samples name, B to A with
discovery off.  ``--set MODULE:NAME=VALUE`` (repeatable) makes B a change
of the fitter instead: A's description (or ``--versus``) fitted with the
module's constant set to the value, restored after each fit, and every
fit of the run in this process (``HLC_FIT_WORKERS=0``: a worker imports
the modules afresh and would not see the setting):

    python benchmarks/refit_replay.py --stored sort --set hlc.model.discover:SIGNIFICANCE=1.0

A library that uses another's models takes them from
build/NAME/models.json, as ``hlc fit`` does.  The last line sums it up:
each build's mean difference over the evaluations and rank counts it was
judged at, then their mean over the builds:

    B against A over N builds: right +x.xx points (SE y.yy), expected penalty +z.zz% (SE w.ww)

(with ``--stored``, over the builds of every group, each judged by its
own group's evaluations).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import json
import math
import os
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from hlc.artefacts.models import load_each, save_used
from hlc.artefacts.samples import Samples
from hlc.evaluation.replay import replay
from hlc.language.parse import parse_file
from hlc.model.calibration import fit_samples
from hlc.model.workers import WORKERS_VARIABLE

Key = tuple[str, str, int]  # evaluation, interface, rank count
Setting = tuple[Any, str, Any]  # a module, the name of one of its constants, the value B fits with
Group = tuple[str, list[Path], list[Path]]  # a name, its builds, the evaluations that judge them
#: Where the stored corpora lie (tests/data/README.md says whose they are).
STORED = Path(__file__).resolve().parent.parent / "tests" / "data"


def judged(build: Path, description: Path | None, evaluations: list[Path],
           discovering: bool, settings: Sequence[Setting] = ()) -> dict[Key, tuple[float, float, float]]:
    """The build's samples fitted with ``description``, replayed against each
    evaluation: (right share, expected penalty, share of optimal parameters)
    per evaluation, interface and rank count; the last NaN where no
    implementation has a parameter, else the mean over those that have;
    ``settings``: the fitter's constants it is fitted with (:func:`applied`).  A
    rank count at which no point could be judged (a grid build cut short
    before it reached that count has no models there) has no entry."""
    samples = samples_of(build)
    kept = stored_used_models(samples, description)
    with applied(settings):
        models = fit_samples(samples, description=description, discovering=discovering, models_of=kept or None)
    found = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "models.json"
        models.save(path)
        used = samples.parent / "used_models.json"
        if used.exists():
            (Path(folder) / used.name).write_bytes(used.read_bytes())
        elif kept:
            save_used(Path(folder) / used.name, load_each(kept))
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


def stored_used_models(samples: Path, description: Path | None) -> dict[str, Path]:
    """The models of the libraries the description uses that a stored corpus
    keeps beside its samples (``runtime_models.json`` for ``uses runtime``),
    by library; a build folder's own record of them is its used_models.json."""
    library = parse_file(description or described_by(samples))
    kept = {name: samples.parent / f"{name}_models.json" for name in library.used}
    return {name: path for name, path in kept.items() if path.exists()}


def parse_setting(text: str) -> Setting:
    """``MODULE:NAME=VALUE`` as (the module, NAME, the value, a Python
    literal); a ValueError says what is wrong with it.  A number may stand
    for a constant of the other kind of number; nothing else changes kind."""
    target, equals, value_text = text.partition("=")
    module_name, colon, name = target.partition(":")
    if not (equals and colon and module_name and name):
        raise ValueError(f"{text!r} is not MODULE:NAME=VALUE")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"{text!r}: no module {module_name} ({error})") from None
    if not hasattr(module, name):
        raise ValueError(f"{text!r}: {module_name} has no {name}")
    try:
        value = ast.literal_eval(value_text)
    except (ValueError, SyntaxError):
        raise ValueError(f"{text!r}: {value_text!r} is not a Python literal") from None
    current = getattr(module, name)
    numbers = (int, float)
    same_kind = isinstance(value, type(current)) or (isinstance(value, numbers) and isinstance(current, numbers)
                                                     and not isinstance(value, bool) and not isinstance(current, bool))
    if not same_kind:
        raise ValueError(f"{text!r}: {module_name}.{name} is {current!r}, not a {type(value).__name__}")
    return module, name, value


@contextlib.contextmanager
def applied(settings: Sequence[Setting]) -> Iterator[None]:
    """The ``settings`` in force for the time of the block, the constants as
    they were after it."""
    with contextlib.ExitStack() as stack:
        for module, name, value in settings:
            stack.enter_context(mock.patch.object(module, name, value))
        yield


def setting_text(settings: Sequence[Setting]) -> str:
    return ", ".join(f"{module.__name__}.{name} = {value!r}" for module, name, value in settings)


def described_by(samples: Path) -> str:
    """The description a samples file names, from its header, its first line
    (not the whole file, which the fit reads)."""
    with samples.open(encoding="utf-8") as stream:
        first = stream.readline()
    return Samples.of_records([json.loads(first)] if first.strip() else [], samples).header.description


def samples_of(build: Path) -> Path:
    """A build's samples file: the folder's samples.jsonl, or the file itself."""
    return build if build.suffix == ".jsonl" else build / "samples.jsonl"


def stored_groups(library: str, root: Path | None = None) -> list[Group]:
    """The corpora ``root`` keeps for ``library``: each folder named after it
    (or after it and a dash) that holds samples files and evaluations, as
    (folder name, its samples files, its evaluations)."""
    root = root or STORED
    groups = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if folder.is_dir() and (folder.name == library or folder.name.startswith(library + "-")):
            samples = sorted(folder.glob("samples*.jsonl"))
            evaluations = sorted(folder.glob("evaluation*.json"))
            if samples and evaluations:
                groups.append((folder.name, samples, evaluations))
    if not groups:
        raise SystemExit(f"{root} holds no samples and evaluations of a library '{library}'")
    return groups


def label(build: Path) -> str:
    """A build's name in the tables: its folder, or a stored file's folder and stem."""
    return f"{build.parent.name}/{build.stem}" if build.suffix == ".jsonl" else build.name


def mean_and_error(differences: list[float]) -> tuple[float, float]:
    """The mean of paired differences and its standard error (NaN for one)."""
    mean = statistics.fmean(differences)
    error = statistics.stdev(differences) / math.sqrt(len(differences)) if len(differences) > 1 else math.nan
    return mean, error


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, nargs="+", help="build folders (their samples.jsonl)")
    parser.add_argument("--evaluations", type=Path, nargs="+",
                        help="exhaustive evaluations of the same library on the same machine")
    parser.add_argument("--stored", metavar="LIBRARY",
                        help="also the corpora tests/data keeps for LIBRARY, each judged by its own evaluations")
    parser.add_argument("--description", type=Path, help="A: the description to fit (default: the samples')")
    parser.add_argument("--versus", type=Path, help="B: another description (default: A without discovery)")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE:NAME=VALUE",
                        help="B: the fitter with this constant set (repeatable), A's description or --versus")
    options = parser.parse_args(argv)
    try:
        options.settings = [parse_setting(text) for text in options.set]
    except ValueError as error:
        parser.error(f"--set {error}")
    if bool(options.builds) != bool(options.evaluations):
        parser.error("--builds and --evaluations go together")
    if not options.builds and not options.stored:
        parser.error("give --builds and --evaluations, or --stored LIBRARY, or both")
    groups: list[Group] = [("the builds given", options.builds, options.evaluations)] if options.builds else []
    if options.stored:
        groups += stored_groups(options.stored)
    a_label = options.description.name if options.description else "the samples' description"
    b_label = options.versus.name if options.versus else ("A's" if options.settings else "no discovery")
    if options.settings:
        b_label += f" with {setting_text(options.settings)}"
    print(f"A: {a_label}; B: {b_label}")
    # with settings, every fit in this process: a worker would not see them
    with mock.patch.dict(os.environ, {WORKERS_VARIABLE: "0"}) if options.settings else contextlib.nullcontext():
        _judge_groups(groups, options)


def _judge_groups(groups: list[Group], options: argparse.Namespace) -> None:
    """The tables and summaries of every group, then the summary over all."""
    # per build (by its path: two builds may share a folder name), its differences over its rows
    right_all: dict[Path, list[float]] = defaultdict(list)
    expected_all: dict[Path, list[float]] = defaultdict(list)
    named = bool(options.stored)  # each group by name, with its own summary
    for name, builds, evaluations in groups:
        if named:
            print(f"\n#### {name}: {len(builds)} build{'s' if len(builds) != 1 else ''}, "
                  f"{len(evaluations)} evaluation{'s' if len(evaluations) != 1 else ''}")
        right_group, expected_group = judge_group(builds, evaluations, options)
        right_all.update(right_group)
        expected_all.update(expected_group)
        if named:
            print(summary(f"{name}: B against A", right_group, expected_group))
    print("\n" + summary("B against A", right_all, expected_all))


def judge_group(builds: list[Path], evaluations: list[Path], options: argparse.Namespace
                ) -> tuple[dict[Path, list[float]], dict[Path, list[float]]]:
    """Each build fitted both ways and replayed against ``evaluations``: the
    tables, and each build's differences B - A (right share, expected penalty) over its rows."""
    rows: dict[Key, list[tuple[str, tuple[float, ...], tuple[float, ...]]]] = defaultdict(list)
    right_all: dict[Path, list[float]] = defaultdict(list)
    expected_all: dict[Path, list[float]] = defaultdict(list)
    for build in builds:
        first = judged(build, options.description, evaluations, True)
        second = judged(build, options.versus or options.description, evaluations,
                        options.versus is not None or bool(options.settings), options.settings)
        for key in sorted(first.keys() & second.keys()):
            rows[key].append((label(build), first[key], second[key]))
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
    return right_all, expected_all


def summary(what: str, right_all: dict[Path, list[float]], expected_all: dict[Path, list[float]]) -> str:
    """``what`` over the builds: the mean over them of each build's mean difference, with its standard error."""
    if not right_all:
        return f"{what}: no build judged"
    right, right_error = mean_and_error([100 * statistics.fmean(values) for values in right_all.values()])
    expected, expected_error = mean_and_error([100 * statistics.fmean(values) for values in expected_all.values()])
    builds = f"{len(right_all)} build" + ("s" if len(right_all) != 1 else "")
    return (f"{what} over {builds}: right {right:+.2f} points (SE {right_error:.2f}), "
            f"expected penalty {expected:+.2f}% (SE {expected_error:.2f})")


if __name__ == "__main__":
    main()
