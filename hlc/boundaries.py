"""Bisection towards the region boundaries that the measurements show.

The fitting grid of a description is as fine as its author made it: a
stencil profiled at every octave of rows and columns cannot say whether
its layouts trade places at 2^17 cells or at 2^17.9, and a model fitted to
it interpolates straight across a cliff in between.  Where two neighbouring
measured points of the grid (or of earlier bisections) have different
fastest alternatives, a region boundary lies between them (thesis Fig. 4-8:
the wrong choices lie there), and the point halfway along the loop that
separates them is measured next; seed 003's geometric bisection, which
builds a speed function from few points by halving the intervals where it
is not yet known, applied to the decision rather than to one speed curve.

Halfway is in the loop's own scale: the geometric mean of the two values
for a loop drawn log-uniformly (``*=``, ``<<=``, ``drawn log``), the mean
otherwise, rounded to an integer; an interval with no integer inside is
resolved.  An adaptive profile measures part of the grid, so two measured
points along a loop may have grid points between them not measured yet:
the boundary is then bisected at the one of those nearest halfway, a grid
point (GBBP's bisection, over the grid first).  Only where none lies
between is a point between the grid's made.  A step in one
implementation's cost that lies between two grid values (numpy.sort
sorts up to some power of two of keys in a sorting network, and more by
partitioning) is then bracketed along every line whose ends were
measured, not only along those whose every grid point was.

A boundary is bisected only where the alternatives it separates differ by
more than the tolerance at one of its ends at least: between two
near-equal alternatives a wrong choice costs nothing worth measuring.

A parameter that a search sets ``over i … with p = …`` takes other values
at other points for the same proposal: the radix sort's digit width for
three passes is 9 bits at 25-bit keys and 10 at 29.  Its settings are
compared between points by the proposal (:func:`by_proposal`), so that
three passes winning at both ends is no boundary, and a boundary between
two and three passes has its stake measured at both ends, where each
end timed its own digit widths for them.  Compared by the digit width,
a third of a sort build's boundaries between settings were the same
choice at both ends, and most others had a stake that neither end had
timed; ranked by those, they came before the boundaries that were.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hlc.artefacts.samples import Sample
from hlc.language import ast
from hlc.language.expressions import EvaluationError, evaluate, integer_bounds
from hlc.language.nest import constant_values

#: Alternatives closer than this at both ends of a boundary are not worth
#: bisecting: twice the 3% within which an evaluation counts a choice right,
#: so that halfway, where costs that cross straight are closest, a wrong
#: choice would cost about that much, and timing noise at the ends alone
#: does not open a boundary.
STAKE = 0.06
#: The stake of a boundary whose alternatives were not both timed at an end
#: (the one not timed there was predicted far slower: a surprise, worth a look).
UNKNOWN_STAKE = 1.0

Label = tuple[str, tuple[tuple[str, int], ...]]  # an implementation and its settings


def label(implementation: str, settings: Mapping[str, int]) -> Label:
    return implementation, tuple(sorted(settings.items()))


def measured_candidates(samples: Iterable[Sample]) -> dict[tuple[str, int, int], dict[Label, float]]:
    """Per fitting point (interface, P, index), each timed candidate's
    seconds: the median over the point's takes."""
    takes: dict[tuple, dict[Label, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        if not s.verify:
            takes[s.interface, s.P, s.index][label(s.implementation, s.parameters)].append(s.seconds)
    return {key: {name: sorted(values)[len(values) // 2] for name, values in timed.items()}
            for key, timed in takes.items()}


@dataclass(frozen=True)
class Boundary:
    """Two neighbouring measured points along one loop whose fastest
    alternatives differ, and the point halfway between them."""

    interface: str
    P: int
    variable: str
    low: int
    high: int
    point: dict[str, int]  # the midpoint
    stake: float  # how much slower the other end's winner is, at the end where it is most
    implementations: bool  # the winners are different implementations, not settings of one
    key: tuple[str, int, int] | None = None  # the midpoint's key when it is a known point, not measured yet


def midpoint(loop: ast.Loop, low: int, high: int) -> int | None:
    """The value halfway between two of a loop's values, in its scale; None
    when no integer lies strictly between them."""
    if high - low < 2:
        return None
    middle = round(math.sqrt(low * high)) if loop.drawn == "log" and low > 0 else (low + high) // 2
    return middle if low < middle < high else None


def nearest_halfway(loop: ast.Loop, low: int, high: int, between: Sequence[int]) -> int:
    """Of the values ``between`` ``low`` and ``high``, the one nearest halfway
    in the loop's scale (the lower of two as near)."""
    if loop.drawn == "log" and low > 0:
        middle = (math.log(low) + math.log(high)) / 2
        return min(between, key=lambda value: (abs(math.log(value) - middle), value))
    return min(between, key=lambda value: (abs(2 * value - low - high), value))


def in_range(loops: Sequence[ast.Loop], point: Mapping[str, int], constants: Mapping[str, Any]) -> bool:
    """Whether every loop's value lies within its range where the outer
    loops stand at the point (a range may depend on an outer loop)."""
    environment = dict(constants)
    for loop in loops:
        if loop.variable not in point:
            continue
        try:
            low = evaluate(loop.range.low, environment)
            high = evaluate(loop.range.high, environment)
        except EvaluationError:
            return False
        if not low <= point[loop.variable] <= high:
            return False
        environment[loop.variable] = point[loop.variable]
    return True


def by_proposal(library: ast.Library, variables: Mapping[tuple[str, int, int], Mapping[str, Any]],
                measured: Mapping[tuple[str, int, int], Mapping[Label, float]]
                ) -> dict[tuple[str, int, int], dict[Label, float]]:
    """``measured`` with each setting of a parameter that a search ``over i
    in LOW .. HIGH with p = VALUE`` sets labelled by the search's i instead
    (as ``p:i``): the first i whose VALUE, brought into p's range as the
    dispatcher brings it, is the value timed.  ``variables``: the
    explanatory variables at each point, P and logP among them (the
    survey's), in which the search is valued; a point without them, or a
    value no i proposes, keeps its label."""
    constants = constant_values(library)
    implementations = {(interface.name, implementation.name): implementation
                       for interface in library.interfaces for implementation in interface.implementations}
    relabelled: dict[tuple[str, int, int], dict[Label, float]] = {}
    for key, timed in measured.items():
        interface = key[0]
        at = variables.get(key)
        proposals: dict[tuple[str, str], dict[int, int]] = {}  # (implementation, p) → {value of p: i}
        out: dict[Label, float] = {}
        for (name, settings), seconds in timed.items():
            implementation = implementations.get((interface, name))
            searches = implementation.searches() if implementation is not None and at is not None else []
            values = dict(settings)
            for parameter, over in searches:
                if parameter.name not in values:
                    continue
                searched = (name, parameter.name)
                if searched not in proposals:
                    proposals[searched] = _proposed(parameter, over, {**constants, **at})
                step = proposals[searched].get(values[parameter.name])
                if step is not None:
                    del values[parameter.name]
                    values[f"{parameter.name}:{over.variable}"] = step
            out[label(name, values)] = seconds
        relabelled[key] = out
    return relabelled


def _proposed(parameter: ast.Parameter, over: ast.Reparameterization, environment: Mapping[str, Any]
              ) -> dict[int, int]:
    """Each value the search proposes for ``parameter``, by the first i that
    proposes it, the ranges read as the dispatcher reads them
    (hlc.dispatch.reference); empty where the search cannot be valued here."""
    try:
        low, high = integer_bounds(over.range, environment)
        least, most = (-math.inf, math.inf) if parameter.range is None else integer_bounds(parameter.range, environment)
        found: dict[int, int] = {}
        for step in range(low, high + 1):
            value = int(evaluate(over.value, {**environment, over.variable: step}))
            found.setdefault(min(max(value, least), most), step)
        return found
    except (EvaluationError, ArithmeticError, TypeError, ValueError):
        return {}


def stake(winner: Label, other: Label, timed: Mapping[Label, float]) -> float | None:
    """How much slower ``other`` is than ``winner`` at a point; None when it was not timed there."""
    if other not in timed or timed[winner] <= 0:
        return None
    return timed[other] / timed[winner] - 1


def boundaries(library: ast.Library, points: Mapping[tuple[str, int, int], dict[str, int]],
               measured: Mapping[tuple[str, int, int], Mapping[Label, float]]) -> list[Boundary]:
    """The boundaries worth bisecting: along each loop of each interface, the
    pairs of neighbouring measured points (``points`` holds every point
    surveyed, measured or not) that have different fastest alternatives,
    with the alternatives more than STAKE apart at one end; different
    implementations first, then the largest stake first (the rounds take
    them cheapest per stake: hlc.adaptive.bisection_order), each midpoint
    once.  Where surveyed points not measured lie between the two, the
    midpoint is the one nearest halfway (its ``key`` says which), else a
    new point halfway."""
    constants = constant_values(library)
    loops = {interface.name: list(interface.profile.loops) for interface in library.interfaces
             if interface.profile is not None}
    lines: dict[tuple, list[tuple[int, tuple]]] = defaultdict(list)  # a line along one loop → its points
    for key, point in points.items():
        interface, size, _ = key
        for variable in point:
            rest = tuple(sorted((name, value) for name, value in point.items() if name != variable))
            lines[interface, size, variable, rest].append((point[variable], key))
    found: dict[tuple, Boundary] = {}
    for (interface, size, variable, rest), members in lines.items():
        loop = next((loop for loop in loops.get(interface, ()) if loop.variable == variable), None)
        if loop is None:
            continue
        members.sort()
        taken = [(value, key) for value, key in members if measured.get(key)]
        for (low, low_key), (high, high_key) in zip(taken, taken[1:], strict=False):
            low_timed, high_timed = measured[low_key], measured[high_key]
            low_winner = min(low_timed, key=lambda name: (low_timed[name], name))
            high_winner = min(high_timed, key=lambda name: (high_timed[name], name))
            if low_winner == high_winner:
                continue
            stakes = [s for s in (stake(low_winner, high_winner, low_timed), stake(high_winner, low_winner,
                                                                                   high_timed)) if s is not None]
            at_stake = max(stakes) if len(stakes) == 2 else UNKNOWN_STAKE
            if at_stake <= STAKE:
                continue
            between = {value: key for value, key in members if low < value < high}
            if between:  # a surveyed point, not measured yet
                middle = nearest_halfway(loop, low, high, sorted(between))
                known: tuple[str, int, int] | None = between[middle]
                point = dict(points[known])
            else:
                middle, known = midpoint(loop, low, high), None
                if middle is None:
                    continue
                point = {**dict(rest), variable: middle}
                point = {name: point[name] for name in points[low_key]}  # the nest's order
                if not in_range(loops[interface], point, constants):
                    continue
            boundary = Boundary(interface, size, variable, low, high, point, at_stake,
                                low_winner[0] != high_winner[0], known)
            where = (interface, size, tuple(point.items()))
            if where not in found or (boundary.implementations, boundary.stake) > (
                    found[where].implementations, found[where].stake):
                found[where] = boundary
    return sorted(found.values(), key=lambda b: (not b.implementations, -b.stake, b.interface, b.P,
                                                 tuple(b.point.items())))
