"""How close can a build's verification MRE get on this machine?

A model's verification MRE compares its predictions with samples timed in
the build's own profiling process, after everything that process timed
before.  A user's process, and ``hlc evaluate``'s, times the same calls
after another history: other arrays allocated and freed before, other
memory under the kernels' buffers.  Where a kernel's cost depends on that
(a wide radix scatter's thousands of write streams compete for cache sets
by the physical pages under them), the same call at the same input takes
another time in another process, and no model of the inputs can be closer
to both than they are to each other.

This times the build's verification points again, in ``--runs`` fresh
processes of the build's own profiling program (the same seed: the same
points, inputs and parameter settings), pairs each sample with the build's,
and prints per implementation and rank count:

* ``offset``: the geometric mean of again / build: how much faster or slower
  a fresh process runs the whole implementation (a shared host's speed, a
  process's state); a uniform factor changes no choice, so it is divided out
  before the next two;
* ``build vs again``: the mean of max(r, 1/r) over the pairs, r their ratio
  over the offset: how far the build's samples lie from the same calls
  timed in another process (its worst pair beside it);
* ``again vs again``: the same between the first two fresh processes, whose
  histories are alike: the timings' own noise;
* the model's verification MRE, as the build recorded it.

A model whose verification MRE lies near ``build vs again`` is as close to
the build's samples as another process's timings are.  The last line names
the implementation whose timings moved most between processes:

    largest difference between processes: IMPL P=p build vs again X.XXX (model's verification MRE Y.YYY)

    python benchmarks/verification_floor.py [BUILD] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from hlc.artefacts import models as model_files
from hlc.artefacts.files import ArtefactError
from hlc.artefacts.samples import Sample, Samples
from hlc.calibrate.breakdown import Breakdown
from hlc.calibrate.run import Server

ROOT = Path(__file__).resolve().parent.parent
#: The command that has a fresh profiling program time the verification
#: points in the order they are drawn, as many as the description's
#: ``verify`` asks: the build's first ones.
AGAIN = {"verification_only": True, "verifying": 1.0}

Key = tuple[str, int, int, str]  # implementation, ranks, verification index, parameters


def verification_samples(samples: Samples) -> dict[Key, Sample]:
    """The verification samples, by what identifies the call."""
    return {(s.implementation, s.P, s.index, json.dumps(s.parameters, sort_keys=True)): s
            for s in samples.samples if s.verify}


def time_again(build: Path, ranks: int, seed: int, into: Path) -> dict[Key, Sample]:
    """The build's verification points at ``ranks`` ranks, timed by a fresh
    process of its profiling program into the samples file ``into``."""
    programs = sorted(build.glob("profile_*.py"))
    if len(programs) != 1:
        raise SystemExit(f"{build}: expected one profiling program (profile_LIB.py), found {len(programs)}")
    [program] = programs
    server = Server(program, into, ranks, seed, timeout=60.0, progress=None, spent=Breakdown())
    try:
        server.run(AGAIN)
    finally:
        server.close()
    return verification_samples(Samples.load(into))


def ratios(first: dict[Key, Sample], second: dict[Key, Sample]) -> dict[tuple[str, int], list[float]]:
    """second / first for every call both timed, by implementation and ranks."""
    found: dict[tuple[str, int], list[float]] = defaultdict(list)
    for key, sample in first.items():
        other = second.get(key)
        if other is not None and sample.seconds > 0 and other.seconds > 0:
            found[key[:2]].append(other.seconds / sample.seconds)
    return found


def offset(values: list[float]) -> float:
    """The geometric mean of the ratios."""
    return math.exp(statistics.fmean(math.log(r) for r in values))


def apart(values: list[float]) -> tuple[float, float]:
    """Mean and worst of max(r, 1/r) once the ratios' offset is divided out."""
    scale = offset(values)
    spread = [max(r / scale, scale / r) for r in values]
    return statistics.fmean(spread), max(spread)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", nargs="?", type=Path, default=ROOT / "build" / "sort")
    parser.add_argument("--runs", type=int, default=2, help="fresh processes per rank count (default 2)")
    options = parser.parse_args(argv)
    build = options.build.resolve()
    try:
        stored = Samples.load(build / "samples.jsonl")
        built = verification_samples(stored)
        models = model_files.load(build / "models.json").times()
    except ArtefactError as error:
        print(f"error: {error} (give the folder hlc build wrote)", file=sys.stderr)
        return 2
    ranks = sorted({key[1] for key in built})
    agains: list[dict[Key, Sample]] = [{} for _ in range(max(options.runs, 1))]
    with tempfile.TemporaryDirectory() as folder:
        for size in ranks:
            for run, found in enumerate(agains):
                found.update(time_again(build, size, stored.header.seed, Path(folder) / f"again-{size}-{run}.jsonl"))
    against_build = ratios(built, agains[0])
    between_agains = ratios(agains[0], agains[1]) if len(agains) > 1 else {}

    print(f"{build}: verification samples timed again in {len(agains)} fresh process(es) per rank count\n")
    print(f"{'implementation':<16} {'P':>2} {'pairs':>5} {'offset':>7} {'build vs again':>15} {'worst':>6} "
          f"{'again vs again':>15} {'model MRE':>10}")
    largest: tuple[float, str, int, float] | None = None
    for (name, size), values in sorted(against_build.items()):
        mean, worst = apart(values)
        noise = between_agains.get((name, size))
        entry = models.get(name)
        model = (entry.verification_mre_by_ranks or {}).get(str(size), entry.verification_mre) if entry else None
        model_text = f"{model:10.3f}" if model else f"{'-':>10}"
        noise_text = f"{apart(noise)[0]:15.3f}" if noise else f"{'-':>15}"
        print(f"{name:<16} {size:>2} {len(values):>5} {offset(values):7.3f} {mean:15.3f} {worst:6.2f} "
              f"{noise_text} {model_text}")
        if largest is None or mean > largest[0]:
            largest = (mean, name, size, model or math.nan)
    if largest is None:
        print("no verification point of the build was timed again", file=sys.stderr)
        return 1
    mean, name, size, model = largest
    print(f"\nlargest difference between processes: {name} P={size} build vs again {mean:.3f} "
          f"(model's verification MRE {model:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
