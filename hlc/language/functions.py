"""The functions a description may call without importing them.

Two families, as a table (one row per function):

* *math* functions, allowed in every expression; each has a Python and a C
  spelling so model terms compile to both;
* *argument* functions, allowed only where explanatory variables are computed
  from an interface's arguments (``n = len(keys)``); they run in Python.

Generated Python refers to math functions through the ``math`` module and to
argument functions through this module imported as ``_hlc``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _array(values: Any) -> Any:
    import numpy  # imported on first use, so that `hlc --help` stays instant

    return numpy.asarray(values)


def bitwidth(values: Any) -> int:
    """Bits needed for the span of the values actually present, max − min.

    This is the key width that matters to a radix sort: keys drawn from
    [lo, lo + 2**w) need w bits once lo is subtracted.  Empty or constant
    arrays need 0 bits.

    Under mpiexec the values present are those of every rank, as the keys
    of an SPMD sort are: the ranks' smallest and largest values are combined
    (one all-reduce), so every rank must call it, as every rank computes
    the variables of a call.  Two ranks holding one key each, -2**63 and
    2**63 - 1, span 64 bits, though each rank's keys span none.
    """
    array = _array(values)
    team = _ranks()
    if team is not None:
        return _bitwidth_over(team, array)
    if array.size == 0:
        return 0
    span = int(array.max()) - int(array.min())
    return span.bit_length()


def _ranks() -> Any:
    """The ranks of this mpiexec run when there are several, else None."""
    from hlc.runtime.spmd import launched_by_mpiexec, world

    if not launched_by_mpiexec():
        return None
    team = world()
    return team if team.size > 1 else None


def _bitwidth_over(team: Any, array: Any) -> int:
    span = span_over_ranks(team, array)
    if span is None:  # no rank holds a value
        return 0
    return (int(span[1]) - int(span[0])).bit_length()


def span_over_ranks(team: Any, values: Any) -> tuple[Any, Any] | None:
    """The smallest and largest of every rank's values, combined in one
    all-reduce (hlc.runtime.extremes.over_ranks), or None when no rank holds
    one."""
    from hlc.runtime.extremes import over_ranks

    return over_ranks(team, *local_extremes(values))


def local_extremes(values: Any) -> tuple[Any, Any, Any]:
    """(dtype, smallest, largest) of this rank's values, as the spans over
    the ranks combine them: integers in their own dtype, anything else as
    float64; (dtype, None, None) when it holds none."""
    import numpy

    array = _array(values)
    dtype = array.dtype if array.dtype.kind in "iu" else numpy.dtype(numpy.float64)
    if not array.size:
        return dtype, None, None
    return dtype, array.min().item(), array.max().item()


def _log(x: float, base: float | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


@dataclass(frozen=True)
class Function:
    """One built-in function: how many arguments, how it is spelled in each
    target, and how it is evaluated at check time."""

    name: str
    min_arguments: int
    max_arguments: int | None  # None: any number ≥ min_arguments
    family: str  # "math" or "argument"
    python: str  # format string over the argument texts, or "{name}(*)" form
    evaluate: Callable[..., Any]
    c: str = ""  # C format string; "" for argument functions
    array_dimensions: int = 1  # argument functions: least dimensions required
    doc: str = ""

    def arity_text(self) -> str:
        if self.max_arguments is None:
            return f"at least {self.min_arguments}"
        if self.min_arguments == self.max_arguments:
            return str(self.min_arguments)
        return f"{self.min_arguments} or {self.max_arguments}"

    def accepts(self, count: int) -> bool:
        upper = self.max_arguments if self.max_arguments is not None else count
        return self.min_arguments <= count <= upper


def _fold(c_function: str, arguments: list[str]) -> str:
    """``min(a, b, c)`` → ``hlc_min(hlc_min(a, b), c)``."""
    text = arguments[0]
    for argument in arguments[1:]:
        text = f"{c_function}({text}, {argument})"
    return text


MATH = {
    f.name: f
    for f in (
        Function("log2", 1, 1, "math", "math.log2({0})", math.log2, "hlc_log2({0})",
                 doc="logarithm base 2"),
        Function("log", 1, 2, "math", "math.log({args})", _log, "",
                 doc="natural logarithm; log(x, b) is the logarithm base b"),
        Function("ln", 1, 1, "math", "math.log({0})", math.log, "log({0})",
                 doc="natural logarithm"),
        Function("exp", 1, 1, "math", "math.exp({0})", math.exp, "exp({0})"),
        Function("sqrt", 1, 1, "math", "math.sqrt({0})", math.sqrt, "sqrt({0})"),
        Function("ceil", 1, 1, "math", "math.ceil({0})", math.ceil, "ceil({0})",
                 doc="smallest integer ≥ x"),
        Function("floor", 1, 1, "math", "math.floor({0})", math.floor, "floor({0})",
                 doc="largest integer ≤ x"),
        Function("min", 2, None, "math", "min({args})", min, "", doc="smallest argument"),
        Function("max", 2, None, "math", "max({args})", max, "", doc="largest argument"),
        Function("abs", 1, 1, "math", "abs({0})", abs, "fabs({0})", doc="absolute value"),
    )
}

ARGUMENT = {
    f.name: f
    for f in (
        Function("len", 1, 1, "argument", "len({0})", len, doc="length of the first axis"),
        Function("size", 1, 1, "argument", "{0}.size", lambda a: _array(a).size,
                 doc="number of elements"),
        Function("rows", 1, 1, "argument", "{0}.shape[0]", lambda a: _array(a).shape[0],
                 array_dimensions=2, doc="first dimension of a 2-D array"),
        Function("cols", 1, 1, "argument", "{0}.shape[1]", lambda a: _array(a).shape[1],
                 array_dimensions=2, doc="second dimension of a 2-D array"),
        Function("nbytes", 1, 1, "argument", "{0}.nbytes", lambda a: _array(a).nbytes,
                 doc="bytes of data"),
        Function("itemsize", 1, 1, "argument", "{0}.itemsize",
                 lambda a: _array(a).itemsize, doc="bytes per element"),
        Function("bitwidth", 1, 1, "argument", "_hlc.bitwidth({0})", bitwidth,
                 doc="bits spanned by the values present (max − min)"),
    )
}

BUILTINS: dict[str, Function] = {**MATH, **ARGUMENT}


def python_call(function: Function, arguments: list[str]) -> str:
    """Spell a call of ``function`` in Python."""
    return function.python.format(*arguments, args=", ".join(arguments))


def c_call(function: Function, arguments: list[str]) -> str:
    """Spell a call of a math function in C (all values are doubles)."""
    # hlc_min and hlc_max (templates/hlc_dispatch.h) are fmin and fmax inline:
    # the C library's are calls, and a decision makes dozens of them.
    if function.name == "min":
        return _fold("hlc_min", arguments)
    if function.name == "max":
        return _fold("hlc_max", arguments)
    if function.name == "log":
        if len(arguments) == 1:
            return f"log({arguments[0]})"
        return f"(log({arguments[0]}) / log({arguments[1]}))"
    if not function.c:
        raise ValueError(f"{function.name}() has no C spelling")
    return function.c.format(*arguments)


# Names every expression may use without defining them: the parallel context of
# the thesis's profiling globals (Table 3-2).
GLOBALS = {
    "P": "number of ranks (processes) taking part in the call",
    "logP": "log2(P)",
}
