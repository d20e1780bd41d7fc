"""How right can any model be on this machine?  Two evaluations of the same points, each judged by the other.

``hlc evaluate --params exhaustive`` at one seed draws the same held-out
points every time it runs.  Taken twice, a while apart, the two evaluations
time the same candidates on the same inputs; what differs is the machine's
state.  Choosing, at each point, the candidate the first evaluation measured
fastest is the best any choice made from the variables can do by the first
evaluation's lights; judged by the second, it is right only as often as the
two agree.  That share is the ceiling of the "right within the tolerance"
figure on this machine: a model cannot be judged right more often than the
machine's own measurements agree with themselves.  Both directions are
printed, per rank count, with how far the same candidate's two medians lie
apart, per implementation.

    python benchmarks/evaluation_agreement.py FIRST.json SECOND.json [--tolerance 0.03]

FIRST and SECOND: evaluations written by ``hlc evaluate BUILD --params
exhaustive --points N --seed S`` (the same N and S), for instance the ones
``benchmarks/calibration_cost.py`` keeps under ``build/calibration_cost/``.
The last line is the ceiling over all rank counts, the lower direction.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from hlc.artefacts import evaluation as artefact
from hlc.artefacts.evaluation import EvaluationDocument, JudgedPoint
from hlc.evaluation.oracle import TOLERANCE
from hlc.evaluation.verdicts import oracle_verdict


def points_of(document: EvaluationDocument) -> dict[tuple, JudgedPoint]:
    """The judged points by interface, rank count, the draw's place in the
    interface's stream and the loop values drawn there (a seed draws the
    same values at the same places; a value drawn twice is two points)."""
    return {(name, point.P, point.index, tuple(sorted(point.point.items()))): point
            for name, part in document.interfaces.items() for point in part.points}


def fastest(point: JudgedPoint) -> str:
    """The label of the candidate no other beat at the point, round by round:
    from the one of the smallest median, the one that beat it by most."""
    by_label = {c.label: c for c in point.candidates}
    start = min(point.candidates, key=lambda c: c.seconds).label
    best, penalty = oracle_verdict(by_label, start)
    return best if penalty > 0 else start


def right_share(chooser: dict[tuple, JudgedPoint], judge: dict[tuple, JudgedPoint], keys: list[tuple],
                tolerance: float) -> float:
    """The share of ``keys`` at which the candidate ``chooser`` measured
    fastest is within the tolerance of the fastest by ``judge``'s timings."""
    right = 0
    for key in keys:
        candidates = {c.label: c for c in judge[key].candidates}
        choice = fastest(chooser[key])
        if choice in candidates and oracle_verdict(candidates, choice)[1] <= tolerance:
            right += 1
    return right / len(keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--tolerance", type=float, default=TOLERANCE,
                        help=f"a choice within this share of the fastest is right (default {TOLERANCE})")
    args = parser.parse_args(argv)
    first, second = artefact.load(args.first), artefact.load(args.second)
    for document, path in ((first, args.first), (second, args.second)):
        if document.settings.params != "exhaustive":
            parser.error(f"{path} timed the chosen parameters only: both need --params exhaustive")
    if first.library != second.library:
        parser.error(f"{args.first} evaluated {first.library}, {args.second} {second.library}")
    a, b = points_of(first), points_of(second)
    shared = sorted(set(a) & set(b), key=str)
    if not shared:
        parser.error("the two evaluations share no point: take them at the same seed")
    print(f"{first.library}: {len(shared)} points timed by both evaluations "
          f"({len(a) - len(shared)} and {len(b) - len(shared)} by one only), tolerance {args.tolerance:.0%}")
    print(f"{'interface':12s} {'P':>3s} {'points':>7s} {'first right by second':>22s} "
          f"{'second right by first':>22s}")
    ceilings = []
    groups: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    for key in shared:
        groups[key[:2]].append(key)
    for (name, ranks), keys in sorted(groups.items()):
        forward = right_share(a, b, keys, args.tolerance)
        backward = right_share(b, a, keys, args.tolerance)
        ceilings.append((min(forward, backward), len(keys)))
        print(f"{name:12s} {ranks:>3d} {len(keys):>7d} {forward:>21.1%} {backward:>22.1%}")
    print()
    print("the same candidate's medians, second / first: median and 90th percentile of |ratio - 1|")
    drift: dict[tuple[int, str], list[float]] = defaultdict(list)
    for key in shared:
        timed = {c.label: c.seconds for c in b[key].candidates}
        for candidate in a[key].candidates:
            if candidate.label in timed and candidate.seconds > 0 and timed[candidate.label] > 0:
                drift[(key[1], candidate.implementation)].append(abs(timed[candidate.label] / candidate.seconds - 1))
    for (ranks, implementation), values in sorted(drift.items()):
        values.sort()
        tail = values[min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)]
        print(f"  P={ranks} {implementation:16s} {len(values):5d} timed  {statistics.median(values):6.1%}  {tail:6.1%}")
    total = sum(count for _, count in ceilings)
    ceiling = sum(share * count for share, count in ceilings) / total
    print(f"ceiling of right choices on this machine: {ceiling:.1%} of {total} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
