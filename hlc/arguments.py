"""How a library's array arguments are taken: the rule of a built module's
calls, which the profiling program applies to the arguments it builds too.

A call may pass a list where the description declares ``float[]``; the
module converts it, where that loses nothing, and the implementations get
the array.  Their costs are those of running on the array (a Python loop
over a NumPy array runs several times slower than over a list), so the
profile times them on what the calls will pass them, converted the same way.
"""

from __future__ import annotations

from typing import Any

import numpy

#: The dtype kinds an element type of the language accepts as they are.
ELEMENT_KINDS = {"int": "iu", "float": "f", "bool": "b"}
_ELEMENT_WORDS = {"int": "integers", "float": "floating-point numbers", "bool": "booleans"}


def as_array(value: Any, where: str, element: str, dimensions: int, mutable: bool = False) -> numpy.ndarray:
    """``value`` as the array an argument declared ``element[…]`` with
    ``dimensions`` dimensions takes, converted where that loses nothing;
    else TypeError or ValueError naming the argument (``where``).

    * An array of the declared dtype (or, for ``int``, ``float`` and
      ``bool``, of that kind) is taken as it is.
    * A list, tuple or other array-like is made an array first.
    * An array of another dtype is converted when the declared type holds
      every one of its values exactly: where NumPy's safe casting says so for
      the dtypes (``int16`` to ``int32``, ``float32`` to ``float64``), and
      from integers to floating point when each value is checked exact.
      Made from a list, integers also narrow to a smaller integer dtype when
      every value fits.
    * Booleans and numbers never stand for each other, and an argument the
      implementations modify in place (``mutable``) is never converted: its
      copy would take the changes instead of the caller's array.

    The generated module calls this only for an argument its own quick test
    refused, so an array that needs nothing costs nothing more."""
    words = _ELEMENT_WORDS.get(element, element)
    kinds = ELEMENT_KINDS.get(element)
    target = numpy.dtype({"int": numpy.int64, "float": numpy.float64, "bool": numpy.bool_}.get(element, element))
    listed = not isinstance(value, numpy.ndarray)
    array = value
    if listed:
        if mutable:
            raise TypeError(f"{where} must be a NumPy array of {words} (the implementations change it in place), "
                            f"not {type(value).__name__}")
        try:
            array = numpy.asarray(value)
        except (TypeError, ValueError, OverflowError):
            array = None
        if array is None or array.dtype.kind not in "biufc":  # complex numbers: refused below, by their type
            raise TypeError(f"{where} must be a NumPy array of {words}, not {type(value).__name__}")
    if array.ndim != dimensions:
        raise ValueError(f"{where} must be {dimensions}-dimensional, not {array.ndim}-dimensional")
    have = array.dtype
    if (kinds is not None and have.kind in kinds) or (kinds is None and have == target):
        return array
    if listed and array.size == 0:  # [] holds values of any type
        return array.astype(target)
    refused = TypeError(f"{where} must hold {words}, not {have}")
    if mutable or (have.kind == "b") != (target.kind == "b"):
        raise refused
    if numpy.can_cast(have, target, casting="safe") and not (have.kind in "iu" and target.kind == "f"):
        return array.astype(target)
    if have.kind in "iu" and target.kind == "f":  # exact where |x| <= 2**(mantissa bits + 1)
        bound = 2 ** (numpy.finfo(target).nmant + 1)
        if array.size == 0 or (int(array.min()) >= -bound and int(array.max()) <= bound):
            return array.astype(target)
        raise ValueError(f"{where} holds integers beyond ±2**{numpy.finfo(target).nmant + 1}, "
                         f"which {target} cannot hold exactly")
    if listed and have.kind in "iu" and target.kind in "iu":
        limits = numpy.iinfo(target)
        if array.size == 0 or (int(array.min()) >= limits.min and int(array.max()) <= limits.max):
            return array.astype(target)
        raise ValueError(f"{where} holds values beyond the range of {target}")
    raise refused
