"""Description → profiling program (``templates/profile.py.j2``).

This module only prepares what the template substitutes: names, and
expressions already printed as Python.  Loop nests become ``while`` loops, one
level of indentation per loop, exactly as the loop semantics say (start, run
while ≤ stop, update).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from hlc.codegen import import_loads, py, render, safe
from hlc.language import ast
from hlc.language.expressions import names

_UPDATE = {"++": "+= 1", "+=": "+=", "*=": "*=", "<<=": "<<="}


def _used(expressions: Iterable[ast.Expression | None]) -> set[str]:
    return {n.id for e in expressions if e is not None for n in names(e)}


def _unpack(source: str, wanted: Iterable[str], available: Sequence[str]) -> list[str]:
    """``n = _variables["n"]`` for each available name an expression uses."""
    wanted = set(wanted)
    return [f'{safe(name)} = {source}["{name}"]' for name in available if name in wanted]


def _loop_block(loops: Sequence[ast.Loop], innermost: list[str], indent: int) -> str:
    """Nested while loops around ``innermost`` lines."""
    lines: list[str] = []
    for depth, loop in enumerate(loops):
        pad = "    " * (indent + depth)
        lines.append(f"{pad}{safe(loop.variable)} = {py(loop.range.low)}")
        lines.append(f"{pad}while {safe(loop.variable)} <= {py(loop.range.high)}:")
    pad = "    " * (indent + len(loops))
    lines += [pad + line for line in innermost]
    for depth in range(len(loops) - 1, -1, -1):
        loop = loops[depth]
        amount = "" if loop.update.amount is None else " " + py(loop.update.amount)
        lines.append("    " * (indent + depth + 1) + f"{safe(loop.variable)} {_UPDATE[loop.update.operator]}{amount}")
    return "\n".join(lines)


def _dictionary(keys: Iterable[str]) -> str:
    return "{" + ", ".join(f'"{k}": {safe(k)}' for k in keys) + "}"


def _parameter_checks(implementation: ast.Implementation) -> str:
    """The parameters' declared ranges, which may depend on the variables."""
    checks = [f"{py(p.range.low)} <= {safe(p.name)} <= {py(p.range.high)}"
              for p in implementation.parameters if p.range is not None]
    return " and ".join(checks)


def _implementation(interface: ast.Interface, implementation: ast.Implementation,
                    imports: dict[str, ast.Import]) -> dict:
    loops = interface.profile.loops
    point_names = [loop.variable for loop in loops if loop.variable not in _parameter_names(interface)]
    variable_names = [v.name for v in interface.variables] + ["P", "logP"]
    own = [loop for loop in loops if loop.variable in {p.name for p in implementation.parameters}]
    checks = _parameter_checks(implementation)
    bounds = [e for loop in own for e in (loop.range.low, loop.range.high, loop.update.amount)]
    ranges = [e for p in implementation.parameters if p.range for e in (p.range.low, p.range.high)]
    unpack = _unpack("_point", _used(bounds), point_names) + _unpack("_variables", _used(ranges), variable_names)
    result = _dictionary(p.name for p in implementation.parameters)
    innermost = ([f"if {checks}:", f"    yield {result}"] if checks else [f"yield {result}"])
    settings = "\n".join("    " + line for line in unpack) + ("\n" if unpack else "")
    settings += _loop_block(own, innermost, 1)
    random_lines = unpack + [f"{safe(loop.variable)} = _rng.randint({py(loop.range.low)}, {py(loop.range.high)})"
                             for loop in own]
    if checks:
        random_lines.append(f"if not ({checks}):")
        random_lines.append("    return None")
    random_lines.append(f"return {result}")
    choices = _choices(implementation, variable_names)
    requires = " and ".join(f"({py(r)})" if len(implementation.requires) > 1 else py(r)
                            for r in implementation.requires)
    if "." in implementation.callable and implementation.callable not in imports:
        module, _, attribute = implementation.callable.rpartition(".")
        call = f'harness.load_attribute("{module}", "{attribute}")'
    else:
        call = safe(implementation.callable)
    return {
        "name": implementation.name, "prefix": safe(implementation.name), "callable": implementation.callable,
        "call": call, "requires": requires, "parameters": [p.name for p in implementation.parameters],
        "applies_unpack": _unpack("_variables", _used(implementation.requires), variable_names),
        "settings": settings, "random_lines": random_lines, "choices": choices,
    }


