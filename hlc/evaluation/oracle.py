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
before the medians are taken (``Evaluator.confirm``).  Where a verdict the
figures rest on still hangs on the noise -- the chosen alternative against a
rival, or an implementation's chosen parameters against its other settings,
their round-by-round ratio near the tolerance and its median's confidence
interval across it -- the two get further rounds until it no longer does, or
up to SETTLE_ROUNDS more (``Evaluator.settle``).

Then the contenders are timed again, in rounds of their own, on a second
input drawn at the same point (``Evaluator.other_input``): where its
variables are the same as the first's, a choice made from them cannot tell
the two inputs apart.  Where the fastest on one input is slower than the
tolerance on the other, and no alternative is within it on both, the choice
turns on the input itself, and no cost model of those variables can be
right at both.

Among the points, in the same seeded order, the oracle times again a few of
the build's own fitting samples (PROBES per interface and rank count), each
implementation at the sample's parameters on the sample's arguments, rebuilt
from its seed (``Evaluator.probe``): a ``probe`` line each, with the
profile's seconds and this run's.  Where the host's costs moved between the
profile and the evaluation (other tenants of a shared cache, a slower
spell), the evaluation judges the models against a machine they were not
fitted on, and the probes say where and by how much.

Each point becomes one ``evaluation`` line (hlc.artefacts.samples.Evaluated):
the agreed variables, what the module chose, and every candidate's time with
its timings keyed by round, so that two candidates can be compared round by
round.  hlc.evaluation.verdicts turns the lines into the figures.

The machinery is the profiler's, held rather than inherited: the run (its
ranks, resuming from the file, events for the parent, the account) is a
:class:`~hlc.calibrate.harness.ProgramRun`, and the checks, exclusions and
robust timing are its :class:`~hlc.calibrate.engine.TimingEngine`.  The
profiling program imports this module only when it runs as the oracle, so
profiling needs nothing of the built modules loaded here.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hlc.artefacts.evaluation import Candidate
from hlc.artefacts.samples import Decision, Evaluated, Header, Point, Probe, Sample, Samples
from hlc.calibrate.harness import RANK_SEED_STRIDE, ProgramRun
from hlc.calibrate.tasks import Implementation, Interface
from hlc.calibrate.timing import Timing

DISPATCHED = "(dispatched)"
AGAIN = "(again)"
#: Alternatives within this fraction of the fastest are timed CONFIRM_ROUNDS more times.
CLOSE = 0.10
CONFIRM_ROUNDS = 6
#: On the second input, each implementation's fastest setting within this
#: fraction of the fastest alternative is timed too: one whose cost turns on
#: the input may win the second input although it lost the first by more
#: than CLOSE.
REACH = 0.5
#: Each of the oracle's timings lasts at least this long (the profiler's, a
#: millisecond).  At two ranks, a stencil of half a millisecond a call timed
#: twice per timing spread over ±10% from round to round; with the timings
#: four times as long, the reference timed twice lay a 95th percentile of
#: 3.7-4.6% apart instead of 6.4-11.8%, for half as much time again.
ORACLE_TIMING = 4e-3
#: Fewest shared rounds for a round-by-round ratio; below, the ratio of medians.
PAIRED_ROUNDS = 3
#: A choice within this fraction of the fastest measured alternative is right.
TOLERANCE = 0.03
#: At most this many rounds more for a verdict that still hangs on the noise
#: (``Evaluator.settle``): the MEDIAN_CONFIDENCE interval of its round-by-round
#: ratio's median lies across 1 + tolerance (and where too few rounds leave
#: it unbounded, the range of the ratios does: ``verdict_interval``).
SETTLE_ROUNDS = 12
MEDIAN_CONFIDENCE = 0.9
#: The build's fitting samples timed again per interface and rank count (``Evaluator.probe``).
PROBES = 16


def label(implementation: str, parameters: Mapping[str, int]) -> str:
    """``radix bpd=8``: an implementation at given parameters."""
    return " ".join([implementation, *(f"{name}={value}" for name, value in parameters.items())])


