"""Description + models → the dispatch module's source (``templates/dispatch.pyx.j2``).

The C part comes from :mod:`hlc.dispatch.cmodels`; this module prepares the
Python-level part: argument checks, variables, the calls of the
implementations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hlc.artefacts.models import Models
from hlc.codegen import import_loads, render, safe
from hlc.dispatch.cmodels import Interface, Library, decisions_name, header_name, predict_function, v
from hlc.language import ast
from hlc.language.expressions import names, to_python

#: The C test of an array's element kind (numpy's C API, no Python attribute lookups).
_KIND_TESTS = {"int": "cnp.PyArray_ISINTEGER", "float": "cnp.PyArray_ISFLOAT", "bool": "cnp.PyArray_ISBOOL"}
#: The scalars a scalar argument of each type accepts (tuples made once, in the module).
_SCALARS = {"float": "_FLOAT_SCALARS", "bool": "_BOOL_SCALARS", "int": "_INT_SCALARS"}


def argument_checks(interface: ast.Interface) -> list[str]:
    """Lines that check each argument: a scalar of the wrong type raises
    TypeError naming it; an array that is not the declared one at a glance
    goes to ``_support.as_array``, which converts it where that loses
    nothing and raises TypeError/ValueError naming it otherwise.  The glance
    is a few C tests of the array object (its type, number of dimensions and
    element kind): a call that passes the right array pays nanoseconds."""
    lines = []
    for argument in interface.arguments:
        name, type_ = safe(argument.name), argument.type
        where = f"{interface.name}(): argument '{argument.name}'"
        if type_.dimensions == 0:
            lines += [f"if not isinstance({name}, {_SCALARS.get(type_.element, '_INT_SCALARS')}) or "
                      f"({type_.element != 'bool'} and isinstance({name}, bool)):",
                      f"    raise TypeError(f\"{where} must be {type_.element}, not {{type({name}).__name__}}\")"]
            continue
        if type_.element in _KIND_TESTS:
            element = f"{_KIND_TESTS[type_.element]}(<cnp.ndarray>{name})"
        else:
            element = f"cnp.PyArray_EquivTypenums(cnp.PyArray_TYPE(<cnp.ndarray>{name}), {dtype_number(type_.element)})"
        lines += [f"if not (isinstance({name}, cnp.ndarray) and cnp.PyArray_NDIM(<cnp.ndarray>{name}) == "
                  f"{type_.dimensions} and {element}):",
                  f"    {name} = _support.as_array({name}, {where!r}, {type_.element!r}, {type_.dimensions}"
                  f"{', mutable=True' if argument.mutable else ''})"]
    return lines


def dtype_number(element: str) -> str:
    """The module constant holding NumPy's type number of ``element`` (``float32``…)."""
    return f"_TYPE_{element}"


def dtype_numbers(interfaces: list[ast.Interface]) -> list[str]:
    """The element types whose type numbers the argument checks compare with."""
    return sorted({a.type.element for i in interfaces for a in i.arguments
                   if a.type.dimensions > 0 and a.type.element not in _KIND_TESTS})


def _implementation(library: Library, interface: Interface, index: int, implementation: ast.Implementation,
                    imports: Mapping[str, ast.Import]) -> dict[str, Any]:
    arguments = [safe(a.name) for a in interface.interface.arguments]
    parameters = [{"name": p.name, "field": interface.parameter_field(implementation, p)}
                  for p in implementation.parameters]
    call_arguments = arguments + [f"{p['name']}=<long>s.{p['field']}" for p in parameters]
    if "." in implementation.callable and implementation.callable not in imports:
        call = f"_impl_{implementation.name}"
    else:
        call = safe(implementation.callable)
    return {
        "name": implementation.name, "index": index, "call": call, "arguments": ", ".join(call_arguments),
        "parameters": parameters,
        "parameter_dict": "{" + ", ".join(f"{p['name']!r}: <long>s.{p['field']}" for p in parameters) + "}",
    }


