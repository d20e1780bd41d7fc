"""The decision procedure in C (``templates/decisions.c.j2``), mirroring
:mod:`hlc.dispatch.reference`.

Everything the dispatcher evaluates at call time is C: one function per
model (calibrated coefficients embedded, one term per line with the term as
the description writes it), one per precondition, per parameter objective
and per parameter search, and one ``decide`` per interface.  The searches
and the functions models call are those of the header ``hlc_dispatch.h``,
shared by every module, the C twins of :mod:`hlc.optimize`.  This module
works out what the template prints; the template says how it reads.

Naming, so that no user name can collide with C or with another library:
variables, parameters and helpers are ``v_<name>``; constants are
``hlc_const_<library>__<name>``; models are ``hlc_time_<library>__<impl>``
and ``hlc_model_<library>__<name>``, and where a model knows its typical
deviation (hlc.model.deviation), ``hlc_plan_<library>__<impl>`` gives the
time a decision plans for and the prediction, its terms valued once for
both.  A model whose terms vary with a searched parameter is split
(hlc.model.summation): ``hlc_fixed_<library>__<impl>`` holds what its
searches do not vary, ``hlc_fix_…`` values it once a decision,
``hlc_sum_…`` adds the varying products at one candidate and
``hlc_sums_…__<parameter>`` at every candidate a search compares at once
(:meth:`Library.staged_sum`); each decision works in an
``hlc_decision_<library>__<interface>``, its state and those.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from typing import Any

from hlc.artefacts.models import NOT_CALIBRATED, Models, TimeModel
from hlc.codegen import render
from hlc.language import ast
from hlc.language.expressions import calls, names, power_of_two_comparison, to_c, unparse, walk
from hlc.language.functions import BUILTINS
from hlc.language.machine import used_machine_constants
from hlc.language.nest import constant_values
from hlc.model.predict import helpers_for
from hlc.model.render import atomic, used_helpers
from hlc.model.summation import Group, Summation, kept_terms, summation
from hlc.model.terms import model_terms
from hlc.optimize import COARSE, SCAN_LIMIT, SWEEPS

#: The header every dispatch module includes (templates/, copied beside the module's source).
HEADER = "hlc_dispatch.h"


def header_name(library: str) -> str:
    """The file name of a dispatch module's header (:func:`c_header`)."""
    return f"dispatch_{library}.h"


def predict_function(library: str, implementation: str) -> str:
    """The name of the function that gives the module an implementation's prediction."""
    return f"hlc_predict_{library}__{implementation}"


def decisions_name(library: str) -> str:
    """The file name of a dispatch module's models and decisions (:func:`c_source`)."""
    return f"decisions_{library}.c"


def v(name: str) -> str:
    return f"v_{name}"