def round_ratios(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[float]:
    """t_a / t_b in each round in which both were timed (``rounds``: pairs [round, seconds])."""
    first = {r: seconds for r, seconds in a.get("rounds", ())}
    second = {r: seconds for r, seconds in b.get("rounds", ()) if seconds > 0}
    return [first[r] / second[r] for r in sorted(first.keys() & second.keys())]


def median_interval(values: Sequence[float], confidence: float = MEDIAN_CONFIDENCE) -> tuple[float, float]:
    """A distribution-free confidence interval of the median of ``values``:
    the k-th smallest and k-th largest, k the largest count for which the
    chance that fewer than k values fall below the median (Binomial(n, 1/2))
    is at most (1 - confidence) / 2.  (-inf, inf) when no such k exists:
    too few values to bound the median at that confidence."""
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - confidence) / 2
    k, below = 0, 0.0
    while k < n // 2:
        below += math.comb(n, k) / 2**n  # P(fewer than k + 1 values below the median)
        if below > tail:
            break
        k += 1
    if k == 0:
        return -math.inf, math.inf
    return ordered[k - 1], ordered[n - k]


def verdict_interval(values: Sequence[float]) -> tuple[float, float]:
    """Where the median of a pair's round-by-round ratios may lie: its
    MEDIAN_CONFIDENCE interval, or, from fewer rounds than bound it (four),
    the range of the ratios, an interval of confidence 1 - 2**(1 - n) (75%
    from three rounds).  A setting the confirming rounds left out is timed
    in three; at two or three million keys a radix sort's rounds spread
    by half their median, and three of them put one digit width 10-30%
    behind another where twelve rounds more put the two within 3%."""
    low, high = median_interval(values)
    if math.isfinite(high - low) or not values:
        return low, high
    return min(values), max(values)


def ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """t_a / t_b of two measured candidates (``seconds``, and ``rounds``: pairs
    [round, seconds]): the median over the rounds in which both were timed
    of the ratio of their timings in that round, when they share
    PAIRED_ROUNDS rounds; else (lines without rounds) the ratio of medians.
    Timings of one round are moments apart, so a host that runs slower for
    seconds at a time slows both alike and the ratio keeps only what differs
    between the candidates."""
    shared = round_ratios(a, b)
    if len(shared) >= PAIRED_ROUNDS:
        return statistics.median(shared)
    return a["seconds"] / b["seconds"]


