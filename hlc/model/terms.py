"""The terms of a fitted model: those written in the description, then those
the fitter discovered (recorded in the models artefact as specs).

Every stage that evaluates, prints or explains a fitted model takes its
terms from :func:`model_terms`, so a discovered term is an expression like
any written one: ``n * (log2(n) >= 18.25)`` is evaluated, rendered as C and
Python, and explained the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlc.language import ast
from hlc.language.expressions import unparse


def _number(value: float) -> ast.Number:
    return ast.Number(0, 0, int(value) if float(value).is_integer() else float(value))


def factor_expression(spec: Mapping[str, Any]) -> ast.Expression:
    """``(log2(n) >= 18.25)``, ``max(0, log2(n) - 18.25)`` or ``(bpd >= 9)``."""
    x: ast.Expression = ast.Name(0, 0, spec["variable"])
    if spec["log"]:
        x = ast.Call(0, 0, "log2", (x,))
    if spec["kind"] == "step":
        return ast.Binary(0, 0, ">=", x, _number(spec["knot"]), parenthesized=True)
    return ast.Call(0, 0, "max", (ast.Number(0, 0, 0), ast.Binary(0, 0, "-", x, _number(spec["knot"]))))


def discovered_expression(written: Mapping[str, ast.Expression], spec: Mapping[str, Any]) -> ast.Expression:
    """The written term ``spec["base"]`` ("1": none) times each of its factors."""
    factors = [factor_expression(f) for f in spec["factors"]]
    expression = factors[0] if spec["base"] == "1" else written[spec["base"]]
    for factor in factors[1:] if spec["base"] == "1" else factors:
        expression = ast.Binary(0, 0, "*", expression, factor)
    return expression


def model_terms(model: ast.CostModel, entry: Mapping[str, Any] | None) -> list[ast.Expression]:
    """The written terms of a fitted model, then the discovered ones."""
    terms = list(model.terms)
    specs = (entry or {}).get("discovered", [])
    if specs:
        written = {unparse(term): term for term in terms}
        terms += [discovered_expression(written, spec) for spec in specs]
    return terms
