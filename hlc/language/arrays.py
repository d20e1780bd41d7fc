"""Expressions valued over arrays: one evaluation for many points.

The fitter values every term of a model at every sample, and at up to
2,000 probes where the dispatcher may ask it; :func:`evaluate` does that
one point at a time, through closures.  Here an expression is valued once,
over NumPy arrays of its names' values, with the numbers evaluate gives:

* arithmetic and comparisons in float64, which holds exactly the integers
  the language's values are: a value beyond 2**53, where Python's
  integers are exact and float64's are not, is not valued here; a
  comparison or ``and``, ``or``, ``not`` is 1 or 0, as in the C the
  dispatcher runs;
* the operators, ``ceil``, ``floor``, ``min``, ``max`` and ``abs`` are
  IEEE operations that NumPy rounds as Python does (``//`` and ``%``
  follow Python's signs); the logarithms, ``exp`` and ``sqrt`` go through
  Python's ``math`` element by element, since NumPy's own may differ from
  it in the last bit, and a step at ``log2(n) >= 17`` must see 17 at
  n = 131,072 as evaluate does.

A model is called through the caller's functions of arrays
(:meth:`hlc.model.predict.Predictor.array_functions`).  What cannot be
valued so raises :class:`ArrayUnavailable`, and the caller values point by
point, where evaluate says what failed and where: a call of an argument
function or of a model the caller cannot value over arrays, a shift, a
family, any floating-point error (a division by zero, an overflow: the
integer powers evaluate refuses as too large overflow a float64), a value
that is not finite or lies beyond 2**53, and an ``and`` or ``or`` whose
right side fails where evaluate would not have reached it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any

import numpy as np

from hlc.language.ast import Binary, Call, Expression, Name, Number, Unary
from hlc.language.functions import BUILTINS

Value = float | np.ndarray


class ArrayUnavailable(Exception):
    """The expression cannot be valued over arrays as evaluate values it point by point."""


def evaluate_over(expression: Expression, environment: Mapping[str, Any], size: int,
                  functions: Mapping[str, Callable[..., Value]] | None = None) -> np.ndarray:
    """The value of ``expression`` at ``size`` points, as a float array:
    ``environment`` holds each name's values as an array of that size, or
    one number for all; ``functions``, the caller's functions of arrays
    (models), called before the built-ins as evaluate calls its own.
    Raises :class:`ArrayUnavailable` (module doc)."""
    with np.errstate(all="raise"):
        try:
            value = _value(expression, environment, functions or {})
        except ArrayUnavailable:
            raise
        except (ArithmeticError, LookupError, ValueError, TypeError) as error:
            raise ArrayUnavailable(str(error)) from error
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        array = np.full(size, float(array))
    if array.shape != (size,):
        raise ArrayUnavailable(f"{array.shape} values for {size} points")
    return array


def _value(node: Expression, environment: Mapping[str, Any], functions: Mapping[str, Callable[..., Value]]) -> Value:
    if isinstance(node, Number):
        return _exact(node.value)
    if isinstance(node, Name):
        return _exact(environment[node.id])
    if isinstance(node, Call):
        return _exact(_call(node, environment, functions))
    if isinstance(node, Unary):
        operand = _value(node.operand, environment, functions)
        if node.operator == "-":
            return np.negative(operand)
        if node.operator == "+":
            return operand
        return np.logical_not(operand).astype(float)
    if not isinstance(node, Binary):  # a family
        raise ArrayUnavailable(f"{type(node).__name__} is not a value")
    left, right = _value(node.left, environment, functions), _value(node.right, environment, functions)
    operation = _OPERATIONS.get(node.operator)
    if operation is None:
        raise ArrayUnavailable(f"'{node.operator}' over arrays")
    return _exact(operation(left, right))


def _call(node: Call, environment: Mapping[str, Any], functions: Mapping[str, Callable[..., Value]]) -> Value:
    function = functions.get(node.function) or _FUNCTIONS.get(node.function)
    if function is None:
        raise ArrayUnavailable(f"{node.function}() over arrays")
    return function(*[_value(argument, environment, functions) for argument in node.arguments])


#: Every integer up to this magnitude is a float64.
EXACT = 2.0**53


def _exact(value: Any) -> Value:
    """``value`` as floats, when every one is finite and within EXACT."""
    array = np.asarray(value, dtype=float)
    if not np.all(np.abs(array) <= EXACT):  # also false for nan
        raise ArrayUnavailable("a value that is not finite, or beyond 2**53")
    return array if array.ndim else float(array)


def _elementwise(function: Callable[..., float]) -> Callable[..., Value]:
    """``function`` of one point, applied element by element."""

    def applied(*arguments: Value) -> Value:
        if all(np.ndim(a) == 0 for a in arguments):
            return function(*(float(a) for a in arguments))
        columns = np.broadcast_arrays(*arguments)
        return np.fromiter(map(function, *(c.tolist() for c in columns)), dtype=float, count=columns[0].size)

    return applied


def _power(base: Value, exponent: Value) -> Value:
    """``base ** exponent`` as evaluate gives it.  Where every result is a
    whole number within 2**53 (an integral base to a whole non-negative
    power), the power of integers, which is exact, as Python's is; NumPy's
    power of floats is not always (NumPy 1.26 on a processor with AVX-512
    gave 23.0 ** 10.0 as 41426511213648.99, not 41426511213649).  Else
    Python's, element by element, since NumPy's may differ from it in the
    last bit (NumPy 1.26 gave 2.25 ** 2.25 one unit in the last place below
    Python's).  Results beyond 2**53 are left to the caller to refuse."""
    whole = np.all(np.asarray(exponent) >= 0) and all(np.all(np.asarray(v) == np.floor(v)) for v in (base, exponent))
    if not whole:
        return _elementwise(pow)(base, exponent)
    approximate = np.power(base, exponent)
    if not np.all(np.abs(approximate) <= 2.0**62):  # beyond what int64 holds
        return approximate
    exact = np.power(np.asarray(base, dtype=np.int64), np.asarray(exponent, dtype=np.int64)).astype(float)
    return exact if exact.ndim else float(exact)


def _comparison(compare: Callable[[Any, Any], Any]) -> Callable[[Value, Value], Value]:
    return lambda a, b: np.asarray(compare(a, b), dtype=float)


_OPERATIONS: dict[str, Callable[[Value, Value], Value]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "//": np.floor_divide,
    "%": np.remainder,
    "**": _power,
    "<": _comparison(np.less),
    "<=": _comparison(np.less_equal),
    ">": _comparison(np.greater),
    ">=": _comparison(np.greater_equal),
    "==": _comparison(np.equal),
    "!=": _comparison(np.not_equal),
    "and": _comparison(np.logical_and),
    "or": _comparison(np.logical_or),
}

_FUNCTIONS: dict[str, Callable[..., Value]] = {
    # evaluate's own functions of one point (Python's math), element by element
    **{name: _elementwise(BUILTINS[name].evaluate) for name in ("log2", "log", "ln", "exp", "sqrt")},
    "ceil": np.ceil,
    "floor": np.floor,
    "min": lambda *values: reduce(np.minimum, values),
    "max": lambda *values: reduce(np.maximum, values),
    "abs": np.abs,
}
