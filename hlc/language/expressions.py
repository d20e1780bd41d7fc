"""Expressions: walking, printing as Python or C, and evaluating.

Expressions come from the grammar, never from ``eval`` of user text.  The same
tree prints as Python (profiling program, pure-Python dispatch) and as C (the
compiled dispatch module); both printers share one precedence table, so the
output carries only the parentheses it needs.

Semantics in C: every value is a ``double``; ``//`` is ``floor(a / b)``,
``%`` takes the sign of the divisor as in Python, and ``a << b`` is
``a · 2**b``.  ``and``, ``or`` and ``not`` yield true or false (1 or 0) in
both targets, never one of their operands.  Python follows its own rules, which agree on the values the
language is meant for (shifts of non-negative integers, divisions by non-zero).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from hlc.language.ast import Binary, Call, Expression, Family, Name, Number, Range, Unary
from hlc.language.functions import BUILTINS, c_call, python_call

# Binding strength, loosest first (Python's order).
PRECEDENCE = {
    "or": 1, "and": 2, "not": 3,
    "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
    "<<": 5, ">>": 5,
    "+": 6, "-": 6,
    "*": 7, "/": 7, "//": 7, "%": 7,
    "unary": 8,
    "**": 9,
    "atom": 10,
}
COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}


def walk(expression: Expression) -> Iterator[Expression]:
    """Every node of ``expression``, parents before children, left to right."""
    pending = [expression]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, Call):
            pending += reversed(node.arguments)
        elif isinstance(node, Unary):
            pending.append(node.operand)
        elif isinstance(node, Binary):
            pending += [node.right, node.left]


def names(expression: Expression) -> list[Name]:
    """The names read by ``expression``, in order of appearance."""
    return [node for node in walk(expression) if isinstance(node, Name)]


def calls(expression: Expression) -> list[Call]:
    """The calls in ``expression``, outermost first."""
    return [node for node in walk(expression) if isinstance(node, Call)]


def split_terms(expression: Expression) -> list[Expression]:
    """Split a model formula at its top-level ``+`` into basis functions
    (a sum in parentheses stays one term)."""
    terms: list[Expression] = []
    pending = [expression]
    while pending:  # iterative: a formula may have many terms
        node = pending.pop()
        if isinstance(node, Binary) and node.operator == "+" and not node.parenthesized:
            pending += [node.right, node.left]
        else:
            terms.append(node)
    return terms


def depth(expression: Expression) -> int:
    """How deeply the expression nests (a name or number is 1)."""
    deepest = 0
    pending = [(expression, 1)]
    while pending:  # iterative, so that any input can be measured
        node, level = pending.pop()
        deepest = max(deepest, level)
        if isinstance(node, Call):
            pending += [(argument, level + 1) for argument in node.arguments]
        elif isinstance(node, Unary):
            pending.append((node.operand, level + 1))
        elif isinstance(node, Binary):
            pending += [(node.left, level + 1), (node.right, level + 1)]
    return deepest


def _level(expression: Expression) -> int:
    if isinstance(expression, Binary):
        return PRECEDENCE[expression.operator]
    if isinstance(expression, Unary):
        return PRECEDENCE["not"] if expression.operator == "not" else PRECEDENCE["unary"]
    return PRECEDENCE["atom"]


def _is_boolean(expression: Expression) -> bool:
    """Whether the value is already true/false: a comparison or a logical operation."""
    if isinstance(expression, Binary):
        return expression.operator in COMPARISONS or expression.operator in ("and", "or")
    return isinstance(expression, Unary) and expression.operator == "not"


NameSpeller = Callable[[str], str]
CallSpeller = Callable[[Call, list[str]], str | None]


class _Printer:
    """Prints an expression for one target; names and non-built-in calls are
    spelled by the caller's functions."""

    def __init__(self, target: str, spell_name: NameSpeller | None, spell_call: CallSpeller | None):
        self.target = target
        self.spell_name = spell_name or (lambda name: name)
        self.spell_call = spell_call

    def print(self, expression: Expression) -> str:
        if isinstance(expression, Number):
            return self.number(expression.value)
        if isinstance(expression, Name):
            return self.spell_name(expression.id)
        if isinstance(expression, Call):
            return self.call(expression)
        if isinstance(expression, Unary):
            return self.unary(expression)
        if isinstance(expression, Family):
            return family_text(expression)
        return self.binary(expression)

    def number(self, value: int | float) -> str:
        if self.target == "c":
            return repr(float(value))
        return repr(value)

    def call(self, call: Call) -> str:
        arguments = [self.print(argument) for argument in call.arguments]
        if self.spell_call is not None:
            spelled = self.spell_call(call, arguments)
            if spelled is not None:
                return spelled
        function = BUILTINS.get(call.function)
        if function is not None and self.target == "c":
            return c_call(function, arguments)
        if function is not None and self.target == "python":
            return python_call(function, arguments)
        return f"{call.function}({', '.join(arguments)})"

    def wrap(self, expression: Expression, needs_parentheses: bool) -> str:
        text = self.print(expression)
        return f"({text})" if needs_parentheses else text

    def unary(self, node: Unary) -> str:
        if node.operator == "not":
            if self.target == "c":  # C's ! binds tighter than comparisons
                return f"!({self.print(node.operand)})"
            return "not " + self.wrap(node.operand, _level(node.operand) < PRECEDENCE["not"])
        operand = self.wrap(node.operand, _level(node.operand) < PRECEDENCE["unary"])
        if operand[:1] in "+-":  # "- -x" must not print as "--x" (C's decrement)
            operand = f"({operand})"
        return node.operator + operand

    def binary(self, node: Binary) -> str:
        operator = node.operator
        level = PRECEDENCE[operator]
        if operator == "**":  # right-associative; the base is an atom
            left = self.wrap(node.left, _level(node.left) <= level)
            right = self.wrap(node.right, _level(node.right) < PRECEDENCE["unary"])
        elif operator in COMPARISONS:  # not associative
            left = self.wrap(node.left, _level(node.left) <= level)
            right = self.wrap(node.right, _level(node.right) <= level)
        else:  # left-associative
            left = self.wrap(node.left, _level(node.left) < level)
            right = self.wrap(node.right, _level(node.right) <= level)
        if self.target == "c":
            return self._c_binary(operator, node, left, right)
        if self.target == "python" and operator in ("and", "or"):
            # Python's and/or yield an operand; the language's yield true/false, as C's do.
            left = left if _is_boolean(node.left) else f"bool({self.print(node.left)})"
            right = right if _is_boolean(node.right) else f"bool({self.print(node.right)})"
        return f"{left} {operator} {right}"

    def _c_binary(self, operator: str, node: Binary, left: str, right: str) -> str:
        # Operators C lacks become calls; their operands need no parentheses.
        plain_left, plain_right = self.print(node.left), self.print(node.right)
        if operator == "**":
            if isinstance(node.left, Number) and node.left.value == 2:  # exact and cheap at whole exponents
                return f"hlc_exp2({plain_right})"
            return f"pow({plain_left}, {plain_right})"
        if operator == "//":
            return f"floor({plain_left} / {plain_right})"
        if operator == "%":
            return f"hlc_mod({plain_left}, {plain_right})"
        if operator == "<<":
            return f"ldexp({plain_left}, (int)({plain_right}))"
        if operator == ">>":
            return f"floor(ldexp({plain_left}, -(int)({plain_right})))"
        power = power_of_two_comparison(node)
        if power is not None:
            argument, threshold = power
            return f"{self.wrap(argument, _level(argument) <= PRECEDENCE['<<'])} {operator} {threshold!r}"
        symbol = {"and": "&&", "or": "||"}.get(operator, operator)
        if operator in COMPARISONS:  # C ranks == below <, so keep both sides atomic
            left = self.wrap(node.left, _level(node.left) <= PRECEDENCE["<<"])
            right = self.wrap(node.right, _level(node.right) <= PRECEDENCE["<<"])
        return f"{left} {symbol} {right}"


