"""The loop nest of a profile: its points, and how many there are.

A loop ``for i in a .. b UPDATE`` runs i = a, then applies the update while
i ≤ b (thesis Fig. 3-4).  Bounds and steps may use library constants and the
variables of outer loops.  An implementation is profiled over the loops that
matter to it: every loop except those over the parameters of *other*
implementations of the same interface.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hlc.language.ast import Interface, Library, Loop
from hlc.language.expressions import EvaluationError, evaluate, names
from hlc.language.machine import machine_constants

# A loop with more values than this is a mistake, not a profile.
MAX_LOOP_VALUES = 1_000_000


class NestError(Exception):
    """A loop whose values cannot be computed (bad bound, runaway loop)."""

    def __init__(self, loop: Loop, message: str):
        super().__init__(message)
        self.loop = loop


def constant_values(library: Library) -> dict[str, Any]:
    """Values of the machine constants, then of the library's ``let``
    constants, in order; ones that fail are left out."""
    values: dict[str, Any] = dict(machine_constants())
    for constant in library.constants:
        try:
            values[constant.name] = evaluate(constant.value, values)
        except EvaluationError:
            continue
    return values


def is_integer(value: Any) -> bool:
    """An int, or a finite float with an integer value (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or (math.isfinite(value) and value == int(value))


def _integer(loop: Loop, what: str, value: Any) -> int:
    if not is_integer(value):
        raise NestError(loop, f"the {what} of loop '{loop.variable}' must be an integer, not {value!r}")
    return int(value)


def loop_values(loop: Loop, environment: Mapping[str, Any]) -> list[int]:
    """The values ``loop`` takes when the outer loops stand at ``environment``."""
    try:
        start = _integer(loop, "start", evaluate(loop.range.low, environment))
        stop = _integer(loop, "stop", evaluate(loop.range.high, environment))
        amount = 1
        if loop.update.amount is not None:
            amount = evaluate(loop.update.amount, environment)
            if loop.update.operator == "*=" and not is_integer(amount):
                return _geometric(loop, start, stop, amount)
            amount = _integer(loop, "step", amount)
    except EvaluationError as error:
        raise NestError(loop, f"loop '{loop.variable}': {error}") from None
    values: list[int] = []
    value = start
    while value <= stop:
        values.append(value)
        if len(values) > MAX_LOOP_VALUES:
            raise NestError(loop, f"loop '{loop.variable}' takes more than {MAX_LOOP_VALUES:,} values")
        following = _advance(loop.update.operator, value, amount, stop)
        if following <= value:
            raise NestError(loop, f"loop '{loop.variable}' never terminates: "
                                  f"{loop.update.operator} {amount} takes {value} to {following}")
        value = following
    return values


def geometric(start: int, stop: int, factor: float) -> list[int]:
    """start · factorⁱ rounded to the nearest integer, each value once, up to
    ``stop``: the values of ``for x in start .. stop *= factor`` with a real
    factor (1.5 gives 8, 12, 18, 27, 40, …).  Computed from the start, not by
    multiplying the rounded values, so that rounding errors do not add up.
    The start must be at least 1 and the factor more than 1 (ValueError)."""
    if start < 1 or not factor > 1:
        raise ValueError(f"*= {factor!r} from {start} never advances: the start must be at least 1 "
                         f"and the factor more than 1")
    if math.log(max(stop, start) / start) / math.log(factor) > 10 * MAX_LOOP_VALUES:
        raise ValueError(f"*= {factor!r} from {start} to {stop} takes more than {MAX_LOOP_VALUES:,} values")
    values: list[int] = []
    power = 0
    while (value := round(start * factor ** power)) <= stop:
        if not values or value > values[-1]:
            values.append(value)
        power += 1
    return values


def _geometric(loop: Loop, start: int, stop: int, factor: Any) -> list[int]:
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not math.isfinite(factor):
        raise NestError(loop, f"the step of loop '{loop.variable}' must be a number, not {factor!r}")
    if start > stop:
        return []
    try:
        values = geometric(start, stop, factor)
    except ValueError as error:
        raise NestError(loop, f"loop '{loop.variable}' never terminates: {error}") from None
    if len(values) > MAX_LOOP_VALUES:
        raise NestError(loop, f"loop '{loop.variable}' takes more than {MAX_LOOP_VALUES:,} values")
    return values


def _advance(operator: str, value: int, amount: int, stop: int) -> int:
    if operator == "++":
        return value + 1
    if operator == "+=":
        return value + amount
    if operator == "*=":
        return value * amount
    if amount < 0:
        return value
    if value > 0 and amount > stop.bit_length():  # past the stop already; do not build a huge number
        return stop + 1
    return value << amount


def relevant_loops(interface: Interface, implementation_name: str) -> list[Loop]:
    """The loops an implementation is profiled over (see module doc)."""
    if interface.profile is None:
        return []
    implementation = interface.implementation(implementation_name)
    own = {p.name for p in implementation.parameters} if implementation else set()
    others = {p.name for impl in interface.implementations if impl.name != implementation_name
              for p in impl.parameters} - own
    return [loop for loop in interface.profile.loops if loop.variable not in others]


def points(loops: Sequence[Loop], environment: Mapping[str, Any]) -> Iterator[dict[str, int]]:
    """Every point of the nest, outer loop slowest, as ``{variable: value}``."""
    if not loops:
        yield {}
        return
    first, rest = loops[0], loops[1:]
    for value in loop_values(first, environment):
        inner = {**environment, first.variable: value}
        for point in points(rest, inner):
            yield {first.variable: value, **point}


def count_values(loop: Loop, environment: Mapping[str, Any]) -> int:
    """How many values ``loop`` takes; additive loops are counted without listing them."""
    if loop.update.operator in ("++", "+="):
        try:
            start = _integer(loop, "start", evaluate(loop.range.low, environment))
            stop = _integer(loop, "stop", evaluate(loop.range.high, environment))
            step = 1 if loop.update.amount is None else _integer(
                loop, "step", evaluate(loop.update.amount, environment))
        except EvaluationError as error:
            raise NestError(loop, f"loop '{loop.variable}': {error}") from None
        if step <= 0:
            if start <= stop:
                raise NestError(loop, f"loop '{loop.variable}' never terminates: += {step}")
            return 0
        count = max(0, (stop - start) // step + 1)
        if count > MAX_LOOP_VALUES:
            raise NestError(loop, f"loop '{loop.variable}' takes more than {MAX_LOOP_VALUES:,} values")
        return count
    return len(loop_values(loop, environment))


def count_points(loops: Sequence[Loop], environment: Mapping[str, Any]) -> int:
    """How many points the nest has, without enumerating independent loops."""
    if not loops:
        return 1
    first, rest = loops[0], loops[1:]
    if not rest:
        return count_values(first, environment)
    values = loop_values(first, environment)
    depends = any(first.variable in {n.id for n in _loop_names(loop)} for loop in rest)
    if not depends:
        return len(values) * count_points(rest, environment)
    return sum(count_points(rest, {**environment, first.variable: value}) for value in values)


def _loop_names(loop: Loop):
    yield from names(loop.range.low)
    yield from names(loop.range.high)
    if loop.update.amount is not None:
        yield from names(loop.update.amount)
