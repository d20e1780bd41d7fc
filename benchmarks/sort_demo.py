"""The sort library, built on this machine, at work on a few inputs.

For each input it prints what the dispatcher chose (and the radix sort's
digit width), then the time of the dispatched call and of every
implementation, measured side by side, as ratios to numpy.sort.

    python benchmarks/sort_demo.py [BUILD]        (default: build/sort)
"""

from __future__ import annotations

import statistics
import sys
import timeit

import numpy as np

import hlc

INPUTS = [(100, 8), (10_000, 16), (200_000, 12), (200_000, 30), (1_000_000, 8), (1_000_000, 20), (1_000_000, 28)]
COLUMNS = ("dispatched", "radix", "counting", "narrow", "numpy")


def seconds(call) -> float:
    number = max(1, int(0.02 / max(timeit.timeit(call, number=1), 1e-7)))
    return statistics.median(timeit.repeat(call, number=number, repeat=5)) / number


def measure(sort, module, keys: np.ndarray, radix_bpd: int) -> dict[str, float]:
    """Seconds of the dispatched call and of each implementation, side by side."""
    width = sort.variables_sort(keys)["width"]
    timings = {
        "dispatched": seconds(lambda: sort.sort(keys)),
        "radix": seconds(lambda: module.radix_sort(keys, bpd=radix_bpd)),
        "narrow": seconds(lambda: module.narrow_sort(keys)),
        "numpy": seconds(lambda: np.sort(keys)),
    }
    if width <= 24:
        timings["counting"] = seconds(lambda: module.counting_sort(keys))
    return timings


def main() -> None:
    sort = hlc.load(sys.argv[1] if len(sys.argv) > 1 else "build/sort")
    module = sort.dispatch_sort
    rng = np.random.default_rng(2026)
    print(f"{'keys':>9} {'bits':>4}  {'chosen':<15}" + "".join(f"{name:>11}" for name in COLUMNS)
          + "   (times as ratios to numpy.sort; radix at the bpd its model picks)")
    for count, bits in INPUTS:
        keys = rng.integers(0, 1 << bits, count, dtype=np.int64)
        choice = sort.choose(keys)
        assert np.array_equal(sort.sort(keys), np.sort(keys))
        variables = sort.variables_sort(keys)
        radix_bpd = min(range(1, 17), key=lambda bpd: sort.predict("radix", **variables, bpd=bpd))
        timings = measure(sort, module, keys, radix_bpd)
        baseline = timings["numpy"]
        label = choice.implementation + (f" bpd={choice.parameters['bpd']}" if "bpd" in choice.parameters else "")
        print(f"{count:>9,} {bits:>4}  {label:<15}" + "".join(
            f"{timings[name] / baseline:>11.2f}" if name in timings else f"{'—':>11}" for name in COLUMNS))


if __name__ == "__main__":
    main()
