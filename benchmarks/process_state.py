"""How much a call's cost depends on the process it runs in.

A build times its candidates in one process per rank count, and ``hlc
evaluate`` times them again in another.  On some hosts the same call on the
same keys takes a time that holds within a process to a percent or two, but
differs from one process to the next by far more, and stays put while the
process lives: each process draws it when it starts (two runs of one
history differ; report.md, "What bounds the sort's figures on this host",
gives what was ruled out).  A model fitted in one process
and judged in another then misses by that much, and where two settings of a
parameter lie closer than that, the evaluations of two processes disagree
on which is best.

Each of ``--processes`` fresh processes first sorts keys of seeded random
sizes and widths with the build's kernels and numpy.sort (a history of its
own, another in each process), then times each case of ``CASES`` twice, the
other cases in between.  Per case this prints the median time over the
processes, the range, its ratio max/min, and the median difference between
a process's two timings.  The last line names the case that moved most:

    radix_sort N keys of W bits, bpd B: max/min x.xx over P processes, x.x% within one

    python benchmarks/process_state.py [BUILD] [--processes 8] [--cases N:W[:B] ...]   (default: build/sort)

``--cases`` times other cases instead: N keys of W bits at B bits a digit
(N:W alone: numpy.sort), as ``1048576:22:11 1048576:22:8 1048576:22``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

#: (keys, bits, bpd): radix sorts of the sizes where two evaluations of one
#: build disagreed on the digit width; bpd None is numpy.sort of the same keys.
CASES = [(558, 25, 9), (558, 25, 7), (939, 25, 9), (939, 25, 7), (939, 25, None),
         (6316, 24, 12), (6316, 24, 8), (40_000, 20, 10), (40_000, 20, 7)]
#: Sorts of random sizes and widths each process runs first.
HISTORY = 40
#: Each timing: the median of this many runs of about TIMING seconds each.
RUNS = 5
TIMING = 2e-3


def label(case: tuple[int, int, int | None]) -> str:
    count, bits, bpd = case
    return f"numpy.sort {count} keys of {bits} bits" if bpd is None else \
        f"radix_sort {count} keys of {bits} bits, bpd {bpd}"


def seconds_per_call(task: Callable[[], object]) -> float:
    """Median seconds per call over RUNS runs of calls back to back, after a warm-up."""
    start = time.perf_counter()
    task()
    calls = max(1, int(TIMING / max(time.perf_counter() - start, 1e-7)))
    for _ in range(calls):
        task()
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(calls):
            task()
        runs.append((time.perf_counter() - start) / calls)
    return statistics.median(runs)


def parse_case(text: str) -> tuple[int, int, int | None]:
    """``N:W:B`` (a radix sort) or ``N:W`` (numpy.sort) as a case."""
    fields = text.split(":")
    if len(fields) not in (2, 3) or not all(field.isdigit() for field in fields):
        raise argparse.ArgumentTypeError(f"a case is KEYS:BITS:BPD or KEYS:BITS, not {text!r}")
    count, bits, *bpd = map(int, fields)
    return count, bits, bpd[0] if bpd else None


def child(build: str, seed: int, cases: list[tuple[int, int, int | None]]) -> list[list[float]]:
    """In a fresh process: the history of ``seed``, then each case's two timings (seconds)."""
    import hlc

    radix_sort = hlc.load(build).dispatch_sort.radix_sort
    rng = np.random.default_rng(seed)
    for _ in range(HISTORY):
        count = int(2 ** rng.uniform(4.5, 21.5))
        keys = rng.integers(0, 2 ** int(rng.integers(4, 33)), count, dtype=np.int64)
        np.sort(keys)
        radix_sort(keys, bpd=int(rng.integers(1, 17)))
    inputs = np.random.default_rng(7)  # the same keys in every process
    tasks = []
    for count, bits, bpd in cases:
        keys = inputs.integers(0, 2 ** bits, count, dtype=np.int64)
        keys[:2] = (0, 2 ** bits - 1)  # the width the case names
        tasks.append((lambda keys=keys: np.sort(keys)) if bpd is None else
                     (lambda keys=keys, bpd=bpd: radix_sort(keys, bpd=bpd)))
    first = [seconds_per_call(task) for task in tasks]
    second = [seconds_per_call(task) for task in tasks]
    return [list(pair) for pair in zip(first, second, strict=True)]


def measure(build: str, seed: int, cases: list[tuple[int, int, int | None]]) -> list[list[float]]:
    """One fresh process's timings (see child)."""
    given = ["--cases", *(":".join(str(value) for value in case if value is not None) for case in cases)]
    said = subprocess.run([sys.executable, __file__, build, "--child", str(seed), *given], capture_output=True,
                          text=True, check=True)
    return json.loads(said.stdout)


def summary(timings: list[list[list[float]]], cases: list[tuple[int, int, int | None]]
            ) -> list[tuple[str, float, float, float, float]]:
    """Per case over the processes' ``timings``: label, median, least and
    largest first timing (seconds), and the median of |second / first - 1|."""
    rows = []
    for position, case in enumerate(cases):
        first = [process[position][0] for process in timings]
        within = [abs(process[position][1] / process[position][0] - 1) for process in timings]
        rows.append((label(case), statistics.median(first), min(first), max(first), statistics.median(within)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", nargs="?", default="build/sort")
    parser.add_argument("--processes", type=int, default=8, help="fresh processes, each its own history (default 8)")
    parser.add_argument("--cases", nargs="+", type=parse_case, default=CASES, metavar="N:W[:B]",
                        help="cases to time instead of the stored ones: N keys of W bits at B bits a digit "
                             "(without B: numpy.sort)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        print(json.dumps(child(options.build, options.child, options.cases)))
        return
    timings = [measure(options.build, seed, options.cases) for seed in range(1, options.processes + 1)]
    rows = summary(timings, options.cases)
    print(f"each case timed in {options.processes} fresh processes, each after its own history of {HISTORY} sorts")
    print(f"{'case':44s} {'median':>9s} {'least':>9s} {'largest':>9s} {'max/min':>8s} {'within':>7s}")
    for name, median, least, largest, within in rows:
        print(f"{name:44s} {median * 1e6:7.2f}us {least * 1e6:7.2f}us {largest * 1e6:7.2f}us "
              f"{largest / least:8.2f} {within * 100:6.1f}%")
    name, _, least, largest, within = max(rows, key=lambda row: row[3] / row[2])
    print(f"{name}: max/min {largest / least:.2f} over {options.processes} processes, {within * 100:.1f}% within one")


if __name__ == "__main__":
    main()
