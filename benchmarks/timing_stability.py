"""Does profiling the same points twice give the same medians?

Profiles one description twice with the same seed (so the same points and the
same inputs), pairs the samples, and prints how far each pair's medians are
apart: the median and 95th percentile of |t2/t1 − 1| and the share of pairs
within 5%, in all and by the decade of the task's time, with the share of
pairs there whose samples a slow spell marked.

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

With ``--host-waits``, this tree also profiles as ``hlc build --host-waits``
does, waiting for the host's usual pace before each block, in the same
rounds: what the samples' agreement gains by waiting, and what the profile
pays for it in time.

With ``--against``, the last line is the verdict: whether this tree's pairs
agree within 5% less often than REF's, by a paired test over the rounds
(that of the waiting profile comes just before it).

    python benchmarks/timing_stability.py [LIB.hl] [--against REF] [--rounds N] [--host-waits]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import wilcoxon

from hlc.artefacts.samples import Samples
from hlc.model.calibration import host_tolerance, is_disturbed

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "descriptions" / "vector.hl"
#: A pair of medians agrees when they lie within this fraction of each other.
WITHIN = 0.05
#: A lower share of agreeing pairs is a verdict of "worse" below this p-value.
SIGNIFICANCE = 0.05
#: Profiles one description with the hlc found first on the path.
PROFILE = """
import sys
from pathlib import Path
import hlc
from hlc.calibrate.run import profile
waits = {"host_waits": True} if sys.argv[4:] == ["waits"] else {}
profile(hlc.parse_file(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), ranks=[1], **waits)
print(hlc.__file__)
"""


@dataclass
class Version:
    """One profiler: its source tree, and the deviations of its profile pairs."""

    name: str
    tree: Path
    waits: bool = False  # profiles with host_waits (hlc build --host-waits)
    shares: list[float] = field(default_factory=list)  # each round's share of pairs within 5%
    pairs: list[tuple[float, float, bool]] = field(default_factory=list)  # (seconds, deviation, marked) of each pair
    yardsticks: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def profile(self, description: Path, samples: Path, build: Path) -> dict[tuple, tuple[float, bool]]:
        """The sample medians of one profile, run by this version's hlc in a
        process of its own, each with whether a slow spell marked it."""
        environment = {**os.environ, "PYTHONPATH": str(self.tree)}
        before = yardstick()
        started = time.monotonic()
        waits = ["waits"] if self.waits else []
        done = subprocess.run([sys.executable, "-c", PROFILE, str(description), str(samples), str(build), *waits],
                              env=environment, cwd=self.tree, check=True, capture_output=True, text=True)
        self.seconds.append(time.monotonic() - started)
        self.yardsticks += [before, yardstick()]
        used = Path(done.stdout.strip().splitlines()[-1]).resolve()
        if not used.is_relative_to(self.tree.resolve()):
            raise RuntimeError(f"{self.name}: the profile ran {used}, not the hlc of {self.tree}")
        return medians(samples)

    @property
    def deviations(self) -> list[float]:
        """|t2/t1 - 1| of every pair."""
        return [deviation for _, deviation, _ in self.pairs]

    @property
    def calm(self) -> list[float]:
        """|t2/t1 - 1| of the pairs neither of whose samples a spell marked."""
        return [deviation for _, deviation, marked in self.pairs if not marked]

    def summary(self) -> list[str]:
        deviations = sorted(self.deviations)
        within = sum(d <= WITHIN for d in deviations) / len(deviations)
        return [f"{self.name}: {len(deviations)} sample pairs, profile {statistics.median(self.seconds):.1f} s "
                f"(median)",
                f"  |t2/t1 - 1|: median {statistics.median(deviations):.2%}, "
                f"95th percentile {deviations[int(0.95 * (len(deviations) - 1))]:.2%}, max {deviations[-1]:.2%}",
                f"  pairs within 5% of each other: {within:.1%}"] + self.calm_summary() + self.by_duration()

    def calm_summary(self) -> list[str]:
        """The same of the pairs a fit takes as they are (neither sample marked),
        where a spell marked any: the profiler marks the samples a slow spell
        hit instead of waiting it out, and the fit leaves them out or scales
        them back (hlc.model.calibration)."""
        if len(self.calm) == len(self.deviations) or not self.calm:
            return [] if self.calm else ["  every pair had a sample a slow spell marked"]
        calm = sorted(self.calm)
        within = sum(d <= WITHIN for d in calm) / len(calm)
        return [f"  the {len(calm)} pairs ({len(calm) / len(self.deviations):.0%}) neither of whose samples "
                f"a slow spell marked: median {statistics.median(calm):.2%}, 95th percentile "
                f"{calm[int(0.95 * (len(calm) - 1))]:.2%}, within 5% {within:.1%}"]

    def by_duration(self) -> list[str]:
        """Pairs within 5%, and the share a slow spell marked, by the decade of
        the task's time: where a profiler's timings are least reproducible,
        and whether spells or the timings themselves make it so."""
        decades: dict[int, list[tuple[float, bool]]] = {}
        for seconds, deviation, marked in self.pairs:
            decades.setdefault(math.floor(math.log10(seconds)), []).append((deviation, marked))
        lines = []
        for decade, pairs in sorted(decades.items()):
            within = sum(d <= WITHIN for d, _ in pairs) / len(pairs)
            marked = sum(m for _, m in pairs) / len(pairs)
            count = f"{len(pairs)} pair" + ("s" if len(pairs) != 1 else "")
            lines.append(f"    tasks of {_decade(decade)}: {count}, within 5% {within:.1%}, "
                         f"marked {marked:.1%}")
        return lines


def _decade(exponent: int) -> str:
    """The decade from 10**exponent seconds: "1-10 µs" for -6, "0.1-1 ms" for -4."""
    units = ((-9, "ns"), (-6, "µs"), (-3, "ms"), (0, "s"))
    power, unit = max(((p, u) for p, u in units if p <= exponent + 1), default=units[0])
    low = 10.0 ** (exponent - power)
    return f"{low:g}-{low * 10:g} {unit}"


def medians(path: Path) -> dict[tuple, tuple[float, bool]]:
    """Each sample's median, and whether the host meter marked it (a file
    without the meter's readings marks none)."""
    samples = Samples.load(path)
    tolerance = host_tolerance(samples)
    return {(s.implementation, s.P, s.verify, s.index, tuple(sorted(s.parameters.items()))):
            (s.seconds, is_disturbed(s, tolerance)) for s in samples.samples}


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


