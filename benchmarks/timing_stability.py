"""Does profiling the same points twice give the same medians?

Profiles one description twice with the same seed (so the same points and the
same inputs), pairs the samples, and prints how far each pair's medians are
apart: the median and 95th percentile of |t2/t1 − 1| and the share of pairs
within 5%.

With ``--against REF``, the profiler of the git revision REF (checked out
into a temporary worktree) is judged side by side with this one, in the same
run: the two alternate, profile after profile, ``--rounds`` times, so that
the host's slower changes of speed fall on both alike.  Each round pairs
each version's two profiles.

It also times a small fixed yardstick (a 4096-element NumPy sum) for a
second before and after each profile: a shared host may change speed for
seconds at a time (on some machines by 1.7× for such code, less for
memory-bound code, so no single yardstick can correct for it), and two
profiles can only agree as well as the host's speed did.

    python benchmarks/timing_stability.py [LIB.hl] [--against REF] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hlc.artefacts.samples import Samples

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "descriptions" / "vector.hl"
#: Profiles one description with the hlc found first on the path.
PROFILE = """
import sys
from pathlib import Path
import hlc
from hlc.calibrate.run import profile
profile(hlc.parse_file(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), ranks=[1])
print(hlc.__file__)
"""


@dataclass
class Version:
    """One profiler: its source tree, and the deviations of its profile pairs."""

    name: str
    tree: Path
    deviations: list[float] = field(default_factory=list)
    yardsticks: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def profile(self, description: Path, samples: Path, build: Path) -> dict[tuple, float]:
        """The sample medians of one profile, run by this version's hlc in a process of its own."""
        environment = {**os.environ, "PYTHONPATH": str(self.tree)}
        before = yardstick()
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", PROFILE, str(description), str(samples), str(build)],
                              env=environment, cwd=self.tree, check=True, capture_output=True, text=True)
        self.seconds.append(time.monotonic() - started)
        self.yardsticks += [before, yardstick()]
        used = Path(done.stdout.strip().splitlines()[-1]).resolve()
        if not used.is_relative_to(self.tree.resolve()):
            raise RuntimeError(f"{self.name}: the profile ran {used}, not the hlc of {self.tree}")
        return medians(samples)

    def summary(self) -> list[str]:
        deviations = sorted(self.deviations)
        within = sum(d <= 0.05 for d in deviations) / len(deviations)
        return [f"{self.name}: {len(deviations)} sample pairs, profile {statistics.median(self.seconds):.1f} s "
                f"(median)",
                f"  |t2/t1 - 1|: median {statistics.median(deviations):.2%}, "
                f"95th percentile {deviations[int(0.95 * (len(deviations) - 1))]:.2%}, max {deviations[-1]:.2%}",
                f"  pairs within 5% of each other: {within:.1%}"]


def medians(path: Path) -> dict[tuple, float]:
    return {(s.implementation, s.P, s.verify, s.index, tuple(sorted(s.parameters.items()))): s.seconds
            for s in Samples.load(path).samples}


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


def deviations(first: dict[tuple, float], second: dict[tuple, float]) -> list[float]:
    return [abs(second[key] / first[key] - 1.0) for key in first.keys() & second.keys()]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("description", nargs="?", default=str(DEFAULT))
    options.add_argument("--against", metavar="REF", help="also judge the profiler of this git revision")
    options.add_argument("--rounds", type=int, default=1, help="profile pairs per version (default 1)")
    args = options.parse_args()
    description = Path(args.description).resolve()
    with tempfile.TemporaryDirectory(prefix="hlc-stability-") as scratch:
        folder = Path(scratch)
        versions = [Version("this tree", ROOT)]
        if args.against:
            tree = folder / "against"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), args.against],
                           check=True)
            versions.insert(0, Version(f"{args.against}", tree))
        try:
            for round_ in range(args.rounds):
                profiles: dict[str, list[dict[tuple, float]]] = {v.name: [] for v in versions}
                for run in (1, 2):
                    for version in versions:
                        # each version profiles its own copy of the description
                        own = version.tree / description.relative_to(ROOT) if description.is_relative_to(ROOT) \
                            else description
                        where = folder / f"round{round_}-run{run}-version{versions.index(version)}"
                        profiles[version.name].append(version.profile(own, where / "samples.jsonl", where))
                for version in versions:
                    version.deviations += deviations(*profiles[version.name])
                print(f"round {round_ + 1} of {args.rounds} done", flush=True)
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder / "against")],
                               check=False)
    print(f"{description.stem}: each version profiled twice per round, same points and inputs, "
          f"{args.rounds} round(s), alternating")
    for version in versions:
        print("\n".join(version.summary()))
    speeds = [v for version in versions for v in version.yardsticks]
    print(f"host yardstick (µs, around each profile): median {statistics.median(speeds):.2f}, "
          f"range {min(speeds):.2f} .. {max(speeds):.2f}")
    if max(speeds) > 1.05 * min(speeds):
        print(f"the host's speed changed by {max(speeds) / min(speeds) - 1:.0%} during the runs: "
              "the differences above include it")


if __name__ == "__main__":
    main()
