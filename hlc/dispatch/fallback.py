"""A built library without a C compiler: the same decisions, made in Python.

The package's ``__init__.py`` calls :func:`python_module`, which offers the
same names as the compiled module (the interface functions, ``choose_*``,
``explain_*``, ``variables_*``, ``choose``, ``explain``, ``predict``,
``__models__``), with decisions from :mod:`hlc.dispatch.reference` — the
definition the compiled module is tested against.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hlc.calibrate.harness import load_attribute
from hlc.dispatch.bundle import description_of
from hlc.dispatch.reference import Decider
from hlc.dispatch.support import ModuleState, as_array, none_applies, read_models
from hlc.language import ast
from hlc.language.expressions import evaluate
from hlc.language.parse import parse_file
from hlc.model.predict import Predictor


def check_arguments(interface: ast.Interface, arguments: tuple) -> tuple:
    """The argument checks and conversions of the compiled module, in
    Python: the arguments as the implementations get them."""
    if len(arguments) != len(interface.arguments):
        raise TypeError(f"{interface.name}() takes {len(interface.arguments)} arguments, not {len(arguments)}")
    checked = []
    for declared, value in zip(interface.arguments, arguments, strict=True):
        type_ = declared.type
        if type_.dimensions > 0:
            value = as_array(value, f"{interface.name}(): argument '{declared.name}'", type_.element,
                             type_.dimensions, declared.mutable)
        checked.append(value)
    return tuple(checked)


def python_module(init_file: str) -> dict[str, Any]:
    folder = Path(init_file).parent
    models = read_models(init_file)
    state = ModuleState(init_file, models)
    library = parse_file(description_of(models, folder))
    predictor = Predictor.of_models(library, models, state.used_models)
    decider = Decider(library, predictor)
    helpers = {i.alias: (state.sources.load(i.source, i.name) if i.is_file else load_attribute(i.source, i.name))
               for i in library.imports}
    namespace: dict[str, Any] = {"__models__": models, "__doc__": library.doc}

    for interface in library.interfaces:
        callables = {}
        for implementation in interface.implementations:
            target = implementation.callable
            if target in helpers:
                callables[implementation.name] = helpers[target]
            else:
                module, _, attribute = target.rpartition(".")
                callables[implementation.name] = load_attribute(module, attribute)
        namespace.update(_interface_functions(interface, decider, state, helpers, callables))

    def predict(implementation: str, **variables: float) -> float:
        for interface in library.interfaces:
            found = interface.implementation(implementation)
            if found is not None:
                signature = interface.signature(found)
                missing = [n for n in signature if n not in variables]
                if missing:
                    raise TypeError(f"predict({implementation!r}, ...): missing {', '.join(missing)}")
                environment = {"P": state.P, "logP": state.logP, **variables}
                return decider.model(found, environment)
        raise ValueError(f"no implementation '{implementation}'")

    first = library.interfaces[0].name
    namespace.update(predict=predict, choose=namespace[f"choose_{first}"], explain=namespace[f"explain_{first}"])
    return namespace


def _interface_functions(interface: ast.Interface, decider: Decider, state: ModuleState,
                         helpers: dict[str, Callable], callables: dict[str, Callable]) -> dict[str, Callable]:
    # The ranks agree on the variables the choice reads but for the uniform
    # ones (bitwidth() spans the ranks by itself here, in Python).
    agreed = [v.name for v in interface.variables if not v.uniform] if interface.choice_varies else []
    uniform = tuple(v.name for v in interface.variables if v.uniform)

    def variables(arguments: tuple) -> dict[str, float]:
        """The explanatory variables of checked arguments."""
        environment = {**decider.predictor.constants, "P": state.P, "logP": state.logP,
                       **dict(zip((a.name for a in interface.arguments), arguments, strict=True))}
        values = {}
        for variable in interface.variables:
            values[variable.name] = environment[variable.name] = evaluate(variable.value, environment, helpers)
        if state.P > 1 and agreed:  # every rank must choose alike
            values.update(zip(agreed, state.agree(tuple(values[name] for name in agreed)), strict=True))
        if state.checking_uniform and uniform:
            state.check_uniform(interface.name, uniform, tuple(values[name] for name in uniform))
        return {**values, "P": state.P, "logP": state.logP}

    def variables_of(*arguments: Any) -> dict[str, float]:
        return variables(check_arguments(interface, arguments))

    def choose(*arguments: Any):
        return decider.decide(interface, variables_of(*arguments))

    def call(*arguments: Any):
        arguments = check_arguments(interface, arguments)
        found = variables(arguments)
        choice = decider.decide(interface, found)
        if state.forcing and state.forced(interface.name, list(callables)) is not None:
            name, parameters = state.force
            choice = type(choice)(name, {**choice.parameters, **parameters}, choice.predicted)
        if state.logging:
            state.log(interface.name, [choice.implementation], 0 if choice.implementation else -1,
                      choice.parameters, found)
        if choice.implementation is None:
            none_applies(interface.name, found)
        return callables[choice.implementation](*arguments, **choice.parameters)

    def explain(*arguments: Any) -> str:
        found = variables_of(*arguments)
        return state.explain(interface.name, found, decider.decide(interface, found))

    def at(variables: dict[str, float]) -> dict[str, float]:
        P = variables.get("P", state.P)
        return {**{v.name: variables[v.name] for v in interface.variables}, "P": P,
                "logP": variables.get("logP", math.log2(P))}

    def choose_at(**variables: float):
        return decider.decide(interface, at(variables))

    def explain_at(**variables: float) -> str:
        return state.explain(interface.name, at(variables), choose_at(**variables))

    call.__name__, call.__doc__ = interface.name, interface.doc
    return {interface.name: call, f"choose_{interface.name}": choose, f"explain_{interface.name}": explain,
            f"variables_{interface.name}": variables_of, f"choose_{interface.name}_at": choose_at,
            f"explain_{interface.name}_at": explain_at}
