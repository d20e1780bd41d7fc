"""What a generated profiling program declares, and what it runs on.

An :class:`Interface` and its implementations are plain Python
that the program (``profile_<library>.py``) builds from the description:
the loop nest, how arguments are built, the variables, the preconditions
and the parameter loops.  The :class:`Context` is the ranks the program
runs on, one without MPI.  The timing engine (hlc.calibrate.engine), the
profiler (hlc.calibrate.harness) and the oracle (hlc.evaluation.oracle)
all work on these.
"""

from __future__ import annotations

import math
import os
import random
import reprlib
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy

from hlc.artefacts.samples import point_text
from hlc.runtime import world
from hlc.runtime.agreement import largest_over_ranks

# ---- what a generated program declares ---------------------------------------------


@dataclass
class Implementation:
    name: str
    call: Callable[..., Any]
    applies: Callable[[dict], bool]  # the preconditions, over the variables
    settings: Callable[[dict, dict], Iterable[dict]]  # parameter values at a fitting point
    random_settings: Callable[[random.Random, dict, dict], dict | None]  # one draw for verification
    # the values the dispatcher chooses among at a point (default: the settings)
    choices: Callable[[dict, dict], Iterable[dict]] | None = None

    def candidates(self, point: dict, variables: dict) -> Iterable[dict]:
        """The settings the dispatcher chooses among at a point."""
        return (self.choices or self.settings)(point, variables)


@dataclass
class Interface:
    name: str
    points: Callable[[], Iterator[dict]]  # fitting points of the loops over inputs
    random_point: Callable[[random.Random], dict]  # a verification point
    arguments: Callable[[dict, int, int], tuple]  # (point, seed, P) → the call's arguments
    variables: Callable[..., dict]  # arguments → explanatory variables
    implementations: list[Implementation]
    reference: str
    mutable: tuple[int, ...] = ()  # positions of arguments the implementations may modify
    uniform: tuple[str, ...] = ()  # the variables the description declares alike on every rank
    verify: int = 20
    repeat: int = 3
    setup: Callable[[dict, tuple, int], None] | None = None
    cleanup: Callable[[dict, tuple, int], None] | None = None


class HelperFailed(Exception):
    """A helper of the description failed while the program built a point's
    arguments, computed its variables or ran its setup or cleanup: the
    description is wrong there, not an implementation."""


#: The folder of hlc's own modules, whose frames a failed helper's traceback leaves out.
_OWN = str(Path(__file__).resolve().parents[1])


def described(interface: Interface, point: dict, what: str, run: Callable[[], Any]) -> Any:
    """``run()``, the description's ``what`` (arguments, variables, setup,
    cleanup) at ``point``.  Where a helper it calls raises, HelperFailed says
    which interface, which point and which line of the helper failed (its
    frames and the generated program's, not hlc's)."""
    try:
        return run()
    except Exception as error:  # noqa: BLE001 -- any failure of the description's helpers ends the profile
        where = point_text(point) or "its only point"
        frames = [frame for frame in traceback.extract_tb(error.__traceback__)
                  if not str(Path(frame.filename).resolve()).startswith(_OWN + os.sep)]
        failed = {"arguments": "could not be built", "variables": "could not be computed"}.get(what, "failed")
        text = [f"the profile's {what} of {interface.name}() at {where} {failed}:\n",
                *traceback.format_list(frames), *traceback.format_exception_only(error)]
        raise HelperFailed("".join(text).rstrip()) from None


# ---- the parallel context -----------------------------------------------------------------


class Context:
    """Rank and size; the agreements all ranks must reach.  One rank without MPI.
    Under an emulated network (``HLC_PLATFORM``) the tasks pay its costs, and
    these agreements do not: they are the profiler's, not the task's."""

    def __init__(self, ranks: int):
        self.world = world().unemulated()
        self.size = self.world.size
        self.rank = self.world.rank
        if self.size != ranks:
            raise SystemExit(f"--ranks {ranks} but this program runs on {self.size} rank(s)")

    def barrier(self) -> None:
        self.world.barrier()

    def maximum(self, value: float) -> float:
        return self.maxima(value)[0]

    def maxima(self, *values: float) -> list[float]:
        """Each value's largest over the ranks, in one reduction."""
        if self.size == 1:
            return [float(v) for v in values]
        return [float(v) for v in self.world.reduce(numpy.array(values, dtype=float), "max")]

    def agree_count(self, count: int) -> int:
        """The smallest of the ranks' counts of warm-up calls: that of the rank
        whose first call took longest, the one doing the task's work.  A rank
        that takes no part in a transfer between two others returns from its
        first call at once and asks for thousands; the largest count would make
        the two that do transfer run them all (at three ranks on an emulated
        LAN, 17 s of warm-up in a 20 s profile)."""
        if self.size == 1:
            return count
        return int(self.world.reduce(numpy.array([float(count)]), "min")[0])

    def any(self, flag: bool) -> bool:
        return bool(self.maximum(1.0 if flag else 0.0))

    def agree(self, variables: dict[str, float], uniform: Sequence[str] = ()) -> dict[str, float]:
        """Each variable's largest value over the ranks, as the dispatcher takes
        it; NotUniform where a ``uniform`` one differs between them (the
        dispatcher takes those on trust)."""
        if self.size == 1:
            return variables
        return {name: _plain(value) for name, value in largest_over_ranks(self.world, variables, uniform).items()}


