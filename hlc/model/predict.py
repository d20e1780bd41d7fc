"""Evaluating a library's models in Python.

A model is evaluated from its description (the helpers and terms, as
expressions) and its calibration (the coefficients in the models artefact).
Factored models are their expression; calls of other models inside an
expression — hybrid terms, factored models — go through the same predictor,
which also holds the predictors of the libraries named by ``uses``.

``P`` and ``logP`` are global: a submodel is evaluated with its caller's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from hlc.artefacts.models import Models, TimeModel
from hlc.language import ast
from hlc.language.arrays import ArrayUnavailable, evaluate_over
from hlc.language.expressions import EvaluationError, calls, evaluate, names, unparse
from hlc.language.functions import BUILTINS
from hlc.language.nest import constant_values
from hlc.model.fit import CONSTANT
from hlc.model.summation import Summation, add_up, kept_terms, summation
from hlc.model.terms import model_terms

#: A predictor keeps at most this many values of model calls (a fit asks
#: for a few thousand; a long-lived decider could ask for any number).
MOST_CALLS_KEPT = 100_000

#: The values of terms that call no model (:func:`term_values`), kept
#: across predictors, by (the term's text, the implementation's identity, the
#: constants, the point): an adaptive build refits its models after every
#: round on the samples of the rounds before, and a refit of the sort
#: library's models took 0.32 s valuing their terms afresh, 0.22 s with
#: them kept.  Emptied, with _PURE, once it holds MOST_TERM_VALUES.
MOST_TERM_VALUES = 500_000
_TERM_VALUES: dict[tuple, float] = {}
#: Whether a term of an implementation calls no model, by (the
#: implementation's identity, the term's text), each with its
#: implementation: held here, no other implementation takes its identity
#: while values kept under it remain.
_PURE: dict[tuple[int, str], tuple[ast.Implementation, bool]] = {}


class ModelUnavailable(LookupError):
    """A model that has no calibration (excluded, not fitted, or its library
    was never calibrated)."""


class Predictor:
    """Predicted seconds of every model of one library."""

    def __init__(self, library: ast.Library, calibration: Mapping[str, TimeModel],
                 used: Mapping[str, Predictor] | None = None):
        self.library = library
        self.calibration = calibration  # implementation name → its time model
        self.used = dict(used or {})
        self.constants = constant_values(library)
        self._implementations = {i.name: (interface, i) for interface in library.interfaces
                                 for i in interface.implementations}
        self._definitions = {m.name: m for m in library.models}
        self._functions: dict[tuple, Mapping[str, Callable[..., float]]] = {}  # (P, logP) → functions()
        # A hybrid term calls another model at every sample and probe of
        # each fit, with the same arguments fit after fit: its values are
        # kept while the calibration holds the same entries (the fitter
        # replaces an entry when it fits it).
        self._calls: dict[tuple, float] = {}
        self._calls_of: tuple[TimeModel, ...] = ()
        # Each fitted model's terms as evaluated: made once per entry.
        self._plans: dict[tuple[str, str], tuple[TimeModel, Summation, list[ast.Let]]] = {}
        # What a kept term value depends on besides the term and the point.
        self.constants_key = tuple(sorted(self.constants.items()))

    @classmethod
    def of_models(cls, library: ast.Library, models: Models | None,
                  used_models: Mapping[str, Models]) -> Predictor:
        """The predictor of a models artefact, with those of the libraries it
        uses (their artefacts by library name; a missing one predicts nothing)."""
        return cls(library, models.times() if models else {},
                   {name: cls(sub, used_models[name].times() if name in used_models else {})
                    for name, sub in library.used.items()})

    def functions(self, environment: Mapping[str, Any]) -> Mapping[str, Callable[..., float]]:
        """Every model callable from an expression evaluated in ``environment``
        (whose ``P`` and ``logP`` the submodels inherit).  Kept per (P, logP),
        the only part of the environment the table depends on: a prediction
        asks for it once per term, and a build's planning for thousands."""
        context = {"P": environment.get("P", 1), "logP": environment.get("logP", 0.0)}
        key = (context["P"], context["logP"])
        if key not in self._functions:
            self._functions[key] = MappingProxyType(self._table(context))
        return self._functions[key]

    def _table(self, context: dict[str, Any], size: int | None = None) -> dict[str, Callable[..., Any]]:
        """The models a term may call, by name, bound to the caller's P and
        logP (``context``): this library's implementations and ``def``
        models, and by plain and qualified name those of the libraries it
        uses; with ``size``, as functions of arrays of that many points."""
        if size is None:
            implementation, definition, bound = self.implementation, self.definition, (context,)
        else:
            implementation, definition, bound = self._implementation_over, self._definition_over, (context, size)
        table: dict[str, Callable[..., Any]] = {}
        for name in self._implementations:
            table[name] = functools.partial(implementation, name, *bound)
        for name in self._definitions:
            table[name] = functools.partial(definition, name, *bound)
        for library_name, predictor in self.used.items():
            functions = predictor.functions(context) if size is None else predictor.array_functions(context, size)
            for name, function in functions.items():
                if "." not in name:
                    table.setdefault(name, function)
                    table[f"{library_name}.{name}"] = function
        return table

    def definition(self, name: str, context: Mapping[str, Any], *arguments: float) -> float:
        model = self._definitions[name]
        environment = {**self.constants, **context, **dict(zip(model.parameters, arguments, strict=True))}
        return float(evaluate(model.body, environment, self.functions(environment)))

    def implementation(self, name: str, context: Mapping[str, Any], *arguments: float,
                       objective: str = "time") -> float:
        """The implementation's model at its signature's arguments (variables, then parameters)."""
        entries = tuple(self.calibration.values())
        stale = len(entries) != len(self._calls_of) or any(
            a is not b for a, b in zip(entries, self._calls_of, strict=True))
        if stale or len(self._calls) >= MOST_CALLS_KEPT:
            self._calls, self._calls_of = {}, entries
        key = (name, objective, context.get("P", 1), context.get("logP", 0.0), arguments)
        value = self._calls.get(key)
        if value is None:
            interface, implementation = self._implementations[name]
            signature = interface.signature(implementation)
            environment = {**self.constants, **context, **dict(zip(signature, arguments, strict=True))}
            value = self._calls[key] = self.evaluate(name, environment, objective)
        return value

    def evaluate(self, name: str, environment: Mapping[str, Any], objective: str = "time",
                 planned: bool = False) -> float:
        """The implementation's model where variables and parameters are
        given by name in ``environment``; with ``planned``, the time a
        decision plans for: the prediction plus ``TimeModel.plan_deviations``."""
        prediction, planned_time = self._sums(name, environment, objective, planned)
        return planned_time if planned else prediction

    def evaluate_each(self, name: str, environments: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The implementation's time model at each of ``environments``
        (samples'): :meth:`evaluate` at each, the same numbers, valued over
        arrays of the points of one rank count at a time where the model can
        be (:meth:`_implementation_over`), else point by point: a radix
        sort's model at its 600 fitting samples in 3-4 ms, not 26-40 ms."""
        interface, implementation = self._implementations[name]
        signature = interface.signature(implementation)
        values = np.empty(len(environments))
        ranks: dict[tuple[Any, Any], list[int]] = {}
        for position, environment in enumerate(environments):
            ranks.setdefault((environment.get("P", 1), environment.get("logP", 0.0)), []).append(position)
        for (count, log_count), positions in ranks.items():
            try:
                arguments = [np.array([environments[p][variable] for p in positions], dtype=float)
                             for variable in signature]
                values[positions] = self._implementation_over(name, {"P": count, "logP": log_count},
                                                              len(positions), *arguments)
            except (ArrayUnavailable, KeyError, TypeError, ValueError):
                values[positions] = [self.evaluate(name, environments[p]) for p in positions]
        return values

    def prediction_and_planned(self, name: str, environment: Mapping[str, Any]) -> tuple[float, float]:
        """The predicted time and the time a decision plans for, the terms
        valued once for both."""
        return self._sums(name, environment, "time", True)

    def _sums(self, name: str, environment: Mapping[str, Any], objective: str,
              planned: bool) -> tuple[float, float]:
        """The model's value, and with ``planned`` its planned time (else the value again)."""
        _, implementation = self._implementations[name]
        model = implementation.model(objective)
        if model is None:
            raise ModelUnavailable(f"{name} has no {objective} model")
        if not model.fitted:
            environment = self.helpers(implementation, {**self.constants, **environment}, [model.body])
            value = float(evaluate(model.body, environment, self.functions(environment)))
            return value, value
        entry = self.calibration.get(name) if objective == "time" else None
        if entry is None or entry.status != "fitted":
            raise ModelUnavailable(f"the {objective} model of {self.library.name}.{name} is not calibrated")
        planned = planned and entry.weighs_deviations
        sums, lets = self._plan(name, objective, entry)
        environment = self._with_lets({**self.constants, **environment}, lets)
        functions = self.functions(environment)
        total, deviation = add_up(sums, entry.coefficients, entry.plan_deviations if planned else {},
                                  lambda term: float(evaluate(term, environment, functions)))
        return total, (total + deviation if planned else total)

    def _plan(self, name: str, objective: str, entry: TimeModel) -> tuple[Summation, list[ast.Let]]:
        """A fitted model's terms as added up (those of nonzero weight in the
        prediction or in the deviations it plans for, hlc.model.summation)
        and the helpers they need: made once per entry, the same for the
        prediction alone as for the planned time, as the compiled module's."""
        cached = self._plans.get((name, objective))
        if cached is None or cached[0] is not entry:
            _, implementation = self._implementations[name]
            kept = kept_terms(implementation.model(objective), entry)
            cached = self._plans[(name, objective)] = (
                entry, summation(implementation, kept), helpers_for(implementation, kept))
        return cached[1], cached[2]

    def array_functions(self, environment: Mapping[str, Any], size: int) -> dict[str, Callable[..., Any]]:
        """The models callable from an expression valued over arrays of
        ``size`` points (hlc.language.arrays), as functions of arrays: what
        :meth:`functions` calls at one point, the same numbers at each.
        The fitted time models and the ``def`` models of this library and
        of those it uses; a model that is not fitted raises ArrayUnavailable
        when called, and its caller values point by point."""
        return self._table({"P": environment.get("P", 1), "logP": environment.get("logP", 0.0)}, size)

    def _implementation_over(self, name: str, context: Mapping[str, Any], size: int, *arguments: Any) -> np.ndarray:
        """An implementation's fitted time model at its signature's arguments
        over arrays: the sum :meth:`_sums` makes, in its order."""
        interface, implementation = self._implementations[name]
        signature = interface.signature(implementation)
        model = implementation.model("time")
        entry = self.calibration.get(name)
        if len(arguments) != len(signature) or model is None or not model.fitted or entry is None \
                or entry.status != "fitted":
            raise ArrayUnavailable(f"{name}() over arrays")
        scope = {**self.constants, **context, **dict(zip(signature, arguments, strict=True))}
        functions = self.array_functions(scope, size)
        sums, lets = self._plan(name, "time", entry)
        for let in lets:
            scope[let.name] = evaluate_over(let.value, scope, size, functions)
        total, _ = add_up(sums, entry.coefficients, {}, lambda term: evaluate_over(term, scope, size, functions))
        return np.broadcast_to(np.asarray(total, dtype=float), (size,))

    def _definition_over(self, name: str, context: Mapping[str, Any], size: int, *arguments: Any) -> np.ndarray:
        """A ``def`` model over arrays, as :meth:`definition` at each point."""
        model = self._definitions[name]
        if len(arguments) != len(model.parameters):
            raise ArrayUnavailable(f"{name}() over arrays")
        scope = {**self.constants, **context, **dict(zip(model.parameters, arguments, strict=True))}
        return evaluate_over(model.body, scope, size, self.array_functions(scope, size))

    def helpers(self, implementation: ast.Implementation, environment: dict[str, Any],
                needed_by: list[ast.Expression] | None = None) -> dict[str, Any]:
        """``environment`` with the implementation's ``let`` helpers added: all
        of them, or only those the expressions ``needed_by`` depend on."""
        return self._with_lets(environment, implementation.lets if needed_by is None
                               else helpers_for(implementation, needed_by))

    def _with_lets(self, environment: dict[str, Any], lets: Sequence[ast.Let]) -> dict[str, Any]:
        """``environment`` with ``lets`` evaluated in it, in order."""
        functions = self.functions(environment)
        for let in lets:
            environment[let.name] = evaluate(let.value, environment, functions)
        return environment


def term_values(predictor: Predictor, implementation: ast.Implementation, terms: Sequence[ast.Expression],
                environment: Mapping[str, Any], texts: Sequence[str] | None = None) -> dict[str, float]:
    """The value of each of ``terms`` (a fitted model's, :func:`model_terms`)
    at one sample, by its text (``texts``, when the caller has them already).
    The values of terms that call no model are kept (_TERM_VALUES): they
    depend on the term, its implementation's helpers, the constants and the
    point alone."""
    if len(_TERM_VALUES) >= MOST_TERM_VALUES:  # before _calls_no_model holds the implementation again
        _TERM_VALUES.clear()
        _PURE.clear()
    texts = texts if texts is not None else [unparse(t) for t in terms]
    point = (id(implementation), predictor.constants_key, tuple(sorted(environment.items())))
    values: dict[str, float] = {}
    missing = []  # (term, text, whether its value may be kept)
    for term, text in zip(terms, texts, strict=True):
        pure = _calls_no_model(predictor, implementation, term, text)
        kept = _TERM_VALUES.get((text, point)) if pure else None
        if kept is None:
            missing.append((term, text, pure))
        else:
            values[text] = kept
    if not missing:
        return values
    scope = predictor.helpers(implementation, {**predictor.constants, **environment})
    functions = predictor.functions(scope)
    for term, text, pure in missing:
        try:
            values[text] = float(evaluate(term, scope, functions))
        except (EvaluationError, ModelUnavailable) as error:
            raise EvaluationError(f"term '{text}' of {implementation.name}: {error}") from error
        if pure:
            _TERM_VALUES[text, point] = values[text]
    return {text: values[text] for text in texts}


def term_columns(predictor: Predictor, implementation: ast.Implementation, terms: Sequence[ast.Expression],
                 environments: Sequence[Mapping[str, Any]], texts: Sequence[str] | None = None
                 ) -> dict[str, np.ndarray]:
    """The values of ``terms`` at each of ``environments`` (samples, probes),
    by text, as float arrays: :func:`term_values` at each, the same numbers,
    each term valued once over arrays of the environments' values
    (hlc.language.arrays), a model it calls too.  A term that calls a model
    that cannot be valued so is valued point by point; where a helper or a
    term that calls no model cannot be, every term is, so that a failure
    raises what term_values raises.  Valued point by point, the terms
    took a fifth of a fit of the sort library's models."""
    texts = list(texts) if texts is not None else [unparse(t) for t in terms]
    columns = (array_columns(predictor, implementation, terms, texts, environments) if environments else None) or {}
    rest = [(term, text) for term, text in zip(terms, texts, strict=True) if text not in columns]
    if rest:
        rest_terms, rest_texts = [term for term, _ in rest], [text for _, text in rest]
        rows = [term_values(predictor, implementation, rest_terms, environment, rest_texts)
                for environment in environments]
        columns.update({text: np.array([row[text] for row in rows], dtype=float) for text in rest_texts})
    return {text: columns[text] for text in texts}


def array_columns(predictor: Predictor, implementation: ast.Implementation, terms: Sequence[ast.Expression],
                  texts: Sequence[str], environments: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray] | None:
    """The terms valued over arrays, with every helper of the implementation
    first, as term_values values them at each point: those that call a
    model through the predictor's functions of arrays, and where one of
    those cannot be, it is left out (for the caller to value point by
    point); None where a helper or a term that calls no model cannot be."""
    keys = environments[0].keys()
    if any(environment.keys() != keys for environment in environments):
        return None
    size = len(environments)
    try:
        scope: dict[str, Any] = dict(predictor.constants)
        scope.update({name: np.array([environment[name] for environment in environments], dtype=float)
                      for name in keys})
        functions = predictor.array_functions(scope, size)
        for let in implementation.lets:
            scope[let.name] = evaluate_over(let.value, scope, size, functions)
    except (ArrayUnavailable, TypeError, ValueError):
        return None
    columns = {}
    for term, text in zip(terms, texts, strict=True):
        try:
            columns[text] = evaluate_over(term, scope, size, functions)
        except ArrayUnavailable:
            if _calls_no_model(predictor, implementation, term, text):
                return None
    return columns


def _calls_no_model(predictor: Predictor, implementation: ast.Implementation, term: ast.Expression,
                    text: str) -> bool:
    """Whether ``term`` and the helpers it reads call only built-in functions
    (no model of this library or of one it uses): its value is then the
    same whatever the models' coefficients."""
    entry = _PURE.get((id(implementation), text))
    if entry is None or entry[0] is not implementation:
        expressions = [term, *(let.value for let in helpers_for(implementation, [term]))]
        pure = all(call.function in BUILTINS and "." not in call.function
                   and call.function not in predictor.functions({})
                   for expression in expressions for call in calls(expression))
        entry = _PURE[id(implementation), text] = (implementation, pure)
    return entry[1]


def band(predictor: Predictor, implementation: ast.Implementation, entry: TimeModel,
         environment: Mapping[str, Any], objective: str = "time") -> float | None:
    """Half-width of the confidence band of the predicted mean, t · sqrt(xᵀ Σ x),
    at one point (variables and parameters by name in ``environment``), from
    the implementation's time model; ``None`` when it is not
    known (a factored model, a model that is not fitted, an artefact written
    before bands were recorded).  The terms' values are taken as exact: the
    uncertainty of other models a hybrid term calls is not included."""
    model = implementation.model(objective)
    if model is None or not model.fitted or not entry.has_band:
        return None
    values = term_values(predictor, implementation, model_terms(model, entry.discovered), environment)
    return band_of(entry, values)


def band_of(entry: TimeModel, values: Mapping[str, float]) -> float:
    """The band's half-width (see ``band``) from the terms' values at the point."""
    return Covariance.of(entry).band(values)


@dataclass(frozen=True)
class Covariance:
    """A fitted model's covariance as a matrix, with its terms in order and
    the band's t quantile: what ``band_of`` needs at every point, made once
    for a model that is asked at thousands (a round's planning)."""

    terms: tuple[str, ...]
    matrix: np.ndarray
    quantile: float

    @classmethod
    def of(cls, entry: TimeModel) -> Covariance:
        terms = tuple(entry.covariance)
        matrix = np.array([[entry.covariance[a][b] for b in terms] for a in terms], dtype=float)
        return cls(terms, matrix.reshape(len(terms), len(terms)), float(entry.quantile or 0.0))

    def band(self, values: Mapping[str, float]) -> float:
        """t · sqrt(xᵀ Σ x) at the point whose terms have ``values``."""
        x = np.array([1.0 if term == CONSTANT else values[term] for term in self.terms], dtype=float)
        return self.quantile * math.sqrt(max(float(x @ self.matrix @ x), 0.0))


def sum_of_terms(entry: TimeModel, values: Mapping[str, float]) -> float:
    """A fitted model's prediction from its terms' values at the point."""
    coefficients = entry.coefficients
    return coefficients.get(CONSTANT, 0.0) + sum(
        weight * values[term] for term, weight in coefficients.items() if term != CONSTANT and weight)


def helpers_for(implementation: ast.Implementation, expressions: list[ast.Expression]) -> list[ast.Let]:
    """The helpers ``expressions`` depend on, directly or through other helpers,
    in definition order."""
    needed = {n.id for expression in expressions for n in names(expression)}
    for let in reversed(implementation.lets):
        if let.name in needed:
            needed |= {n.id for n in names(let.value)}
    return [let for let in implementation.lets if let.name in needed]
