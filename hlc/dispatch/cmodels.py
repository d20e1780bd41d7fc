"""The decision procedure in C, mirroring :mod:`hlc.dispatch.reference`.

Everything the dispatcher evaluates at call time is emitted as C: one
``static inline double`` per model (calibrated coefficients embedded), one
function per precondition, per parameter objective and per parameter choice,
and one ``decide`` per interface.  The generic searches are the C twins of
:mod:`hlc.optimize`.

Naming, so that no user name can collide with C or with another library:
variables, parameters and helpers are ``v_<name>``; constants are
``hlc_const_<library>__<name>``; models are ``hlc_time_<library>__<impl>``
and ``hlc_model_<library>__<name>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hlc.language import ast
from hlc.language.check import implementation_signature
from hlc.language.expressions import C_PRELUDE, names, to_c
from hlc.language.functions import BUILTINS
from hlc.language.machine import used_machine_constants
from hlc.language.nest import constant_values
from hlc.model.predict import helpers_for
from hlc.model.render import model_sum, used_helpers
from hlc.optimize import SCAN_LIMIT

SEARCHES = f"#define HLC_SCAN_LIMIT {SCAN_LIMIT}L\n" + """\
typedef double (*hlc_objective)(long, void *);

/* Mirrors hlc.optimize.integer_minimum: every value of a short range, else
   binary search on the sign of the forward difference, assuming one minimum. */
static long hlc_integer_minimum(hlc_objective f, long lo, long hi, void *state) {
    if (hi - lo < HLC_SCAN_LIMIT) {
        long best = lo, x;
        double least = f(lo, state), value;
        for (x = lo + 1; x <= hi; x++) {
            value = f(x, state);
            if (value < least) { best = x; least = value; }
        }
        return best;
    }
    while (lo < hi) {
        long middle = lo + (hi - lo) / 2;
        if (f(middle + 1, state) < f(middle, state)) lo = middle + 1;
        else hi = middle;
    }
    return lo;
}

/* Mirrors hlc.optimize.integer_root: the integer before the sign change;
   lo - 1 / hi + 1 when f is negative / positive at both ends. */
static long hlc_integer_root(hlc_objective f, long lo, long hi, void *state) {
    double f_lo = f(lo, state), f_hi, f_middle;
    int negative_at_lo;
    if (f_lo == 0.0) return lo;
    f_hi = f(hi, state);
    if (f_hi == 0.0) return hi;
    if ((f_lo < 0.0) == (f_hi < 0.0)) return f_lo < 0.0 ? lo - 1 : hi + 1;
    negative_at_lo = f_lo < 0.0;
    while (hi - lo > 1) {
        long middle = lo + (hi - lo) / 2;
        f_middle = f(middle, state);
        if (f_middle == 0.0) return middle;
        if ((f_middle < 0.0) == negative_at_lo) lo = middle;
        else hi = middle;
    }
    return lo;
}

static inline long hlc_clamp(long value, long lo, long hi) {
    return value < lo ? lo : (value > hi ? hi : value);
}