def _plain(value: float) -> float | int:
    return int(value) if value.is_integer() else value


# ---- comparing results ----------------------------------------------------------------------


def same_result(result: Any, reference: Any) -> bool:
    """Whether two implementations' results agree: exactly for integers and
    everything else, to 1e-9 relative for floating point.  Numbers agree
    whatever holds them (a list of the reference array's values is the same
    result), and a comparison that fails is a disagreement: an
    implementation's result must not stop the profile."""
    if isinstance(result, tuple | list) and isinstance(reference, tuple | list):
        return len(result) == len(reference) and all(map(same_result, result, reference))
    if isinstance(result, dict) and isinstance(reference, dict):
        return result.keys() == reference.keys() and all(same_result(result[k], reference[k]) for k in result)
    if _numeric(result) or _numeric(reference):
        try:
            a, b = numpy.asarray(result), numpy.asarray(reference)
        except (ValueError, TypeError):  # ragged, or not numbers
            return False
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" and b.dtype.kind in "fcbiu" or b.dtype.kind in "fc" and a.dtype.kind in "biu":
            return _close(a.reshape(-1), b.reshape(-1))
        if a.dtype.kind in "biu" and b.dtype.kind in "biu":
            return bool(numpy.array_equal(a, b))
    try:
        equal = result == reference
        if isinstance(equal, numpy.ndarray):
            return numpy.shape(result) == numpy.shape(reference) and bool(equal.all())
        return bool(equal)
    except Exception:  # noqa: BLE001 -- any failure of the results' own comparison is a disagreement
        return False


def _numeric(value: Any) -> bool:
    """An array or a number (not a truth value): compared as numbers."""
    return isinstance(value, numpy.ndarray | numpy.generic | float | int) and not isinstance(value, bool)


#: Elements compared at a time by _close: its temporaries stay in the caches.
CLOSE_CHUNK = 1 << 16


def _close(a: numpy.ndarray, b: numpy.ndarray, rtol: float = 1e-9) -> bool:
    """numpy.allclose(a, b, rtol, atol=1e-12 × max(|b|, 1)) of two flat
    arrays, a chunk at a time into two reused buffers.  Whole, allclose and
    the scale made five temporaries of the arrays' size: a profile checked a
    16-million-element result in 190 ms, nine times the 21 ms of the call
    that made it, and in chunks in 55 ms.  A chunk that fails the plain test
    (a NaN, or an infinity on both sides) is judged by allclose itself."""
    if a.dtype.kind == "c" or b.dtype.kind == "c" or a.size <= CLOSE_CHUNK:
        scale = float(numpy.max(numpy.abs(b))) if b.size else 0.0
        return bool(numpy.allclose(a, b, rtol=rtol, atol=1e-12 * max(scale, 1.0)))
    difference = numpy.empty(CLOSE_CHUNK)
    tolerance = numpy.empty(CLOSE_CHUNK)
    scale = 0.0
    for start in range(0, b.size, CLOSE_CHUNK):
        part = b[start:start + CLOSE_CHUNK]
        magnitude = numpy.abs(part, out=tolerance[:part.size])
        scale = max(scale, float(magnitude.max()))
    atol = 1e-12 * max(scale, 1.0)
    if not math.isfinite(atol):  # an infinity in the reference: the plain test would pass one anywhere
        return bool(numpy.allclose(a, b, rtol=rtol, atol=atol))
    for start in range(0, a.size, CLOSE_CHUNK):
        x, y = a[start:start + CLOSE_CHUNK], b[start:start + CLOSE_CHUNK]
        with numpy.errstate(invalid="ignore", over="ignore"):  # infinities: allclose judges those chunks
            apart = numpy.subtract(x, y, out=difference[:x.size])
            numpy.abs(apart, out=apart)
            allowed = numpy.abs(y, out=tolerance[:y.size])
            allowed *= rtol
            allowed += atol
            plainly = bool(numpy.all(apart <= allowed))
        if not plainly and not numpy.allclose(x, y, rtol=rtol, atol=atol):
            return False
    return True


def describe(value: Any) -> str:
    """A short text of a result for failure messages: the start of its repr
    (NumPy abbreviates an array's, reprlib a long list's), or its type where
    that fails."""
    try:
        text = repr(value) if isinstance(value, numpy.ndarray) else _SHORT.repr(value)
    except Exception:  # noqa: BLE001 -- a result whose repr fails is still described
        text = f"a {type(value).__name__} (its repr failed)"
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


_SHORT = reprlib.Repr()
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = 8
_SHORT.maxother = _SHORT.maxstring = 80
