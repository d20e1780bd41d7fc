"""Two parameters chosen together, against the first pass alone.

The dispatcher sets an implementation's parameters one after another, each
by its search with the later ones at the low ends of their ranges; with
several parameters it then passes over them again, each with the others as
last chosen, until none moves (hlc.optimize.SWEEPS passes at most).
This measures what the later passes are worth on a real library:
``benchmarks/transpose.hl``, a matrix transpose in tiles of ``tall`` ×
``wide``, whose best sides depend on each other.

It builds the library (default settings) unless ``--build`` names a build of
it, then at held-out sizes (log-uniform over the build's sizes) decides the
tile sides both ways with the reference dispatcher (hlc.dispatch.reference,
which the compiled module mirrors), and times the tiled transpose at both
settings side by side, taking turns, ``--rounds`` timings each; each
setting's time is the median of its timings.  A point where the two choose
alike is not timed (a ratio of 1).  Per point it prints the size, both
settings and the ratio; the last line

    tile sides in passes against the first pass alone: time xR (geometric mean over N sizes), the first pass more than 3% slower at K, the passes at J

    python benchmarks/parameter_passes.py [--build DIR] [--points 24] [--rounds 7] [--seed 1]
"""  # noqa: E501 -- the last line's form, as printed

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import statistics
import tempfile
import time
from pathlib import Path

from hlc.dispatch import reference
from hlc.evaluation.inputs import models_of, predictor_of

HERE = Path(__file__).resolve().parent
DESCRIPTION = HERE / "transpose.hl"
#: A timing lasts at least this long (calls repeated to reach it).
LEAST_TIMING = 5e-3


def kernels():
    """The library's own module of kernels (benchmarks/transpose/tiles.py)."""
    spec = importlib.util.spec_from_file_location("transpose_tiles", HERE / "transpose" / "tiles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settings_both_ways(build: Path, sizes: list[int]) -> list[tuple[int, dict[str, int], dict[str, int]]]:
    """At each size, the tile sides of the first pass alone and of the passes."""
    library, predictor = predictor_of(build)
    passes, once = reference.Decider(library, predictor), reference.Decider(library, predictor, sweeps=1)
    tiled = library.interface("transpose").implementation("tiled")
    found = []
    for n in sizes:
        variables = {"n": n, "cells": n * n, "P": 1, "logP": 0.0}
        found.append((n, once.parameters(tiled, variables), passes.parameters(tiled, variables)))
    return found


def seconds_side_by_side(call, a, one: dict[str, int], other: dict[str, int], rounds: int) -> tuple[float, float]:
    """Median seconds per call of ``call(a, **one)`` and ``call(a, **other)``,
    timed in turns, each timing repeated to last LEAST_TIMING."""
    start = time.perf_counter()
    call(a, **one)
    call(a, **other)
    repeat = max(1, math.ceil(LEAST_TIMING / max((time.perf_counter() - start) / 2, 1e-9)))
    timings: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(rounds):
        for which, setting in enumerate((one, other)):
            start = time.perf_counter()
            for _ in range(repeat):
                call(a, **setting)
            timings[which].append((time.perf_counter() - start) / repeat)
    return statistics.median(timings[0]), statistics.median(timings[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, help="a build of benchmarks/transpose.hl (default: build one now)")
    parser.add_argument("--points", type=int, default=24, help="held-out sizes (default 24)")
    parser.add_argument("--rounds", type=int, default=7, help="timings of each setting at a size (default 7)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the sizes and matrices (default 1)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        build = args.build
        if build is None:
            import hlc

            print(f"building {DESCRIPTION.name} ...", flush=True)
            build = hlc.build(DESCRIPTION, out=Path(scratch) / "transpose").path
        _, models = models_of(build)
        low, high = models.time("tiled").domain.get("n", (16, 4096))
        rng = random.Random(args.seed)
        sizes = [round(math.exp(rng.uniform(math.log(low), math.log(high)))) for _ in range(args.points)]
        tiles = kernels()
        ratios, slower, faster = [], 0, 0
        print(f"{'n':>6}  {'first pass':>20}  {'passes':>20}  passes / first pass")
        for n, first, passes in settings_both_ways(build, sizes):
            shown = [f"{setting['tall']} x {setting['wide']}" for setting in (first, passes)]
            if first == passes:
                ratios.append(1.0)
                print(f"{n:>6}  {shown[0]:>20}  {shown[1]:>20}  1 (alike)")
                continue
            a = tiles.matrix(n, args.seed + n)
            once, again = seconds_side_by_side(tiles.tiles, a, first, passes, args.rounds)
            ratios.append(again / once)
            slower += once > 1.03 * again
            faster += again > 1.03 * once
            print(f"{n:>6}  {shown[0]:>20}  {shown[1]:>20}  {again / once:.3f}", flush=True)
    mean = math.exp(statistics.fmean(math.log(r) for r in ratios))
    print(f"tile sides in passes against the first pass alone: time x{mean:.3f} (geometric mean over "
          f"{len(ratios)} sizes), the first pass more than 3% slower at {slower}, the passes at {faster}")


if __name__ == "__main__":
    main()
