"""Does profiling the same points twice give the same medians?

Profiles one description twice with the same seed (so the same points and the
same inputs), pairs the samples, and prints how far each pair's medians are
apart: the median and 95th percentile of |t2/t1 − 1| and the share of pairs
within 5%.

It also times a small fixed yardstick (a 4096-element NumPy sum) for a
second before and after each run: a shared host may change speed for
seconds at a time (on some machines by 1.7× for such code, less for
memory-bound code, so no single yardstick can correct for it), and the two
runs can only agree as well as the host's speed did.

    python benchmarks/timing_stability.py [LIB.hl] [--build DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import hlc
from hlc.calibrate.harness import read_samples
from hlc.calibrate.run import profile

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "descriptions" / "vector.hl"


def medians(path: Path) -> dict[tuple, float]:
    return {(r["implementation"], r["P"], r["verify"], r["index"], tuple(sorted(r["parameters"].items()))):
            r["seconds"] for r in read_samples(path) if r["kind"] == "sample"}


def yardstick(seconds: float = 1.0) -> float:
    """Median microseconds of a 4096-element NumPy sum, over ``seconds`` of windows."""
    values = np.random.default_rng(0).standard_normal(4096)
    windows = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        for _ in range(200):
            values.sum()
        windows.append((time.perf_counter() - start) / 200 * 1e6)
    return statistics.median(windows)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("description", nargs="?", default=str(DEFAULT))
    options.add_argument("--build", help="folder for the programs and samples (default: a temporary one)")
    args = options.parse_args()
    library = hlc.parse_file(args.description)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.build or scratch)
        runs, host = [], []
        for run in (1, 2):
            samples = folder / f"run{run}.jsonl"
            before = yardstick()
            profile(library, samples, folder / "build", ranks=[1])
            host.append((before, yardstick()))
            runs.append(medians(samples))
    pairs = [(runs[0][key], runs[1][key]) for key in runs[0].keys() & runs[1].keys()]
    deviations = sorted(abs(second / first - 1.0) for first, second in pairs)
    within = sum(d <= 0.05 for d in deviations) / len(deviations)
    print(f"{library.name}: {len(pairs)} samples profiled twice, same points and inputs")
    print(f"|t2/t1 - 1|: median {statistics.median(deviations):.2%}, "
          f"95th percentile {deviations[int(0.95 * (len(deviations) - 1))]:.2%}, max {deviations[-1]:.2%}")
    print(f"pairs within 5% of each other: {within:.1%}")
    print("host yardstick (µs, before / after each run): " +
          ", ".join(f"run {i}: {a:.2f} / {b:.2f}" for i, (a, b) in enumerate(host, 1)))
    speeds = [v for pair in host for v in pair]
    if max(speeds) > 1.05 * min(speeds):
        print(f"the host's speed changed by {max(speeds) / min(speeds) - 1:.0%} during the runs: "
              "the differences above include it")


if __name__ == "__main__":
    main()