def power_of_two_comparison(node: Binary) -> tuple[Expression, float] | None:
    """``log2(x) >= k`` as ``(x, 2 ** k)``, so that C compares ``x >= 2 ** k``.

    A discovered step of a size (``n * (log2(n) >= 17.5)``) is evaluated at
    every candidate of a decision's searches, and a logarithm costs more
    than all the rest of such a term.  For ``>=`` and ``>`` the two forms
    agree at zero, negatives and NaN (both false) and at every x but those
    within an ulp or so of 2 ** k, where the logarithm rounds to k and the
    comparison of x is the exact one: never at a whole x."""
    if node.operator not in (">=", ">"):
        return None
    knot = node.right
    sign = 1
    if isinstance(knot, Unary) and knot.operator in "+-":
        knot, sign = knot.operand, -1 if knot.operator == "-" else 1
    if not (isinstance(node.left, Call) and node.left.function == "log2" and len(node.left.arguments) == 1
            and isinstance(knot, Number)):
        return None
    try:
        threshold = 2.0 ** (sign * knot.value)
    except OverflowError:
        return None
    if not 0.0 < threshold < math.inf:
        return None
    return node.left.arguments[0], threshold


def unparse(expression: Expression) -> str:
    """Canonical text of an expression in the description's own syntax (used
    to name terms)."""
    return _Printer("source", None, None).print(expression)


