"""Semantic checks of a parsed description.

The checker walks the whole tree and records every problem it finds, so one
run of ``hlc check`` reports all of them.  Each expression is checked against
a :class:`Scope`: the names and the kinds of function the place allows (terms
compile to C, so they may call math functions and models but no Python
helper; interface variables may read arguments; and so on).  When a name
exists in the description but not in that scope, the message says what the
name is instead of just "undefined".
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hlc.language import ast
from hlc.language.errors import Diagnostic, HLError, make_diagnostic
from hlc.language.expressions import EvaluationError, calls, evaluate, names, unparse, walk
from hlc.language.families import MOST_KNOTS, MOST_MEMBERS, family_knots
from hlc.language.functions import ARGUMENT, BUILTINS, GLOBALS, MATH
from hlc.language.machine import MACHINE_CONSTANTS
from hlc.language.nest import NestError, constant_values, count_points, is_integer, relevant_loops
from hlc.language.sources import (
    SOURCE_SUFFIXES,
    SourceError,
    attribute_problem,
    file_defines,
    module_problem,
    split_dotted,
)

ELEMENT_TYPES = (
    "int", "float", "bool",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
)
OBJECTIVES = ("time", "memory")
PROFILE_NAMES = {"seed": "an integer seed, different for every sample"}
SETTING_MINIMUM = {"verify": 1, "repeat": 1, "ranks": 1}
INT64_MAX = 2**63 - 1
# Beyond this many fitting samples per implementation, a profile is surely a mistake.
LARGE_NEST = 100_000


@dataclass(frozen=True)
class ModelSignature:
    """A model that expressions may call: its name, arguments and origin."""

    name: str
    parameters: tuple[str, ...]
    origin: str  # what to call it in messages


@dataclass
class Scope:
    """What an expression may refer to at one place of a description."""

    place: str  # "a term of radix", used in messages
    names: dict[str, str]  # allowed name → what it is
    functions: frozenset[str]  # families: math, argument, import, model
    array_arguments: dict[str, int] = field(default_factory=dict)  # name → dimensions


#: What a definition is, in a duplicate name's message, by its node and by the kind ``declare`` is told.
_DEFINITIONS = {ast.Import: "an imported name", ast.Implementation: "an implementation",
                ast.Interface: "an interface", ast.ModelDefinition: "a model", ast.Argument: "an argument",
                ast.Variable: "a variable", ast.Parameter: "a parameter"}
_KINDS = {"import": ast.Import, "implementation": ast.Implementation, "interface": ast.Interface,
          "model": ast.ModelDefinition, "argument": ast.Argument, "variable": ast.Variable,
          "parameter": ast.Parameter}


def _as_what(previous: ast.Node, kind: str) -> str:
    """``, as an imported name`` where the two definitions are of different
    kinds (an implementation named as the function it calls): the names of
    a description are one space, which its expressions read."""
    what = _DEFINITIONS.get(type(previous))
    if what is None or _KINDS.get(kind) is type(previous):
        return ""
    return f", as {what}"


class Checker:
    def __init__(self, library: ast.Library, problems: Sequence[tuple[ast.Node, str]] = ()):
        self.library = library
        self.diagnostics: list[Diagnostic] = []
        self.problems = list(problems)  # what resolving the library's `uses` found wrong
        self.constants = constant_values(library)
        self.imports = {i.alias: i for i in library.imports}
        self.models: dict[str, ModelSignature] = {}
        self.used: dict[str, ast.Library] = dict(library.used)  # resolved by the parser
        # Everything the description names, for "'x' is a parameter, not …" messages.
        self.known: dict[str, str] = {name: f"predefined ({meaning})" for name, meaning in GLOBALS.items()}

    # ---- reporting -----------------------------------------------------------------

    def _report(self, severity: str, line: int, column: int, message: str) -> None:
        self.diagnostics.append(make_diagnostic(
            self.library.filename, self.library.source, line, column, message, severity))

    def error(self, node: ast.Node | tuple[int, int], message: str) -> None:
        line, column = node if isinstance(node, tuple) else (node.line, node.column)
        self._report("error", line, column, message)

    def warning(self, node: ast.Node, message: str) -> None:
        self._report("warning", node.line, node.column, message)

    def first(self, node: ast.Node, key: str, seen: dict[str, Any], twice: str) -> bool:
        """Record ``node`` under ``key`` in ``seen``; if ``key`` was there, report
        ``twice`` instead and say so (False)."""
        if key in seen:
            self.error(node, twice)
            return False
        seen[key] = node
        return True

    # ---- entry -----------------------------------------------------------------------

    def run(self) -> list[Diagnostic]:
        library = self.library
        for node, message in self.problems:
            self.error(node, message)
        self.check_imports()
        self.check_constants()
        self.collect_models()
        self.check_model_definitions()
        self.check_model_cycles()
        seen: dict[str, ast.Node] = {}
        for interface in library.interfaces:
            self.declare(seen, interface.name, interface, "interface")
        for interface in library.interfaces:
            self.check_interface(interface)
        if not library.interfaces:
            self.warning(library, f"library '{library.name}' declares no interface")
        return sorted(self.diagnostics, key=lambda d: (d.severity != "error", d.line, d.column))

    def declare(self, seen: dict[str, ast.Node], name: str, node: ast.Node, kind: str) -> bool:
        """Record a definition; report it when the name is taken."""
        if name in GLOBALS:
            self.error(node, f"'{name}' is predefined ({GLOBALS[name]}) and cannot be redefined")
            return False
        if name in MACHINE_CONSTANTS:
            self.error(node, f"'{name}' is a machine constant ({MACHINE_CONSTANTS[name]}) and cannot be redefined")
            return False
        if name in BUILTINS:
            self.error(node, f"{kind} '{name}' would hide the built-in function {name}()")
            return False
        if name in seen:
            previous = seen[name]
            self.error(node, f"duplicate name '{name}': already defined at line {previous.line}"
                             f"{_as_what(previous, kind)}")
            return False
        seen[name] = node
        return True

    # ---- library level -----------------------------------------------------------------

    def check_imports(self) -> None:
        seen: dict[str, ast.Node] = {}
        broken_sources: set[tuple[int, int]] = set()  # a source's problem is reported once, at the source
        for item in self.library.imports:
            alias = ast.Name(item.alias_line or item.line, item.alias_column or item.column, item.alias)
            if not self.declare(seen, item.alias, alias, "import"):
                continue
            self.known[item.alias] = f"the Python helper {item.describe}"
            where = (item.source_line or item.line, item.source_column or item.column)
            problem, at_source = self.import_problem(item)
            if problem and at_source:
                if where not in broken_sources:
                    broken_sources.add(where)
                    self.error(where, problem)
            elif problem:
                self.error(item, problem)

    def import_problem(self, item: ast.Import) -> tuple[str | None, bool]:
        """What is wrong with an import, and whether it is the source's fault
        (reported at the source) or the name's (reported at the name)."""
        if not item.is_file:
            problem = module_problem(item.source)
            if problem:
                return problem, True
            return attribute_problem(item.source, item.name), False
        path = self.library.directory / item.source
        if path.suffix not in SOURCE_SUFFIXES:
            return f'"{item.source}": only .py and .pyx files can be imported', True
        if not path.is_file():
            return f'no such source file "{item.source}" (looked for {path})', True
        try:
            if not file_defines(path, item.name):
                return f'"{item.source}" does not define \'{item.name}\'', False
        except SourceError as error:
            return str(error), True
        return None, False

    def check_constants(self) -> None:
        seen: dict[str, ast.Node] = dict(self._import_nodes())
        defined: dict[str, str] = {name: "a machine constant" for name in MACHINE_CONSTANTS}
        for constant in self.library.constants:
            scope = Scope(f"constant '{constant.name}'", dict(defined), frozenset({"math"}))
            ok = self.check_expression(constant.value, scope)
            if not self.declare(seen, constant.name, constant, "constant"):
                continue
            defined[constant.name] = "a library constant"
            self.known[constant.name] = "a library constant"
            if ok and constant.name not in self.constants:
                try:
                    evaluate(constant.value, self.constants)
                except EvaluationError as error:
                    self.error(constant, f"constant '{constant.name}' has no value: {error}")

    def _import_nodes(self) -> dict[str, ast.Node]:
        return {i.alias: i for i in self.library.imports}

    def collect_models(self) -> None:
        """Every model that expressions may call: library models, implementation
        models of this library, and those of used libraries."""
        seen: dict[str, ast.Node] = {**self._import_nodes(), **{c.name: c for c in self.library.constants}}
        for model in self.library.models:
            if self.declare(seen, model.name, model, "model"):
                self.models[model.name] = ModelSignature(model.name, model.parameters, f"model '{model.name}'")
        for interface in self.library.interfaces:
            for implementation in interface.implementations:
                if self.declare(seen, implementation.name, implementation, "implementation"):
                    self.models[implementation.name] = implementation_signature(interface, implementation)
        for name, used in self.used.items():
            for signature in library_models(used).values():
                qualified = f"{name}.{signature.name}"
                self.models[qualified] = replace(signature, origin=f"model '{qualified}'")
        for name, signature in self.models.items():
            self.known.setdefault(name, signature.origin)

    def resolve_model(self, name: str) -> ModelSignature | None:
        if name in self.models:
            return self.models[name]
        matches = [s for key, s in self.models.items() if key.rpartition(".")[2] == name and "." in key]
        return matches[0] if len(matches) == 1 else None

    def check_model_definitions(self) -> None:
        for model in self.library.models:
            seen: dict[str, ast.Node] = {}
            for parameter in model.parameters:
                if parameter in GLOBALS or parameter in BUILTINS:
                    self.error(model, f"model '{model.name}': parameter '{parameter}' would hide the "
                                      f"predefined '{parameter}'")
                elif parameter in seen:
                    self.error(model, f"model '{model.name}' has parameter '{parameter}' twice")
                seen[parameter] = model
            scope = Scope(f"model '{model.name}'",
                          {**self.constant_names(), **GLOBALS, **{p: "a model parameter" for p in model.parameters}},
                          frozenset({"math", "model"}))
            self.check_expression(model.body, scope)

    def check_model_cycles(self) -> None:
        """A model may not depend on itself, directly or through other models:
        its value would have no definition."""
        graph: dict[str, list[ast.Call]] = {m.name: calls(m.body) for m in self.library.models}
        for implementation in self.library.implementations:
            expressions = [let.value for let in implementation.lets]
            for model in implementation.models:
                expressions += list(model.terms) if model.fitted else [model.body]
            graph[implementation.name] = [c for e in expressions for c in calls(e)]
        reported: set[frozenset[str]] = set()

        def visit(name: str, path: tuple[str, ...]) -> None:
            for call in graph.get(name, []):
                if call.function == path[0] and frozenset(path) not in reported:
                    reported.add(frozenset(path))
                    cycle = " → ".join((*path, path[0]))
                    self.error(call, f"model cycle: {cycle}" if len(path) > 1 else f"model '{path[0]}' calls itself")
                elif call.function in graph and call.function not in path:
                    visit(call.function, (*path, call.function))

        for name in graph:
            visit(name, (name,))

    def constant_names(self) -> dict[str, str]:
        return {**{name: f"a machine constant ({meaning})" for name, meaning in MACHINE_CONSTANTS.items()},
                **{c.name: "a library constant" for c in self.library.constants}}

    # ---- interfaces -----------------------------------------------------------------

    def check_interface(self, interface: ast.Interface) -> None:
        seen: dict[str, ast.Node] = {**self._import_nodes(), **{c.name: c for c in self.library.constants},
                                     **{m.name: m for m in self.library.models},
                                     **{i.name: i for i in self.library.implementations},
                                     **{i.name: i for i in self.library.interfaces if i is not interface}}
        arrays: dict[str, int] = {}
        values: dict[str, str] = {**self.constant_names(), **GLOBALS}
        for argument in interface.arguments:
            self.check_type(argument.type)
            if not self.declare(seen, argument.name, argument, "argument"):
                continue
            self.known[argument.name] = f"an argument of {interface.name}"
            if argument.type.dimensions:
                arrays[argument.name] = argument.type.dimensions
            else:
                values[argument.name] = f"the scalar argument '{argument.name}'"
            if argument.mutable and not argument.type.dimensions:
                self.error(argument, f"only arrays can be mutable; '{argument.name}' is the scalar type "
                                     f"'{argument.type}'")
        if interface.returns is not None:
            self.check_type(interface.returns)
        variables: dict[str, str] = {}
        for variable in interface.variables:
            scope = Scope(f"variable '{variable.name}'", {**values, **variables},
                          frozenset({"math", "argument", "import"}), arrays)
            self.check_expression(variable.value, scope)
            if variable.uniform:
                self.check_uniform(variable)
            self.declare(seen, variable.name, variable, "variable")
            # In scope even when its name was refused, so its uses do not repeat the error.
            variables.setdefault(variable.name, "an explanatory variable")
            self.known.setdefault(variable.name, f"an explanatory variable of {interface.name}")
        for implementation in interface.implementations:  # known early, for messages about misuse
            for parameter in implementation.parameters:
                self.known.setdefault(parameter.name, f"a parameter of {implementation.name}")
        if interface.profile is not None:
            for loop in interface.profile.loops:
                self.known.setdefault(loop.variable, "an iteration variable of the profile")
            for let in interface.profile.lets:
                self.known.setdefault(let.name, "a value of the profile")
        if not interface.implementations:
            self.error(interface, f"interface '{interface.name}' has no implementation")
        if interface.reference is not None and interface.implementation(interface.reference.id) is None:
            offered = [i.name for i in interface.implementations]
            self.error(interface.reference, f"reference '{interface.reference.id}' is not an implementation "
                                            f"of {interface.name}{self.suggest(interface.reference.id, offered)}")
        context = {**self.constant_names(), **GLOBALS, **variables}
        taken = dict(seen)
        for implementation in interface.implementations:
            self.check_implementation(interface, implementation, context, taken)
        fitted = [i for i in interface.implementations if any(m.fitted for m in i.models)]
        if interface.profile is None:
            if fitted:
                self.error(fitted[0].models[0], f"implementation '{fitted[0].name}' has a fitted model, "
                                                f"but interface '{interface.name}' has no profile section")
        else:
            self.check_profile(interface, interface.profile, taken)

    def check_uniform(self, variable: ast.Variable) -> None:
        """A uniform variable is computed on each rank alone; bitwidth() spans
        the values of every rank, which takes the all-reduce it skips."""
        for call in calls(variable.value):
            if call.function == "bitwidth":
                self.error(call, f"uniform variable '{variable.name}' cannot read bitwidth(): it spans the "
                                 f"values of every rank, which takes the agreement a uniform variable skips; "
                                 f"leave out 'uniform'")
                return

    def check_type(self, type_: ast.Type) -> None:
        if type_.element not in ELEMENT_TYPES:
            self.error(type_, f"unknown type '{type_.element}'{self.suggest(type_.element, ELEMENT_TYPES)}; "
                              f"types are {', '.join(ELEMENT_TYPES)}, with [] for arrays")

    # ---- implementations ------------------------------------------------------------

    def check_implementation(self, interface: ast.Interface, implementation: ast.Implementation,
                             context: dict[str, str], taken: dict[str, ast.Node]) -> None:
        self.check_callable(implementation)
        local_seen = dict(taken)
        for variable in interface.variables:
            local_seen.setdefault(variable.name, variable)
        parameters: dict[str, str] = {}
        for parameter in implementation.parameters:
            if not self.declare(local_seen, parameter.name, parameter, "parameter"):
                continue
            parameters[parameter.name] = f"a parameter of {implementation.name}"
            self.known.setdefault(parameter.name, f"a parameter of {implementation.name}")
            self.check_parameter(implementation, parameter, context)
        for requirement in implementation.requires:
            scope = Scope(f"a precondition of {implementation.name}", dict(context), frozenset({"math"}))
            self.check_expression(requirement, scope, what="preconditions may use only explanatory "
                                  "variables, constants and P/logP")
        lets: dict[str, str] = {}
        for let in implementation.lets:
            scope = Scope(f"'{let.name}' of {implementation.name}", {**context, **parameters, **lets},
                          frozenset({"math", "model"}))
            self.check_expression(let.value, scope)
            if self.declare(local_seen, let.name, let, "helper"):
                lets[let.name] = f"a helper of {implementation.name}"
                self.known.setdefault(let.name, f"a helper of {implementation.name}")
        term_scope = {**context, **parameters, **lets}
        objectives: dict[str, ast.CostModel] = {}
        for model in implementation.models:
            self.check_cost_model(implementation, model, term_scope, objectives)
        if "time" not in objectives:
            self.error(implementation, f"implementation '{implementation.name}' has no time model "
                                       f"('time ~ terms' or 'time = expression'): it could never be chosen")
        chosen: dict[str, ast.Optimization] = {}
        for optimization in implementation.optimizations:
            self.check_optimization(implementation, optimization, context, term_scope, objectives, chosen)

    def check_callable(self, implementation: ast.Implementation) -> None:
        target = implementation.callable
        where = (implementation.callable_line, implementation.callable_column)
        if "." not in target:
            if target not in self.imports:
                self.error(where, f"unknown callable '{target}' for implementation '{implementation.name}': "
                                  f"import it (from \"FILE.py\" import {target}) or name a module "
                                  f"function such as numpy.sort")
            return
        module, name = split_dotted(target)
        if module in self.imports:
            self.error(where, f"'{module}' is an imported function, not a module")
            return
        problem = module_problem(module) or attribute_problem(module, name)
        if problem:
            self.error(where, f"implementation '{implementation.name}': {problem}")

    def check_parameter(self, implementation: ast.Implementation, parameter: ast.Parameter,
                        context: dict[str, str]) -> None:
        if parameter.type != "int":
            self.error(parameter, f"parameter '{parameter.name}' must be an int, not '{parameter.type}': "
                                  f"the dispatcher optimizes integer parameters")
        if parameter.range is None:
            self.error(parameter, f"parameter '{parameter.name}' has no range; "
                                  f"write '{parameter.name}: int in LOW .. HIGH'")
            return
        self.check_range(parameter.range, Scope(f"the range of '{parameter.name}'", dict(context),
                                                frozenset({"math"})), f"parameter '{parameter.name}'")

    def check_range(self, range_: ast.Range, scope: Scope, what: str) -> tuple[Any, Any] | None:
        """Check both bounds; when both are constant, the range must not be empty."""
        ok = self.check_expression(range_.low, scope) & self.check_expression(range_.high, scope)
        if not ok:
            return None
        try:
            low = evaluate(range_.low, self.constants)
            high = evaluate(range_.high, self.constants)
        except EvaluationError:
            return None  # depends on variables: checked when used
        for bound in (low, high):
            if not is_integer(bound):
                self.error(range_, f"the range of {what} must have integer bounds, not {bound!r}")
                return None
        if low > high:
            self.error(range_, f"the range of {what} is empty: {unparse(range_.low)} .. "
                               f"{unparse(range_.high)} goes from {low} down to {high}")
            return None
        return low, high

    def check_cost_model(self, implementation: ast.Implementation, model: ast.CostModel,
                         scope_names: dict[str, str], objectives: dict[str, ast.CostModel]) -> None:
        if model.objective not in OBJECTIVES:
            self.error(model, f"'{model.objective}' is not a model name; an implementation's models are "
                              f"{' and '.join(OBJECTIVES)} ('time ~ terms' or 'time = expression'); "
                              f"interface variables go before the first impl")
            return
        if not self.first(model, model.objective, objectives,
                          f"implementation '{implementation.name}' has two {model.objective} models"):
            return
        scope = Scope(f"a term of {implementation.name}", dict(scope_names), frozenset({"math", "model"}))
        if not model.fitted:
            self.check_expression(model.body, scope)
            return
        if not model.terms and not model.constant:
            self.error(model, f"the {model.objective} model of {implementation.name} has no terms")
        seen: dict[str, ast.Expression] = {}
        for term in model.terms:
            if isinstance(term, ast.Binary) and term.operator == "-" and not term.parenthesized:
                self.error((term.operator_line, term.operator_column),
                           "terms of a fitted model are joined by '+', and the fit chooses their signs; "
                           "put a difference in parentheses to make it one term")
                continue
            self.check_expression(term, scope)
            text = unparse(term)
            if text in seen:
                self.warning(term, f"term '{text}' appears twice in the {model.objective} model")
            seen[text] = term
        for term in model.families:
            self.check_family(term, scope)
        zeros = [n for n in model.numbers if n.value == 0]
        others = [n for n in model.numbers if n.value != 0]
        if zeros and others:
            self.error(model, f"the model withdraws the constant term (0) and offers it ({others[0].value})")
        for number in others:
            if number.value != 1:
                self.warning(number, f"the constant term is written {number.value}; its coefficient is fitted, "
                                     f"so write 1")

    def check_family(self, term: ast.FamilyTerm, scope: Scope) -> None:
        """A family's base and expression read what a term may read; its knots
        are constants, a non-empty range advancing upward."""
        if term.base is not None:
            self.check_expression(term.base, scope)
        counts = [self.check_family_knots(family, scope) for family in term.families]
        if len(counts) > 1 and all(counts) and math.prod(counts) > MOST_MEMBERS:
            self.error(term, f"the families of this term offer {math.prod(counts)} products of their knots; at "
                             f"most {MOST_MEMBERS} are offered to the fitter")

    def check_family_knots(self, family: ast.Family, scope: Scope) -> int | None:
        """Check one family; the number of its written knots (None: the samples place them, or an error)."""
        self.check_expression(family.expression, scope)
        if family.knots is None:
            return None
        try:
            knots = family_knots(family, self.constants)
        except (EvaluationError, ValueError) as error:
            self.error(family.knots, f"the knots of {family.kind}() must be constants (library constants and "
                                     f"machine constants): {error}")
            return None
        if not knots:
            self.error(family.knots, f"{family.kind}() has no knots: {unparse(family.knots.low)} .. "
                                     f"{unparse(family.knots.high)} is empty")
        elif len(knots) > MOST_KNOTS:
            self.error(family.knots, f"{family.kind}() has {len(knots)} knots; at most {MOST_KNOTS} are offered "
                                     f"to the fitter")
        return len(knots) or None

    def check_optimization(self, implementation: ast.Implementation, optimization: ast.Optimization,
                           context: dict[str, str], scope_names: dict[str, str],
                           objectives: dict[str, ast.CostModel], chosen: dict[str, ast.Optimization]) -> None:
        parameters = {p.name: p for p in implementation.parameters}
        if optimization.parameter not in parameters:
            self.error(optimization, f"choose: '{optimization.parameter}' is not a parameter of "
                                     f"{implementation.name}{self.suggest(optimization.parameter, parameters)}")
            return
        if not self.first(optimization, optimization.parameter, chosen,
                          f"parameter '{optimization.parameter}' is chosen twice"):
            return
        # Only the time model can be optimized so far (fitting other objectives is to come).
        names_ = {**scope_names, **{o: f"the {o} model of {implementation.name}" for o in objectives if o == "time"}}
        if optimization.over is not None:
            over = optimization.over
            range_scope = Scope("the range of the reparameterization", dict(context), frozenset({"math"}))
            if over.variable in names_ or over.variable in BUILTINS or over.variable in GLOBALS:
                self.error(over, f"'{over.variable}' is already defined; the reparameterization needs a new name")
            self.check_range(over.range, range_scope, f"'{over.variable}'")
            if over.target != optimization.parameter:
                self.error(over, f"'with' must set the parameter being chosen, '{optimization.parameter}', "
                                 f"not '{over.target}'")
            self.check_expression(over.value, Scope("the reparameterization", {
                **context, over.variable: "the reparameterization variable"}, frozenset({"math"})))
        scope = Scope(f"the objective of '{optimization.parameter}'", names_, frozenset({"math", "model"}))
        for name in names(optimization.objective):
            if name.id in self.models and name.id not in names_:
                self.error(name, f"model '{name.id}' must be called with its arguments: "
                                 f"{name.id}({', '.join(self.models[name.id].parameters)})")
                return
        if not self.check_expression(optimization.objective, scope):
            return
        if optimization.method == "root":
            used = {n.id for n in names(optimization.objective)}
            used |= {n.id for c in calls(optimization.objective) for a in c.arguments for n in names(a)}
            if optimization.parameter not in used and not (used & set(objectives)):
                self.warning(optimization, f"the root objective never depends on '{optimization.parameter}'")

    # ---- profile ---------------------------------------------------------------------

    def check_profile(self, interface: ast.Interface, profile: ast.Profile, taken: dict[str, ast.Node]) -> None:
        parameters = {p.name: (impl, p) for impl in interface.implementations for p in impl.parameters}
        reserved = {**{v.name: v for v in interface.variables}, **taken}
        seen: dict[str, ast.Node] = {}
        loop_names: dict[str, str] = {}
        outer: dict[str, str] = self.constant_names()  # loop bounds: the nest is the same at every P
        for loop in profile.loops:
            # A loop over inputs is walked once for all parameter values: it cannot depend on them.
            visible = loop_names if loop.variable in parameters else {
                name: kind for name, kind in loop_names.items() if name not in parameters}
            scope = Scope(f"loop '{loop.variable}'", {**outer, **visible}, frozenset({"math"}))
            if loop.variable in reserved and loop.variable not in parameters:
                self.error(loop, f"iteration variable '{loop.variable}' clashes with "
                                 f"{self.known.get(loop.variable, 'another name')}; iteration variables "
                                 f"name only loops (or the parameters they cover)")
            elif loop.variable in seen:
                self.error(loop, f"duplicate loop '{loop.variable}': already defined at line "
                                 f"{seen[loop.variable].line}")
            elif loop.variable in GLOBALS or loop.variable in BUILTINS or loop.variable in PROFILE_NAMES:
                self.error(loop, f"'{loop.variable}' is predefined and cannot name a loop")
            self.check_loop(loop, scope, parameters)
            seen[loop.variable] = loop
            loop_names[loop.variable] = "an iteration variable"
        for name, (implementation, parameter) in parameters.items():
            if name not in seen:
                hint = ""
                if parameter.range is not None:
                    hint = f": add 'for {name} in {unparse(parameter.range.low)} .. " \
                           f"{unparse(parameter.range.high)} ++'"
                self.error(parameter, f"parameter '{name}' of {implementation.name} is not covered "
                                      f"by the loop nest{hint}")
        # Arguments are built once per point, for all parameter values: parameter
        # loops are not visible there; P and logP are (the arguments are per rank).
        point_loops = {name: kind for name, kind in loop_names.items() if name not in parameters}
        values: dict[str, str] = {**outer, **GLOBALS, **point_loops, **PROFILE_NAMES}
        for let in profile.lets:
            self.check_expression(let.value, Scope(f"'{let.name}' of the profile", dict(values),
                                                   frozenset({"math", "import"})))
            if let.name in BUILTINS or let.name in GLOBALS:
                self.error(let, f"'{let.name}' is predefined; profile values need new names")
            elif let.name in loop_names:
                self.error(let, f"'{let.name}' is already an iteration variable; profile values need new names")
            elif let.name in values or let.name in reserved:
                what = values.get(let.name) or self.known.get(let.name, "defined elsewhere")
                self.error(let, f"'{let.name}' is already defined ({what}); profile values need new names")
            else:
                values[let.name] = "a profile value"
        arguments = {a.name: a for a in interface.arguments}
        built: dict[str, ast.Build] = {}
        for build in profile.builds:
            if build.name not in arguments:
                self.error(build, f"'{build.name}' is not an argument of {interface.name}"
                                  f"{self.suggest(build.name, arguments)}; the profile builds "
                                  f"arguments (NAME = expression)")
            elif build.name in built:
                self.error(build, f"argument '{build.name}' is built twice")
            built[build.name] = build
            self.check_expression(build.value, Scope(f"argument '{build.name}'", dict(values),
                                                     frozenset({"math", "import"})))
        for name in arguments:
            if name not in built:
                self.error(profile, f"the profile does not build argument '{name}' of {interface.name} "
                                    f"(add '{name} = ...')")
        # Setup and cleanup run around every timing: they see the point and the arguments.
        action_names = {**outer, **GLOBALS, **point_loops, **{a: "a built argument" for a in built}}
        for action, kind in [(a, "setup") for a in profile.setup] + [(a, "cleanup") for a in profile.cleanup]:
            if not isinstance(action, ast.Call) or action.function not in self.imports:
                self.error(action, f"{kind} must call an imported Python function, e.g. "
                                   f"'{kind} flush_caches()'")
                continue
            self.check_expression(action, Scope(kind, dict(action_names), frozenset({"math", "import"})))
        self.check_settings(profile)
        self.check_nest(interface, profile, values)

    def check_loop(self, loop: ast.Loop, scope: Scope, parameters: Mapping[str, Any]) -> None:
        bounds = self.check_range(loop.range, scope, f"loop '{loop.variable}'")
        update = loop.update
        amount = None
        if update.amount is not None:
            if not self.check_expression(update.amount, scope):
                return
            try:
                amount = evaluate(update.amount, self.constants)
            except EvaluationError:
                amount = None
        node = update if update.line else loop
        if amount is not None:
            real = update.operator == "*=" and isinstance(amount, int | float) and not isinstance(amount, bool)
            if real and not is_integer(amount):
                if not amount > 1 or amount == float("inf"):
                    self.error(node, f"loop '{loop.variable}' never terminates: '*= {amount!r}' does not "
                                     f"increase it")
                    return
            elif not is_integer(amount):
                what = "a number" if update.operator == "*=" else "an integer"
                self.error(node, f"the step of loop '{loop.variable}' must be {what}, not {amount!r}")
                return
            amount = amount if real and not is_integer(amount) else int(amount)
            if update.operator == "+=" and amount <= 0:
                self.error(node, f"loop '{loop.variable}' never terminates: '+= {amount}' does not increase it")
            elif update.operator == "*=" and amount <= 1:
                self.error(node, f"loop '{loop.variable}' never terminates: '*= {amount}' does not increase it")
            elif update.operator == "<<=" and amount <= 0:
                self.error(node, f"loop '{loop.variable}' never terminates: '<<= {amount}' does not increase it")
            elif update.operator == "<<=" and amount > 62 or abs(amount) > INT64_MAX:
                self.error(node, f"the step of loop '{loop.variable}' is too large: loop values must fit "
                                 f"in 64-bit integers")
        if bounds is not None and max(abs(bounds[0]), abs(bounds[1])) > INT64_MAX:
            self.error(loop.range, f"the range of loop '{loop.variable}' does not fit in 64-bit integers")
            return
        if bounds is not None and update.operator in ("*=", "<<=") and bounds[0] <= 0:
            self.error(node, f"loop '{loop.variable}' never terminates: it starts at {bounds[0]}, "
                             f"which '{update.operator}' cannot increase")
        elif bounds is not None and loop.drawn == "log" and bounds[0] < 1:
            self.error(loop.range, f"loop '{loop.variable}' is drawn log-uniformly, so it must start at 1 "
                                   f"or more, not {bounds[0]}")
        if bounds is not None and loop.variable in parameters:
            implementation, parameter = parameters[loop.variable]
            try:
                low = evaluate(parameter.range.low, self.constants) if parameter.range else None
                high = evaluate(parameter.range.high, self.constants) if parameter.range else None
            except EvaluationError:
                return
            if low is not None and (bounds[0] < low or bounds[1] > high):
                self.error(loop.range, f"loop '{loop.variable}' runs {bounds[0]} .. {bounds[1]}, outside the "
                                       f"range {low} .. {high} of parameter '{loop.variable}' of "
                                       f"{implementation.name}")

    def check_settings(self, profile: ast.Profile) -> None:
        seen: dict[str, ast.Setting] = {}
        for setting in profile.settings:
            if setting.name in seen:
                self.error(setting, f"'{setting.name}' is set twice (first at line {seen[setting.name].line})")
            seen[setting.name] = setting
            minimum = SETTING_MINIMUM.get(setting.name)
            for value in setting.values:
                if minimum is not None and value < minimum:
                    self.error(setting, f"'{setting.name} {value}': must be at least {minimum}")
                if setting.name == "timeout" and value <= 0:
                    self.error(setting, f"'timeout {value}': must be positive seconds")
            if setting.name == "ranks" and len(set(setting.values)) != len(setting.values):
                self.error(setting, "ranks lists a rank count twice")

    def check_nest(self, interface: ast.Interface, profile: ast.Profile, values: Mapping[str, str]) -> None:
        if any(d.severity == "error" for d in self.diagnostics):
            return  # the nest is only counted in a description that is otherwise sound
        used = set()
        for expression in [*(let.value for let in profile.lets), *(b.value for b in profile.builds),
                           *profile.setup, *profile.cleanup]:
            used |= {n.id for n in names(expression)}
        for let in profile.lets:
            used |= {n.id for n in names(let.value)}
        parameters = {p.name for impl in interface.implementations for p in impl.parameters}
        for loop in profile.loops:
            later = [x for x in profile.loops if x is not loop]
            in_bounds = any(loop.variable in {n.id for n in _loop_expressions(x)} for x in later)
            if loop.variable not in used and loop.variable not in parameters and not in_bounds:
                self.warning(loop, f"iteration variable '{loop.variable}' is never used")
        for implementation in interface.implementations:
            try:
                count = count_points(relevant_loops(interface, implementation.name), self.constants)
            except NestError as error:
                self.error(error.loop, str(error))
                return
            if count == 0:
                self.report_empty_nest(relevant_loops(interface, implementation.name), implementation)
                return
            if count > LARGE_NEST:
                self.warning(profile, f"{implementation.name} would be profiled at {count:,} points; "
                                      f"coarsen the loop nest")

    def report_empty_nest(self, loops: list[ast.Loop], implementation: ast.Implementation) -> None:
        """Point at the first loop after which the nest has no point left."""
        for end in range(1, len(loops) + 1):
            if count_points(loops[:end], self.constants) == 0:
                loop = loops[end - 1]
                outside = " for every value of the loops outside it" if end > 1 else ""
                self.error(loop.range, f"the range of loop '{loop.variable}' is empty{outside}: "
                                       f"{implementation.name} would never be profiled")
                return

    # ---- expressions ----------------------------------------------------------------

    def suggest(self, name: str, candidates: Iterable[str]) -> str:
        close = difflib.get_close_matches(name, list(candidates), n=1)
        return f"; did you mean '{close[0]}'?" if close else ""

    def check_expression(self, expression: ast.Expression, scope: Scope, what: str = "") -> bool:
        """Report every problem of ``expression`` in ``scope``; True when there is none."""
        before = len(self.diagnostics)
        argument_positions: set[int] = set()
        for node in walk(expression):
            if isinstance(node, ast.Call):
                argument_positions |= self.check_call(node, scope)
            elif isinstance(node, ast.Family):
                self.error(node, f"{node.kind}() is a family of candidate terms; it stands only as a factor of a "
                                 f"term of a fitted model ('time ~ ... + n * {node.kind}(...)')")
        for node in names(expression):
            if id(node) in argument_positions:
                continue
            self.check_name(node, scope, what)
        return len(self.diagnostics) == before

    def check_name(self, node: ast.Name, scope: Scope, what: str) -> None:
        if node.id in scope.names:
            return
        if node.id in scope.array_arguments:
            self.error(node, f"'{node.id}' is an array; use len({node.id}), size({node.id}) or another "
                             f"function of it")
            return
        known = self.known.get(node.id)
        if known is None and node.id in PROFILE_NAMES:
            known = "defined only for building arguments"
        if known is not None:
            rule = f"; {what}" if what else ""
            self.error(node, f"'{node.id}' is {known}, which {scope.place} cannot use{rule}")
        else:
            self.error(node, f"undefined name '{node.id}' in {scope.place}{self.suggest(node.id, scope.names)}")

    def check_call(self, call: ast.Call, scope: Scope) -> set[int]:
        """Check one call; returns the ids of argument names it accounts for
        (arguments of argument functions are array names, not values)."""
        name = call.function
        count = len(call.arguments)
        function = BUILTINS.get(name)
        # The arguments of a misused argument function are names of arrays: reported once, with the call.
        array_names = {id(a) for a in call.arguments if isinstance(a, ast.Name)}
        if function is not None:
            if function.family not in scope.functions:
                self.error(call, f"{name}() reads an interface argument; it can be used only where "
                                 f"explanatory variables are defined, not in {scope.place}")
                return array_names
            if not function.accepts(count):
                self.error(call, f"{name}() takes {function.arity_text()} argument"
                                 f"{'s' if function.arity_text() != '1' else ''}, not {count}")
                return array_names if function.family == "argument" else set()
            if function.family == "argument":
                return self.check_argument_call(call, function, scope)
            return set()
        if name in self.imports:
            if "import" not in scope.functions:
                reason = ("must compile to C, so it may call only math functions and models"
                          if "model" in scope.functions else "may call only math functions")
                self.error(call, f"'{name}' is a Python helper; {scope.place} {reason}")
                return set()
            # A helper may read whole arrays (width = key_width(keys)).
            return {id(a) for a in call.arguments if isinstance(a, ast.Name) and a.id in scope.array_arguments}
        signature = self.resolve_model(name)
        if signature is not None:
            if "model" not in scope.functions:
                self.error(call, f"{scope.place} cannot call the model '{name}'")
            elif count != len(signature.parameters):
                self.error(call, f"{signature.origin} takes {len(signature.parameters)} argument"
                                 f"{'' if len(signature.parameters) == 1 else 's'} "
                                 f"({', '.join(signature.parameters)}), not {count}")
            return set()
        candidates = [f for f in MATH] + list(self.imports) + list(self.models)
        if "argument" in scope.functions:
            candidates += list(ARGUMENT)
        qualifier = name.partition(".")[0]
        if "." in name and qualifier in {u.library for u in self.library.uses}:
            return set()  # the 'uses' line already reported why that library is missing
        if "." in name and qualifier not in self.used:
            self.error(call, f"unknown model '{name}': '{qualifier}' is not a used library "
                             f"(add 'uses {qualifier}')")
        else:
            self.error(call, f"unknown function '{name}' in {scope.place}{self.suggest(name, candidates)}")
        return set()

    def check_argument_call(self, call: ast.Call, function: Any, scope: Scope) -> set[int]:
        argument = call.arguments[0]
        if not isinstance(argument, ast.Name) or argument.id not in scope.array_arguments:
            self.error(call, f"{call.function}() takes an array argument of the interface")
            return set()
        dimensions = scope.array_arguments[argument.id]
        if dimensions < function.array_dimensions:
            self.error(call, f"{call.function}() needs an array of at least {function.array_dimensions} "
                             f"dimensions; '{argument.id}' has {dimensions}")
        return {id(argument)}


