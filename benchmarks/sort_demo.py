"""The sort library, built on this machine, at work on a few inputs.

For each input it prints what the dispatcher chose (and the radix sort's
digit width), then the time of the dispatched call and of every
implementation, measured side by side (in rounds that take each in turn),
as ratios to numpy.sort.

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


#: Rounds of timings: each round times every column once, so that a spell
#: of the host slows the columns of that round alike, and the median of a
#: column's rounds is taken.
ROUNDS = 7


def repeat_count(call) -> int:
    """Calls per timing: enough for 20 ms, after a first call that warms the caches."""
    call()
    return max(1, int(0.02 / max(timeit.timeit(call, number=1), 1e-7)))


def measure(sort, module, keys: np.ndarray, radix_bpd: int) -> dict[str, float]:
    """Seconds of the dispatched call and of each implementation, timed in
    rounds that take every one in turn (each round starting one further
    along), the median of each one's rounds."""
    width = sort.variables_sort(keys)["width"]
    calls = {
        "dispatched": lambda: sort.sort(keys),
        "radix": lambda: module.radix_sort(keys, bpd=radix_bpd),
        "narrow": lambda: module.narrow_sort(keys),
        "numpy": lambda: np.sort(keys),
    }
    if width <= 24:
        calls["counting"] = lambda: module.counting_sort(keys)
    numbers = {name: repeat_count(call) for name, call in calls.items()}
    names = list(calls)
    rounds: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(ROUNDS):
        for name in names[turn % len(names):] + names[:turn % len(names)]:
            rounds[name].append(timeit.timeit(calls[name], number=numbers[name]) / numbers[name])
    return {name: statistics.median(taken) for name, taken in rounds.items()}


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
