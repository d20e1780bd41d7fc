"""The extremes of an array that the dispatcher has just measured, for the
implementation it calls.

``bitwidth(keys)`` reads every key to find the smallest and the largest; a
radix or counting sort then reads them all again for the same two values.
For an array of :data:`SHARED_FROM` elements or more, a built module
therefore shares what its pass found with the implementation it calls
(:func:`share` before the call, :func:`forget` after it), and the
implementation asks :func:`measured` before its own pass.

The answer is for that array object alone (``is``, not equality): any other
array, a copy the implementation made, a call from outside a dispatched
call, or one on another thread gets None, and the implementation reads its
keys as it would without hlc.  An argument an implementation may change
(``mutable``) is never shared.

Under mpiexec the span that matters is every rank's, which the dispatched
call has combined over the ranks already (``bitwidth`` does): every rank
shares that span instead, and the implementation asks
:func:`measured_over_ranks` rather than combine it again.
:func:`over_ranks` combines a span in one all-reduce, for both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Arrays this long or longer have their extremes shared (shorter ones cost
#: less to read again than sharing costs).
SHARED_FROM = 4096

_current: tuple[Any, int, int, bool] | None = None


def share(array: Any, low: int, high: int, over_ranks: bool = False) -> None:
    """Record that ``array``'s values lie in ``low .. high`` (both present),
    or with ``over_ranks``, that every rank's values of the call do."""
    global _current
    _current = (array, low, high, over_ranks)


def forget() -> None:
    """The call is over: nothing is known any more."""
    global _current
    _current = None


def measured(array: Any) -> tuple[int, int] | None:
    """(smallest, largest) of ``array`` if the dispatched call under way
    measured this very array, else None."""
    current = _current
    if current is not None and current[0] is array and not current[3]:
        return current[1], current[2]
    return None


def measured_over_ranks() -> tuple[Any, Any] | None:
    """(smallest, largest) of every rank's values of the argument whose
    ``bitwidth`` the dispatched call under way combined over the ranks;
    (None, None) when no rank holds one; None outside such a call.

    Unlike :func:`measured` it is not for one array object: one rank's
    argument may be a view its implementation copies where another's is
    used as it is, and every rank must get the same answer, or some would
    combine the span again and wait for ranks that do not.  So ask it only
    of the values the call measured."""
    current = _current
    if current is not None and current[3]:
        return current[1], current[2]
    return None


def over_ranks(team: Any, dtype: Any, low: Any, high: Any) -> tuple[Any, Any] | None:
    """The smallest and the largest value over the ranks of ``team``, from
    each rank's own (``low`` None on a rank without values), in one
    all-reduce; None when no rank holds a value.  The pair travels as
    (NOT low, high) under max: a bitwise NOT reverses the order of signed
    and unsigned integers alike, without overflow (floats are negated)."""
    dtype = np.dtype(dtype).newbyteorder("=")
    integer = dtype.kind in "iu"
    if low is None:
        pair = np.array([np.iinfo(dtype).min] * 2 if integer else [-np.inf] * 2, dtype=dtype)
    else:
        pair = np.array([low, high], dtype=dtype)
        pair[0] = ~pair[0] if integer else -pair[0]
    both = team.reduce(pair, "max")
    low, high = (~both[0] if integer else -both[0]), both[1]
    if low > high:
        return None
    return (int(low), int(high)) if integer else (float(low), float(high))