class Library:
    """One library's names in C, and how its expressions are spelled."""

    def __init__(self, library: ast.Library, calibration: Mapping[str, TimeModel], used: Mapping[str, Library]):
        self.library = library
        self.calibration = calibration
        self.used = used
        self.constants = set(used_machine_constants(library)) | {c.name for c in library.constants}
        self.models = {m.name for m in library.models}
        self.implementations = {i.name for i in library.implementations}
        self._sums: dict[str, Summation | None] = {}  # summation(), by implementation
        self.deciding = False  # whether the module's decisions search its parameters (the main library)

    def time_function(self, implementation: str) -> str:
        return f"hlc_time_{self.library.name}__{implementation}"

    def plan_function(self, implementation: ast.Implementation) -> str | None:
        """The function of the time a decision plans for (:meth:`plan_model`);
        None where the model knows no deviation: its prediction is the plan."""
        entry = self.calibration.get(implementation.name, NOT_CALIBRATED)
        model = implementation.model("time")
        if entry.status == "fitted" and entry.usable and entry.weighs_deviations and model is not None \
                and model.fitted:
            return f"hlc_plan_{self.library.name}__{implementation.name}"
        return None

    def model_function(self, name: str) -> str:
        return f"hlc_model_{self.library.name}__{name}"

    def constant(self, name: str) -> str:
        return f"hlc_const_{self.library.name}__{name}"

    def spell_name(self, name: str) -> str:
        return self.constant(name) if name in self.constants else v(name)

    def resolve(self, function: str) -> str:
        """The C function a model call names."""
        if function in self.implementations:
            return self.time_function(function)
        if function in self.models:
            return self.model_function(function)
        qualifier, _, name = function.rpartition(".")
        candidates = [self.used[qualifier]] if qualifier else list(self.used.values())
        for used in candidates:
            if name in used.implementations or name in used.models:
                return used.resolve(name)
        raise KeyError(f"no model '{function}' in {self.library.name} or the libraries it uses")

    def spell_call(self, call: ast.Call, arguments: list[str]) -> str | None:
        if call.function in BUILTINS:
            return None
        return f"{self.resolve(call.function)}({', '.join([*arguments, v('P'), v('logP')])})"

    def c(self, expression: ast.Expression) -> str:
        return to_c(expression, spell_name=self.spell_name, spell_call=self.spell_call)

    # ---- what the template prints

    def constant_lines(self) -> list[tuple[str, str]]:
        values = constant_values(self.library)
        return [(self.constant(name), repr(float(values.get(name, math.nan)))) for name in sorted(self.constants)]

    def functions(self) -> list[dict[str, Any]]:
        """Every model of the library: its own (``model``), then each implementation's."""
        functions = [{"function": self.model_function(model.name), "parameters": _parameter_list(model.parameters),
                      "doc": comment(model.doc) if model.doc else None, "note": None,
                      "unavailable": False, "helpers": [], "terms": None, "body": self.c(model.body), "split": None}
                     for model in self.library.models]
        for interface in self.library.interfaces:
            for implementation in interface.implementations:
                functions.append(self.time_model(interface, implementation))
        return functions

    def predictions(self) -> list[dict[str, str]]:
        """What the module calls for predict(): a function per implementation
        that returns its model's prediction.  The models themselves stay
        static, which lets the compiler fold them into the decisions."""
        return [{"function": predict_function(self.library.name, implementation.name),
                 "model": self.time_function(implementation.name),
                 "parameters": _parameter_list(interface.signature(implementation)),
                 "arguments": ", ".join(v(n) for n in [*interface.signature(implementation), "P", "logP"])}
                for interface in self.library.interfaces for implementation in interface.implementations]

    def time_model(self, interface: ast.Interface, implementation: ast.Implementation) -> dict[str, Any]:
        """An implementation's calibrated model: its helpers, then the sum of
        its kept terms, one a line (a factored model: its expression)."""
        parameters = interface.signature(implementation)
        model = implementation.model("time")
        entry = self.calibration.get(implementation.name, NOT_CALIBRATED)
        status = entry.status
        doc = f"{implementation.name}: {implementation.doc}" if implementation.doc else implementation.name
        function = {"function": self.time_function(implementation.name),
                    "parameters": _parameter_list(parameters), "doc": comment(doc),
                    "unavailable": False, "helpers": [], "terms": None, "body": None, "split": None}
        if model is None or not entry.usable:
            function.update(unavailable=True, note=comment(f"{status}: {entry.cause or status}"))
            return function
        function["note"] = self.accuracy(entry)
        sums = self.summation(implementation)
        if sums is not None:
            function["split"] = self.split_model(interface, implementation, sums)
            function["function_doc"] = comment(f"{implementation.name} at one call (predict(), and the models "
                                               "that call it): its sum, split as its search adds it")
            return function
        function["helpers"] = [(v(let.name), self.c(let.value)) for let in used_helpers(implementation, model, entry)]
        if not model.fitted:
            function["body"] = self.c(model.body)
            return function
        lines = []
        for position, (source, coefficient, term) in enumerate(self.weighted_terms(implementation,
                                                                                   entry.coefficients)):
            value = coefficient if term is None else \
                f"{coefficient} * {self.c(term) if atomic(term) else '(' + self.c(term) + ')'}"
            lines.append({"statement": f"double seconds = {value};" if position == 0 else f"seconds += {value};",
                          "source": comment(source)})
        function["terms"] = lines or [{"statement": "double seconds = 0.0;", "source": "no term kept"}]
        function["width"] = max(len(line["statement"]) for line in function["terms"])
        return function

    @staticmethod
    def accuracy(entry: TimeModel) -> str:
        """A fitted model's accuracy, as its functions' first comment says it."""
        accuracy = [f"fit MRE {entry.mre:.3f}"] if entry.mre is not None else []
        if entry.verification_mre is not None:
            accuracy.append(f"verification MRE {entry.verification_mre:.3f}")
        return f"{entry.status}; {', '.join(accuracy) or 'not verified'}"

    def weighted_terms(self, implementation: ast.Implementation,
                       coefficients: Mapping[str, float]) -> list[tuple[str, str, ast.Expression | None]]:
        """A fitted model's terms with a coefficient in ``coefficients``, in
        the order the sum adds them (the constant first): the term as the
        description writes it, its coefficient in C, and the term itself
        (None for the constant)."""
        entry = self.calibration.get(implementation.name, NOT_CALIBRATED)
        terms: list[tuple[str, ast.Expression | None]] = [("1", None)] if "1" in coefficients else []
        terms += [(unparse(term), term) for term in model_terms(implementation.model("time"), entry.discovered)
                  if coefficients.get(unparse(term))]
        return [(source, repr(coefficients[source]), term) for source, term in terms]

    def summation(self, implementation: ast.Implementation) -> Summation | None:
        """How a decision adds up the implementation's model, split where a
        term varies with a parameter (hlc.model.summation), over the terms
        the Python predictor keeps for it; None where none varies, or the
        model is not a fitted sum."""
        if implementation.name not in self._sums:
            entry = self.calibration.get(implementation.name, NOT_CALIBRATED)
            model = implementation.model("time")
            sums = None
            if implementation.parameters and model is not None and model.fitted and entry.status == "fitted" \
                    and entry.usable:
                sums = summation(implementation, kept_terms(model, entry))
            self._sums[implementation.name] = sums if sums is not None and sums.split else None
        return self._sums[implementation.name]

    def ranking(self, implementation: ast.Implementation, fixed: str, arguments: str, predicted: str) -> str:
        """The C of the time a decision ranks ``implementation`` by at
        ``arguments``: its plan, the prediction put where ``predicted``
        points, else its prediction as ranked (hlc_time); from ``fixed``,
        its split model's part valued once, where it has one."""
        plan, split = self.plan_function(implementation), self.summation(implementation) is not None
        if plan is not None:
            return f"{plan}({fixed + ', ' if split else ''}{arguments}, {predicted})"
        if split:
            return f"hlc_time({self.sum_function(implementation)}({fixed}, {arguments}, (double *)0))"
        return f"hlc_time({self.time_function(implementation.name)}({arguments}))"

    def fixed_type(self, implementation: ast.Implementation) -> str:
        return f"hlc_fixed_{self.library.name}__{implementation.name}"

    def fix_function(self, implementation: ast.Implementation) -> str:
        return f"hlc_fix_{self.library.name}__{implementation.name}"

    def sum_function(self, implementation: ast.Implementation) -> str:
        return f"hlc_sum_{self.library.name}__{implementation.name}"

    def split_model(self, interface: ast.Interface, implementation: ast.Implementation,
                    sums: Summation) -> dict[str, Any]:
        """A model split for its searches (hlc.model.summation): a struct of
        what does not vary with its parameters, the function that values it
        once a call, and the one that adds the varying factors to it."""
        entry = self.calibration[implementation.name]
        parameters = {p.name for p in implementation.parameters}
        variables = [name for name in interface.signature(implementation) if name not in parameters]
        weights = {"seconds": {t: repr(c) for t, c in entry.coefficients.items() if c},
                   "deviation": {t: repr(c) for t, c in entry.plan_deviations.items() if c}}
        fix: list[dict[str, str | None]] = []

        def add(statements: list[str], source: str) -> None:
            fix.extend({"statement": statement, "source": comment(source) if position == 0 else None}
                       for position, statement in enumerate(statements))

        add([f"{name} += {w['1']};" for name, w in weights.items() if "1" in w], "1")
        for text, term in sums.fixed:
            added = [f"{name} += {w[text]} * term;" for name, w in weights.items() if text in w]
            if added:
                add([f"term = {self.c(term)};", *added], text)
        weight_fields = {"seconds": "weight", "deviation": "deviation_weight"}
        fix.append({"statement": "f->seconds = seconds;", "source": "the terms without a parameter"})
        fix.append({"statement": "f->deviation = deviation;", "source": None})
        vary: list[dict[str, str | None]] = []
        products: list[tuple[int, Group, list[str]]] = []  # (index, group, the sums its product adds to)
        spread = False
        sum_helpers = helpers_for(implementation, [group.factor for group in sums.groups])
        varying = [group.factor for group in sums.groups] + [let.value for let in sum_helpers]
        guarded = {factor: text for factor in varying if (text := self.guarded_hinge(factor, varying)) is not None}
        for index, group in enumerate(sums.groups):
            assigned: set[str] = set()
            for part in group.parts:
                statements = [] if part.fixed is None else [f"term = {self.c(part.fixed)};"]
                for name, w in weights.items():
                    if part.text in w:
                        target = f"f->{weight_fields[name]}[{index}]"
                        operator = "+=" if target in assigned else "="
                        assigned.add(target)
                        times = "" if part.fixed is None else " * term"
                        statements.append(f"{target} {operator} {w[part.text]}{times};")
                add(statements, part.text)
            added = [f"{name} += f->{weight_fields[name]}[{index}] * term;" for name in weights
                     if f"f->{weight_fields[name]}[{index}]" in assigned]
            spread = spread or f"f->deviation_weight[{index}]" in assigned
            factor = self.c(group.factor) if group.factor not in guarded else guarded[group.factor]
            vary += [{"statement": statement, "source": comment(group.text) if position == 0 else None}
                     for position, statement in enumerate([f"term = {factor};", *added])]
            products.append((index, group, [name for name in weights
                                            if f"f->{weight_fields[name]}[{index}]" in assigned]))
        fixed_terms = [term for _, term in sums.fixed] + [p.fixed for g in sums.groups for p in g.parts if p.fixed]
        named = " and ".join(p.name for p in implementation.parameters)
        them = "it" if len(implementation.parameters) == 1 else "them"
        doc = (f"{implementation.name}: {implementation.doc or 'its model'}.  Its terms, split for the search of "
               f"{named}: what does not vary with {them} is valued once a call "
               f"({self.fix_function(implementation)}), the terms without {them} and, for each product of the "
               f"factors that vary, the sum of its terms' coefficients times their other factors.  Each value "
               f"the search weighs then adds {len(sums.groups)} such products "
               f"({self.sum_function(implementation)}).")
        groups = len(sums.groups)
        fields = [("double seconds, deviation;", "the sums of the terms without a parameter"),
                  (f"double weight[{groups}];", "each varying product's weight in the prediction")]
        if spread:
            fields.append((f"double deviation_weight[{groups}];", "and in the deviation"))
        return {"type": self.fixed_type(implementation), "fix": self.fix_function(implementation),
                "doc": textwrap.wrap(comment(doc), 76), "fields": fields,
                "field_width": max(len(field) for field, _ in fields),
                "sum": self.sum_function(implementation), "groups": groups, "spread": spread,
                "fix_parameters": _parameter_list(variables) + f", {self.fixed_type(implementation)} *f",
                "sum_parameters": f"const {self.fixed_type(implementation)} *f, "
                                  f"{_parameter_list(interface.signature(implementation))}, double *spread",
                "fix_arguments": ", ".join(v(n) for n in [*variables, "P", "logP"]),
                "arguments": _call_arguments(interface, implementation),
                "parameters": named,
                "fix_helpers": [(v(let.name), self.c(let.value)) for let in helpers_for(implementation, fixed_terms)],
                "sum_helpers": [(v(let.name), self.c(let.value)) for let in sum_helpers],
                "fix_terms": fix, "vary_terms": vary,
                "fix_width": max((len(line["statement"]) for line in fix if line["source"]), default=0),
                "vary_width": max((len(line["statement"]) for line in vary if line["source"]), default=0),
                "staged": [self.staged_sum(interface, implementation, parameter, sum_helpers, products)
                           for parameter in implementation.parameters if self.batched(implementation, parameter)]}

    def batched(self, implementation: ast.Implementation, parameter: ast.Parameter) -> bool:
        """Whether the search of ``parameter`` values its candidates all at
        once (hlc_integer_minimum_of): in the library whose decisions the
        module makes, where it minimizes the very time the
        decision ranks by (:func:`minimizes_time`) and the model is split
        for it, so that its sums can be taken a step at a time over the
        candidates (:meth:`staged_sum`)."""
        return self.deciding and minimizes_time(implementation, parameter) \
            and self.summation(implementation) is not None

    def staged_function(self, implementation: ast.Implementation, parameter: ast.Parameter) -> str:
        return f"hlc_sums_{self.library.name}__{implementation.name}__{parameter.name}"

    def staged_sum(self, interface: ast.Interface, implementation: ast.Implementation, parameter: ast.Parameter,
                   helpers: list[ast.Let], products: list[tuple[int, Group, list[str]]]) -> dict[str, Any]:
        """The sums of :meth:`split_model` at each of a search's candidate
        values of ``parameter`` at once: first each helper that varies, then
        each logarithm the products take (once a candidate, as the compiler
        shares one candidate's), a statement at a time over all candidates,
        so that their divisions and calls run side by side; then the sums,
        a candidate at a time, in registers.  The same operations in the
        same order as the sum at one value, so the same values."""
        arrays = {parameter.name} | {let.name for let in helpers}
        logarithms: dict[str, tuple[str, ast.Expression]] = {}  # argument's text → (array, argument)
        knots: dict[str, list[float]] = {}  # argument's text → the knots of the hinges that take its log2
        unhinged: set[str] = set()  # arguments whose log2 is taken outside a hinge too
        for _, group, _ in products:
            compared = {id(node.left) for node in walk(group.factor)
                        if isinstance(node, ast.Binary) and power_of_two_comparison(node) is not None}
            hinged = {id(hinge[0]): hinge[1] for node in walk(group.factor)
                      if (hinge := hinge_in_log2(node)) is not None}
            for call in calls(group.factor):
                if call.function == "log2" and len(call.arguments) == 1 and id(call) not in compared:
                    text = unparse(call.arguments[0])
                    if text not in logarithms:
                        plain = text if text.isidentifier() else str(len(logarithms))
                        logarithms[text] = (f"log2_{plain}", call.arguments[0])
                    if id(call) in hinged:
                        knots.setdefault(text, []).append(hinged[id(call)])
                    else:
                        unhinged.add(text)
        statements: list[dict[str, str | None]] = []
        for let in helpers:
            statements.append({"statement": f"{v(let.name)}[j] = {self.c_each(let.value, arrays, {})};",
                               "source": comment(f"{let.name} = {unparse(let.value)}")})
        logs = {text: name for text, (name, _) in logarithms.items()}
        for text, (name, argument) in logarithms.items():
            x = self.c_each(argument, arrays, {})
            below = None if text in unhinged else below_knot(min(knots[text]))
            if below is None:
                statements.append({"statement": f"{name}[j] = hlc_log2({x});", "source": comment(f"log2({text})")})
            else:  # below the lowest knot every hinge that takes it is 0, as it is with -infinity
                statements.append({"statement": f"{name}[j] = {x} > {below!r} ? hlc_log2({x}) : -INFINITY;",
                                   "source": comment(f"log2({text}), where a hinge in it rises")})
        terms: list[dict[str, str | None]] = []
        added = {"seconds": "sum", "deviation": "spread"}
        weight_fields = {"seconds": "weight", "deviation": "deviation_weight"}
        for index, group, sums in products:
            lines = [f"term = {self.c_each(group.factor, arrays, logs)};",
                     *(f"{added[name]} += f->{weight_fields[name]}[{index}] * term;" for name in sums)]
            terms += [{"statement": line, "source": comment(group.text) if position == 0 else None}
                      for position, line in enumerate(lines)]
        signature = interface.signature(implementation)
        return {"function": self.staged_function(implementation, parameter), "parameter": parameter.name,
                "parameters": f"const {self.fixed_type(implementation)} *f, "
                              + ", ".join(f"const double *{v(n)}" if n == parameter.name else f"double {v(n)}"
                                          for n in [*signature, "P", "logP"])
                              + ", long count, double *seconds, double *deviation",
                "locals": [v(let.name) for let in helpers] + [name for name, _ in logarithms.values()],
                "statements": statements, "terms": terms,
                "width": max((len(line["statement"]) for line in statements if line["source"]), default=0),
                "terms_width": max((len(line["statement"]) for line in terms if line["source"]), default=0)}

    def c_each(self, expression: ast.Expression, arrays: set[str], logarithms: Mapping[str, str]) -> str:
        """``expression`` in C at the j-th of a search's candidates: the
        names in ``arrays`` read at j, and the logarithm of an argument in
        ``logarithms`` read from the array that holds it (by its text)."""

        def spell_name(name: str) -> str:
            return f"{v(name)}[j]" if name in arrays else self.spell_name(name)

        def spell_call(call: ast.Call, arguments: list[str]) -> str | None:
            if call.function == "log2" and len(call.arguments) == 1:
                array = logarithms.get(unparse(call.arguments[0]))
                if array is not None:
                    return f"{array}[j]"
            return self.spell_call(call, arguments)

        return to_c(expression, spell_name=spell_name, spell_call=spell_call)

    def guarded_hinge(self, factor: ast.Expression, varying: list[ast.Expression]) -> str | None:
        """A hinge in log2, ``max(0, log2(x) - k)``, as C that takes the
        logarithm only where x lies above 2 ** k (the same value: below, the
        hinge is 0, and so is the guarded form at a NaN); None for any other
        factor, or where ``varying`` (the expressions a search's candidates
        value) takes the logarithm of x elsewhere, whose one call the
        compiler would otherwise share.  A search values such a factor at
        each candidate: a vector library's six candidates of 2 ** block
        values each took 110-116 ns to decide at 4 values, 95 ns so."""
        hinge = hinge_in_log2(factor)
        if hinge is None:
            return None
        x = hinge[0].arguments[0]
        if sum(logarithms_taken(expression).count(unparse(x)) for expression in varying) != 1:
            return None
        below = below_knot(hinge[1])
        if below is None:
            return None
        return f"({self.c(x)} > {below!r} ? {self.c(factor)} : 0.0)"

    def plan_model(self, interface: ast.Interface, implementation: ast.Implementation) -> dict[str, Any] | None:
        """The time a decision plans for (hlc.dispatch.reference): the
        prediction plus ``risk`` typical deviations, each a sum of the
        model's terms, valued once for both sums.  It returns that time,
        ranked no better than the prediction, and puts the prediction (as
        ranked, hlc_time) where its last argument points: the decision
        reports it, a parameter's search does not.  None where the model
        knows no deviation (:meth:`plan_function`)."""
        function = self.plan_function(implementation)
        if function is None:
            return None
        model = implementation.model("time")
        entry = self.calibration[implementation.name]
        doc = comment(f"{implementation.name}, as its decisions weigh it: the prediction plus "
                      f"{entry.risk:g} typical deviations of its samples from it")
        if self.summation(implementation) is not None:
            fixed = self.fixed_type(implementation)
            return {"function": function, "doc": doc, "note": self.accuracy(entry),
                    "parameters": f"const {fixed} *f, {_parameter_list(interface.signature(implementation))}, "
                                  "double *predicted",
                    "sum": f"{self.sum_function(implementation)}(f, {_call_arguments(interface, implementation)}, "
                           "&deviation)"}
        sums = [("seconds", {source: c for source, c, _ in self.weighted_terms(implementation, entry.coefficients)}),
                ("deviation", {source: c for source, c, _ in
                               self.weighted_terms(implementation, entry.plan_deviations)})]
        lines = []
        for source, term in [("1", None)] + [(unparse(t), t) for t in model_terms(model, entry.discovered)]:
            added = [(name, weights[source]) for name, weights in sums if source in weights]
            if not added:
                continue
            if term is None:  # the constant: its coefficients alone
                statements = [f"{name} += {coefficient};" for name, coefficient in added]
            else:
                statements = [f"term = {self.c(term)};", *(f"{name} += {c} * term;" for name, c in added)]
            lines += [{"statement": statement, "source": comment(source) if position == 0 else None}
                      for position, statement in enumerate(statements)]
        return {"function": function,
                "parameters": _parameter_list(interface.signature(implementation)) + ", double *predicted",
                "doc": doc, "note": self.accuracy(entry), "sum": None,
                "helpers": [(v(let.name), self.c(let.value)) for let in used_helpers(implementation, model, entry)],
                "terms": lines, "width": max((len(line["statement"]) for line in lines if line["source"]), default=0)}


