"""How a fitted model's sum is valued where a decision searches a parameter.

A decision values an implementation's model once for every candidate value
of its searched parameters, and most of each term does not change from one
candidate to the next: the terms without a parameter, and in a term such as
``n * iter * max(0, bits - 9) * max(0, log2(n) - 19)`` the factors ``n`` and
``max(0, log2(n) - 19)``.  A :class:`Summation` splits the sum so that a
call values those once: the terms without a parameter sum to a fixed part,
and the terms with one are grouped by the product of their factors that
vary, each group's *weight* being the sum of its terms' coefficients times
their fixed factors.  A candidate then costs one product per group (the
radix sort's 29 terms of one build took 15) instead of one per term.

The compiled module (hlc.dispatch.cmodels) and the Python predictor
(hlc.model.predict) both add in this order, operation for operation, so
that the two decide exactly alike.  For an implementation without
parameters every term is fixed, and the sum is the model's own, in its
order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hlc.artefacts.models import TimeModel
from hlc.language import ast
from hlc.language.expressions import names, unparse
from hlc.model.terms import model_terms


@dataclass(frozen=True)
class Part:
    """One term of a group: its text (its coefficients' key) and its factors
    that do not vary, multiplied in order (None: the term has none)."""

    text: str
    fixed: ast.Expression | None


@dataclass(frozen=True)
class Group:
    """The terms whose varying factors multiply to the same ``factor``."""

    factor: ast.Expression
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return unparse(self.factor)


@dataclass(frozen=True)
class Summation:
    """A model's terms (constant excluded) in the order they are added:
    ``fixed`` (text, term) first, then each group's."""

    fixed: tuple[tuple[str, ast.Expression], ...]
    groups: tuple[Group, ...]

    @property
    def split(self) -> bool:
        """Whether any term varies with a parameter."""
        return bool(self.groups)


def varying_names(implementation: ast.Implementation) -> set[str]:
    """The implementation's parameters and the helpers that depend on them."""
    varying = {p.name for p in implementation.parameters}
    for let in implementation.lets:
        if any(n.id in varying for n in names(let.value)):
            varying.add(let.name)
    return varying


def factors(term: ast.Expression) -> list[ast.Expression]:
    """The factors of a product, in order (the term itself if it is none)."""
    if isinstance(term, ast.Binary) and term.operator == "*":
        return factors(term.left) + factors(term.right)
    return [term]


def product(parts: Sequence[ast.Expression]) -> ast.Expression | None:
    """The factors multiplied left to right; None for none."""
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = ast.Binary(part.line, part.column, "*", result, part)
    return result


def summation(implementation: ast.Implementation, terms: Sequence[ast.Expression]) -> Summation:
    """How the sum of ``terms`` (the kept terms of its model, in the model's
    order) is added up."""
    varying = varying_names(implementation)

    def varies(expression: ast.Expression) -> bool:
        return any(n.id in varying for n in names(expression))

    fixed: list[tuple[str, ast.Expression]] = []
    groups: dict[str, tuple[ast.Expression, list[Part]]] = {}
    for term in terms:
        text = unparse(term)
        if not varies(term):
            fixed.append((text, term))
            continue
        moving: list[ast.Expression] = []
        still: list[ast.Expression] = []
        for factor in factors(term):
            (moving if varies(factor) else still).append(factor)
        factor = product(moving)
        assert factor is not None
        groups.setdefault(unparse(factor), (factor, []))[1].append(Part(text, product(still)))
    return Summation(tuple(fixed), tuple(Group(factor, tuple(parts)) for factor, parts in groups.values()))


def kept_terms(model: ast.CostModel, entry: TimeModel) -> list[ast.Expression]:
    """The terms of a fitted model that its sums add, in the model's order:
    those of nonzero weight in the prediction or in the deviations a
    decision plans for (TimeModel.plan_deviations)."""
    weights = (entry.coefficients, entry.plan_deviations)
    return [term for term in model_terms(model, entry.discovered) if any(w.get(unparse(term)) for w in weights)]


def add_up(sums: Summation, coefficients: Mapping[str, float], deviations: Mapping[str, float],
           value: Callable[[ast.Expression], float]) -> tuple[float, float]:
    """The model's prediction and the sum of its deviations (``deviations``:
    empty where none is wanted), each term valued by ``value``: what the
    compiled module adds, in its order."""
    total, deviation = coefficients.get("1", 0.0), deviations.get("1", 0.0)
    for text, term in sums.fixed:
        x = value(term)
        if coefficients.get(text):
            total += coefficients[text] * x
        if deviations.get(text):
            deviation += deviations[text] * x
    for group in sums.groups:
        weight = spread = None
        for part in group.parts:
            x = 1.0 if part.fixed is None else value(part.fixed)
            if coefficients.get(part.text):
                weight = coefficients[part.text] * x if weight is None else weight + coefficients[part.text] * x
            if deviations.get(part.text):
                spread = deviations[part.text] * x if spread is None else spread + deviations[part.text] * x
        x = value(group.factor)
        if weight is not None:
            total += weight * x
        if spread is not None:
            deviation += spread * x
    return total, deviation
