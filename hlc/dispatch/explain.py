"""Why the dispatcher chooses what it chooses: a readable account of one decision."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hlc.artefacts.models import Models, TimeModel
from hlc.artefacts.samples import Sample, Samples
from hlc.dispatch.reference import Choice
from hlc.language import ast
from hlc.language.expressions import EvaluationError, evaluate, integer_bounds
from hlc.model.findings import in_words
from hlc.model.predict import ModelUnavailable, Predictor, band, term_values
from hlc.model.terms import model_terms
from hlc.optimize import COARSE, SCAN_LIMIT, spread


def _seconds(value: float) -> str:
    if not math.isfinite(value):
        return "∞ (not applicable)"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if value >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.3g} s"


#: A measured time this far off its prediction (as a share of it) is marked so.
MISS_SHOWN = 0.1


def _band(value: float | None) -> str:
    """The half-width of a confidence band, in the units of :func:`_seconds`; "—" when unknown."""
    return "—" if value is None or not math.isfinite(value) else _seconds(value)


def band_of(predictor: Predictor, implementation: ast.Implementation, environment: Mapping[str, Any],
            entry: TimeModel) -> float | None:
    """The prediction's confidence half-width, or ``None`` where there is none
    (factored, not fitted, an artefact without covariances, terms that cannot
    be evaluated here)."""
    try:
        return band(predictor, implementation, entry, environment)
    except (EvaluationError, ModelUnavailable, KeyError, TypeError, ValueError):
        return None


def contributions(predictor: Predictor, implementation: ast.Implementation, environment: Mapping[str, Any],
                  entry: TimeModel) -> list[tuple[str, float]]:
    """Each kept term's share of the prediction, largest first: (term, β·f).
    Terms that take the same value here are one term here: a base term and
    the steps of it that hold at this point (``m * k * n`` and ``m * k * n *
    (log2(k) >= 0.5)`` at k = 64) are shown as the base, their coefficients
    summed, with how many it stands for.  Apart, their shares can run to
    +320 µs and -305 µs of a 13 µs prediction, which says nothing."""
    model = implementation.model("time")
    if model is None or not model.fitted:
        return []
    values = term_values(predictor, implementation, model_terms(model, entry.discovered), environment)
    return merged_shares({term: 1.0 if term == "1" else float(values[term]) for term in entry.coefficients},
                         entry.coefficients)


def merged_shares(values: Mapping[str, float], coefficients: Mapping[str, float]) -> list[tuple[str, float]]:
    """(term, β·f) of each group of terms with one value here, largest first
    (see :func:`contributions`); terms that are 0 here are left out."""
    groups: dict[float, list[tuple[str, float]]] = {}  # the terms' value here → (term, β)
    for term, beta in coefficients.items():
        if values[term] != 0:
            groups.setdefault(values[term], []).append((term, beta))
    shares = []
    for value, members in groups.items():
        label = min((term for term, _ in members), key=len)
        if len(members) > 1:
            label += f" (and {len(members) - 1} term{'s' if len(members) > 2 else ''} equal to it here)"
        shares.append((label, value * sum(beta for _, beta in members)))
    return sorted(shares, key=lambda item: -abs(item[1]))


def composition(shares: list[tuple[str, float]], most: int = 6) -> list[str]:
    """The lines of a prediction's make-up: the terms that add cost, each
    with its share of what they add up to, then those that take some off
    (a fitted correction: the written terms overestimate there), in seconds."""
    adding = [(t, v) for t, v in shares if v > 0]
    lowering = [(t, v) for t, v in shares if v < 0]
    total = sum(v for _, v in adding) or 1.0
    rest = f"{len(adding) - most} more term{'s' if len(adding) - most > 1 else ''}" if len(adding) > most else ""
    width = _label_width([t for t, _ in adding[:most]] + [rest] + ["  " + t for t, _ in lowering[:most]])
    lines = [f"  {term:<{width}} {_seconds(value):>12}  {value / total:6.1%}" for term, value in adding[:most]]
    if rest:
        left = sum(v for _, v in adding[most:])
        lines.append(f"  {rest:<{width}} {_seconds(left):>12}  {left / total:6.1%}")
    if lowering:
        lines.append("  less corrections the fit made (where the terms above overestimate):")
        lines += [f"    {term:<{width - 2}} {'-' + _seconds(-value):>12}" for term, value in lowering[:most]]
    return lines


#: A table's labels are padded to the longest, at least this many characters ...
LABEL_WIDTH = 36
#: ... and at most this many: a longer one pushes its own row's figures out.
LABEL_WIDTH_MOST = 60


def _label_width(labels: Sequence[str], least: int = LABEL_WIDTH) -> int:
    """The width a column of ``labels`` is padded to, so that the figures
    after it line up: the longest, ``least`` at least."""
    return min(max([least, *map(len, labels)]), LABEL_WIDTH_MOST)


def planned_time(predictor: Predictor, implementation: ast.Implementation, environment: Mapping[str, Any],
                 predicted: float) -> float:
    """The time the choice weighs for ``implementation``: its prediction
    plus its typical deviations (hlc.model.deviation); ``predicted`` where
    the model knows none."""
    try:
        return predictor.evaluate(implementation.name, environment, planned=True)
    except (EvaluationError, ModelUnavailable, ArithmeticError, ValueError):
        return predicted


def weighed_values(predictor: Predictor, implementation: ast.Implementation, parameter: ast.Parameter,
                   variables: Mapping[str, Any], chosen: Mapping[str, int], most: int = 24) -> list[tuple[int, float]]:
    """The values of ``parameter`` the dispatcher's search weighs here (those
    its ``over`` clause proposes, else its range when short, else the values
    spread over the range that its first narrowing compares, and the chosen
    one), each with the predicted time there, the other parameters as chosen."""
    environment = {**predictor.constants, **variables, **chosen}
    rule = implementation.optimization(parameter.name)
    try:
        if rule is not None and rule.over is not None:
            low, high = integer_bounds(rule.over.range, environment)
            values = sorted({int(evaluate(rule.over.value, {**environment, rule.over.variable: step}))
                             for step in range(low, high + 1)} if high - low < 4 * most else set())
        elif parameter.range is not None:
            low, high = integer_bounds(parameter.range, environment)
            if high - low < most:
                values = list(range(low, high + 1))
            elif high - low >= SCAN_LIMIT:
                values = sorted({spread(low, high, j) for j in range(COARSE)}
                                | ({chosen[parameter.name]} if parameter.name in chosen else set()))
            else:
                values = []
        else:
            values = []
    except (EvaluationError, ArithmeticError, ValueError):
        return []
    weighed = []
    for value in values[:most]:
        try:
            weighed.append((value, predictor.evaluate(implementation.name, {**environment, parameter.name: value})))
        except (EvaluationError, ModelUnavailable, ArithmeticError, ValueError):
            continue
    return weighed


def extrapolations(interface: ast.Interface, models: Models, variables: Mapping[str, float],
                   choice: Choice) -> list[str]:
    """Where a prediction that took part in the choice lies beyond its model's
    samples: a variable the profile held at one value (a model of two ranks
    asked about four), or outside the range it was profiled over."""
    notes = []
    for implementation in interface.implementations:
        if not math.isfinite(choice.predicted.get(implementation.name, math.inf)):
            continue
        for name, (low, high) in models.time(implementation.name).domain.items():
            value = variables.get(name)
            if value is None or low <= value <= high:
                continue
            if low == high:
                notes.append(f"{implementation.name}: every sample had {name} = {low:g}, so its prediction at "
                             f"{name} = {value:g} extrapolates (terms in {name} cannot be told from others there)")
            else:
                notes.append(f"{implementation.name}: its samples span {name} = {low:g} .. {high:g}; "
                             f"{value:g} extrapolates")
    return notes


def searches(predictor: Predictor, implementation: ast.Implementation, variables: Mapping[str, float],
             settings: Mapping[str, int], marked: str) -> list[str]:
    """A line per searched parameter of ``implementation``: the values its
    search weighs with their predicted times, the one of ``settings`` marked
    (``marked``: "chosen", or "best" for an implementation not chosen)."""
    lines = []
    for parameter in implementation.parameters:
        weighed = weighed_values(predictor, implementation, parameter, variables, settings)
        if len(weighed) > 1:
            value_set = settings.get(parameter.name)
            if len({seconds for _, seconds in weighed}) == 1:  # the prediction does not turn on it here
                lines.append(f"  {parameter.name} weighed: {len(weighed)} values, {weighed[0][0]} .. "
                             f"{weighed[-1][0]}, all predicted at {_seconds(weighed[0][1])} ({marked}: {value_set})")
                continue
            lines.append(f"  {parameter.name} weighed: " + ", ".join(
                f"{value} → {_seconds(seconds)}{f' ({marked})' if value == value_set else ''}"
                for value, seconds in weighed))
    return lines


def _scaled(values: Mapping[str, float], names: Sequence[str]) -> list[float]:
    """Each variable as a distance sees it: log2(1 + |v|), signed, so that
    sizes compare by octaves and small counts by their own steps."""
    return [math.copysign(math.log2(1 + abs(float(values[name]))), float(values[name])) for name in names]


def nearest_measured(interface: ast.Interface, samples: Samples, variables: Mapping[str, float]
                     ) -> list[Sample]:
    """The samples of the profile's point nearest ``variables`` (by their
    logarithms) at the same rank count, of every implementation timed
    there; none where the profile took none at that rank count."""
    names = [v.name for v in interface.variables]
    ranks = variables.get("P", 1)
    points: dict[tuple[bool, int], list[Sample]] = {}
    for sample in samples.samples:
        if sample.interface == interface.name and ranks == sample.P and all(n in sample.variables for n in names):
            points.setdefault((sample.verify, sample.index), []).append(sample)
    if not points:
        return []
    target = _scaled(variables, names)

    def distance(taken: list[Sample]) -> float:
        return sum((a - b) ** 2 for a, b in zip(_scaled(taken[0].variables, names), target, strict=True))

    return min(points.values(), key=distance)


def measured_nearby(interface: ast.Interface, predictor: Predictor, samples: Samples,
                    variables: Mapping[str, float]) -> list[str]:
    """Lines for what the profile measured at its point nearest the
    variables, each candidate beside what its model predicts there, fastest
    first: where a choice surprises, the measurements it was fitted to say
    whether the model follows them there."""
    taken = nearest_measured(interface, samples, variables)
    if not taken:
        return []
    names = [v.name for v in interface.variables]
    where = ", ".join(f"{name} = {taken[0].variables[name]:,.6g}" for name in names)
    lines = [f"\nwhat the profile measured at its point nearest these variables, {where} (P = {taken[0].P}):"]
    rows = []
    ordered = sorted(taken, key=lambda s: s.seconds)
    labels = [s.implementation + "".join(f" {k} = {v}" for k, v in sorted(s.parameters.items())) for s in ordered]
    width = _label_width(labels, least=0)
    for sample, label in zip(ordered, labels, strict=True):
        try:
            predicted = predictor.evaluate(sample.implementation, sample.environment)
        except (EvaluationError, ModelUnavailable):
            predicted = math.nan
        note = ""
        if math.isfinite(predicted) and predicted > 0:
            off = sample.seconds / predicted - 1
            if abs(off) >= MISS_SHOWN:
                note = f"  ({abs(off):.0%} {'above' if off > 0 else 'below'} its model)"
        shown = _seconds(predicted) if math.isfinite(predicted) else "—"
        rows.append(f"  {label:<{width}} {_seconds(sample.seconds):>12}   predicted {shown:>10}{note}")
    return lines + rows


def explanation(library: ast.Library, models: Models, interface_name: str,
                variables: Mapping[str, float], choice: Choice,
                used_models: Mapping[str, Models] | None = None, samples: Samples | None = None) -> str:
    """The text ``explain()`` returns; with the build's ``samples``, also
    what the profile measured nearest the variables (:func:`measured_nearby`)."""
    interface = library.interface(interface_name)
    used_models = used_models or {}
    predictor = Predictor.of_models(library, models, used_models)
    shown = ", ".join(f"{k} = {v:g}" for k, v in variables.items())
    lines = [f"{interface_name}({shown})", ""]
    confidence = models.settings.confidence
    risky = any(models.time(i.name).weighs_deviations for i in interface.implementations)
    header = f"{'implementation':<18} {'predicted':>16} {f'± {confidence:.0%}':>12}"
    lines.append(header + (f" {'planned':>12}" if risky else "") + f"   {'fit':>6} {'verified':>8}")
    for implementation in interface.implementations:
        entry = models.time(implementation.name)
        fit = f"{entry.mre:.3f}" if entry.mre is not None else "—"
        verified = f"{entry.verification_mre:.3f}" if entry.verification_mre is not None else "—"
        mark = "  ← chosen" if implementation.name == choice.implementation else ""
        status = "" if entry.usable else f"  ({entry.status})"
        predicted = choice.predicted.get(implementation.name, math.inf)
        half, planned = None, predicted
        if math.isfinite(predicted) and (implementation.name in choice.settings or not implementation.parameters):
            settings = choice.parameters if implementation.name == choice.implementation else \
                choice.settings.get(implementation.name, {})
            half = band_of(predictor, implementation, {**variables, **settings}, entry)
            planned = planned_time(predictor, implementation, {**variables, **settings}, predicted)
        column = f" {_seconds(planned):>12}" if risky else ""
        best = ""  # where another implementation's search ended: what its prediction is at
        if implementation.name != choice.implementation and math.isfinite(predicted) \
                and choice.settings.get(implementation.name):
            best = "  at " + ", ".join(f"{k} = {v}" for k, v in choice.settings[implementation.name].items())
        lines.append(f"{implementation.name:<18} {_seconds(predicted):>16} {_band(half):>12}{column}   "
                     f"{fit:>6} {verified:>8}{mark}{status}{best}")
    lines.append("(fit and verified are mean relative errors: 1.05 means 5% off on average;")
    if any(models.time(i.name).on_every_sample for i in interface.implementations):
        lines.append(" verified is that of the model fitted without the verification samples, which then "
                     "judged it; the model used was fitted on those too;")
    if any(models.time(i.name).bags for i in interface.implementations):
        lines.append(" the model used is the mean of the search of its terms on every sample and of searches "
                     "on parts of their points;")
    lines.append(f" ± {confidence:.0%} is the half-width of the {confidence:.0%} confidence band of a fitted "
                 "prediction, — where unknown" + (";" if risky else ")"))
    if risky:
        risk = max(models.time(i.name).risk or 0.0 for i in interface.implementations)
        lines.append(f" planned is what the choice weighs: the prediction plus {risk:g} typical deviations of the "
                     "model's samples from it)")
    if choice.implementation is None:
        lines.append("\nno implementation applies")
    else:
        winner = interface.implementation(choice.implementation)
        entry = models.time(winner.name)
        if not math.isfinite(choice.seconds):
            lines.append(f"\nno model predicts a positive time here: {winner.name} runs as the first "
                         "implementation that applies")
        if choice.parameters:
            lines.append("\nparameters: " + ", ".join(f"{k} = {v}" for k, v in choice.parameters.items()))
            lines += searches(predictor, winner, variables, choice.parameters, "chosen")
        others = [(name, settings) for name, settings in choice.settings.items()
                  if name != winner.name and settings and math.isfinite(choice.predicted.get(name, math.inf))]
        if others:
            lines.append("\nthe other searches, at the values they ended at:")
            for name, settings in others:
                found = searches(predictor, interface.implementation(name), variables, settings, "best")
                lines += [f"  {name}: {line.strip()}" for line in found] or \
                    [f"  {name}: " + ", ".join(f"{k} = {v}" for k, v in settings.items())]
        try:
            shares = contributions(predictor, winner, {**variables, **choice.parameters}, entry)
        except (EvaluationError, ModelUnavailable):
            shares = []
        if shares:
            lines.append(f"\nwhat {winner.name}'s prediction is made of:")
            lines += composition(shares)
        found = in_words(predictor, winner, entry, [{**variables, **choice.parameters}]) \
            if entry.status == "fitted" else []
        if found:
            lines.append(f"\nwhat the fitter found in {winner.name}'s samples, the largest here first:")
            lines += [f"  {line}" for line in found]
    if samples is not None:
        lines += measured_nearby(interface, predictor, samples, variables)
    notes = extrapolations(interface, models, variables, choice)
    if notes:
        lines.append("\nbeyond the samples:")
        lines += [f"  {note}" for note in notes]
    fingerprint = models.fingerprint
    quick = ", quick calibration" if fingerprint.quick else ""
    lines.append(f"\ncalibrated {models.created or '?'} on {fingerprint.get('cpu', '?')} "
                 f"({fingerprint.get('cores', '?')} cores, platform {fingerprint.get('platform', '?')}{quick})")
    return "\n".join(lines)
