"""Description → profiling program (``templates/profile.py.j2``).

This module only prepares what the template substitutes: names, and
expressions already printed as Python.  Loop nests become ``while`` loops, one
level of indentation per loop, exactly as the loop semantics say (start, run
while ≤ stop, update); a loop that multiplies by a real factor iterates over
its rounded values instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from hlc.codegen import import_loads, py, render, safe
from hlc.language import ast
from hlc.language.expressions import names
from hlc.language.machine import used_machine_constants

_UPDATE = {"++": "+= 1", "+=": "+=", "*=": "*=", "<<=": "<<="}


def _used(expressions: Iterable[ast.Expression | None]) -> set[str]:
    return {n.id for e in expressions if e is not None for n in names(e)}


def _unpack(source: str, wanted: Iterable[str], available: Sequence[str]) -> list[str]:
    """``n = _variables["n"]`` for each available name an expression uses."""
    wanted = set(wanted)
    return [f'{safe(name)} = {source}["{name}"]' for name in available if name in wanted]


def _geometric(loop: ast.Loop) -> bool:
    """Whether a loop multiplies by a factor that is not an integer literal:
    its values are then start · factorⁱ rounded (hlc.language.nest.geometric)."""
    amount = loop.update.amount
    return loop.update.operator == "*=" and not (isinstance(amount, ast.Number) and isinstance(amount.value, int))


def _loop_block(loops: Sequence[ast.Loop], innermost: list[str], indent: int) -> str:
    """Nested loops around ``innermost`` lines: while loops, except that one
    multiplying by a factor other than an integer iterates over its values."""
    lines: list[str] = []
    for depth, loop in enumerate(loops):
        pad = "    " * (indent + depth)
        if _geometric(loop):
            lines.append(f"{pad}for {safe(loop.variable)} in harness.multiplied({py(loop.range.low)}, "
                         f"{py(loop.range.high)}, {py(loop.update.amount)}):")
            continue
        lines.append(f"{pad}{safe(loop.variable)} = {py(loop.range.low)}")
        lines.append(f"{pad}while {safe(loop.variable)} <= {py(loop.range.high)}:")
    pad = "    " * (indent + len(loops))
    lines += [pad + line for line in innermost]
    for depth in range(len(loops) - 1, -1, -1):
        loop = loops[depth]
        if _geometric(loop):
            continue
        amount = "" if loop.update.amount is None else " " + py(loop.update.amount)
        lines.append("    " * (indent + depth + 1) + f"{safe(loop.variable)} {_UPDATE[loop.update.operator]}{amount}")
    return "\n".join(lines)


def _draw(loop: ast.Loop) -> str:
    """The expression that draws one random value of a loop's variable."""
    function = "_rng.randint(" if loop.drawn == "uniform" else "harness.log_uniform(_rng, "
    return f"{function}{py(loop.range.low)}, {py(loop.range.high)})"


def _dictionary(keys: Iterable[str]) -> str:
    return "{" + ", ".join(f'"{k}": {safe(k)}' for k in keys) + "}"


def _parameter_checks(implementation: ast.Implementation) -> str:
    """The parameters' declared ranges, which may depend on the variables."""
    checks = [f"{py(p.range.low)} <= {safe(p.name)} <= {py(p.range.high)}"
              for p in implementation.parameters if p.range is not None]
    return " and ".join(checks)


def _bounds_unpack(loops: Sequence[ast.Loop], implementation: ast.Implementation, point_names: Sequence[str],
                   variable_names: Sequence[str]) -> list[str]:
    """The names the loops' bounds and the parameters' ranges use, from the
    point and the variables."""
    bounds = [e for loop in loops for e in (loop.range.low, loop.range.high, loop.update.amount)]
    ranges = [e for p in implementation.parameters if p.range for e in (p.range.low, p.range.high)]
    return _unpack("_point", _used(bounds), point_names) + _unpack("_variables", _used(ranges), variable_names)


