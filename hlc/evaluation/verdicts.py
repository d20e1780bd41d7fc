"""Verdicts: each held-out point judged against the fastest measured
alternative, and the figures over the judged points.

The figures are those the thesis judged its libraries by (Tables 4-1 to 4-4):

* the share of right choices: the chosen implementation (at its chosen
  parameters) within the tie tolerance of the fastest measured alternative;
* the penalty t_chosen / t_best − 1: mean when wrong, expected (over all
  calls), worst; the distribution of t_chosen / t_best;
* the gain of the dispatched call over the best single implementation (the
  one a user would pick without the library) and over a named baseline;
* with ``params="exhaustive"``, the share of points where each parameterized
  implementation's chosen parameters are within the tolerance of its best;
* the noise floor (the reference implementation timed twice) and the
  dispatch overhead (the dispatched call against its chosen implementation);
* where the contenders were timed on a second input of the same variables,
  the share of points whose choice turns on the input (no alternative
  within the tolerance of the fastest on both: no choice made from the
  variables can be right there), and the right choices among the others.

Two candidates are compared round by round: t_a / t_b is the median, over
the rounds in which both were timed, of the ratio of their timings in that
round (the oracle's ``ratio``).  Timings of one round are moments apart, so
a host that runs slower for seconds at a time slows both alike and the
ratio keeps only what differs between the candidates; the ratio of their
medians would also keep which rounds happened to fall on a slow spell.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from hlc.artefacts.evaluation import Candidate, Chosen, Gain, JudgedPoint, Share, Summary
from hlc.artefacts.samples import Evaluated
from hlc.evaluation.oracle import AGAIN, DISPATCHED, label, ratio


def ratio_of(a: Candidate, b: Candidate) -> float:
    """t_a / t_b of two measured candidates, as the oracle compares them (round by round)."""
    return ratio({"seconds": a.seconds, "rounds": a.rounds}, {"seconds": b.seconds, "rounds": b.rounds})


def judge(record: Evaluated, tolerance: float) -> JudgedPoint | None:
    """One evaluation line of the oracle as a judged point: which alternative
    beat the chosen one by most, and by how much.  None when it cannot be
    judged (no implementation applied, or the chosen one was not measured)."""
    chosen = record.chosen
    measured = {c.label: c for c in record.candidates}
    alternatives = {k: v for k, v in measured.items() if k not in (DISPATCHED, AGAIN)}
    if chosen is None or not alternatives:
        return None
    chosen_label = label(chosen.implementation, chosen.parameters)
    if chosen_label not in alternatives:
        return None
    best_label, penalty = oracle_verdict(alternatives, chosen_label)
    return JudgedPoint(record.P, record.index, dict(record.point), dict(record.variables),
                       Chosen(chosen.implementation, dict(chosen.parameters)), tuple(alternatives.values()),
                       chosen_label, best_label, penalty, penalty <= tolerance, measured.get(DISPATCHED),
                       measured.get(AGAIN), record.other_input)


def turns_on_the_input(point: JudgedPoint, tolerance: float) -> bool | None:
    """Whether no alternative timed on both of the point's inputs is within
    the tolerance of the fastest on each (None: no second input was timed).
    A choice made from the variables is the same for both inputs, so at
    such a point it is wrong on one of them whatever the models."""
    if not point.other_input:
        return None
    first = {c.label: c for c in point.candidates}
    second = {c.label: c for c in point.other_input if c.label in first}
    if not second:
        return None
    return not any(oracle_verdict(first, name)[1] <= tolerance and oracle_verdict(second, name)[1] <= tolerance
                   for name in second)


def settled_verdict(point: JudgedPoint) -> bool:
    """Whether the two timings the verdict compares, the chosen alternative's
    and the fastest's, settled (hlc.calibrate.timing.Timing.settled).  On a
    busy host a sort's timings can spread over twice their median; a
    verdict drawn from such timings says as much about the host as about
    the choice."""
    return not any(c.noisy for c in point.candidates if c.label in (point.chosen_label, point.best_label))


def oracle_verdict(alternatives: Mapping[str, Candidate], chosen_label: str) -> tuple[str, float]:
    """The alternative that beats the chosen one by most (the chosen one
    itself when none does), and the penalty t_chosen / t_best - 1."""
    slower = {name: 1.0 if name == chosen_label else ratio_of(alternatives[chosen_label], candidate)
              for name, candidate in alternatives.items()}
    best_label = max(slower, key=slower.__getitem__)
    return best_label, slower[best_label] - 1


def geometric_mean(values: Sequence[float]) -> float | None:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(q * len(ordered))) - 1)]


def summarize(points: Sequence[JudgedPoint], tolerance: float, baseline: str, reference: str) -> Summary | None:
    """The figures over judged points; None when there are none."""
    if not points:
        return None
    penalties = [p.penalty for p in points]
    wrong = [x for x in penalties if x > tolerance]
    ratios = [1 + x for x in penalties]

    def call(p: JudgedPoint) -> Candidate:
        return p.dispatched or p.candidate(p.chosen_label)

    # The best single implementation: always the same one (at the parameters the
    # module gives it), the choice a user would make without the library.
    singles = {}
    for implementation in sorted({c.implementation for p in points for c in p.candidates}):
        firsts = [_first(p, implementation) for p in points]
        if all(c is not None for c in firsts):
            singles[implementation] = geometric_mean([ratio_of(c, call(p))
                                                      for c, p in zip(firsts, points, strict=True)])
    best_single = None
    if singles:
        best = min(singles, key=singles.__getitem__)
        best_single = Gain(best, singles[best], len(points))
    pairs = [(_first(p, baseline), call(p)) for p in points]
    pairs = [(b, c) for b, c in pairs if b is not None]
    named = Gain(baseline, geometric_mean([ratio_of(b, c) for b, c in pairs]), len(pairs)) if pairs else None
    optimal, optimal_chosen = {}, {}
    for implementation in sorted({c.implementation for p in points for c in p.candidates if c.parameters}):
        judged = [(p, _parameters_optimal(p, implementation, tolerance)) for p in points]
        shares = [s for _, s in judged if s is not None]
        if shares:
            optimal[implementation] = Share(sum(shares) / len(shares), len(shares))
        chosen_there = [s for p, s in judged if s is not None and p.chosen.implementation == implementation]
        if chosen_there:
            optimal_chosen[implementation] = Share(sum(chosen_there) / len(chosen_there), len(chosen_there))
    noise = [abs(ratio_of(p.again, _first(p, reference)) - 1) for p in points
             if p.again and _first(p, reference) is not None]
    dispatched = [p for p in points if p.dispatched]
    overhead = (statistics.median(ratio_of(p.dispatched, p.candidate(p.chosen_label)) - 1 for p in dispatched)
                if dispatched else None)
    chosen = {name: sum(p.chosen.implementation == name for p in points)
              for name in sorted({p.chosen.implementation for p in points})}
    turning = [(p, turns_on_the_input(p, tolerance)) for p in points]
    turning = [(p, turns) for p, turns in turning if turns is not None]
    decided = [p for p, turns in turning if not turns]
    settled = [p for p in points if settled_verdict(p)]
    return Summary(
        points=len(points), tolerance=tolerance, right_share=1 - len(wrong) / len(points),
        mean_penalty_when_wrong=statistics.fmean(wrong) if wrong else 0.0,
        expected_penalty=statistics.fmean(penalties), worst_penalty=max(penalties),
        ratio_median=statistics.median(ratios), ratio_p95=_quantile(ratios, 0.95), ratio_max=max(ratios),
        best_single=best_single, baseline=named, optimal_parameters=optimal,
        noise_median=statistics.median(noise) if noise else None, noise_p95=_quantile(noise, 0.95) if noise else None,
        overhead_median=overhead, chosen=chosen,
        turns_on_input=Share(sum(turns for _, turns in turning) / len(turning), len(turning)) if turning else None,
        right_where_decided=Share(sum(p.right for p in decided) / len(decided), len(decided)) if decided else None,
        right_where_settled=(Share(sum(p.right for p in settled) / len(settled), len(settled))
                             if settled and len(settled) < len(points) else None),
        optimal_where_chosen=optimal_chosen)


def summaries(points: Sequence[JudgedPoint], ranks: Sequence[int], tolerance: float, baseline: str,
              reference: str) -> tuple[Summary | None, dict[int, Summary | None]]:
    """The summary over every point, and one per rank count when there were several."""
    by_ranks = {size: summarize([p for p in points if size == p.P], tolerance, baseline, reference)
                for size in ranks} if len(ranks) > 1 else {}
    return summarize(points, tolerance, baseline, reference), by_ranks


def _first(point: JudgedPoint, implementation: str) -> Candidate | None:
    """The implementation at the parameters the module gives it here (the first
    candidate of that implementation, as the oracle times it first)."""
    return next((c for c in point.candidates if c.implementation == implementation), None)


def _parameters_optimal(point: JudgedPoint, implementation: str, tolerance: float) -> bool | None:
    """Whether the module's parameters for the implementation are within the
    tolerance of every other value measured (None: only one value was measured)."""
    measured = [c for c in point.candidates if c.implementation == implementation]
    if len(measured) < 2:
        return None
    return all(ratio_of(measured[0], other) <= 1 + tolerance for other in measured[1:])