def to_python(expression: Expression, spell_name: NameSpeller | None = None,
              spell_call: CallSpeller | None = None) -> str:
    """Python source computing ``expression``; math functions via ``math``."""
    return _Printer("python", spell_name, spell_call).print(expression)


def to_c(expression: Expression, spell_name: NameSpeller | None = None,
         spell_call: CallSpeller | None = None) -> str:
    """C source computing ``expression`` as a double; needs the header
    ``templates/hlc_dispatch.h`` (its ``hlc_mod``, and <math.h>)."""
    return _Printer("c", spell_name, spell_call).print(expression)


class EvaluationError(Exception):
    """An expression could not be evaluated (undefined name, bad arithmetic)."""


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def family_text(family: Family) -> str:
    """``hinges(log2(n) at 10 .. 22 += 0.5)``, as written."""
    text = unparse(family.expression)
    if family.knots is not None:
        text += f" at {unparse(family.knots.low)} .. {unparse(family.knots.high)}"
        if family.update is not None:
            amount = f" {unparse(family.update.amount)}" if family.update.amount is not None else ""
            text += f" {family.update.operator}{amount}"
    return f"{family.kind}({text})"


def evaluate(expression: Expression, environment: Mapping[str, Any],
             functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
    """Value of ``expression`` with Python semantics.

    Names come from ``environment``; calls from ``functions`` first, then the
    built-ins.  Any failure is an :class:`EvaluationError`.

    The expression runs as nested closures, made once per expression
    (:func:`_compiled`): a fit and the planning of a build's rounds value
    terms at every sample, a million evaluations in a sort build, and the
    closures took their 7.7 s to 6.1 s (walking the tree checks each node's
    type at every evaluation).  Where the closures fail,
    the expression is walked again, so that a failure reads the same
    whichever way it was found.
    """
    try:
        return _compiled(expression)(environment, functions or _NONE)
    except Exception:  # said below, in the user's words
        pass
    try:
        return _evaluate(expression, environment, functions or {})
    except EvaluationError:
        raise
    except (ArithmeticError, ValueError, TypeError) as error:
        raise EvaluationError(f"{unparse(expression)}: {error}") from error


_NONE: Mapping[str, Callable[..., Any]] = {}
Closure = Callable[[Mapping[str, Any], Mapping[str, Callable[..., Any]]], Any]
#: The closures of the expressions evaluated so far, by the node's identity
#: (a node's hash walks its whole tree), each with its node so that the
#: identity stays its own; emptied once it holds _MOST_COMPILED.
_CLOSURES: dict[int, tuple[Expression, Closure]] = {}
_MOST_COMPILED = 100_000


def _compiled(expression: Expression) -> Closure:
    entry = _CLOSURES.get(id(expression))
    if entry is not None and entry[0] is expression:
        return entry[1]
    if len(_CLOSURES) >= _MOST_COMPILED:
        _CLOSURES.clear()
    closure = _closure(expression)
    _CLOSURES[id(expression)] = (expression, closure)
    return closure


def _closure(node: Expression) -> Closure:
    """``node`` as a function of (environment, functions) doing what
    _evaluate does, minus its messages (evaluate walks the tree for those)."""
    if isinstance(node, Number):
        value = node.value
        return lambda environment, functions: value
    if isinstance(node, Name):
        key = node.id
        return lambda environment, functions: environment[key]
    if isinstance(node, Call):
        return _call_closure(node)
    if isinstance(node, Family):
        def family(environment: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]]) -> Any:
            raise EvaluationError(f"{family_text(node)} is a family of candidate terms, not a value")
        return family
    if isinstance(node, Unary):
        operand = _closure(node.operand)
        if node.operator == "-":
            return lambda environment, functions: -operand(environment, functions)
        if node.operator == "+":
            return lambda environment, functions: +operand(environment, functions)
        return lambda environment, functions: not operand(environment, functions)
    left, right = _closure(node.left), _closure(node.right)
    if node.operator == "and":
        return lambda environment, functions: bool(left(environment, functions)) and bool(
            right(environment, functions))
    if node.operator == "or":
        return lambda environment, functions: bool(left(environment, functions)) or bool(
            right(environment, functions))
    operation = _OPERATORS[node.operator]
    if node.operator in ("**", "<<"):
        operator = node.operator

        def guarded(environment: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]]) -> Any:
            a, b = left(environment, functions), right(environment, functions)
            if _too_large(operator, a, b):
                raise EvaluationError(operator)
            return operation(a, b)
        return guarded
    return lambda environment, functions: operation(left(environment, functions), right(environment, functions))


