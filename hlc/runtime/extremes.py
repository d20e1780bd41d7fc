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
"""

from __future__ import annotations

from typing import Any

#: Arrays this long or longer have their extremes shared (shorter ones cost
#: less to read again than sharing costs).
SHARED_FROM = 4096

_current: tuple[Any, int, int] | None = None


def share(array: Any, low: int, high: int) -> None:
    """Record that ``array``'s values lie in ``low .. high`` (both present)."""
    global _current
    _current = (array, low, high)


def forget() -> None:
    """The call is over: nothing is known any more."""
    global _current
    _current = None


def measured(array: Any) -> tuple[int, int] | None:
    """(smallest, largest) of ``array`` if the dispatched call under way
    measured this very array, else None."""
    current = _current
    if current is not None and current[0] is array:
        return current[1], current[2]
    return None