_PLAIN = {"∞": "infinity", "≤": "<=", "≥": ">=", "≠": "!=", "→": "->", "←": "<-", "×": "x", "−": "-", "–": "-",
          "—": "-", "’": "'", "‘": "'", "“": '"', "”": '"', "…": "...", "·": "*", "²": "^2", "³": "^3"}


def minimizes_time(implementation: ast.Implementation, parameter: ast.Parameter) -> bool:
    """Whether the search of ``parameter`` minimizes the very time the
    decision ranks the implementation by: no objective of its own, no helper
    of its own, not a root, and a time model to minimize; its least value is
    then that time."""
    rule = implementation.optimization(parameter.name)
    objective = rule.objective if rule else ast.Name(0, 0, "time")
    return (isinstance(objective, ast.Name) and objective.id == "time"
            and not helpers_for(implementation, [objective])
            and (rule is None or rule.over is not None or rule.method != "root")
            and implementation.model("time") is not None)


def hinge_in_log2(factor: ast.Expression) -> tuple[ast.Call, float] | None:
    """The ``log2(x)`` call and the knot k of a hinge ``max(0, log2(x) - k)``; None for any other expression."""
    if not (isinstance(factor, ast.Call) and factor.function == "max" and len(factor.arguments) == 2):
        return None
    zero, bend = factor.arguments
    if not (isinstance(zero, ast.Number) and zero.value == 0 and isinstance(bend, ast.Binary)
            and bend.operator == "-" and isinstance(bend.right, ast.Number)
            and isinstance(bend.left, ast.Call) and bend.left.function == "log2" and len(bend.left.arguments) == 1):
        return None
    return bend.left, float(bend.right.value)