static inline double hlc_finite(double value) {
    return isfinite(value) ? value : INFINITY;
}
"""


def v(name: str) -> str:
    return f"v_{name}"


class Library:
    """One library's names in C, and how its expressions are spelled."""

    def __init__(self, library: ast.Library, calibration: Mapping[str, Any], used: Mapping[str, Library]):
        self.library = library
        self.calibration = calibration
        self.used = used
        self.constants = set(used_machine_constants(library)) | {c.name for c in library.constants}
        self.models = {m.name for m in library.models}
        self.implementations = {i.name for i in library.implementations}

    def time_function(self, implementation: str) -> str:
        return f"hlc_time_{self.library.name}__{implementation}"

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

    # ---- definitions

    def declarations(self) -> list[str]:
        """Prototypes of every model, so that models may call each other in any order."""
        lines = []
        for interface in self.library.interfaces:
            for implementation in interface.implementations:
                parameters = implementation_signature(interface, implementation).parameters
                lines.append(f"static double {self.time_function(implementation.name)}"
                             f"({_parameter_list(parameters)});")
        for model in self.library.models:
            lines.append(f"static double {self.model_function(model.name)}({_parameter_list(model.parameters)});")
        return lines

    def definitions(self) -> list[str]:
        values = constant_values(self.library)
        blocks = [f"static const double {self.constant(name)} = {float(values.get(name, math.nan))!r};"
                  for name in sorted(self.constants)]
        for model in self.library.models:
            doc = f"  /* {model.doc} */" if model.doc else ""
            blocks.append(f"static double {self.model_function(model.name)}({_parameter_list(model.parameters)}) {{"
                          f"{doc}\n    return {self.c(model.body)};\n}}")
        for interface in self.library.interfaces:
            for implementation in interface.implementations:
                blocks.append(self.time_definition(interface, implementation))
        return blocks

    def time_definition(self, interface: ast.Interface, implementation: ast.Implementation) -> str:
        parameters = implementation_signature(interface, implementation).parameters
        header = f"static double {self.time_function(implementation.name)}({_parameter_list(parameters)})"
        model = implementation.model("time")
        entry = self.calibration.get(implementation.name, {}).get("time", {})
        status = entry.get("status", "not calibrated")
        if model is None or status not in ("fitted", "factored"):
            cause = entry.get("cause", status).replace("*/", "* /")
            return f"{header} {{\n    /* {status}: {cause} */\n    return INFINITY;\n}}"
        accuracy = []
        if entry.get("mre") is not None:
            accuracy.append(f"fit MRE {entry['mre']:.3f}")
        if entry.get("verification_mre") is not None:
            accuracy.append(f"verification MRE {entry['verification_mre']:.3f}")
        lines = [f"{header} {{  /* {status}; {', '.join(accuracy) or 'not verified'} */"]
        for let in used_helpers(implementation, model, entry):
            lines.append(f"    double {v(let.name)} = {self.c(let.value)};")
        lines.append(f"    return {model_sum(model, entry, self.c)};")
        return "\n".join(lines) + "\n}"


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

    def prefix(self, implementation: ast.Implementation) -> str:
        return f"hlc_{self.library.library.name}__{implementation.name}"

    def unpack(self, implementation: ast.Implementation, used: set[str]) -> list[str]:
        """Locals for the state the expressions use: variables, P, logP, parameters."""
        lines = [f"    double {v(name)} = s->{v(name)};" for name in self.variables if name in used]
        lines += [f"    double {v(p.name)} = s->{self.parameter_field(implementation, p)};"
                  for p in implementation.parameters if p.name in used]
        return lines

    def struct(self) -> str:
        fields = "".join(f"    double {field};\n" for field in self.fields())
        return f"typedef struct {{\n{fields}}} {self.state};"

    def functions(self) -> list[str]:
        blocks = []
        for implementation in self.interface.implementations:
            blocks.append(self.applies(implementation))
            for parameter in implementation.parameters:
                blocks += self.chooser(implementation, parameter)
        blocks.append(self.decide())
        blocks.append(self.outside())
        return blocks

    def applies(self, implementation: ast.Implementation) -> str:
        used = {n.id for condition in implementation.requires for n in names(condition)}
        condition = " && ".join(f"({self.library.c(c)})" for c in implementation.requires) or "1"
        unpacked = self.unpack(implementation, used) or ["    (void)s;"]
        return "\n".join([f"static int {self.prefix(implementation)}__applies(const {self.state} *s) {{",
                          *unpacked, f"    return {condition};", "}"])

    def chooser(self, implementation: ast.Implementation, parameter: ast.Parameter) -> list[str]:
        """The objective of one parameter and the function that searches it."""
        library = self.library
        rule = implementation.optimization(parameter.name)
        objective = rule.objective if rule else ast.Name(0, 0, "time")
        prefix = f"{self.prefix(implementation)}__{parameter.name}"
        signature = implementation_signature(self.interface, implementation).parameters
        model = implementation.model("time")
        helper_expressions = [let.value for let in implementation.lets]
        used = {n.id for e in [objective, parameter.range.low, parameter.range.high, *helper_expressions]
                for n in names(e)} | set(signature) | {"P", "logP"}
        time_arguments = ", ".join(v(n) for n in [*signature, "P", "logP"])
        time_call = f"{library.time_function(implementation.name)}({time_arguments})"
        lines = [f"static double {prefix}__objective(long value, void *state) {{",
                 f"    const {self.state} *s = (const {self.state} *)state;",
                 *self.unpack(implementation, used - {parameter.name}),
                 f"    double {v(parameter.name)} = (double)value;",
                 f"    if (!({library.c(parameter.range.low)} <= {v(parameter.name)} && "
                 f"{v(parameter.name)} <= {library.c(parameter.range.high)})) return INFINITY;"]
        if model is not None:
            lines.append(f"    double {v('time')} = hlc_finite({time_call});")
        lines += [f"    double {v(let.name)} = {library.c(let.value)};"
                  for let in helpers_for(implementation, [objective])]
        lines += [f"    return hlc_finite({library.c(objective)});", "}"]
        blocks = ["\n".join(lines)]
        bounds = [f"    long low = (long)ceil({library.c(parameter.range.low)});",
                  f"    long high = (long)floor({library.c(parameter.range.high)});"]
        range_used = {n.id for e in (parameter.range.low, parameter.range.high) for n in names(e)}
        chooser = [f"static long {prefix}__choose({self.state} *s) {{"]
        if rule is not None and rule.over is not None:
            over = rule.over
            value_used = {n.id for n in names(over.value)} - {over.variable}
            value = [f"static long {prefix}__value(long step, const {self.state} *s) {{",
                     *self.unpack(implementation, value_used),
                     f"    double {v(over.variable)} = (double)step;",
                     f"    return (long)({library.c(over.value)});", "}"]
            if not value_used:
                value.insert(1, "    (void)s;")
            blocks.append("\n".join(value))
            blocks.append("\n".join([
                f"static double {prefix}__over(long step, void *state) {{",
                f"    return {prefix}__objective({prefix}__value(step, (const {self.state} *)state), state);",
                "}"]))
            over_used = {n.id for e in (over.range.low, over.range.high) for n in names(e)}
            chooser += self.unpack(implementation, range_used | over_used) + bounds + [
                f"    long first = (long)ceil({library.c(over.range.low)});",
                f"    long last = (long)floor({library.c(over.range.high)});",
                "    if (first > last) return low;",
                f"    return hlc_clamp({prefix}__value(hlc_integer_minimum({prefix}__over, first, last, s), s), "
                f"low, high);"]
        elif rule is not None and rule.method == "root":
            chooser += self.unpack(implementation, range_used) + bounds + [
                "    if (low > high) return low;",
                f"    return hlc_clamp(hlc_integer_root({prefix}__objective, low, high, s), low, high);"]
        else:
            chooser += self.unpack(implementation, range_used) + bounds + [
                "    if (low > high) return low;",
                f"    return hlc_integer_minimum({prefix}__objective, low, high, s);"]
        chooser.append("}")
        blocks.append("\n".join(chooser))
        return blocks

    def decide(self) -> str:
        library = self.library
        lines = [f"/* The decision for one call of {self.name} (thesis §5.5: first the parameters, then the",
                 " * implementation): its index, or -1 when none applies; fills predicted[] if given. */",
                 f"static int hlc_decide_{library.library.name}__{self.name}({self.state} *s, double *predicted) {{",
                 "    double best = INFINITY, t;",
                 "    int chosen = -1;"]
        for index, implementation in enumerate(self.interface.implementations):
            prefix = self.prefix(implementation)
            signature = implementation_signature(self.interface, implementation).parameters
            arguments = []
            for name in [*signature, "P", "logP"]:
                parameter = next((p for p in implementation.parameters if p.name == name), None)
                arguments.append(f"s->{self.parameter_field(implementation, parameter)}" if parameter
                                 else f"s->{v(name)}")
            lines.append(f"    /* {implementation.name} */")
            lines.append("    t = INFINITY;")
            lines.append(f"    if ({prefix}__applies(s)) {{")
            for parameter in implementation.parameters:
                field = self.parameter_field(implementation, parameter)
                low = self.with_state(implementation, parameter.range.low)
                lines.append(f"        s->{field} = ceil({low});")
            for parameter in implementation.parameters:
                field = self.parameter_field(implementation, parameter)
                lines.append(f"        s->{field} = (double){prefix}__{parameter.name}__choose(s);")
            model = library.time_function(implementation.name)
            lines.append(f"        t = hlc_finite({model}({', '.join(arguments)}));")
            lines.append("    }")
            lines.append(f"    if (predicted) predicted[{index}] = t;")
            lines.append(f"    if (t < best) {{ best = t; chosen = {index}; }}")
        lines += ["    return chosen;", "}"]
        return "\n".join(lines)

    def with_state(self, implementation: ast.Implementation, expression: ast.Expression) -> str:
        """An expression over the state, spelled directly with s-> (no locals)."""
        parameters = {p.name: self.parameter_field(implementation, p) for p in implementation.parameters}

        def spell(name: str) -> str:
            if name in self.library.constants:
                return self.library.constant(name)
            return f"s->{parameters.get(name, v(name))}"

        return to_c(expression, spell_name=spell, spell_call=self.library.spell_call)

    def outside(self) -> str:
        """Which of a call's variables lie outside the calibrated domain: a bit
        each, in the order of the domain."""
        domain: dict[str, list[float]] = {}
        for implementation in self.interface.implementations:
            entry = self.library.calibration.get(implementation.name, {}).get("time", {})
            for name, (low, high) in entry.get("domain", {}).items():
                if name in self.variables and name not in ("P", "logP"):
                    known = domain.setdefault(name, [low, high])
                    known[0], known[1] = min(known[0], low), max(known[1], high)
        tests = [f"(s->{v(name)} < {float(low)!r} || s->{v(name)} > {float(high)!r} ? {1 << min(bit, 31)}u : 0u)"
                 for bit, (name, (low, high)) in enumerate(domain.items())] or ["0u"]
        body = " |\n        ".join(tests)
        return (f"static unsigned int hlc_outside_{self.library.library.name}__{self.name}(const {self.state} *s) {{\n"
                f"    (void)s;\n    return {body};\n}}")


def c_source(main: ast.Library, models: Mapping[str, Any], used_models: Mapping[str, Mapping[str, Any]]) -> str:
    """All the C of a dispatch module: prelude, searches, models, decisions."""
    libraries: dict[str, Library] = {}

    def build(library: ast.Library, calibration: Mapping[str, Any]) -> Library:
        used = {name: build(sub, used_models.get(name, {}).get("implementations", {}))
                for name, sub in library.used.items()}
        libraries.setdefault(library.name, Library(library, calibration, used))
        return libraries[library.name]

    top = build(main, models["implementations"])
    parts = ["#include <math.h>", C_PRELUDE, SEARCHES]
    for library in libraries.values():
        parts.append(f"/* ---- models of library {library.library.name} (prototypes) */")
        parts.append("\n".join(library.declarations()))
    for library in libraries.values():
        parts.append(f"/* ---- models of library {library.library.name} */")
        parts += library.definitions()
    for interface in main.interfaces:
        generator = Interface(top, interface)
        parts.append(f"/* ---- interface {interface.name} */")
        parts.append(generator.struct())
        parts += generator.functions()
    return "\n\n".join(parts) + "\n"