def pairs_of(first: dict[tuple, tuple[float, bool]],
           second: dict[tuple, tuple[float, bool]]) -> list[tuple[float, float, bool]]:
    """(the first's seconds, |t2/t1 - 1|, whether either sample is marked) of each pair."""
    return [(first[key][0], abs(second[key][0] / first[key][0] - 1.0), first[key][1] or second[key][1])
            for key in first.keys() & second.keys()]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("description", nargs="?", default=str(DEFAULT))
    options.add_argument("--against", metavar="REF", help="also judge the profiler of this git revision")
    options.add_argument("--rounds", type=int, default=1, help="profile pairs per version (default 1)")
    options.add_argument("--host-waits", action="store_true",
                         help="also profile with this tree waiting for the host's usual pace (hlc build --host-waits)")
    args = options.parse_args()
    description = Path(args.description).resolve()
    with tempfile.TemporaryDirectory(prefix="hlc-stability-") as scratch:
        folder = Path(scratch)
        versions = [Version("this tree", ROOT)]
        if args.host_waits:
            versions.append(Version("this tree, --host-waits", ROOT, waits=True))
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
                    paired = pairs_of(*profiles[version.name])
                    version.pairs += paired
                    version.shares.append(sum(d <= WITHIN for _, d, _ in paired) / len(paired))
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
    if args.against:
        for waiting in versions[2:]:
            print(verdict(waiting, versions[0]))
        print(verdict(versions[1], versions[0]))


def verdict(this: Version, against: Version) -> str:
    """Whether this version's pairs agree within 5% less often than the
    other's, judged round by round: the two alternate within a round, so a
    round's two shares saw the same host, and the rounds are the samples of
    a paired test (Wilcoxon's signed ranks, one-sided).  A single run's share
    moves by several points with the host (82-93% for one version over
    seven runs of one quiet host), so a lower share alone is no verdict."""
    differences = [mine - theirs for mine, theirs in zip(this.shares, against.shares, strict=True)]
    mean = statistics.mean(differences)
    p = wilcoxon(differences, alternative="less").pvalue if any(differences) and len(differences) > 1 else 1.0
    word = "worse" if p < SIGNIFICANCE else "no worse"
    return (f"{this.name} against {against.name}: pairs within 5% {statistics.mean(this.shares):.1%} against "
            f"{statistics.mean(against.shares):.1%} (mean of {len(differences)} rounds' shares), "
            f"{mean * 100:+.1f} points, p = {p:.2g}: {word}")


if __name__ == "__main__":
    main()