def _implementation(interface: ast.Interface, implementation: ast.Implementation,
                    imports: dict[str, ast.Import]) -> dict:
    loops = interface.profile.loops
    point_names = [loop.variable for loop in loops if loop.variable not in _parameter_names(interface)]
    variable_names = [v.name for v in interface.variables] + ["P", "logP"]
    own = [loop for loop in loops if loop.variable in {p.name for p in implementation.parameters}]
    searched = implementation.searches()
    prefix = safe(implementation.name)
    checks = _parameter_checks(implementation)
    unpack = _bounds_unpack(own, implementation, point_names, variable_names)
    searching = [f"_searched = {prefix}_searched(_variables)"] if searched else []
    result = _dictionary(p.name for p in implementation.parameters)
    proposed = [f"{safe(p.name)} in _searched[\"{p.name}\"]" for p, _ in searched]
    condition = " and ".join(([checks] if checks else []) + proposed)
    innermost = [f"if {condition}:", f"    yield {result}"] if condition else [f"yield {result}"]
    settings = "\n".join("    " + line for line in unpack + searching) + ("\n" if unpack + searching else "")
    settings += _loop_block(own, innermost, 1)
    random_lines = unpack + [f"{safe(loop.variable)} = {_draw(loop)}" for loop in own]
    if checks:
        random_lines.append(f"if not ({checks}):")
        random_lines.append("    return None")
    random_lines.append(f"return {result}")
    requires = " and ".join(f"({py(r)})" if len(implementation.requires) > 1 else py(r)
                            for r in implementation.requires)
    if "." in implementation.callable and implementation.callable not in imports:
        module, _, attribute = implementation.callable.rpartition(".")
        call = f'harness.load_attribute("{module}", "{attribute}")'
    else:
        call = safe(implementation.callable)
    return {
        "name": implementation.name, "prefix": prefix, "callable": implementation.callable,
        "call": call, "requires": requires, "parameters": [p.name for p in implementation.parameters],
        "applies_unpack": _unpack("_variables", _used(implementation.requires), variable_names),
        "settings": settings, "random_lines": random_lines,
        "searched": _searched_lines(searched, variable_names),
        "searched_names": " and ".join(p.name for p, _ in searched),
        "choices": _choices(implementation, searched, own, point_names, variable_names),
    }


def _searched_lines(searched: Sequence[tuple[ast.Parameter, ast.Reparameterization]],
                    variable_names: Sequence[str]) -> list[str]:
    """The body of ``<impl>_searched``: for each parameter set by a search, the
    values that search can propose, VALUE at each i of its range brought
    into the parameter's range, as the dispatcher does."""
    if not searched:
        return []
    expressions = [e for p, over in searched for e in (over.range.low, over.range.high, over.value,
                                                        p.range.low, p.range.high)]
    lines = _unpack("_variables", _used(expressions), variable_names)
    lines.append("_searched = {}")
    for parameter, over in searched:
        step, low, high = safe(over.variable), py(parameter.range.low), py(parameter.range.high)
        lines.append(f'_searched["{parameter.name}"] = sorted({{min(max(int({py(over.value)}), {low}), {high}) '
                     f"for {step} in range({py(over.range.low)}, {py(over.range.high)} + 1)}} or {{{low}}})")
    return lines + ["return _searched"]


def _choices(implementation: ast.Implementation, searched: Sequence[tuple[ast.Parameter, ast.Reparameterization]],
             own: Sequence[ast.Loop], point_names: Sequence[str], variable_names: Sequence[str]) -> list[str]:
    """The body of ``<impl>_choices``: the settings the dispatcher chooses among,
    each searched parameter at every value its search can propose and the
    others at their profile loops' values."""
    prefix = safe(implementation.name)
    if not searched:
        return [f"yield from {prefix}_settings(_point, _variables)"]
    names = {p.name for p, _ in searched}
    others = [loop for loop in own if loop.variable not in names]
    checks = _parameter_checks(implementation)
    lines = _bounds_unpack(others, implementation, point_names, variable_names)
    lines.append(f"_searched = {prefix}_searched(_variables)")
    targets = ", ".join(safe(p.name) for p, _ in searched) + ("," if len(searched) == 1 else "")
    result = _dictionary(p.name for p in implementation.parameters)
    innermost = [f"for {targets} in itertools.product(*_searched.values()):",
                 *([f"    if {checks}:", f"        yield {result}"] if checks else [f"    yield {result}"])]
    return lines + _loop_block(others, innermost, 0).splitlines()


