"""How a radix sort's time depends on the work just before it.

A profile times each candidate in a block of back-to-back calls and drops
the leading timings while they are slower than the rest; the oracle of
``hlc evaluate`` times the candidates of a point round by round, each
timing after a few milliseconds of untimed calls.  Where a task's cost
depends on what ran before it for longer than that warm-up, the two see
different costs, and may rank the settings of a parameter differently.

For a few inputs and digit widths, this script runs other work first
(``numpy.sort`` of the same keys, which writes buffers of the same size),
then times calls of the radix sort back to back, and prints each call's
time as a ratio to the steady one (the median of the last calls), as the
median over several repetitions.  Ratios near 1 from the second call on
mean that one untimed call is warm-up enough.

    python benchmarks/write_recency.py [BUILD]        (default: build/sort)
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import hlc

INPUTS = [(200_000, 23, 8), (623_487, 23, 8), (623_487, 23, 12), (741_455, 31, 8), (741_455, 31, 11),
          (1_359_834, 19, 5), (1_359_834, 19, 10)]
CALLS = 12  # back to back after the other work
STEADY = 4  # the last calls, whose median is the steady time
REPETITIONS = 7
SHOWN = (1, 2, 3, 4, 6, 8)


def ratios(radix_sort, keys: np.ndarray, bpd: int) -> list[float]:
    """Each call's median ratio to the steady time, over REPETITIONS."""
    runs = []
    for _ in range(REPETITIONS):
        for _ in range(3):
            np.sort(keys)
        times = []
        for _ in range(CALLS):
            start = time.perf_counter()
            radix_sort(keys, bpd=bpd)
            times.append(time.perf_counter() - start)
        steady = statistics.median(times[-STEADY:])
        runs.append([t / steady for t in times])
    return [statistics.median(run[k] for run in runs) for k in range(CALLS)]


def main() -> None:
    module = hlc.load(sys.argv[1] if len(sys.argv) > 1 else "build/sort").dispatch_sort
    rng = np.random.default_rng(2026)
    print(f"{'keys':>9} {'bits':>4} {'bpd':>3}  " + "".join(f"{'call ' + str(k):>8}" for k in SHOWN)
          + "   (time over the steady time, after numpy.sort of the same keys)")
    seconds = []
    for count, bits, bpd in INPUTS:
        keys = rng.integers(0, 1 << bits, count, dtype=np.int64)
        row = ratios(module.radix_sort, keys, bpd)
        seconds.append(row[1])
        print(f"{count:>9,} {bits:>4} {bpd:>3}  " + "".join(f"{row[k - 1]:>8.2f}" for k in SHOWN))
    print(f"second call after other work: {statistics.median(seconds):.2f} times the steady time (median), "
          f"{max(seconds):.2f} at most")


if __name__ == "__main__":
    main()
