"""What the fitter found, the most telling first.

A fitted model may carry a score of discovered terms: the kept model is
the mean of several searches (hlc.model.calibration's bags), and each may
place a knot a little apart from the others.  Listed in the order they
were found, a radix sort's twenty findings read as noise: a change of
3.07 ps per octave above the change that makes a fifth of the prediction.
So each finding is weighed by the largest part of the predicted time it
makes at the points in question (one point, for an explanation of one
decision; the model's samples, for a build's summary), the findings are
listed from the largest, and those that never reach a hundredth of a
prediction, or come after the first MOST_LISTED, are counted rather than
listed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlc.artefacts.models import TimeModel
from hlc.artefacts.samples import Sample
from hlc.language import ast
from hlc.language.expressions import EvaluationError
from hlc.model.predict import ModelUnavailable, Predictor, term_columns
from hlc.model.terms import describe, discovered_in_words, in_seconds, model_terms

#: A finding that makes less than this share of every prediction weighed is counted, not listed.
LEAST_SHARE = 0.01
#: At most this many findings are listed; the others are counted.
MOST_LISTED = 8


@dataclass(frozen=True)
class Finding:
    """A kept discovered term in words, and what it makes of the predictions weighed."""

    words: str
    share: float  # the largest |β·f| / prediction over the points weighed (0: none there)
    seconds: float  # β·f at the point where that share is reached (signed: a fall is negative)


def findings(predictor: Predictor, implementation: ast.Implementation, entry: TimeModel,
             environments: Sequence[Mapping[str, Any]]) -> list[Finding] | None:
    """The kept discovered terms of ``entry`` (``implementation``'s fitted
    time model), the largest share of a prediction first, weighed at
    ``environments`` (variables and parameters); None where the terms cannot
    be valued there (the caller then lists them unweighed)."""
    model = implementation.model("time")
    found = entry.discovered
    if model is None or not model.fitted or not found or not environments:
        return None
    try:
        columns = term_columns(predictor, implementation, model_terms(model, found), environments)
    except (EvaluationError, ModelUnavailable, ArithmeticError, TypeError, ValueError, KeyError):
        return None
    names = list(columns)
    coefficients = entry.coefficients
    predicted = np.full(len(environments), coefficients.get("1", 0.0))
    for name in names:
        if name != "1" and coefficients.get(name):
            predicted = predicted + coefficients[name] * columns[name]
    weighed = np.where(np.isfinite(predicted) & (predicted > 0), predicted, np.nan)
    result = []
    for term, name in zip(found, names[-len(found):], strict=True):
        beta = coefficients.get(name)
        if not beta:
            continue
        effect = beta * columns[name]
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = np.abs(effect) / weighed
        if np.all(np.isnan(shares)):
            share, seconds = 0.0, 0.0
        else:
            at = int(np.nanargmax(shares))
            share, seconds = float(shares[at]), float(effect[at])
        result.append(Finding(describe(term, beta), share if math.isfinite(share) else 0.0, seconds))
    return sorted(result, key=lambda finding: -finding.share)


def listed(found: Sequence[Finding], at_one_point: bool, most: int = MOST_LISTED,
           least: float = LEAST_SHARE) -> list[str]:
    """The lines of ``found`` (largest first): each finding that makes at
    least ``least`` of a prediction, with what it makes of it (at the one
    point weighed, or at most over the samples weighed), up to ``most`` of
    them; then how many more there are."""
    shown = [f for f in found if f.share >= least][:most]
    lines = [f"{f.words}: {_signed(f.seconds)} here" if at_one_point
             else f"{f.words}: up to {f.share:.0%} of a sample's predicted time"
             + (", other terms taking time off there" if f.share > 1 else "") for f in shown]
    rest = found[len(shown):]
    if rest:
        where = "here" if at_one_point else "at any sample"
        if not shown:
            lines.append(f"{len(rest)} finding{'s' if len(rest) > 1 else ''}, none {least:.0%} of the "
                         f"prediction {where}")
        elif all(f.share < least for f in rest):
            lines.append(f"and {len(rest)} more, none {least:.0%} of the prediction {where}")
        else:
            lines.append(f"and {len(rest)} more, each a smaller part of the prediction {where}")
    return lines


def in_words(predictor: Predictor | None, implementation: ast.Implementation | None, entry: TimeModel,
             environments: Sequence[Mapping[str, Any]], most: int = MOST_LISTED) -> list[str]:
    """The findings of ``entry`` as lines, weighed at ``environments`` where
    they can be, ``most`` of them listed (:func:`findings`, :func:`listed`),
    else every one of them in the order found."""
    if predictor is not None and implementation is not None:
        found = findings(predictor, implementation, entry, environments)
        if found is not None:
            return listed(found, at_one_point=len(environments) == 1, most=most)
    return discovered_in_words(entry)


def in_words_at_samples(predictor: Predictor | None, implementation: ast.Implementation | None,
                        entry: TimeModel, samples: Sequence[Sample], most: int = MOST_LISTED) -> list[str]:
    """:func:`in_words`, weighed at those of ``samples`` that are the
    implementation's: a build's summary, and its report."""
    name = implementation.name if implementation is not None else None
    return in_words(predictor, implementation, entry, [s.environment for s in samples if s.implementation == name],
                    most)


def _signed(value: float) -> str:
    """``+1.2 ms``, ``-305 µs``."""
    return ("-" if value < 0 else "+") + in_seconds(value)