def below_knot(knot: float) -> float | None:
    """A bound that every x whose log2 lies below ``knot`` stays under, and no
    x whose log2 reaches it: 2 ** knot less a little; None where it is no
    positive finite number."""
    try:
        below = 2.0 ** knot * (1 - 2.0 ** -40)  # log2 of any x up to it lies below the knot
    except OverflowError:
        return None
    return below if 0.0 < below < math.inf else None


def logarithms_taken(expression: ast.Expression) -> list[str]:
    """The arguments (as text) of the ``log2`` calls that the C of
    ``expression`` makes: not those of a comparison ``log2(x) >= k``, which
    it spells as ``x >= 2 ** k``."""
    compared = {id(node.left) for node in walk(expression)
                if isinstance(node, ast.Binary) and power_of_two_comparison(node) is not None}
    return [unparse(call.arguments[0]) for call in calls(expression)
            if call.function == "log2" and len(call.arguments) == 1 and id(call) not in compared]


def comment(text: str) -> str:
    """``text`` fit for a C comment in the module: no ``*/``, and ASCII
    (Cython before 3.1 writes the embedded C in Latin-1)."""
    text = "".join(_PLAIN.get(c, c) for c in text.replace("*/", "* /"))
    return text.encode("ascii", "replace").decode("ascii")


