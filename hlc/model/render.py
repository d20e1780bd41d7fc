"""A calibrated model as Python and as C source (thesis Table 3-6).

The rendering is what a reader checks a surprising choice against: the
helpers, then the sum of the kept terms with their fitted coefficients, the
accuracy in a comment.  Other models appear as calls (``time_comm_BlockTransfer``).
"""

from __future__ import annotations

import functools
from typing import Any

from hlc.artefacts.models import TimeModel
from hlc.language import ast
from hlc.language.expressions import to_c, to_python, unparse
from hlc.model.predict import helpers_for
from hlc.model.terms import model_terms


def function_name(model: str, objective: str = "time") -> str:
    """``time_radix``; ``time_comm_BlockTransfer`` for a used library's model."""
    return f"{objective}_{model.replace('.', '_')}"


def _spell_call(call: ast.Call, arguments: list[str]) -> str | None:
    from hlc.language.functions import BUILTINS

    if call.function in BUILTINS:
        return None
    return f"{function_name(call.function)}({', '.join(arguments + ['P', 'logP'])})"


def _accuracy(entry: TimeModel) -> str:
    parts = []
    if entry.mre is not None:
        parts.append(f"MRE {entry.mre:.3f}")
    if entry.verification_mre is not None:
        parts.append(f"verification MRE {entry.verification_mre:.3f}")
    return ", ".join(parts) or "not verified"


def model_sum(model: ast.CostModel, entry: TimeModel, spell: Any) -> str:
    """The model's value as source: the kept terms with their coefficients, or
    the factored expression; ``spell`` prints an expression."""
    if not model.fitted:
        return spell(model.body)
    coefficients = entry.coefficients
    parts = [repr(coefficients["1"])] if "1" in coefficients else []
    for term in model_terms(model, entry.discovered):
        beta = coefficients.get(unparse(term))
        if beta:
            parts.append(f"{beta!r} * {spell(term) if atomic(term) else '(' + spell(term) + ')'}")
    return " + ".join(parts) or "0.0"


def atomic(term: ast.Expression) -> bool:
    """Whether ``coefficient * term`` needs no parentheses around the term."""
    return isinstance(term, ast.Name | ast.Call | ast.Number) or (
        isinstance(term, ast.Binary) and term.operator in ("*", "**"))


def used_helpers(implementation: ast.Implementation, model: ast.CostModel, entry: TimeModel) -> list[ast.Let]:
    """The helpers the kept terms need, in definition order (with their own needs)."""
    kept = [t for t in model_terms(model, entry.discovered) if entry.coefficients.get(unparse(t))] if model.fitted \
        else [model.body]
    return helpers_for(implementation, kept)


def python_source(interface: ast.Interface, implementation: ast.Implementation, entry: TimeModel,
                  objective: str = "time") -> str:
    model = implementation.model(objective)
    signature = interface.signature(implementation)
    arguments = ", ".join([*signature, "P=1", "logP=0.0"])
    lines = [f"def {function_name(implementation.name, objective)}({arguments}):  # {_accuracy(entry)}"]
    spell = functools.partial(to_python, spell_call=_spell_call)
    for let in used_helpers(implementation, model, entry):
        lines.append(f"    {let.name} = {spell(let.value)}")
    lines.append(f"    return {model_sum(model, entry, spell)}")
    return "\n".join(lines) + "\n"


def c_source(interface: ast.Interface, implementation: ast.Implementation, entry: TimeModel,
             objective: str = "time") -> str:
    model = implementation.model(objective)
    signature = interface.signature(implementation)
    arguments = ", ".join(f"double {name}" for name in [*signature, "P", "logP"])
    lines = [f"static inline double {function_name(implementation.name, objective)}({arguments}) {{ "
             f"/* {_accuracy(entry)} */"]
    spell = functools.partial(to_c, spell_call=_spell_call)
    for let in used_helpers(implementation, model, entry):
        lines.append(f"    double {let.name} = {spell(let.value)};")
    lines.append(f"    return {model_sum(model, entry, spell)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