def _choices(implementation: ast.Implementation, variable_names: Sequence[str]) -> list[str]:
    """The body of ``<impl>_choices``: the settings the dispatcher chooses among.
    A parameter chosen by a search ``over i … with p = VALUE`` takes each
    distinct VALUE inside its range (the search's candidates; a profile loop
    over p may time values the search never proposes, and where the
    implementation makes them the same computation, timing each again only
    adds noise); the other parameters take their profile loops' values."""
    searched = [(p, rule.over) for p in implementation.parameters
                if (rule := implementation.optimization(p.name)) is not None and rule.over is not None]
    prefix = safe(implementation.name)
    if not searched:
        return [f"yield from {prefix}_settings(_point, _variables)"]
    expressions = [e for p, over in searched for e in (over.range.low, over.range.high, over.value,
                                                        p.range.low, p.range.high)]
    lines = _unpack("_variables", _used(expressions), variable_names)
    lines.append("_searched = {}")
    for parameter, over in searched:
        step, low, high = safe(over.variable), py(parameter.range.low), py(parameter.range.high)
        lines += [f"_values = {{int({py(over.value)}) for {step} in range({py(over.range.low)}, "
                  f"{py(over.range.high)} + 1)}}",
                  f'_searched["{parameter.name}"] = sorted(v for v in _values if {low} <= v <= {high}) or [{low}]']
    lines += ["_seen = []",
              f"for _setting in {prefix}_settings(_point, _variables):",
              "    for _combination in itertools.product(*_searched.values()):",
              "        _choice = {**_setting, **dict(zip(_searched, _combination))}",
              "        if _choice not in _seen:",
              "            _seen.append(_choice)",
              "            yield _choice"]
    return lines


def _parameter_names(interface: ast.Interface) -> set[str]:
    return {p.name for impl in interface.implementations for p in impl.parameters}


def _interface(interface: ast.Interface, imports: dict[str, ast.Import]) -> dict:
    profile = interface.profile
    parameters = _parameter_names(interface)
    base = [loop for loop in profile.loops if loop.variable not in parameters]
    point_names = [loop.variable for loop in base]
    point = _dictionary(point_names)
    argument_expressions = [let.value for let in profile.lets] + [b.value for b in profile.builds]
    argument_lines = _unpack("_point", _used(argument_expressions), point_names)
    if "logP" in _used(argument_expressions):
        argument_lines.append("logP = math.log2(P)")
    argument_lines += [f"{safe(let.name)} = {py(let.value)}" for let in profile.lets]
    builds = {b.argument: b for b in profile.builds}
    argument_lines += [f"{safe(a.name)} = {py(builds[a.name].value)}" for a in interface.arguments]
    arguments = [safe(a.name) for a in interface.arguments]

    def action(expressions: tuple[ast.Expression, ...]) -> list[str]:
        if not expressions:
            return []
        lines = _unpack("_point", _used(expressions), point_names)
        if "logP" in _used(expressions):
            lines.append("logP = math.log2(P)")
        lines.append(f"{', '.join(arguments)}{',' if len(arguments) == 1 else ''} = _arguments")
        return lines + [py(e) for e in expressions]

    signature = f"{interface.name}({', '.join(f'{a.name}: {a.type}' for a in interface.arguments)})"
    return {
        "name": safe(interface.name), "signature": signature,
        "loops": _loop_block(base, [f"yield {point}"], 1),
        "draws": [(safe(loop.variable), py(loop.range.low), py(loop.range.high)) for loop in base],
        "point": point, "argument_lines": argument_lines,
        "argument_tuple": ", ".join(arguments) + ("," if len(arguments) == 1 else ""),
        "parameter_list": ", ".join(arguments),
        "variables": [(safe(v.name), py(v.value)) for v in interface.variables],
        "variable_dict": _dictionary(v.name for v in interface.variables),
        "setup": action(profile.setup), "cleanup": action(profile.cleanup),
        "reference": interface.reference_implementation.name,
        "mutable": tuple(i for i, a in enumerate(interface.arguments) if a.mutable),
        "verify": profile.verify, "repeat": profile.repeat,
        "implementations": [_implementation(interface, impl, imports) for impl in interface.implementations],
    }


def profiling_program(library: ast.Library, compiled: Path | None, program_name: str) -> str:
    """The text of the profiling program of ``library``.

    ``compiled`` is the folder holding the compiled ``.pyx`` sources.
    """
    imports = {i.alias: i for i in library.imports}
    profiled = [i for i in library.interfaces if i.profile is not None]
    return render(
        "profile.py.j2",
        library=library, description=str(Path(library.filename).resolve()) if not library.filename.startswith("<")
        else library.filename, program_name=program_name, base=str(library.directory),
        compiled=str(compiled) if compiled else None,
        imports=import_loads(library, "sources", "harness.load_attribute"),
        constants=[(safe(c.name), py(c.value)) for c in library.constants],
        interfaces=[_interface(i, imports) for i in profiled],
        interface_constants=", ".join(safe(i.name).upper() for i in profiled),
    )


def pyx_sources(library: ast.Library) -> list[Path]:
    """The Cython files a description imports from (they must be compiled first)."""
    found = {(library.directory / i.source).resolve() for i in library.imports
             if i.is_file and i.source.endswith(".pyx")}
    return sorted(found)