def _call_closure(node: Call) -> Closure:
    name = node.function
    builtin = BUILTINS[name].evaluate if name in BUILTINS else None
    arguments = tuple(_closure(a) for a in node.arguments)

    def function_of(functions: Mapping[str, Callable[..., Any]]) -> Callable[..., Any]:
        function = functions.get(name)
        if function is None:
            function = builtin
        if function is None:
            raise EvaluationError(name)
        return function

    if len(arguments) == 1:
        [only] = arguments
        return lambda environment, functions: function_of(functions)(only(environment, functions))
    if len(arguments) == 2:
        first, second = arguments
        return lambda environment, functions: function_of(functions)(
            first(environment, functions), second(environment, functions))
    return lambda environment, functions: function_of(functions)(*[a(environment, functions) for a in arguments])


def integer_bounds(range_: Range, environment: Mapping[str, Any]) -> tuple[int, int]:
    """The integers of a parameter's or loop's range: the low bound rounded
    up, the high bound rounded down (the dispatcher's searches and the
    fitter's probes read a range alike)."""
    low = evaluate(range_.low, environment)
    high = evaluate(range_.high, environment)
    return math.ceil(low), math.floor(high)


def _evaluate(node: Expression, environment: Mapping[str, Any],
              functions: Mapping[str, Callable[..., Any]]) -> Any:
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Name):
        if node.id not in environment:
            raise EvaluationError(f"'{node.id}' has no value here")
        return environment[node.id]
    if isinstance(node, Call):
        arguments = [_evaluate(a, environment, functions) for a in node.arguments]
        function = functions.get(node.function)
        if function is None and node.function in BUILTINS:
            function = BUILTINS[node.function].evaluate
        if function is None:
            raise EvaluationError(f"{node.function}() cannot be evaluated here")
        return function(*arguments)
    if isinstance(node, Family):
        raise EvaluationError(f"{family_text(node)} is a family of candidate terms, not a value")
    if isinstance(node, Unary):
        value = _evaluate(node.operand, environment, functions)
        return {"-": lambda v: -v, "+": lambda v: +v, "not": lambda v: not v}[node.operator](value)
    if node.operator == "and":
        return bool(_evaluate(node.left, environment, functions)) and bool(
            _evaluate(node.right, environment, functions))
    if node.operator == "or":
        return bool(_evaluate(node.left, environment, functions)) or bool(
            _evaluate(node.right, environment, functions))
    left = _evaluate(node.left, environment, functions)
    right = _evaluate(node.right, environment, functions)
    if node.operator in ("**", "<<") and _too_large(node.operator, left, right):
        raise EvaluationError(f"{unparse(node)} is too large")
    return _OPERATORS[node.operator](left, right)


def _too_large(operator: str, left: Any, right: Any) -> bool:
    """Guard against integer powers that would take the machine's memory."""
    if not isinstance(right, int) or not isinstance(left, int):
        return False
    if operator == "<<":
        return right > 4096
    return abs(left) > 1 and right > 4096
