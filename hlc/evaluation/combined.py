"""Several exhaustive evaluations of the same points, as one judge.

On a shared host a candidate's cost can move for minutes at a time: a radix
sort whose digit scatters into a thousand write streams ran 1.2 to 2 times
as long in one evaluation as in another of the same points and inputs.  An
evaluation times each point at one moment, so a choice judged against it is
judged against that moment, and two evaluations of the same points, each
judging the other's fastest candidates, agree less often than either agrees
with the others taken together.

Combined, a candidate's rounds at a point are those of every evaluation,
numbered apart, and its time is the median over them all.  Two candidates
are then compared as the verdicts compare rounds (hlc.evaluation.verdicts):
by the median of their ratios in the rounds that timed both, each such
round a moment of one of the evaluations, so that the verdict pairs
timings moments apart as each evaluation did and weighs what all of them
saw.  An evaluation combined with itself judges as it does alone.  A
candidate that one evaluation did not time at a point is left out there,
since its time would be another mixture of moments than its rivals'.

Only evaluations that can stand for one another combine: the same library,
seed and number of points, timed exhaustively, the same versions of the
implementations' sources, on the same kind of machine; their points are
matched by rank count and place in the draw, and must have the same
variables.  A ValueError says what differs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from hlc.artefacts.evaluation import Candidate, Chosen, EvaluationDocument, InterfaceResult, JudgedPoint
from hlc.evaluation.oracle import label
from hlc.evaluation.verdicts import oracle_verdict, summaries
from hlc.model.fingerprint import machine_differences

#: The rounds of the k-th evaluation combined are numbered from k times this,
#: above any round number one evaluation reaches.
ROUNDS_APART = 10**9


def combine(documents: Sequence[tuple[Path, EvaluationDocument]]) -> EvaluationDocument:
    """One evaluation document whose timings are those of ``documents``
    (each with the path it was read from, for the messages) taken together
    (module doc), at the rank counts all of them timed."""
    if len(documents) < 2:
        raise ValueError("combining evaluations needs two or more")
    (first_path, first), others = documents[0], documents[1:]
    for path, other in others:
        _comparable(first_path, first, path, other)
    ranks = [P for P in first.settings.ranks if all(P in other.settings.ranks for _, other in others)]
    if not ranks:
        raise ValueError(f"{first_path} and the others share no rank count: "
                         + ", ".join(f"{path} {list(d.settings.ranks)}" for path, d in documents))
    interfaces = {}
    for name, part in first.interfaces.items():
        parts = [other.interfaces.get(name) for _, other in others]
        if any(p is None for p in parts):
            continue
        keyed = [{(p.P, p.index): p for p in other.points} for other in parts]
        judged = []
        for point in (p for p in part.points if p.P in ranks):
            same = [points.get((point.P, point.index)) for points in keyed]
            if any(p is None for p in same):
                continue
            for (path, _), p in zip(others, same, strict=True):
                if p.variables != point.variables:
                    raise ValueError(f"{first_path} and {path} differ at {name}'s point {point.index} "
                                     f"(P={point.P}): {point.variables} against {p.variables}")
            judged.append(_combined_point([point, *same], first.settings.tolerance))
        baseline = part.summary.baseline.implementation if part.summary and part.summary.baseline else ""
        summary, by_ranks = summaries(judged, ranks, first.settings.tolerance,
                                      first.settings.baseline or baseline, baseline)
        interfaces[name] = InterfaceResult(summary, by_ranks, judged)
    return replace(first, settings=replace(first.settings, ranks=ranks), interfaces=interfaces, replayed=None,
                   probes=())


def changed_sources(timed: Mapping[str, str], other: Mapping[str, str]) -> tuple[str, ...]:
    """The source files whose digests differ between those an evaluation
    timed (``timed``) and another record of them (``other``: a models
    file's fingerprint, or another evaluation's sources); a file either one
    does not know of is not counted, and neither is an evaluation that
    predates the record."""
    return tuple(sorted(name for name, digest in timed.items() if other.get(name, digest) != digest))


def _comparable(first_path: Path, first: EvaluationDocument, path: Path, other: EvaluationDocument) -> None:
    """Nothing, where ``other`` times the points ``first`` timed, as ``first`` did (module doc)."""
    if other.library != first.library:
        raise ValueError(f"{first_path} evaluated {first.library}, {path} {other.library}")
    mine, theirs = first.settings, other.settings
    if (mine.seed, mine.points) != (theirs.seed, theirs.points):
        raise ValueError(f"{first_path} and {path} were not made with the same seed and points "
                         f"({mine.seed}, {mine.points} against {theirs.seed}, {theirs.points}): their points differ")
    if mine.params != "exhaustive" or theirs.params != "exhaustive":
        raise ValueError(f"{first_path if mine.params != 'exhaustive' else path} timed the chosen parameters "
                         f"only; combining needs evaluations made with --params exhaustive")
    changed = changed_sources(first.sources, other.sources)
    if changed:
        raise ValueError(f"{first_path} and {path} timed different versions of {', '.join(changed)}")
    differences = machine_differences(first.machine, other.machine)
    if differences:
        raise ValueError(f"{first_path} and {path} were timed on different machines ({'; '.join(differences)})")


def _combined_point(points: Sequence[JudgedPoint], tolerance: float) -> JudgedPoint:
    """One point of several evaluations: the candidates all of them timed,
    each evaluation's time a round of its own; the first evaluation's choice
    where the combination timed it, else the fastest."""
    candidates = _combined_candidates([p.candidates for p in points])
    by_label = {c.label: c for c in candidates}
    chosen = points[0].chosen
    chosen_label = label(chosen.implementation, chosen.parameters)
    if chosen_label not in by_label:
        fastest = min(candidates, key=lambda c: c.seconds)
        chosen, chosen_label = Chosen(fastest.implementation, dict(fastest.parameters)), fastest.label
    best_label, penalty = oracle_verdict(by_label, chosen_label)
    again = _combined_candidates([(p.again,) if p.again is not None else () for p in points])
    other_input = _combined_candidates([p.other_input for p in points])
    return replace(points[0], chosen=chosen, candidates=candidates, chosen_label=chosen_label,
                   best_label=best_label, penalty=penalty, right=penalty <= tolerance, dispatched=None,
                   again=again[0] if again else None, other_input=other_input)


def _combined_candidates(timed: Sequence[Sequence[Candidate]]) -> tuple[Candidate, ...]:
    """The candidates every evaluation in ``timed`` has, in the first one's
    order, with the rounds of all of them (the k-th evaluation's numbered
    from k * ROUNDS_APART) and the median over those as their time (where an
    evaluation kept no rounds, the median of the evaluations' times, of
    their logarithms: two give their geometric mean)."""
    by_label = [{c.label: c for c in candidates} for candidates in timed]
    combined = []
    for candidate in timed[0] if timed else ():
        same = [own.get(candidate.label) for own in by_label]
        if any(c is None or not c.seconds > 0 for c in same):
            continue
        rounds = tuple((k * ROUNDS_APART + r, seconds) for k, c in enumerate(same) for r, seconds in c.rounds)
        if all(c.rounds for c in same):
            seconds = statistics.median(seconds for _, seconds in rounds)
        else:
            seconds = math.exp(statistics.median(math.log(c.seconds) for c in same))
        combined.append(replace(candidate, seconds=seconds, rounds=rounds, noisy=any(c.noisy for c in same)))
    return tuple(combined)
