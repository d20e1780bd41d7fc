"""The oracle: every choice measured side by side at held-out points.

A generated profiling program run with ``--evaluate BUILD`` does not profile:
it draws random points of each interface's loop nest (as verification does,
from its own seed stream, so they are not the fitting grid), builds the
arguments there and times, interleaved round after round,

* every applicable implementation at the parameters the built module would
  give it (with ``--params exhaustive``: also at every value of its parameter
  loops),
* the built module's own call (the dispatched call, decision included),
* the reference implementation a second time, under another label — how far
  two timings of the same thing differ is the noise floor of the comparison.

The alternatives close to the fastest, the chosen one, and every alternative
that beat the chosen one round by round then get more rounds, side by side,
before the medians are taken (``Evaluator.confirm``).
Each point becomes one ``evaluation`` line: the agreed variables, what the
module chose, and every candidate's time with its timings keyed by round, so
that two candidates can be compared round by round.  hlc.evaluation turns
the lines into the figures.  The machinery (warm-up with result checks,
exclusion of failing implementations, robust interleaved timing, resuming,
events for the parent) is the profiler's.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from typing import Any

from hlc.calibrate.harness import Implementation, Interface, Profiler
from hlc.calibrate.timing import Timing

DISPATCHED = "(dispatched)"
AGAIN = "(again)"
#: Alternatives within this fraction of the fastest are timed CONFIRM_ROUNDS more times.
CLOSE = 0.10
CONFIRM_ROUNDS = 6
#: Fewest shared rounds for a round-by-round ratio; below, the ratio of medians.
PAIRED_ROUNDS = 3


def label(implementation: str, parameters: dict[str, int]) -> str:
    """``radix bpd=8``: an implementation at given parameters."""
    return " ".join([implementation, *(f"{name}={value}" for name, value in parameters.items())])


def ratio(a: dict[str, Any], b: dict[str, Any]) -> float:
    """t_a / t_b of two measured candidates (``seconds``, and ``rounds``: pairs
    [round, seconds]): the median over the rounds in which both were timed
    of the ratio of their timings in that round, when they share
    PAIRED_ROUNDS rounds; else (lines without rounds) the ratio of medians.
    Timings of one round are moments apart, so a host that runs slower for
    seconds at a time slows both alike and the ratio keeps only what differs
    between the candidates."""
    first = {r: seconds for r, seconds in a.get("rounds", ())}
    second = {r: seconds for r, seconds in b.get("rounds", ()) if seconds > 0}
    shared = first.keys() & second.keys()
    if len(shared) >= PAIRED_ROUNDS:
        return statistics.median(first[r] / second[r] for r in shared)
    return a["seconds"] / b["seconds"]


class Evaluator(Profiler):
    """A profiler whose points are held-out draws and whose candidates are the
    module's choices, the alternatives, and the module itself."""

    def __init__(self, library: str, description: str, interfaces: list[Interface], options: argparse.Namespace):
        super().__init__(library, description, interfaces, options)
        import hlc

        self.module = hlc.load(options.evaluate)
        self.points = options.points
        self.exhaustive = options.params == "exhaustive"
        self.rounds: list[list[int]] = []  # per candidate of the current point: the round of each timing
        self.round_count = 0

    def header(self) -> dict:
        return {**super().header(), "evaluate": str(self.module.__file__), "points": self.points,
                "params": "exhaustive" if self.exhaustive else "chosen"}

    def plan(self, interface: Interface) -> list[tuple[bool, int, dict]]:
        rng = random.Random(f"{self.seed}:{interface.name}:evaluate")
        draws: list[dict] = []
        for _ in range(20 * self.points):
            if len(draws) == self.points:
                break
            try:
                draws.append(interface.random_point(rng))
            except ValueError:  # a range that is empty at this draw
                continue
        return [(True, index, point) for index, point in enumerate(draws)]

    def sample_seed(self, interface: Interface, verify: bool, index: int) -> int:
        stream = random.Random(f"{self.seed}:{interface.name}:evaluate:{index}")
        return stream.randrange(2**31) + 1_000_003 * self.context.rank

    def measure(self, interface: Interface, verify: bool, index: int, point: dict) -> None:
        size = self.context.size
        seed, arguments, variables = self.inputs(interface, verify, index, point)
        choice = getattr(self.module, f"choose_{interface.name}_at")(**variables)
        record: dict[str, Any] = {"kind": "evaluation", "interface": interface.name, "P": size, "index": index,
                                  "seed": seed, "point": point, "variables": variables}
        if choice.implementation is None:
            self.write([{**record, "chosen": None, "candidates": []}, self.done_line(interface, index)])
            return
        candidates = self.candidates(interface, variables, point, choice.settings)
        if (interface.name, DISPATCHED) not in self.state.excluded:
            candidates.append((Implementation(DISPATCHED, getattr(self.module, interface.name), _always,
                                              _no_settings, _no_draw), {}))
        reference = next((c for c in candidates if c[0].name == interface.reference), None)
        if reference is not None:
            candidates.append((Implementation(AGAIN, reference[0].call, _always, _no_settings, _no_draw),
                               reference[1]))
        ready = self.warm_up(interface, candidates, arguments, point)
        self.rounds = [[] for _ in ready]
        timings = self.time_rounds(interface, ready, arguments, point)
        self.confirm(interface, ready, timings, arguments, point, choice)
        measured = []
        for position, ((implementation, settings, repeat), values) in enumerate(zip(ready, timings, strict=True)):
            if (interface.name, implementation.name) in self.state.excluded or not values:
                continue
            measured.append({"label": label(implementation.name, settings), "implementation": implementation.name,
                             "parameters": settings, **self.measured(position, values, repeat),
                             "noisy": not Timing(tuple(values), repeat).settled})
        chosen = {"implementation": choice.implementation, "parameters": dict(choice.parameters),
                  "predicted": choice.seconds}
        self.write([{**record, "chosen": chosen, "candidates": measured, "host": round(self.slowdown, 3)},
                    self.done_line(interface, index)])

    def confirm(self, interface: Interface, ready: list[tuple[Implementation, dict, int]], timings: list[list[float]],
                arguments: tuple, point: dict, choice: Any) -> None:
        """More interleaved rounds for the contenders: the chosen alternative,
        every alternative within CLOSE of the fastest (overall and per
        implementation), and every alternative that was faster than the
        chosen one round by round.  The fastest of many noisy alternatives
        tends to be one that was timed on a lucky moment (the winner's
        curse), and so does an alternative that beat the chosen one in the
        first three rounds (a radix sort at two digit widths that make the
        same passes did, by 16%); timing them again, side by side, is what
        makes "within 3% of the fastest" a statement about the alternatives
        rather than about the noise."""
        measured = [self.measured(position, values, repeat)
                    for position, ((_, _, repeat), values) in enumerate(zip(ready, timings, strict=True))]
        alternatives = [i for i, (implementation, _, _) in enumerate(ready)
                        if implementation.name not in (DISPATCHED, AGAIN) and math.isfinite(measured[i]["seconds"])]
        if not alternatives:
            return
        contenders = set()
        for group in [alternatives] + [[i for i in alternatives if ready[i][0].name == name]
                                       for name in {ready[i][0].name for i in alternatives}]:
            fastest = min(measured[i]["seconds"] for i in group)
            contenders.update(i for i in group if measured[i]["seconds"] <= (1 + CLOSE) * fastest)
        chosen = [i for i in alternatives if ready[i][0].name == choice.implementation
                  and ready[i][1] == choice.settings.get(choice.implementation, choice.parameters)]
        for position in chosen:
            contenders.add(position)
            contenders.update(i for i in alternatives if ratio(measured[position], measured[i]) > 1)
        for round_ in range(CONFIRM_ROUNDS):
            self.time_round(interface, ready, sorted(contenders), round_, timings, arguments, point)

    def measured(self, position: int, values: list[float], repeat: int) -> dict[str, Any]:
        """The candidate at ``position`` as far as it was timed: its median and its timings by round."""
        return {"seconds": Timing(tuple(values), repeat).seconds if values else math.inf,
                "rounds": [[r, v] for r, v in zip(self.rounds[position], values, strict=True)]}

    def time_round(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]],
                   positions: list[int], round_: int, timings: list[list[float]], arguments: tuple,
                   point: dict) -> list[int]:
        """A round as the profiler times it, numbered: timings of one round were
        taken within moments of each other, so their ratio is free of the
        host's slower drifts."""
        timed = super().time_round(interface, candidates, positions, round_, timings, arguments, point)
        self.round_count += 1
        for position in timed:
            self.rounds[position].append(self.round_count)
        return timed

    def candidates(self, interface: Interface, variables: dict, point: dict,
                   settings: dict[str, dict[str, int]]) -> list[tuple[Implementation, dict]]:
        """Each applicable implementation at the module's parameters for it, and
        with --params exhaustive at every other setting the dispatcher
        chooses among (its parameter loops' values, or those of its search)."""
        found: list[tuple[Implementation, dict]] = []
        for implementation in interface.implementations:
            if (interface.name, implementation.name) in self.state.excluded or not implementation.applies(variables):
                continue
            chosen = dict(settings.get(implementation.name, {}))
            found.append((implementation, chosen))
            if self.exhaustive:
                found += [(implementation, s) for s in implementation.candidates(point, variables) if s != chosen]
        found.sort(key=lambda c: c[0].name != interface.reference)
        return found

    def done_line(self, interface: Interface, index: int) -> dict:
        return {"kind": "point", "interface": interface.name, "P": self.context.size, "verify": True, "index": index}


def _always(variables: dict) -> bool:
    return True


def _no_settings(point: dict, variables: dict) -> list[dict]:
    return [{}]


def _no_draw(rng: random.Random, point: dict, variables: dict) -> dict:
    return {}