class Evaluator:
    """The oracle's run: held-out draws for points, and for candidates the
    module's choices, the alternatives and the module itself, timed in
    rounds by the program_run's timing engine."""

    def __init__(self, library: str, description: str, interfaces: list[Interface], options: argparse.Namespace):
        import hlc

        self.library = library
        self.description = description
        self.interfaces = interfaces
        self.program_run = ProgramRun(options)
        self.engine = self.program_run.engine
        self.context = self.program_run.context
        self.state = self.program_run.state
        self.module = hlc.load(options.evaluate)
        self.points = options.points
        self.exhaustive = options.params == "exhaustive"
        self.tolerance = TOLERANCE if options.tolerance is None else options.tolerance
        self.engine.clock = replace(self.engine.clock, least=ORACLE_TIMING)
        self.rounds: list[list[int]] = []  # per candidate of the current point: the round of each timing
        fitted = Samples.read(Path(options.evaluate) / "samples.jsonl").samples
        self.probes = {interface.name: probes(interface, fitted, self.context.size, self.program_run.seed)
                       for interface in interfaces}

    def run(self) -> int:
        self.program_run.open(self.header())
        work = [(interface, *item) for interface in self.interfaces for item in self.plan(interface)]
        work += [(interface, False, index, dict(sample.point or {}))
                 for interface in self.interfaces for index, sample in enumerate(self.probes[interface.name])]
        return self.program_run.take(work, self.measure)

    def header(self) -> Header:
        return replace(self.program_run.header(self.library, self.description), evaluate=str(self.module.__file__),
                       points=self.points, params="exhaustive" if self.exhaustive else "chosen",
                       tolerance=self.tolerance)

    def plan(self, interface: Interface) -> list[tuple[bool, int, dict]]:
        rng = random.Random(f"{self.program_run.seed}:{interface.name}:evaluate")
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
        stream = random.Random(f"{self.program_run.seed}:{interface.name}:evaluate:{index}")
        return stream.randrange(2**31) + RANK_SEED_STRIDE * self.context.rank

    def probe(self, interface: Interface, index: int) -> None:
        """Time one of the build's fitting samples again (module doc): its
        implementation at its parameters, on its arguments."""
        sample = self.probes[interface.name][index]
        done = Point(interface.name, self.context.size, False, index)
        implementation = next(i for i in interface.implementations if i.name == sample.implementation)
        arguments, variables = self.program_run.inputs(interface, sample.seed + RANK_SEED_STRIDE * self.context.rank,
                                                       sample.point)
        if variables != sample.variables:  # not the sample's arguments (its inputs are drawn otherwise now)
            self.program_run.write([done])
            return
        ready = self.engine.warm_up(interface, [(implementation, dict(sample.parameters))], arguments, sample.point)
        rounds: list[list[int]] = [[] for _ in ready]
        values = self.engine.time_rounds(interface, ready, arguments, sample.point, rounds) if ready else [[]]
        if not values[0] or (interface.name, implementation.name) in self.state.excluded:
            self.program_run.write([done])
            return
        now = Timing(tuple(values[0]), ready[0][2]).seconds
        self.program_run.write([Probe(interface.name, implementation.name, self.context.size, sample.index,
                                      dict(sample.parameters), dict(sample.variables), sample.seconds, now), done])

    def measure(self, interface: Interface, verify: bool, index: int, point: dict) -> None:
        if not verify:
            self.probe(interface, index)
            return
        size = self.context.size
        seed = self.sample_seed(interface, verify, index)
        arguments, variables = self.program_run.inputs(interface, seed, point)
        choice = getattr(self.module, f"choose_{interface.name}_at")(**variables)
        done = Point(interface.name, size, True, index)
        if choice.implementation is None:
            self.program_run.write([Evaluated(interface.name, size, index, seed, point, variables, None), done])
            return
        candidates = self.candidates(interface, variables, point, choice.settings)
        if (interface.name, DISPATCHED) not in self.state.excluded:
            candidates.append((Implementation(DISPATCHED, getattr(self.module, interface.name), _always,
                                              _no_settings, _no_draw), {}))
        reference = next((c for c in candidates if c[0].name == interface.reference), None)
        if reference is not None:
            candidates.append((Implementation(AGAIN, reference[0].call, _always, _no_settings, _no_draw),
                               reference[1]))
        ready = self.engine.warm_up(interface, candidates, arguments, point)
        self.rounds = [[] for _ in ready]
        timings = self.engine.time_rounds(interface, ready, arguments, point, self.rounds)
        self.confirm(interface, ready, timings, arguments, point, choice)
        self.settle(interface, ready, timings, arguments, point, choice)
        slowdown = self.engine.slowdown  # the second input's rounds, if any, start the engine's afresh
        other_input = self.other_input(interface, index, point, variables, ready, timings, choice)
        slowdown = max(slowdown, self.engine.slowdown)
        measured = self.timed_candidates(interface, ready, timings, self.rounds)
        chosen = Decision(choice.implementation, dict(choice.parameters), choice.seconds)
        self.program_run.write([Evaluated(interface.name, size, index, seed, point, variables, chosen,
                                          measured, round(slowdown, 3), other_input), done])

    def timed_candidates(self, interface: Interface, ready: list[tuple[Implementation, dict, int]],
                         timings: list[list[float]], rounds: list[list[int]]) -> tuple[Candidate, ...]:
        """Each candidate timed and not excluded, with its median and its timings by round."""
        found = []
        for (implementation, settings, repeat), values, numbers in zip(ready, timings, rounds, strict=True):
            if (interface.name, implementation.name) in self.state.excluded or not values:
                continue
            timing = Timing(tuple(values), repeat)
            found.append(Candidate(label(implementation.name, settings), implementation.name, settings,
                                   timing.seconds, tuple(zip(numbers, values, strict=True)), not timing.settled))
        return tuple(found)

    def alternatives(self, ready: list[tuple[Implementation, dict, int]], timings: list[list[float]],
                     choice: Any) -> tuple[list[dict[str, Any]], list[int], list[int]]:
        """Each candidate as far as it was timed (``measured``), the positions
        of the alternatives that were (not the dispatched call, nor the
        reference's second timing), and those of the chosen one among them."""
        measured = [self.measured(position, values, repeat)
                    for position, ((_, _, repeat), values) in enumerate(zip(ready, timings, strict=True))]
        alternatives = [i for i, (implementation, _, _) in enumerate(ready)
                        if implementation.name not in (DISPATCHED, AGAIN) and math.isfinite(measured[i]["seconds"])]
        chosen = [i for i in alternatives if ready[i][0].name == choice.implementation
                  and ready[i][1] == choice.settings.get(choice.implementation, choice.parameters)]
        return measured, alternatives, chosen

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
        measured, alternatives, chosen = self.alternatives(ready, timings, choice)
        if not alternatives:
            return
        contenders = set()
        for group in [alternatives] + [[i for i in alternatives if ready[i][0].name == name]
                                       for name in {ready[i][0].name for i in alternatives}]:
            fastest = min(measured[i]["seconds"] for i in group)
            contenders.update(i for i in group if measured[i]["seconds"] <= (1 + CLOSE) * fastest)
        for position in chosen:
            contenders.add(position)
            contenders.update(i for i in alternatives if ratio(measured[position], measured[i]) > 1)
        for round_ in range(CONFIRM_ROUNDS):
            self.time_round(interface, ready, sorted(contenders), round_, timings, arguments, point)

    def settle(self, interface: Interface, ready: list[tuple[Implementation, dict, int]],
               timings: list[list[float]], arguments: tuple, point: dict, choice: Any) -> None:
        """Up to SETTLE_ROUNDS more interleaved rounds, each for the
        candidates of the verdicts still undecided (``undecided``) after the
        rounds before it.  The rule looks at both sides of the tolerance
        alike: a choice that is right by a hair gets the same further rounds
        as one that is wrong by a hair, and both stop once the interval of
        their ratio's median lies on one side.  Two implementations that run
        the same computation (a 1 × 2 grid of blocks is two strips) differed
        by up to 7% in nine rounds on a two-rank host."""
        for round_ in range(CONFIRM_ROUNDS, CONFIRM_ROUNDS + SETTLE_ROUNDS):
            positions = self.undecided(ready, timings, choice)
            if not positions:
                return
            self.time_round(interface, ready, positions, round_, timings, arguments, point)

    def undecided(self, ready: list[tuple[Implementation, dict, int]], timings: list[list[float]],
                  choice: Any) -> list[int]:
        """The positions of the candidates of each verdict that still hangs on
        the noise: the chosen alternative against each other alternative
        (right or wrong), and with --params exhaustive each
        implementation's setting at the module's parameters against its
        other settings (parameters optimal or not).  A pair's verdict hangs
        when the interval of its round-by-round ratio's median
        (``verdict_interval``) contains 1 + tolerance, or when that median
        and the ratio of the two candidates' medians over all their rounds
        lie on either side of it: the shared rounds were then too few, or
        too close together, to stand for the others.  A host's pace can
        stay changed for seconds: at 741,455 keys of 22 bits, two passes of
        11 bits took 6.3-6.8 ms in the three rounds they shared with four
        passes of 6 bits (4.7-5.1 ms), and 3.7-3.8 ms in four rounds a few
        seconds later.  Computed on every rank alike (each rank's timings
        are the slowest rank's)."""
        measured, alternatives, chosen = self.alternatives(ready, timings, choice)
        pairs = [(c, i) for c in chosen for i in alternatives if i != c]
        if self.exhaustive:
            own: dict[str, int] = {}
            for i in alternatives:  # candidates() puts each implementation's own setting first
                own.setdefault(ready[i][0].name, i)
            pairs += [(first, i) for first in own.values() for i in alternatives
                      if i != first and ready[i][0].name == ready[first][0].name]
        bound = 1 + self.tolerance
        found: set[int] = set()
        for a, b in pairs:
            shared = round_ratios(measured[a], measured[b])
            if len(shared) < PAIRED_ROUNDS:
                continue
            low, high = verdict_interval(shared)
            paired = statistics.median(shared)
            apart = measured[a]["seconds"] / measured[b]["seconds"]
            if low <= bound <= high or (paired > bound) != (apart > bound):
                found.update((a, b))
        return sorted(found)

    def contenders(self, ready: list[tuple[Implementation, dict, int]], timings: list[list[float]],
                   choice: Any) -> list[int]:
        """The positions of the alternatives within CLOSE of the fastest, of
        each implementation's fastest setting within REACH of it, and of the
        chosen one."""
        timed, alternatives, chosen = self.alternatives(ready, timings, choice)
        if not alternatives:
            return []
        seconds = [candidate["seconds"] for candidate in timed]
        fastest = min(seconds[i] for i in alternatives)
        own_fastest: dict[str, int] = {}
        for i in sorted(alternatives, key=seconds.__getitem__):
            own_fastest.setdefault(ready[i][0].name, i)
        return [i for i in alternatives if seconds[i] <= (1 + CLOSE) * fastest or i in chosen
                or (i == own_fastest[ready[i][0].name] and seconds[i] <= (1 + REACH) * fastest)]

    def other_input(self, interface: Interface, index: int, point: dict, variables: dict,
                    ready: list[tuple[Implementation, dict, int]], timings: list[list[float]],
                    choice: Any) -> tuple[Candidate, ...]:
        """The contenders (``contenders``) timed on a second input drawn at
        the point, in rounds of their own and CONFIRM_ROUNDS more: none when
        that input's variables differ from the first's (then the models
        could tell the two apart).  An alternative that stands alone is
        timed too, so that a point with a second input is one whose
        variables were drawn twice, whatever its first timings showed."""
        positions = self.contenders(ready, timings, choice)
        if not positions:
            return ()
        arguments, other = self.program_run.inputs(interface, self.other_seed(interface, index), point)
        if other != variables:
            return ()
        again = self.engine.warm_up(interface, [(ready[i][0], ready[i][1]) for i in positions], arguments, point)
        rounds: list[list[int]] = [[] for _ in again]
        values = self.engine.time_rounds(interface, again, arguments, point, rounds)
        for round_ in range(CONFIRM_ROUNDS):
            self.engine.time_round(interface, again, list(range(len(again))), round_, values, arguments, point,
                                   rounds)
        return self.timed_candidates(interface, again, values, rounds)

    def other_seed(self, interface: Interface, index: int) -> int:
        """The seed of the second input at a point: a stream of its own, per rank."""
        stream = random.Random(f"{self.program_run.seed}:{interface.name}:evaluate:{index}:other input")
        return stream.randrange(2**31) + RANK_SEED_STRIDE * self.context.rank

    def measured(self, position: int, values: list[float], repeat: int) -> dict[str, Any]:
        """The candidate at ``position`` as far as it was timed: its median and its timings by round."""
        return {"seconds": Timing(tuple(values), repeat).seconds if values else math.inf,
                "rounds": [(r, v) for r, v in zip(self.rounds[position], values, strict=True)]}

    def time_round(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]],
                   positions: list[int], round_: int, timings: list[list[float]], arguments: tuple,
                   point: dict) -> list[int]:
        """A round as the profiler times it, its timings numbered (``rounds``)."""
        return self.engine.time_round(interface, candidates, positions, round_, timings, arguments, point,
                                      self.rounds)

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


def probes(interface: Interface, samples: Sequence[Sample], size: int, seed: int) -> list[Sample]:
    """Up to PROBES of the build's fitting samples of ``interface`` at ``size``
    ranks, drawn with the evaluation's seed from those whose arguments can
    be rebuilt (a seed and the loop values recorded), of implementations the
    interface still has."""
    names = {implementation.name for implementation in interface.implementations}

    def usable(sample: Sample) -> bool:
        return (sample.interface == interface.name and sample.implementation in names and not sample.verify
                and (sample.P, sample.seed is not None, sample.point is not None) == (size, True, True)
                and sample.seconds > 0)

    found = sorted(filter(usable, samples),
                   key=lambda s: (s.implementation, s.index, sorted(s.parameters.items()), s.seconds))
    return random.Random(f"{seed}:{interface.name}:probes").sample(found, min(PROBES, len(found)))


def _always(variables: dict) -> bool:
    return True


def _no_settings(point: dict, variables: dict) -> list[dict]:
    return [{}]


def _no_draw(rng: random.Random, point: dict, variables: dict) -> dict:
    return {}