def _call_arguments(interface: ast.Interface, implementation: ast.Implementation) -> str:
    """The arguments of a time function's call inside its own file: its variables, P and logP."""
    return ", ".join(v(n) for n in [*interface.signature(implementation), "P", "logP"])


def _parameter_list(names_: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"double {v(n)}" for n in [*names_, "P", "logP"])


class Interface:
    """The state, preconditions, parameter choices and decision of one interface."""

    def __init__(self, library: Library, interface: ast.Interface):
        self.library = library
        self.interface = interface
        self.name = interface.name
        self.variables = [var.name for var in interface.variables] + ["P", "logP"]

    @property
    def state(self) -> str:
        return f"hlc_state_{self.library.library.name}__{self.name}"

    def fields(self) -> list[str]:
        fields = [v(name) for name in self.variables]
        for implementation in self.interface.implementations:
            fields += [self.parameter_field(implementation, p) for p in implementation.parameters]
        return fields

    @staticmethod
    def parameter_field(implementation: ast.Implementation, parameter: ast.Parameter) -> str:
        return f"p_{implementation.name}__{parameter.name}"

    @property
    def decision(self) -> str:
        """The struct one decision works in: the call's state, and what the
        split models (hlc.model.summation) take from it once."""
        return f"hlc_decision_{self.library.library.name}__{self.name}"

    @staticmethod
    def fixed_field(implementation: ast.Implementation) -> str:
        return f"f_{implementation.name}"

    def prefix(self, implementation: ast.Implementation) -> str:
        return f"hlc_{self.library.library.name}__{implementation.name}"

    def needed(self, *expressions: ast.Expression) -> set[str]:
        """The names ``expressions`` read, with P and logP where they call a
        model (every model takes them)."""
        found = {n.id for e in expressions for n in names(e)}
        if any(call.function not in BUILTINS for e in expressions for call in calls(e)):
            found |= {"P", "logP"}
        return found

    def unpack(self, implementation: ast.Implementation, used: set[str]) -> list[tuple[str, str]]:
        """Locals for the state the expressions use (variables, P, logP,
        parameters): (local, field) pairs."""
        pairs = [(v(name), v(name)) for name in self.variables if name in used]
        pairs += [(v(p.name), self.parameter_field(implementation, p)) for p in implementation.parameters
                  if p.name in used]
        return pairs

    def implementation(self, index: int, implementation: ast.Implementation) -> dict[str, Any]:
        """What the template prints for one implementation: its precondition,
        its parameters' searches, and its part of the decision."""
        library = self.library
        used = self.needed(*implementation.requires)
        signature = self.interface.signature(implementation)
        arguments = []
        for name in [*signature, "P", "logP"]:
            parameter = next((p for p in implementation.parameters if p.name == name), None)
            arguments.append(f"s->{self.parameter_field(implementation, parameter)}" if parameter else f"s->{v(name)}")
        # A parameter not chosen yet takes the low end of its range meanwhile
        # (hlc.dispatch.reference): only the searches before its own read it.
        read_early = {n.id for p in implementation.parameters for n in names(p.range.low)}
        meanwhile = [(self.parameter_field(implementation, p), self.with_state(implementation, p.range.low))
                     for position, p in enumerate(implementation.parameters)
                     if position > 0 or p.name in read_early]
        split = library.summation(implementation) is not None
        searches = [self.search(implementation, p) for p in implementation.parameters]
        plan = library.plan_function(implementation)
        rank = library.ranking(implementation, f"&d.{self.fixed_field(implementation)}", ", ".join(arguments), "&m")
        return {"name": implementation.name, "prefix": self.prefix(implementation),
                # one search, of the very time the decision ranks by: its least value is that time
                "reuse": len(searches) == 1 and searches[0]["ranks"],
                "fixed": {"field": self.fixed_field(implementation), "function": library.fix_function(implementation),
                          "arguments": ", ".join(f"s->{v(n)}" for n in signature if n not in
                                                 {p.name for p in implementation.parameters}) + ", s->v_P, s->v_logP"}
                if split else None,
                "applies": {"unpacked": self.unpack(implementation, used),
                            "condition": " && ".join(f"({library.c(c)})" for c in implementation.requires) or "1"},
                "searches": searches,
                "meanwhile": meanwhile, "plan": plan, "rank": rank}

    def search(self, implementation: ast.Implementation, parameter: ast.Parameter) -> dict[str, Any]:
        """One parameter's objective and the search that chooses it."""
        library = self.library
        rule = implementation.optimization(parameter.name)
        objective = rule.objective if rule else ast.Name(0, 0, "time")
        signature = self.interface.signature(implementation)
        helpers = helpers_for(implementation, [objective])
        objective_names = self.needed(objective, *(let.value for let in helpers))
        used = self.needed(objective, parameter.range.low, parameter.range.high, *(let.value for let in helpers))
        needs_time = "time" in objective_names and implementation.model("time") is not None
        if needs_time:
            used |= set(signature) | {"P", "logP"}
        time_arguments = ", ".join(v(n) for n in [*signature, "P", "logP"])
        plan = library.plan_function(implementation)
        range_used = self.needed(parameter.range.low, parameter.range.high)
        search = {"parameter": parameter.name, "prefix": f"{self.prefix(implementation)}__{parameter.name}",
                  "field": self.parameter_field(implementation, parameter), "variable": v(parameter.name),
                  "unpacked": self.unpack(implementation, used - {parameter.name}),
                  "low": library.c(parameter.range.low), "high": library.c(parameter.range.high),
                  # ``time``: the planned time, as the decision ranks it (reference.Decider)
                  "time_call": library.ranking(implementation, f"&d->{self.fixed_field(implementation)}",
                                               time_arguments, "&v_predicted") if needs_time else None,
                  "plan": needs_time and plan is not None,
                  "helpers": [(v(let.name), library.c(let.value)) for let in helpers],
                  "objective": library.c(objective), "kind": "minimum", "range_unpacked": None}
        if rule is not None and rule.over is not None:
            over = rule.over
            value_used = self.needed(over.value) - {over.variable}
            over_used = self.needed(over.range.low, over.range.high)
            search.update(kind="over", step=v(over.variable), step_name=over.variable, value=library.c(over.value),
                          memo=f"last_{implementation.name}__{parameter.name}",
                          value_unpacked=self.unpack(implementation, value_used),
                          first=library.c(over.range.low), last=library.c(over.range.high))
            range_used |= over_used
        elif rule is not None and rule.method == "root":
            search["kind"] = "root"
        search["range_unpacked"] = self.unpack(implementation, range_used)
        search["ranks"] = minimizes_time(implementation, parameter)
        search["batched"] = None
        if library.batched(implementation, parameter):
            arguments = [v(n) for n in [*signature, "P", "logP"]]
            search["batched"] = {
                "sums": f"{library.staged_function(implementation, parameter)}(&d->{self.fixed_field(implementation)}, "
                        f"{', '.join(arguments)}, count, seconds, deviation)",
                "ranked": "hlc_planned(seconds[j], deviation[j], &predicted)" if plan is not None
                          else "hlc_time(seconds[j])"}
        return search

    def with_state(self, implementation: ast.Implementation, expression: ast.Expression) -> str:
        """An expression over the state, spelled directly with s-> (no locals)."""
        parameters = {p.name: self.parameter_field(implementation, p) for p in implementation.parameters}

        def spell(name: str) -> str:
            if name in self.library.constants:
                return self.library.constant(name)
            return f"s->{parameters.get(name, v(name))}"

        return to_c(expression, spell_name=spell, spell_call=self.library.spell_call)

    def outside_tests(self) -> list[str]:
        """Which of a call's variables lie outside the calibrated domain: a
        bit each, in the order of the domain."""
        domain: dict[str, list[float]] = {}
        for implementation in self.interface.implementations:
            entry = self.library.calibration.get(implementation.name, NOT_CALIBRATED)
            for name, (low, high) in entry.domain.items():
                if name in self.variables and name not in ("P", "logP"):
                    known = domain.setdefault(name, [low, high])
                    known[0], known[1] = min(known[0], low), max(known[1], high)
        return [f"(s->{v(name)} < {float(low)!r} || s->{v(name)} > {float(high)!r} ? {1 << min(bit, 31)}u : 0u)"
                for bit, (name, (low, high)) in enumerate(domain.items())] or ["0u"]

    def template_data(self) -> dict[str, Any]:
        name = self.library.library.name
        library = self.library
        return {"name": self.name, "state": self.state, "fields": self.fields(), "decision": self.decision,
                "searching": any(i.parameters for i in self.interface.implementations),
                "fixed": [(library.fixed_type(i), self.fixed_field(i)) for i in self.interface.implementations
                          if library.summation(i) is not None],
                "implementations": [self.implementation(index, implementation)
                                    for index, implementation in enumerate(self.interface.implementations)],
                "plans": [plan for implementation in self.interface.implementations
                          for plan in [self.library.plan_model(self.interface, implementation)] if plan is not None],
                "decide": f"hlc_decide_{name}__{self.name}", "outside": f"hlc_outside_{name}__{self.name}",
                "outside_tests": self.outside_tests()}


