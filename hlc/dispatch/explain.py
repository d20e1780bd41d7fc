"""Why the dispatcher chooses what it chooses: a readable account of one decision."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hlc.dispatch.reference import Choice
from hlc.language import ast
from hlc.language.expressions import EvaluationError
from hlc.model.predict import ModelUnavailable, Predictor, band, term_values
from hlc.model.terms import discovered_in_words, model_terms


def _seconds(value: float) -> str:
    if not math.isfinite(value):
        return "∞ (not applicable)"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if value >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.3g} s"


def _band(value: float | None) -> str:
    """The half-width of a confidence band, in the units of :func:`_seconds`; "—" when unknown."""
    return "—" if value is None or not math.isfinite(value) else _seconds(value)


def band_of(predictor: Predictor, implementation: ast.Implementation, environment: Mapping[str, Any],
            entry: Mapping[str, Any]) -> float | None:
    """The prediction's confidence half-width, or ``None`` where there is none
    (factored, not fitted, an artefact without covariances, terms that cannot
    be evaluated here)."""
    try:
        return band(predictor, implementation, entry, environment)
    except (EvaluationError, ModelUnavailable, KeyError, TypeError, ValueError):
        return None


def contributions(predictor: Predictor, implementation: ast.Implementation, environment: Mapping[str, Any],
                  entry: Mapping[str, Any]) -> list[tuple[str, float]]:
    """Each kept term's share of the prediction, largest first: (term, β·f)."""
    model = implementation.model("time")
    if model is None or not model.fitted:
        return []
    values = term_values(predictor, implementation, model_terms(model, entry), environment)
    shares = [("1", entry["coefficients"].get("1", 0.0))] if "1" in entry["coefficients"] else []
    shares += [(term, beta * values[term]) for term, beta in entry["coefficients"].items() if term != "1"]
    return sorted(shares, key=lambda item: -abs(item[1]))


def explanation(library: ast.Library, models: Mapping[str, Any], interface_name: str,
                variables: Mapping[str, float], choice: Choice,
                used_models: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The text ``explain()`` returns."""
    interface = library.interface(interface_name)
    calibration = models["implementations"]
    used_models = used_models or {}
    predictor = Predictor(library, calibration,
                          {name: Predictor(sub, used_models.get(name, {}).get("implementations", {}))
                           for name, sub in library.used.items()})
    shown = ", ".join(f"{k} = {v:g}" for k, v in variables.items())
    lines = [f"{interface_name}({shown})", ""]
    confidence = models.get("settings", {}).get("confidence", 0.95)
    lines.append(f"{'implementation':<18} {'predicted':>16} {f'± {confidence:.0%}':>12}   {'fit':>6} {'verified':>8}")
    for implementation in interface.implementations:
        entry = calibration.get(implementation.name, {}).get("time", {})
        fit = f"{entry['mre']:.3f}" if entry.get("mre") is not None else "—"
        verified = f"{entry['verification_mre']:.3f}" if entry.get("verification_mre") is not None else "—"
        mark = "  ← chosen" if implementation.name == choice.implementation else ""
        status = "" if entry.get("status") in ("fitted", "factored") else f"  ({entry.get('status', 'no model')})"
        predicted = choice.predicted.get(implementation.name, math.inf)
        half = None
        if math.isfinite(predicted) and (implementation.name in choice.settings or not implementation.parameters):
            settings = choice.parameters if implementation.name == choice.implementation else \
                choice.settings.get(implementation.name, {})
            half = band_of(predictor, implementation, {**variables, **settings}, entry)
        lines.append(f"{implementation.name:<18} {_seconds(predicted):>16} {_band(half):>12}   "
                     f"{fit:>6} {verified:>8}{mark}{status}")
    lines.append("(fit and verified are mean relative errors: 1.05 means 5% off on average;")
    lines.append(f" ± {confidence:.0%} is the half-width of the {confidence:.0%} confidence band of a fitted "
                 "prediction, — where unknown)")
    if choice.implementation is None:
        lines.append("\nno implementation applies")
    else:
        winner = interface.implementation(choice.implementation)
        entry = calibration[winner.name]["time"]
        if choice.parameters:
            lines.append("\nparameters: " + ", ".join(f"{k} = {v}" for k, v in choice.parameters.items()))
        try:
            shares = contributions(predictor, winner, {**variables, **choice.parameters}, entry)
        except (EvaluationError, ModelUnavailable):
            shares = []
        if shares:
            total = sum(value for _, value in shares) or 1.0
            lines.append(f"\nwhat {winner.name}'s prediction is made of:")
            for term, value in shares[:5]:
                lines.append(f"  {term:<28} {_seconds(value):>12}  {value / total:6.1%}")
        found = discovered_in_words(entry) if entry.get("status") == "fitted" else []
        if found:
            lines.append(f"\nwhat the fitter found in {winner.name}'s samples:")
            lines += [f"  {line}" for line in found]
    fingerprint = models.get("fingerprint", {})
    quick = ", quick calibration" if fingerprint.get("quick") else ""
    lines.append(f"\ncalibrated {models.get('created', '?')} on {fingerprint.get('cpu', '?')} "
                 f"({fingerprint.get('cores', '?')} cores, platform {fingerprint.get('platform', '?')}{quick})")
    return "\n".join(lines)
