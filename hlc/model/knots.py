"""Where a discovered knot is not pinned down by the samples.

A discovered step ``n * (width >= 17)`` says the cost per key rises
somewhere between the widths the samples hold on either side of 17.  When
the samples that would show the rise (those where the term is a large part
of the time) hold widths 16 and 19 only, a step at 17, 18 or 19 fits them
alike, and the model's prediction at width 17 or 18 is a guess: the term
may or may not apply there.  The fit's confidence band does not say so,
since it takes the terms as given; a profile that trusts it never measures
there, and a wrong guess stays (counting sort predicted five times too slow
at 400,000 keys of 18 bits, never timed there, lost every decision there).

:func:`loose_knots` finds, for each factor of each kept discovered term,
the nearest values of its variable on either side of the knot among the
samples that *see* it: where the term, its factor set to one (a hinge's
to its distance from the knot, one at least), is at least ``SEEN`` of the
sample's time.  :func:`knot_ambiguity` is then what the
terms whose knot may lie on either side of a point could add to or take
from its prediction: the adaptive profile widens the point's band by it,
so that the point is measured where that could turn a decision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlc.artefacts.models import Discovered, Factor, TimeModel
from hlc.language import ast
from hlc.language.expressions import EvaluationError, evaluate, unparse
from hlc.model.predict import Predictor, array_columns
from hlc.model.terms import discovered_expression, discovery_names, factor_variable

#: A sample sees a factor's knot when the term, the factor set to one (a
#: hinge: to the sample's distance from the knot, one unit at least), is at
#: least this share of its time: enough to stand out of a busy host's noise.
SEEN = 0.25


@dataclass(frozen=True)
class LooseKnot:
    """One factor of a kept discovered term, and the values of its variable
    that pin its knot: the nearest seen on either side.  None: no sample
    sees the term on that side, where it is then a small correction only,
    pinned by many samples together if at all; such a knot is taken as it is."""

    term: str  # the discovered term's text, as the model's coefficients name it
    coefficient: float
    rest: ast.Expression  # the term without this factor: its base times its other factors
    factor: Factor
    variable: ast.Expression  # what the factor steps or bends in (log2 of it for a log factor)
    below: float | None
    above: float | None

    def ambiguity(self, rest: float, x: float) -> float:
        """Seconds the term may add or take away at a point where the rest of
        the term is ``rest`` and the variable ``x``: zero where the samples
        pin the factor's value (x outside the open interval they leave)."""
        if self.below is None or self.above is None or not self.below < x < self.above:
            return 0.0
        if self.factor.kind in ("step", "tent"):  # a tent: at most its height
            return abs(self.coefficient * rest)
        # A hinge whose knot lies anywhere in (below, above): from 0 to x - below past it.
        return abs(self.coefficient * rest) * (x - self.below)


def _values(predictor: Predictor, implementation: ast.Implementation, expressions: Sequence[ast.Expression],
            environment: Mapping[str, Any]) -> list[float]:
    """The expressions' values at one environment (NaN where one cannot be had)."""
    try:
        scope = predictor.helpers(implementation, {**predictor.constants, **environment})
        functions = predictor.functions(scope)
    except (EvaluationError, ArithmeticError, LookupError, ValueError):
        return [math.nan] * len(expressions)
    values = []
    for expression in expressions:
        try:
            values.append(float(evaluate(expression, scope, functions)))
        except (EvaluationError, ArithmeticError, LookupError, ValueError):
            values.append(math.nan)
    return values


def _table(predictor: Predictor, implementation: ast.Implementation, expressions: Sequence[ast.Expression],
           environments: Sequence[Mapping[str, Any]]) -> list[list[float]]:
    """The expressions' values at each environment, a row each, as
    :func:`_values` gives them: valued once over arrays of the
    environments' values (hlc.model.predict.array_columns, the same
    numbers), else point by point.  An adaptive profile finds the loose
    knots of every model at every round, over all of its samples: point by
    point, a sort build's radix models took 30-50 ms a round each."""
    texts = [unparse(expression) for expression in expressions]
    try:
        columns = array_columns(predictor, implementation, expressions, texts, environments) if environments else None
    except (EvaluationError, ArithmeticError, LookupError, TypeError, ValueError):
        columns = None
    if columns is None or any(text not in columns for text in texts):
        return [_values(predictor, implementation, expressions, environment) for environment in environments]
    stacked = np.array([np.broadcast_to(np.asarray(columns[text], dtype=float), (len(environments),))
                        for text in texts]).reshape(len(texts), len(environments))
    return stacked.T.tolist()


def loose_knots(predictor: Predictor, implementation: ast.Implementation, entry: TimeModel,
                environments: Sequence[Mapping[str, Any]], seconds: Sequence[float]) -> list[LooseKnot]:
    """Each factor of each kept discovered term of ``entry``, with the values
    of its variable that pin its knot among the fitting samples (their
    ``environments`` and ``seconds``)."""
    model = implementation.model("time")
    found = entry.discovered
    if model is None or not model.fitted or not found:
        return []
    written, expressions = discovery_names(model)
    factors = []  # (term's name, coefficient, the factor's position, factor, rest, variable)
    for term, name in zip(found, entry.terms[-len(found):], strict=True):
        coefficient = entry.coefficients.get(name)
        if coefficient:
            factors += [(name, coefficient, factor,
                         discovered_expression(written, Discovered(term.base, term.factors[:i] + term.factors[i + 1:]),
                                               expressions),  # the term without this factor
                         factor_variable(factor, expressions)) for i, factor in enumerate(term.factors)]
    if not factors:
        return []
    wanted = [e for _, _, _, rest, variable in factors for e in (rest, variable)]
    table = _table(predictor, implementation, wanted, environments)
    knots = []
    for k, (name, coefficient, factor, rest, variable) in enumerate(factors):
        below, above = None, None
        for values, time in zip(table, seconds, strict=True):
            part, x = values[2 * k], values[2 * k + 1]
            if not (math.isfinite(part) and math.isfinite(x)) or time <= 0:
                continue
            reach = 1.0 if factor.kind in ("step", "tent") else max(1.0, abs(x - factor.knot))
            if abs(coefficient * part) * reach < SEEN * time:
                continue
            if x < factor.knot:
                below = x if below is None else max(below, x)
            else:
                above = x if above is None else min(above, x)
        knots.append(LooseKnot(name, coefficient, rest, factor, variable, below, above))
    return knots


def knot_ambiguity(predictor: Predictor, implementation: ast.Implementation, knots: Sequence[LooseKnot],
                   environment: Mapping[str, Any]) -> float:
    """Seconds the discovered terms whose knots the samples leave loose at
    ``environment`` may add to or take from its prediction (their sum)."""
    loose = [knot for knot in knots if knot.below is not None and knot.above is not None]
    if not loose:
        return 0.0
    # The rest of a term is wanted only where its variable lies between the samples that pin it.
    places = _values(predictor, implementation, [knot.variable for knot in loose], environment)
    inside = [(knot, x) for knot, x in zip(loose, places, strict=True)
              if math.isfinite(x) and knot.below < x < knot.above]
    if not inside:
        return 0.0
    parts = _values(predictor, implementation, [knot.rest for knot, _ in inside], environment)
    return sum((knot.ambiguity(part, x) for (knot, x), part in zip(inside, parts, strict=True)
                if math.isfinite(part)), 0.0)