def c_header(main: ast.Library) -> str:
    """The header of a dispatch module's C (``templates/dispatch.h.j2``):
    each interface's state and the functions the module calls.  It depends
    on the description alone, as the module's Cython does, so that a build
    compiles only the C of its models afresh (hlc.compile.compile_module)."""
    top = Library(main, {}, {})
    interfaces = [Interface(top, interface) for interface in main.interfaces]
    return render("dispatch.h.j2", library=main.name, guard=f"HLC_DISPATCH_{main.name.upper()}_H",
                  interfaces=[{"name": i.name, "state": i.state, "fields": i.fields(),
                               "decide": f"hlc_decide_{main.name}__{i.name}",
                               "outside": f"hlc_outside_{main.name}__{i.name}"} for i in interfaces],
                  predictions=top.predictions())


def c_source(main: ast.Library, models: Models, used_models: Mapping[str, Models]) -> str:
    """The C of a dispatch module's decisions (``templates/decisions.c.j2``):
    the models of the library and of those it uses, and each interface's
    decision, after the header of :func:`c_header` (``header``)."""
    libraries: dict[str, Library] = {}

    def build(library: ast.Library, calibration: Mapping[str, TimeModel]) -> Library:
        used = {name: build(sub, used_models[name].times() if name in used_models else {})
                for name, sub in library.used.items()}
        libraries.setdefault(library.name, Library(library, calibration, used))
        return libraries[library.name]

    top = build(main, models.times())
    top.deciding = True
    return render("decisions.c.j2", scan_limit=SCAN_LIMIT, coarse=COARSE, sweeps=SWEEPS, header=header_name(main.name),
                  libraries=[{"name": library.library.name, "constants": library.constant_lines(),
                              "functions": library.functions()} for library in libraries.values()],
                  predictions=top.predictions(),
                  interfaces=[Interface(top, interface).template_data() for interface in main.interfaces])
