"""A readable account of a checked description (what ``hlc check`` prints).

It lists what the later stages will do: the implementations and their
parameters, the terms each model offers the fitter, and how many samples the
profile will take for each rank count.
"""

from __future__ import annotations

from hlc.language import ast
from hlc.language.expressions import family_text, unparse
from hlc.language.nest import constant_values, count_points, loop_values, relevant_loops


def _plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {nouns or noun + 's'}"


def _range(range_: ast.Range) -> str:
    return f"{unparse(range_.low)} .. {unparse(range_.high)}"


def _optimization(implementation: ast.Implementation, parameter: ast.Parameter) -> str:
    rule = implementation.optimization(parameter.name)
    if rule is None:
        return "minimizing time (default)"
    if rule.method == "root":
        return f"root of {unparse(rule.objective)}"
    text = f"minimizing {unparse(rule.objective)}"
    if rule.over is not None:
        text += f" over {rule.over.variable} in {_range(rule.over.range)} with " \
                f"{rule.over.target} = {unparse(rule.over.value)}"
    return text


def _model(model: ast.CostModel) -> str:
    if not model.fitted:
        return f"{model.objective} = {unparse(model.body)}  (factored: not fitted)"
    terms = (["1"] if model.constant else []) + [unparse(t) for t in model.terms]
    text = f"{model.objective} ~ {_plural(len(terms), 'term')}: {', '.join(terms)}"
    if model.families:
        families = [" * ".join(([unparse(f.base)] if f.base is not None else [])
                               + [family_text(family) for family in f.families]) for f in model.families]
        text += f"; {_plural(len(families), 'family', 'families')}: {', '.join(families)}"
    return text


def _loop(loop: ast.Loop, constants: dict) -> str:
    update = loop.update.operator + ("" if loop.update.amount is None else f" {unparse(loop.update.amount)}")
    try:
        count = _plural(len(loop_values(loop, constants)), "value")
    except Exception:  # bounds that depend on outer loops
        count = "depends on outer loops"
    drawn = "random points log-uniform" if loop.drawn == "log" else "random points uniform"
    return f"{loop.variable} in {_range(loop.range)} {update} ({count}; {drawn})"


def describe(library: ast.Library) -> str:
    """The summary of ``library`` as text."""
    lines = [f"{library.filename}: library {library.name}" + (f" — {library.doc.splitlines()[0]}"
                                                                 if library.doc else "")]
    if library.uses:
        lines.append("  uses " + ", ".join(u.library for u in library.uses))
    for model in library.models:
        lines.append(f"  model {model.name}({', '.join(model.parameters)}) = {unparse(model.body)}")
    constants = constant_values(library)
    for interface in library.interfaces:
        arguments = ", ".join(f"{a.name}: {'mutable ' if a.mutable else ''}{a.type}" for a in interface.arguments)
        returns = f" -> {interface.returns}" if interface.returns else ""
        lines.append(f"  interface {interface.name}({arguments}){returns}")
        if interface.variables:
            lines.append("    variables: " + ", ".join(f"{'uniform ' if v.uniform else ''}{v.name} = {unparse(v.value)}"
                                                     for v in interface.variables))
        for implementation in interface.implementations:
            reference = " [reference]" if interface.reference_implementation is implementation else ""
            lines.append(f"    implementation {implementation.name} → {implementation.callable}{reference}")
            for parameter in implementation.parameters:
                where = _range(parameter.range) if parameter.range else "?"
                lines.append(f"      parameter {parameter.name} in {where}, chosen by "
                             f"{_optimization(implementation, parameter)}")
            for requirement in implementation.requires:
                lines.append(f"      requires {unparse(requirement)}")
            for model in implementation.models:
                lines.append(f"      {_model(model)}")
        profile = interface.profile
        if profile is None:
            continue
        lines.append(f"    profile: {_plural(len(profile.loops), 'loop')}; verify {profile.verify}, "
                     f"repeat {profile.repeat}, ranks {', '.join(map(str, profile.ranks))}, "
                     f"timeout {profile.timeout:g} s")
        for loop in profile.loops:
            lines.append(f"      for {_loop(loop, constants)}")
        fitting_total = verify_total = 0
        searched = False
        for implementation in interface.implementations:
            if not any(m.fitted for m in implementation.models):
                continue
            count = count_points(relevant_loops(interface, implementation.name), constants)
            fitting_total += count
            verify_total += profile.verify
            # a searched parameter is timed only at the loop's values its search can propose
            bound = "at most " if implementation.searches() else ""
            searched = searched or bool(bound)
            lines.append(f"      {implementation.name}: {bound}{count:,} fitting + {profile.verify} verification "
                         f"samples per rank count")
        per_rank = fitting_total + verify_total
        bound = "at most " if searched else ""
        lines.append(f"      per rank count: {bound}{fitting_total:,} fitting + {verify_total:,} verification; "
                     f"{_plural(len(profile.ranks), 'rank count')}: {bound}{per_rank * len(profile.ranks):,} "
                     f"samples in all")
    return "\n".join(lines)

