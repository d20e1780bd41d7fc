"""The dispatcher's decisions computed in Python, from the description and the models.

This is the definition of what a generated dispatch module decides (thesis
§4.2 and §5.5), written plainly:

1. the explanatory variables are computed from the arguments;
2. an implementation whose precondition fails, or that has no calibrated
   model, costs ∞;
3. each parameterized implementation's parameters are set, in declaration
   order, by its ``choose`` rule (default: minimize ``time`` over the
   parameter's range) — the first pass;
4. the implementation with the least planned time wins — the second pass.
   A model that answers with a time that is not positive (its corrections
   may sum below zero where its samples never reached) ranks behind every
   positive time: its implementation is the last resort, taken only where
   no other one predicts a positive time, since the call is valid and must
   run something.

Where a model knows how far its samples scatter (hlc.model.deviation), both
passes weigh the time it plans for, the prediction plus a few typical
deviations, rather than the prediction alone: ``time`` in a parameter's
objective is that time too, as the second pass ranks it.
``Choice.predicted`` reports the predictions.  The typical deviation is a
sum of the model's own terms, so it differs from one setting to another
where the samples scatter more at some: the radix sort's wide digits over
half a million keys and more time erratically, and a plan that weighs it
takes narrower digits there.  Refitted on the samples of nine sort builds
of one two-core Zen 4 host and replayed against five exhaustive
evaluations (45 pairs), right choices went from 96.39% to 96.99% (SE of
the paired difference 0.12), the expected penalty from 0.95% to 0.66%,
the digit width within 3% of its best from 94.8% to 95.5%; on the stored
corpora of earlier hosts (Intel, Zen 3, Zen 4, Zen 5), 96.67% to 96.94%
right.  At two ranks, whose samples scatter with the link's paces rather
than with the digit, one evaluation of the same nine builds: 88.8% to
88.3%.  (With models whose deviation did not depend on the digit, weighing
it there had chosen the width worse: 92.5% within 3% of the best, against
95.5%.)

The compiled module mirrors this in C and a test compares their decisions.
The same class serves as the dispatch module where no C compiler exists.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hlc.language import ast
from hlc.language.expressions import EvaluationError, evaluate, integer_bounds
from hlc.model.predict import ModelUnavailable, Predictor
from hlc.optimize import SWEEPS, integer_minimum, integer_root

INFINITY = math.inf
#: The rank of a time that is not positive: behind every positive time, ahead
#: of ∞ (no model, or none that can be evaluated).  HLC_NO_TIME in C.
NO_TIME = sys.float_info.max


@dataclass(frozen=True)
class Choice:
    """What the dispatcher decided for one call."""

    implementation: str | None  # None when no implementation applies
    parameters: dict[str, int] = field(default_factory=dict)
    predicted: dict[str, float] = field(default_factory=dict)  # seconds; inf where not applicable
    # each applicable parameterized implementation's parameters, as its choose rule set them
    settings: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """The predicted time of the chosen implementation."""
        return self.predicted.get(self.implementation, INFINITY) if self.implementation else INFINITY


def _time(seconds: float) -> float:
    """A predicted time as a decision ranks it: itself where it is a positive
    number, NO_TIME where it is some other number, and ∞ where it is not a
    number (hlc_time in hlc_dispatch.h)."""
    if not math.isfinite(seconds):
        return INFINITY
    return seconds if seconds > 0 else NO_TIME


def _shown(seconds: float) -> float:
    """A ranked time as Choice.predicted reports it: ∞ for NO_TIME."""
    return INFINITY if seconds >= NO_TIME else seconds


class Decider:
    """Decisions for one library, in Python."""

    def __init__(self, library: ast.Library, predictor: Predictor, sweeps: int | None = None):
        self.library = library
        self.predictor = predictor
        # passes over several parameters at most: the C's, unless asked for others
        self.sweeps = SWEEPS if sweeps is None else sweeps

    def applies(self, implementation: ast.Implementation, variables: Mapping[str, Any]) -> bool:
        environment = {**self.predictor.constants, **variables}
        return all(evaluate(condition, environment) for condition in implementation.requires)

    def model(self, implementation: ast.Implementation, environment: Mapping[str, Any]) -> float:
        """Predicted seconds; ∞ where the model cannot be evaluated or
        predicts no positive time."""
        return _shown(self._ranked(implementation, environment))

    def _ranked(self, implementation: ast.Implementation, environment: Mapping[str, Any]) -> float:
        """Predicted seconds as a search ranks them (_time)."""
        try:
            value = self.predictor.evaluate(implementation.name, environment)
        except (EvaluationError, ModelUnavailable, ArithmeticError, ValueError):
            return INFINITY
        return _time(value)

    def models(self, implementation: ast.Implementation, environment: Mapping[str, Any]) -> tuple[float, float]:
        """Predicted and planned seconds as the decision ranks them (_time),
        the terms valued once; ∞ where the model cannot be evaluated.  Where
        the prediction is not a positive time, neither is the plan."""
        try:
            predicted, planned = self.predictor.prediction_and_planned(implementation.name, environment)
        except (EvaluationError, ModelUnavailable, ArithmeticError, ValueError):
            return INFINITY, INFINITY
        predicted, planned = _time(predicted), _time(planned)
        return predicted, (max(planned, predicted) if predicted >= NO_TIME else planned)

    def parameters(self, implementation: ast.Implementation, variables: Mapping[str, Any]) -> dict[str, int]:
        """First pass: every parameter by its rule, in declaration order.  A
        parameter not chosen yet takes the low end of its range meanwhile.
        With several parameters, the passes go on, each parameter chosen
        again with the others as last chosen, until every one has been
        chosen again since the last change and none moved (the one chosen
        just before the last change needs no new search: nothing it sees has
        changed), or ``sweeps`` passes' worth of searches are made."""
        environment = {**self.predictor.constants, **variables}
        order = implementation.parameters
        for parameter in order:
            environment[parameter.name] = integer_bounds(parameter.range, environment)[0]
        for parameter in order:
            environment[parameter.name] = self.choose(implementation, parameter, environment)
        searches, unchanged, at = len(order), 0, 0
        while unchanged < len(order) - 1 and searches < self.sweeps * len(order):
            parameter = order[at]
            value = self.choose(implementation, parameter, environment)
            unchanged = unchanged + 1 if value == environment[parameter.name] else 0
            environment[parameter.name] = value
            at, searches = (at + 1) % len(order), searches + 1
        return {parameter.name: environment[parameter.name] for parameter in order}

    def choose(self, implementation: ast.Implementation, parameter: ast.Parameter,
               environment: dict[str, Any]) -> int:
        low, high = integer_bounds(parameter.range, environment)
        rule = implementation.optimization(parameter.name)
        objective = rule.objective if rule else ast.Name(0, 0, "time")

        def cost(value: int) -> float:
            if not low <= value <= high:
                return INFINITY
            scope = {**environment, parameter.name: value}
            scope["time"] = self.models(implementation, scope)[1]  # the planned time, as decide ranks it
            try:
                scope = self.predictor.helpers(implementation, scope, [objective])
            except (EvaluationError, ModelUnavailable, ArithmeticError, ValueError):
                return INFINITY
            try:
                result = evaluate(objective, scope, self.predictor.functions(scope))
            except (EvaluationError, ModelUnavailable):
                return INFINITY
            return float(result) if math.isfinite(result) else INFINITY

        if low > high:
            return low
        if rule is not None and rule.method == "root":
            return min(max(integer_root(cost, low, high), low), high)
        if rule is not None and rule.over is not None:
            over = rule.over
            over_low, over_high = integer_bounds(over.range, environment)

            def value_at(step: int) -> int:
                return int(evaluate(over.value, {**environment, over.variable: step}))

            if over_low > over_high:
                return low
            costs: dict[int, float] = {}  # neighbouring steps may propose one value: it is valued once

            def cost_at(step: int) -> float:
                value = value_at(step)
                if value not in costs:
                    costs[value] = cost(value)
                return costs[value]

            best = value_at(integer_minimum(cost_at, over_low, over_high))
            return min(max(best, low), high)
        return integer_minimum(cost, low, high)

    def decide(self, interface: ast.Interface, variables: Mapping[str, Any]) -> Choice:
        """Second pass: the least planned time among the applicable
        implementations, the first of them where none predicts a positive time."""
        predicted: dict[str, float] = {}
        planned: dict[str, float] = {}
        parameters: dict[str, dict[str, int]] = {}
        for implementation in interface.implementations:
            if not self.applies(implementation, variables):
                predicted[implementation.name] = planned[implementation.name] = INFINITY
                continue
            chosen = self.parameters(implementation, variables) if implementation.parameters else {}
            parameters[implementation.name] = chosen
            predicted[implementation.name], planned[implementation.name] = \
                self.models(implementation, {**variables, **chosen})
        best = min(planned, key=planned.__getitem__, default=None)
        shown = {name: _shown(seconds) for name, seconds in predicted.items()}
        if best is None or planned[best] == INFINITY:
            return Choice(None, {}, shown)
        settings = {name: values for name, values in parameters.items()
                    if values and (shown[name] < INFINITY or name == best)}
        return Choice(best, parameters[best], shown, settings)