def _loop_expressions(loop: ast.Loop) -> list[ast.Name]:
    found = names(loop.range.low) + names(loop.range.high)
    if loop.update.amount is not None:
        found += names(loop.update.amount)
    return found


def implementation_signature(interface: ast.Interface, implementation: ast.Implementation) -> ModelSignature:
    """An implementation's model, as expressions may call it (its arguments: ``Interface.signature``)."""
    return ModelSignature(implementation.name, interface.signature(implementation),
                          f"the model of {implementation.name}")


def library_models(library: ast.Library) -> dict[str, ModelSignature]:
    """The models another description may call after ``uses``."""
    models = {m.name: ModelSignature(m.name, m.parameters, f"model '{m.name}'") for m in library.models}
    for interface in library.interfaces:
        for implementation in interface.implementations:
            models[implementation.name] = implementation_signature(interface, implementation)
    return models


def check(library: ast.Library, problems: Sequence[tuple[ast.Node, str]] = ()) -> ast.Library:
    """Run every semantic check on a library whose ``uses`` are resolved
    (``library.used``; ``problems``: what resolving them found); raise
    :class:`HLError` listing all errors, or return the library with its
    warnings attached.  The tree is not changed."""
    diagnostics = Checker(library, problems).run()
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise HLError(errors, warnings=[d for d in diagnostics if d.severity == "warning"])
    return replace(library, warnings=tuple(d for d in diagnostics if d.severity == "warning"),
                   used=library.used)