#: The argument functions read in C from the array object, as NumPy's C API
#: gives them: the arguments are checked NumPy arrays by then.  In Python,
#: a.shape[0] makes a tuple and an int, about 40 ns each; three such reads
#: were a third of what a two-matrix interface's dispatch added to a call.
_ARRAY_FIELDS = {
    "len": "cnp.PyArray_DIM(<cnp.ndarray>{0}, 0)",
    "rows": "cnp.PyArray_DIM(<cnp.ndarray>{0}, 0)",
    "cols": "cnp.PyArray_DIM(<cnp.ndarray>{0}, 1)",
    "size": "cnp.PyArray_SIZE(<cnp.ndarray>{0})",
    "nbytes": "cnp.PyArray_NBYTES(<cnp.ndarray>{0})",
    "itemsize": "cnp.PyArray_ITEMSIZE(<cnp.ndarray>{0})",
}


def _compiled_call(call: ast.Call, arguments: list[str]) -> str | None:
    """Argument functions the dispatch module computes in C (see its template)."""
    if call.function == "bitwidth":
        return f"_bitwidth({arguments[0]})"
    field = _ARRAY_FIELDS.get(call.function)
    return field.format(arguments[0]) if field is not None else None


def _spanned(interface: ast.Interface, variable: ast.Variable, read_later: bool) -> str | None:
    """The argument whose bitwidth() ``variable`` is, when under mpiexec its
    span over the ranks may be combined in the all-reduce that agrees on the
    variables (no later variable reads it first); else None."""
    value = variable.value
    if read_later or not isinstance(value, ast.Call) or value.function != "bitwidth" or len(value.arguments) != 1:
        return None
    argument = value.arguments[0]
    if not isinstance(argument, ast.Name) or argument.id not in {a.name for a in interface.arguments}:
        return None
    return safe(argument.id)


def _python_tuple(items: list[str]) -> str:
    """The Python spelling of a tuple of these expressions."""
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _interface(library: Library, interface: ast.Interface, imports: Mapping[str, ast.Import]) -> dict[str, Any]:
    generator = Interface(library, interface)
    variables = []
    for k, var in enumerate(interface.variables):
        read_later = any(var.name in {n.id for n in names(later.value)} for later in interface.variables[k + 1:])
        variables.append((var.name, to_python(var.value, spell_name=safe, spell_call=_compiled_call), read_later,
                          _spanned(interface, var, read_later)))
    # Under mpiexec the ranks agree on the variables the choice reads, all
    # in one all-reduce: not a uniform one (the caller passes it alike on
    # every rank), nor any where the choice cannot vary; a bitwidth() span
    # is combined whatever, the implementation called may read it.
    varies = interface.choice_varies
    agreed = [k for k, (var, (_, _, _, argument)) in enumerate(zip(interface.variables, variables, strict=True))
              if argument or (varies and not var.uniform)]
    spanned = [(slot, variables[k][3]) for slot, k in enumerate(agreed) if variables[k][3]]
    uniform = [var.name for var in interface.variables if var.uniform]
    arguments = [safe(a.name) for a in interface.arguments]
    variable_dict = "{" + ", ".join(f"{name!r}: s.{v(name)}" for name in generator.variables) + "}"
    return {
        "name": interface.name,
        "signature": f"{interface.name}({', '.join(f'{a.name}: {a.type}' for a in interface.arguments)})",
        "doc": (interface.doc or f"The {interface.name} operation of the library.").replace('"""', "'''"),
        "state": generator.state, "fields": generator.fields(),
        "decide": f"hlc_decide_{library.library.name}__{interface.name}",
        "outside": f"hlc_outside_{library.library.name}__{interface.name}",
        "arguments": ", ".join(arguments), "argument_names": ", ".join(arguments),
        "checks": argument_checks(interface),
        # (name, value, whether a later variable reads it by name, the
        # argument whose bitwidth() it is when its span over the ranks can
        # travel with the decision's agreement): a variable no other reads
        # goes straight into the C state, never a Python object.
        "variables": variables,
        # (index among the variables, argument) of those bitwidth() variables
        "spanned": spanned,
        "spanned_arrays": _python_tuple([argument for _, argument in spanned]),
        "spanned_slots": _python_tuple([str(k) for k, _ in spanned]),
        "variable_dict": variable_dict,
        # the extremes bitwidth() reads are shared with the implementation
        # called, unless an argument is one the implementations may change
        "shares_extremes": not any(a.mutable for a in interface.arguments),
        "variable_list": [var.name for var in interface.variables],
        # the variables every rank must agree on, as the tuple the agreement takes and gives back
        "agreed": _python_tuple([f"s.v_{interface.variables[k].name}" for k in agreed]) if agreed else "",
        # the uniform variables, by name, and as the tuple HLC_CHECK_UNIFORM compares over the ranks
        "uniform_names": _python_tuple([repr(name) for name in uniform]) if uniform else "",
        "uniform": _python_tuple([f"s.v_{name}" for name in uniform]) if uniform else "",
        "variables_use_ranks": any(n.id in ("P", "logP") for var in interface.variables for n in names(var.value)),
        "variable_names": ", ".join(var.name for var in interface.variables),
        "implementation_names": [i.name for i in interface.implementations],
        "implementations": [_implementation(library, generator, index, i, imports)
                            for index, i in enumerate(interface.implementations)],
    }


