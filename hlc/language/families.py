"""The knots of a family of candidate terms (``hinges(log2(n) at 10 .. 22 += 0.5)``).

A family written with ``at`` offers the fitter a factor at each knot of its
range; the range advances as a profile loop does, but its values may be
fractional (half octaves).  Without ``at``, the fitter takes the knots from
the samples (:mod:`hlc.model.discover`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hlc.language import ast
from hlc.language.expressions import evaluate

#: Knots one family may offer: more is a grid to search, not a family.
MOST_KNOTS = 256
#: Members a term with two families may offer (the products of their knots).
MOST_MEMBERS = 4096
FAMILY_KINDS = ("steps", "hinges")


def family_knots(family: ast.Family, constants: Mapping[str, Any]) -> list[float]:
    """The knots of ``family``'s ``at`` range, ascending (empty without ``at``).

    The update defaults to ``++`` (every integer); ``*=`` and ``<<=`` need a
    positive start.  Raises ValueError for an update that would not advance
    and EvaluationError for bounds that are not constants."""
    if family.knots is None:
        return []
    low = float(evaluate(family.knots.low, constants))
    high = float(evaluate(family.knots.high, constants))
    update = family.update
    operator = update.operator if update is not None else "++"
    amount = float(evaluate(update.amount, constants)) if update is not None and update.amount is not None else 1.0
    if operator in ("+=", "++") and amount <= 0:
        raise ValueError(f"the knots must advance: += {amount:g}")
    if operator == "*=" and (amount <= 1 or low <= 0):
        raise ValueError(f"the knots must grow: *= {amount:g} from {low:g}")
    if operator == "<<=" and (amount <= 0 or low <= 0):
        raise ValueError(f"the knots must grow: <<= {amount:g} from {low:g}")
    knots: list[float] = []
    value = low
    while value <= high * (1 + 1e-12) + 1e-12 and len(knots) <= MOST_KNOTS:
        knots.append(round(value, 9))
        if operator in ("++", "+="):
            value = low + len(knots) * amount  # no drift from repeated adding
        elif operator == "*=":
            value *= amount
        else:
            value *= 2 ** amount
        if not math.isfinite(value):
            break
    return knots
