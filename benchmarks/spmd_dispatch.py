"""What the dispatch adds to an SPMD sort: the dispatched call against its
choice called directly, on every rank at once.

Under mpiexec every rank computes the call's variables, and they must agree
before any rank may choose: the decision takes each variable's largest
value over the ranks, and ``bitwidth`` combines the ranks' extremes, both
in one all-reduce that the dispatched call makes before the
implementation's collectives.  An all-reduce costs microseconds, as much
as a whole sort of a few thousand keys; the implementation, told the span,
then makes one fewer than it does when called directly.  At held-out
points (keys per rank log-uniform over the build's
domain, widths uniform) this times both calls in alternation, the ranks in
step, and prints the median ratio, overall and where the choice was the
counting sort, the cheapest of the SPMD sorts.

    python benchmarks/spmd_dispatch.py BUILD [--ranks 2] [--points 40]

It starts itself under ``mpiexec -n RANKS`` when not started so.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from hlc.calibrate.run import mpiexec
from hlc.dispatch.loading import load
from hlc.runtime import launched_by_mpiexec, world

ROUNDS = 15


def alternated(team, first, second, number: int) -> float:
    """The median over rounds of t_first / t_second on the slowest rank, the
    two timed in turn within each round after a barrier."""
    ratios = []
    for _ in range(ROUNDS):
        times = []
        for call in (first, second):
            team.barrier()
            start = time.perf_counter()
            for _ in range(number):
                call()
            times.append(time.perf_counter() - start)
        slowest = team.reduce(np.array(times), "max")
        ratios.append(slowest[0] / slowest[1])
    return statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", help="a built sort library (hlc build libraries/sort.hl --procs 1,2)")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--points", type=int, default=40)
    options = parser.parse_args()
    if not launched_by_mpiexec():
        command = [mpiexec(), "-n", str(options.ranks), sys.executable, __file__, *sys.argv[1:]]
        sys.exit(subprocess.run(command, check=False).returncode)
    team = world()
    sort = load(Path(options.build))
    module = sort.dispatch_sort
    direct = {"radix_spmd": module.radix_sort, "counting_spmd": module.counting_sort, "sample": module.sample_sort}
    shared = np.random.default_rng(20261129)  # the same points on every rank
    own = np.random.default_rng(1 + team.rank)  # each rank's own keys
    rows = []
    for _ in range(options.points):
        n = int(2 ** shared.uniform(4, 20))
        width = int(shared.integers(6, 33))
        keys = own.integers(0, 2 ** width, n, dtype=np.int64)
        choice = sort.choose(keys)
        if choice.implementation not in direct:
            continue
        dispatched = functools.partial(sort.sort, keys)
        chosen = functools.partial(direct[choice.implementation], keys, **choice.parameters)
        team.barrier()
        start = time.perf_counter()
        dispatched()
        once = team.reduce(np.array([time.perf_counter() - start]), "max")[0]
        number = max(1, int(2e-3 / max(once, 1e-7)))
        rows.append((n, width, choice.implementation, alternated(team, dispatched, chosen, number)))
    if team.rank:
        return
    print(f"sort at {team.size} ranks: the dispatched call against its choice called directly "
          f"({len(rows)} points, keys per rank log-uniform over 2^4 .. 2^20, width 6 .. 32 bits)")
    for n, width, chosen, ratio in sorted(rows)[:: max(1, len(rows) // 10)]:
        print(f"  n = {n:>8} per rank, {width:>2} bits: {chosen:<14} {ratio - 1:+7.1%}")
    overall = statistics.median(r[3] for r in rows) - 1
    counting = [r[3] for r in rows if r[2] == "counting_spmd"]
    tail = f", counting_spmd {statistics.median(counting) - 1:+.1%} ({len(counting)})" if counting else ""
    print(f"dispatch overhead on sort at {team.size} ranks: median {overall:+.1%}{tail}")


if __name__ == "__main__":
    main()
