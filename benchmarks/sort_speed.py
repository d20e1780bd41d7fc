"""How fast is the built sort library?  Speed-ups over numpy.sort, and the radix
sort against the memory-bandwidth bound.

1. For n in 1e5 .. 1e7 and key widths 4 .. 32 bits (int64 keys), the
   dispatched call and numpy.sort are timed side by side (interleaved, the
   least of several timings); prints each ratio, their geometric mean and the
   worst case.
2. At n = 1e7, the radix sort at each digit width against its bound: the
   number of passes times one stream copy of the same array, measured in the
   same run.

    python benchmarks/sort_speed.py [BUILD] [--rounds 5]
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

import hlc

SIZES = [100_000, 300_000, 1_000_000, 3_000_000, 10_000_000]
WIDTHS = [4, 8, 12, 16, 20, 24, 28, 32]


def least_times(calls: dict[str, object], rounds: int) -> dict[str, float]:
    """The least of ``rounds`` interleaved timings of each call."""
    best = {name: math.inf for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def speed_ups(sort, rounds: int) -> None:
    rng = np.random.default_rng(4)
    ratios = []
    print(f"dispatched sort vs numpy.sort, int64 keys (speed-up = t_numpy / t_dispatched; least of {rounds})")
    print(f"{'n':>11} " + "".join(f"{f'w={w}':>8}" for w in WIDTHS))
    for n in SIZES:
        line = []
        for width in WIDTHS:
            keys = rng.integers(0, 1 << width, size=n, dtype=np.int64)
            times = least_times({"numpy": lambda keys=keys: np.sort(keys),
                                 "dispatched": lambda keys=keys: sort.sort(keys)}, rounds)
            ratios.append(times["numpy"] / times["dispatched"])
            line.append(f"{ratios[-1]:>8.2f}")
        print(f"{n:>11,} " + "".join(line))
    mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geometric-mean speed-up {mean:.2f}x over {len(ratios)} inputs with n >= 1e5; "
          f"slowest {min(ratios):.2f}x; {sum(r < 0.97 for r in ratios)} inputs more than 3% slower than numpy.sort")


def bandwidth(sort, rounds: int) -> None:
    module = sort.dispatch_sort
    n = 10_000_000
    keys = np.random.default_rng(5).integers(0, 1 << 32, size=n, dtype=np.int64)
    target = np.empty_like(keys)
    width = sort.variables_sort(keys)["width"]
    chosen = sort.choose(keys).settings["radix"]["bpd"]
    calls = {"copy": lambda: np.copyto(target, keys)}
    calls.update({bpd: (lambda bpd=bpd: module.radix_sort(keys, bpd=bpd)) for bpd in range(4, 17)})
    times = least_times(calls, rounds)
    copy = times.pop("copy")
    print(f"\nradix sort, n = 1e7 int64 keys of {width} bits; one stream copy takes {copy * 1e3:.1f} ms")
    print(f"{'bpd':>4} {'passes':>7} {'ms':>8} {'x bound':>8}")
    for bpd, seconds in times.items():
        passes = math.ceil(width / bpd)
        mark = "  <- the model's choice" if bpd == chosen else ""
        print(f"{bpd:>4} {passes:>7} {seconds * 1e3:>8.1f} {seconds / (passes * copy):>8.2f}{mark}")
    best = min(times, key=times.__getitem__)
    print(f"best bpd {best}: {times[best] / (math.ceil(width / best) * copy):.2f}x the bound "
          f"(passes x stream copy)")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("build", nargs="?", default="build/sort")
    options.add_argument("--rounds", type=int, default=5)
    args = options.parse_args()
    warnings.simplefilter("ignore", hlc.ExtrapolationWarning)  # 1e7 keys lie beyond the calibrated range
    sort = hlc.load(args.build)
    speed_ups(sort, args.rounds)
    bandwidth(sort, args.rounds)


if __name__ == "__main__":
    main()