def _parameter_names(interface: ast.Interface) -> set[str]:
    return {p.name for impl in interface.implementations for p in impl.parameters}


def _taken_as_calls_take(interface: ast.Interface) -> list[str]:
    """Lines that convert the built array arguments as the built module
    converts a call's (hlc.arguments.as_array): the implementations are
    timed on what calls will pass them, a list of numbers made an array."""
    lines = []
    for argument in interface.arguments:
        type_ = argument.type
        if type_.dimensions > 0:
            name = safe(argument.name)
            where = f"the profile's argument {argument.name!r} of {interface.name}()"
            mutable = ", mutable=True" if argument.mutable else ""
            lines.append(f"{name} = as_array({name}, {where!r}, {type_.element!r}, {type_.dimensions}{mutable})")
    return lines


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
    builds = {b.name: b for b in profile.builds}
    argument_lines += [f"{safe(a.name)} = {py(builds[a.name].value)}" for a in interface.arguments]
    conversions = _taken_as_calls_take(interface)
    argument_lines += conversions
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
        "draws": [(safe(loop.variable), _draw(loop)) for loop in base],
        "point": point, "argument_lines": argument_lines, "converts": bool(conversions),
        "argument_tuple": ", ".join(arguments) + ("," if len(arguments) == 1 else ""),
        "parameter_list": ", ".join(arguments),
        "variables": [(safe(v.name), py(v.value)) for v in interface.variables],
        "variable_dict": _dictionary(v.name for v in interface.variables),
        "setup": action(profile.setup), "cleanup": action(profile.cleanup),
        "reference": interface.reference_implementation.name,
        "mutable": tuple(i for i, a in enumerate(interface.arguments) if a.mutable),
        "uniform": tuple(v.name for v in interface.variables if v.uniform),
        "verify": profile.verify, "repeat": profile.repeat,
        "implementations": [_implementation(interface, impl, imports) for impl in interface.implementations],
    }


def profiling_program(library: ast.Library, compiled: Path | None, program_name: str,
                      home: Path | None = None) -> str:
    """The text of the profiling program of ``library``.

    ``compiled`` is the folder holding the compiled ``.pyx`` sources.  Paths
    inside ``home`` (the folder the program is written to) are written
    relative to the program, so that a build folder can be moved.
    """
    imports = {i.alias: i for i in library.imports}
    profiled = [i for i in library.interfaces if i.profile is not None]

    def where(path: Path | None) -> str:
        if path is None:
            return "None"
        path = Path(path).resolve()
        if home is not None and path.is_relative_to(Path(home).resolve()):
            return f"str(HERE / {path.relative_to(Path(home).resolve()).as_posix()!r})"
        return repr(str(path))

    base, compiled_at = where(library.directory), where(compiled)
    interfaces = [_interface(i, imports) for i in profiled]
    return render(
        "profile.py.j2",
        library=library, description=str(Path(library.filename).resolve()) if not library.filename.startswith("<")
        else library.filename, program_name=program_name, base=base, compiled=compiled_at,
        relative="HERE" in base + compiled_at,
        imports=import_loads(library, "sources", "harness.load_attribute"),
        machine=list(used_machine_constants(library).items()),
        constants=[(safe(c.name), py(c.value)) for c in library.constants],
        interfaces=interfaces,
        arrays=any(interface["converts"] for interface in interfaces),
        interface_constants=", ".join(safe(i.name).upper() for i in profiled),
    )


def pyx_sources(library: ast.Library) -> list[Path]:
    """The Cython files a description imports from (they must be compiled first)."""
    found = {(library.directory / i.source).resolve() for i in library.imports
             if i.is_file and i.source.endswith(".pyx")}
    return sorted(found)
