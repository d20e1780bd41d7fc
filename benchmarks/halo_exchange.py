"""What a halo swap costs, with and without the message announcing its shape.

``World.sendrecv`` sends the shape and dtype of what it sends first, in a
message of its own, unless the receiver passes ``out=``, a buffer of the
size it expects.  The stencil's halo exchanges know their halos' lengths
and pass it.  This prints, at P ranks and side by side in one run:

* a swap of 200 doubles between pairs of ranks (0–1, 2–3, …), per swap,
  the slowest rank's median: through the header, through ``out=``, and
  mpi4py's ``Sendrecv`` alone (what ``out=`` calls);
* ``relax_blocks`` of the stencil library with its exchange through either
  path, in alternating rounds, and the median over the rounds of their ratio.

    python benchmarks/halo_exchange.py [--procs 2]

It starts itself under ``mpiexec -n P``.  With fewer cores than ranks the
ranks share cores and the times mean little.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: Grids (square) and iteration counts at which relax_blocks is timed.
GRIDS = (130, 258, 514)
ITERATIONS = (4, 16)
#: Rounds of each comparison; calls per timing of relax_blocks; swaps per timing.
ROUNDS = 9
CALLS = 5
SWAPS = 2000


def _relax():
    spec = importlib.util.spec_from_file_location("halo_relax", ROOT / "libraries" / "stencil" / "relax.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class WithHeader:
    """A team whose ``sendrecv`` ignores ``out=``: each halo then travels with
    the message announcing its shape, as before ``out=`` existed."""

    def __init__(self, team):
        self.team = team

    def sendrecv(self, array: np.ndarray, destination: int, source: int, tag: int = 0, out=None) -> np.ndarray:
        return self.team.sendrecv(array, destination, source, tag)


def slowest_median(team, run: Callable[[], None], repeats: int) -> float:
    """Seconds per call of ``run``: the median of ROUNDS timings of ``repeats``
    calls that start together, the slowest rank's."""
    found = []
    for _ in range(ROUNDS):
        team.barrier()
        started = time.perf_counter()
        for _ in range(repeats):
            run()
        found.append((time.perf_counter() - started) / repeats)
    return float(team.reduce(np.array([statistics.median(found)]), "max")[0])


def measure() -> None:
    """The benchmark itself, on every rank; rank 0 prints."""
    from hlc.runtime import world

    team = world()
    relax = _relax()
    halo, landing = np.zeros(200), np.empty(200)
    partner = team.rank ^ 1
    if partner < team.size:
        swaps = {"header": lambda: team.sendrecv(halo, partner, partner),
                 "out=": lambda: team.sendrecv(halo, partner, partner, out=landing),
                 "Sendrecv alone": lambda: team._communicator.Sendrecv(halo, dest=partner, recvbuf=landing,
                                                                       source=partner)}
    else:  # the last rank of an odd count idles
        swaps = dict.fromkeys(("header", "out=", "Sendrecv alone"), lambda: None)
    seconds = {name: slowest_median(team, swap, SWAPS) for name, swap in swaps.items()}
    if team.rank == 0:
        print(f"a swap of 200 doubles at {team.size} ranks: "
              + ", ".join(f"{name} {value * 1e6:.1f} µs" for name, value in seconds.items()), flush=True)
    through_out = relax._exchange

    def with_header(team, *arguments) -> None:
        through_out(WithHeader(team), *arguments)

    exchanges = {"header": with_header, "out=": through_out}
    rng = np.random.default_rng(0)
    ratios = []
    for size in GRIDS:
        grid = rng.random((size, size))
        for iterations in ITERATIONS:
            timings: dict[str, list[float]] = {name: [] for name in exchanges}
            for round_ in range(ROUNDS):
                for name in sorted(exchanges, reverse=bool(round_ % 2)):
                    relax._exchange = exchanges[name]
                    team.barrier()
                    started = time.perf_counter()
                    for _ in range(CALLS):
                        relax.relax_blocks(grid, iterations)
                    elapsed = (time.perf_counter() - started) / CALLS
                    timings[name].append(float(team.reduce(np.array([elapsed]), "max")[0]))
            ratio = statistics.median(h / o for h, o in zip(timings["header"], timings["out="], strict=True))
            ratios.append(ratio)
            if team.rank == 0:
                print(f"relax_blocks {size} x {size}, {iterations} iterations: header "
                      f"{statistics.median(timings['header']) * 1e3:.2f} ms, out= "
                      f"{statistics.median(timings['out=']) * 1e3:.2f} ms, ratio {ratio:.2f}", flush=True)
    if team.rank == 0:
        print(f"halo swaps through out= at {team.size} ranks: {seconds['header'] / seconds['out=']:.2f}x faster; "
              f"relax_blocks {min(ratios):.2f}x to {max(ratios):.2f}x faster")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--procs", type=int, default=2, help="ranks (default 2)")
    options.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # the ranks, under mpiexec
    options = options.parse_args()
    if options.measure:
        measure()
        return
    from hlc.calibrate.run import mpiexec

    if (os.cpu_count() or 1) < options.procs:
        print(f"warning: {os.cpu_count()} cores for {options.procs} ranks: the timings share cores", flush=True)
    subprocess.run([mpiexec(), "-n", str(options.procs), sys.executable, __file__, "--measure"], check=True)


if __name__ == "__main__":
    main()
