"""What agreeing on the variables costs a dispatched call under mpiexec, and
what declaring them ``uniform`` saves.

Two interfaces choose between the same two implementations of a small
call (the largest of 100 integers): in one the ranks agree on ``n =
len(x)`` before choosing, one all-reduce a call; in the other ``n`` is
``uniform``, which the caller passes alike on every rank, and the call
makes no all-reduce.  Each round times the implementation called directly,
then both dispatched calls, on every rank at once after a barrier, and
takes the slowest rank's time; the last line gives the median ratios.

    python benchmarks/uniform_dispatch.py [--ranks 2] [--rounds 15]

It builds the library (a quick build) into a temporary folder, then starts
itself under ``mpiexec -n RANKS``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

# One interface twice, but for whether n is uniform.
INTERFACE = """
interface {name}(x: int[]) -> int "The largest of x."
    {uniform}n = len(x)
    impl first_{name} = numpy.max
        time ~ 1 + n
    impl second_{name} = numpy.amax
        time ~ 1 + 2 * n
    profile
        for i in 4 .. 8 ++
        x = arange(1 << i)
"""
DESCRIPTION = ("library largest\nfrom numpy import arange\n" + INTERFACE.format(name="agreeing", uniform="")
               + INTERFACE.format(name="alike", uniform="uniform "))
CALLS = 2000  # calls a timing: a dispatched call takes microseconds


def measure(build: Path, rounds: int) -> None:
    """Under mpiexec: time the three calls, print the ratios on rank 0."""
    import hlc
    from hlc.runtime import world

    warnings.simplefilter("ignore")  # the build profiled one rank: P lies outside its domain
    team = world()
    library = hlc.load(build)
    x = np.arange(100)
    calls = {"direct": lambda: np.max(x), "agreeing": lambda: library.agreeing(x),
             "uniform": lambda: library.alike(x)}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            team.barrier()
            start = time.perf_counter()
            for _ in range(CALLS):
                call()
            elapsed = (time.perf_counter() - start) / CALLS
            times[name].append(float(team.reduce(np.array([elapsed]), "max")[0]))
    if team.rank:
        return
    direct = times["direct"]
    ratios = {name: statistics.median(t / d for t, d in zip(times[name], direct, strict=True))
              for name in ("agreeing", "uniform")}
    print(f"a dispatched call of the largest of 100 integers at {team.size} ranks, against numpy.max called "
          f"directly ({rounds} rounds of {CALLS} calls, the slowest rank's time)")
    print(f"dispatch under mpiexec at {team.size} ranks, against the implementation called directly: "
          f"agreeing x{ratios['agreeing']:.2f}, uniform x{ratios['uniform']:.2f} (medians)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--build", help=argparse.SUPPRESS)  # the built library, under mpiexec
    options = parser.parse_args()
    if options.build:
        measure(Path(options.build), options.rounds)
        return
    import hlc
    from hlc.calibrate.run import mpiexec

    with tempfile.TemporaryDirectory() as scratch:
        description = Path(scratch) / "largest.hl"
        description.write_text(DESCRIPTION)
        hlc.build(description, out=Path(scratch) / "largest", quick=True)
        command = [mpiexec(), "-n", str(options.ranks), sys.executable, __file__, "--rounds", str(options.rounds),
                   "--build", str(Path(scratch) / "largest")]
        sys.exit(subprocess.run(command, check=False).returncode)


if __name__ == "__main__":
    main()