def _models(library: Library) -> list[dict[str, Any]]:
    """The model functions predict() exposes: every implementation of the library."""
    models = []
    for interface in library.library.interfaces:
        for implementation in interface.implementations:
            names_ = list(interface.signature(implementation))
            models.append({
                "implementation": implementation.name,
                "function": predict_function(library.library.name, implementation.name),
                "c_parameters": ", ".join("double" for _ in [*names_, "P", "logP"]),
                "py_parameters": ", ".join([f"double {v(n)}" for n in names_] + ["double P", "double logP"]),
                "call_arguments": ", ".join([v(n) for n in names_] + ["P", "logP"]),
            })
    return models


def static_choices(library: ast.Library, models: Models, used_models: Mapping[str, Models],
                   workload: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Compile-time decisions (thesis §4.6) for the interfaces whose variables
    ``workload`` gives: the implementation index and the parameter fields."""
    from hlc.dispatch.reference import Decider
    from hlc.model.predict import Predictor

    predictor = Predictor.of_models(library, models, used_models)
    decider = Decider(library, predictor)
    choices = {}
    for interface in library.interfaces:
        names_ = [var.name for var in interface.variables]
        if not all(name in workload for name in names_):
            continue
        ranks = workload.get("P", 1)
        variables = {**{name: workload[name] for name in names_}, "P": ranks, "logP": math.log2(ranks)}
        choice = decider.decide(interface, variables)
        if choice.implementation is None:
            raise ValueError(f"--static {variables}: no implementation of {interface.name} applies")
        implementation = interface.implementation(choice.implementation)
        generator = Interface(Library(library, models.times(), {}), interface)
        choices[interface.name] = {
            "variables": ", ".join(f"{k}={v:g}" for k, v in variables.items()),
            "index": interface.implementations.index(implementation),
            "fields": [(generator.parameter_field(implementation, p), float(choice.parameters[p.name]))
                       for p in implementation.parameters],
        }
    if not choices:
        raise ValueError(f"--static gives {', '.join(workload)}, which is not every variable of any interface")
    return choices


def dispatch_source(library: ast.Library, models: Models,
                    used_models: Mapping[str, Models], static: Mapping[str, float] | None = None) -> str:
    """The text of the dispatch module (Cython) of ``library``; with ``static``
    (variable values), calls of the interfaces it covers go straight to the
    implementation chosen for them at build time."""
    imports = {i.alias: i for i in library.imports}
    top = Library(library, models.times(), {})
    import_lines = import_loads(library, "_module.sources", "_support.load_attribute")
    for implementation in library.implementations:
        if "." in implementation.callable and implementation.callable not in imports:
            module, _, attribute = implementation.callable.rpartition(".")
            import_lines.append({"alias": f"_impl_{implementation.name}",
                                 "load": f"_support.load_attribute({module!r}, {attribute!r})"})
    decided = static_choices(library, models, used_models, static) if static else {}
    # The file's name, not its path: the module's Cython, and so its object
    # in the compile cache, is then the same wherever the description lies.
    description = library.filename if library.filename.startswith("<") else Path(library.filename).name
    return render(
        "dispatch.pyx.j2",
        library=library.name, description=description,
        doc=(library.doc or f"The library {library.name}.").replace('"""', "'''"),
        header=header_name(library.name), decisions=decisions_name(library.name), imports=import_lines,
        interfaces=[{**_interface(top, i, imports), "static": decided.get(i.name)} for i in library.interfaces],
        models=_models(top), first=library.interfaces[0].name, dtypes=dtype_numbers(list(library.interfaces)),
    )
