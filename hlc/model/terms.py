"""The terms of a fitted model: those written in the description, then those
the fitter discovered (recorded in the models artefact as
:class:`~hlc.artefacts.models.Discovered` values).

Every stage that evaluates, prints or explains a fitted model takes its
terms from :func:`model_terms`, so a discovered term is an expression like
any written one: ``n * (log2(n) >= 18.25)`` is evaluated, rendered as C and
Python, and explained the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from hlc.artefacts.models import Discovered, Factor, TimeModel
from hlc.language import ast
from hlc.language.expressions import unparse
from hlc.language.functions import MATH


def _number(value: float) -> ast.Number:
    return ast.Number(0, 0, int(value) if float(value).is_integer() else float(value))


def factor_variable(factor: Factor, expressions: Mapping[str, ast.Expression] | None = None) -> ast.Expression:
    """What a factor steps or bends in: its variable (a name, or the text of
    a family's expression, found in ``expressions``), in log2 for a log factor."""
    x: ast.Expression = (expressions or {}).get(factor.variable) or ast.Name(0, 0, factor.variable)
    return ast.Call(0, 0, "log2", (x,)) if factor.log else x


def factor_expression(factor: Factor,
                      expressions: Mapping[str, ast.Expression] | None = None) -> ast.Expression:
    """``(log2(n) >= 18.25)``, ``max(0, log2(n) - 18.25)``, ``(bpd >= 9)`` or
    ``max(0, 1 - abs(bits - 6))``."""
    x = factor_variable(factor, expressions)
    if factor.kind == "step":
        return ast.Binary(0, 0, ">=", x, _number(factor.knot), parenthesized=True)
    if factor.kind == "tent":
        distance: ast.Expression = ast.Call(0, 0, "abs", (ast.Binary(0, 0, "-", x, _number(factor.knot)),))
        if factor.width != 1:
            distance = ast.Binary(0, 0, "/", distance, _number(factor.width))
        return ast.Call(0, 0, "max", (ast.Number(0, 0, 0), ast.Binary(0, 0, "-", ast.Number(0, 0, 1), distance)))
    return ast.Call(0, 0, "max", (ast.Number(0, 0, 0), ast.Binary(0, 0, "-", x, _number(factor.knot))))


def discovered_expression(written: Mapping[str, ast.Expression], term: Discovered,
                          expressions: Mapping[str, ast.Expression] | None = None) -> ast.Expression:
    """The written term ``term.base`` ("1": none) times each of its factors."""
    factors = [factor_expression(f, expressions) for f in term.factors]
    if term.base == "1" and not factors:
        return ast.Number(0, 0, 1)
    expression = factors[0] if term.base == "1" else written[term.base]
    for factor in factors[1:] if term.base == "1" else factors:
        expression = ast.Binary(0, 0, "*", expression, factor)
    return expression


def model_terms(model: ast.CostModel, discovered: Sequence[Discovered] = ()) -> list[ast.Expression]:
    """The written terms of a fitted model, then the ``discovered`` ones."""
    terms = list(model.terms)
    if discovered:
        written, expressions = discovery_names(model)
        terms += [discovered_expression(written, term, expressions) for term in discovered]
    return terms


def discovery_names(model: ast.CostModel) -> tuple[dict[str, ast.Expression], dict[str, ast.Expression]]:
    """What a discovered term's texts name in ``model``: its bases (the
    written terms and the families' bases) and its factors' variables (the
    families' expressions)."""
    written = {unparse(f.base): f.base for f in model.families if f.base is not None}
    written.update({unparse(term): term for term in model.terms})
    expressions = {unparse(family.expression): family.expression for f in model.families for family in f.families}
    return written, expressions


def in_seconds(value: float) -> str:
    """``|value|`` in the largest unit of seconds it reaches: ``2.1 ns``, ``865 µs``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(value) >= scale:
            return f"{abs(value) / scale:.3g} {unit}"
    return f"{abs(value) / 1e-12:.3g} ps"


def _in_octaves(factor: Factor) -> str | None:
    """The variable a factor is in octaves of: its own when discovered in
    log2, the argument of a family's ``log2(x)``; None otherwise."""
    if factor.log:
        return factor.variable
    match = re.fullmatch(r"log2\((\w+)\)", factor.variable)
    return match.group(1) if match else None


#: Below this, a step of a variable that takes whole numbers is told by the
#: first whole number it holds at: "from k = 2", not "from k = 2^0.5 (1.41)".
SMALL_WHOLE = 100


def _where(factor: Factor) -> str:
    knot = factor.knot
    octaves = _in_octaves(factor)
    if octaves is not None:
        value = 2 ** knot  # a knot lies between two sampled values: 2^0.5 is no "1"
        if factor.whole and factor.kind == "step" and value < SMALL_WHOLE:
            return f"{octaves} = {math.ceil(value - 1e-9)}"
        shown = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
        return f"{octaves} = 2^{knot:g} ({shown})"
    return f"{factor.variable} = {knot:g}"


def _calls_a_model(base: str) -> bool:
    """Whether a written term calls another implementation's model (a
    hybrid term, ``radix(n, width, bpd)``): its value is a time, so its
    coefficient is a multiple of that time, not a cost in seconds."""
    return any(name not in MATH for name in re.findall(r"([A-Za-z_]\w*)\s*\(", base))


def describe(term: Discovered, coefficient: float) -> str:
    """A discovered term in words: "the cost per n rises by 2.1 ns from
    n = 2^18.25 (311,744)"; "… grows by 0.4 ns per octave of n beyond …";
    "… is 1.2 ns more at bits = 6, the difference falling to none 1 away".
    Over a term that calls another model the change is a multiple of that
    model's time: "the cost, in multiples of radix(n, width, bpd), grows
    by 0.223 per octave of n beyond …"."""
    multiple = _calls_a_model(term.base)
    per = ("the constant cost" if term.base == "1"
           else f"the cost, in multiples of {term.base}," if multiple else f"the cost per {term.base}")
    amount = f"{abs(coefficient):.3g}" if multiple else in_seconds(coefficient)
    *conditions, last = term.factors
    # A step among the first factors says where the change holds; a hinge,
    # that the change grows with that variable too; a tent, that it holds
    # near one value.
    where = "".join(f" where {_where(f)} or more" if f.kind == "step"
                    else f" near {_where(f)}" if f.kind == "tent"
                    else f", {_per(f)} beyond {_where(f)}," for f in conditions)
    change = "rises" if coefficient > 0 else "falls"
    if last.kind == "step":
        return f"{per}{where} {change} by {amount} from {_where(last)}"
    if last.kind == "tent":
        return f"{per}{where} is {amount} {'more' if coefficient > 0 else 'less'} at " \
               f"{_where(last)}, the difference falling to none {_span(last)} away"
    return f"{per}{where} {'grows' if coefficient > 0 else 'shrinks'} by {amount} {_per(last)} " \
           f"beyond {_where(last)}"


def _span(factor: Factor) -> str:
    """How far a tent reaches, in words: "1", "0.5 octave"."""
    if _in_octaves(factor) is None:
        return f"{factor.width:g}"
    return f"{factor.width:g} octave{'' if factor.width <= 1 else 's'}"


def _per(factor: Factor) -> str:
    octaves = _in_octaves(factor)
    return f"per octave of {octaves}" if octaves is not None else f"per unit of {factor.variable}"


def discovered_in_words(model: TimeModel) -> list[str]:
    """Each kept discovered term of a fitted model, in words.  The model's
    ``terms`` end with the discovered ones, in the order of ``discovered``."""
    found = model.discovered
    names = model.terms[-len(found):] if found else ()
    return [describe(term, model.coefficients[name]) for term, name in zip(found, names, strict=True)
            if model.coefficients.get(name)]
