"""Run-time support of generated profiling programs.

A generated program (``profile_<library>.py``) holds everything specific to
one description — its loop nests, how arguments are built, the variables,
preconditions and parameter loops — as plain Python, and hands it to
:func:`main` here, which does the generic work of the thesis's profiling
loop (Fig. 3-2) with the robustness it lacked:

* at each point every applicable implementation is called once and its
  result checked against the reference implementation's; that call's
  length gives a first repeat count, and a timing too short for the clock
  grows it;
* each candidate's timings form a block, right after its checking call
  (which is the block's first timing when it lasts long enough): timed
  back to back until k timings agree, its first timings dropped while they
  are slower than the rest (cold: the warm-up), and taken again when the
  host slowed down meanwhile, which its samples record;
* an implementation that raises or returns a wrong result is excluded (a
  ``failure`` line) and the others go on;
* before each timed task an event names it on standard output, so the parent
  process can blame a crash or a hang on the right implementation;
* the samples file (hlc.artefacts.samples) is the only state: a restarted
  program skips the points already done and the implementations already
  excluded.

Under ``mpiexec`` every rank runs the same points with its own data; rank 0
writes.  Timings start after a barrier and take the slowest rank's time.

How a candidate is checked and timed is the :class:`TimingEngine`'s
(hlc.calibrate.engine); what a run shares whatever it measures (the ranks,
the samples file, the events, the account) is the :class:`ProgramRun`'s.  The
:class:`Profiler` holds both.  So does the oracle of ``hlc evaluate``
(hlc.evaluation.oracle), which checks every candidate first and then
interleaves their timings round after round, because it compares
candidates round by round; the program runs it with ``--evaluate``, and
this module does not import it: profiling needs nothing of the built
modules the oracle loads.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

from hlc.artefacts.samples import (
    Account,
    Failure,
    Header,
    Point,
    Record,
    Sample,
    Samples,
    Survey,
    lines,
    point_text,
    repair,
)
from hlc.calibrate.allocator import keep_freed_memory
from hlc.calibrate.breakdown import Breakdown
from hlc.calibrate.engine import TimingEngine
from hlc.calibrate.host import TOLERANCE as HOST_TOLERANCE
from hlc.calibrate.host import HostMeter, link_yardstick
from hlc.calibrate.tasks import Context, HelperFailed, Implementation, Interface, described
from hlc.calibrate.timing import Timing, calibrate_clock
from hlc.language.nest import geometric
from hlc.runtime.agreement import NotUniform

# How many candidate points verification draws at most, per sample wanted.
VERIFY_DRAWS = 4
# A model's own points (``Profiler.own_points``) have indices from OWN_INDEX
# on, OWN_STRIDE apart per implementation: apart from the nest's points and
# from the refined ones, which follow the nest's.
OWN_INDEX = 1 << 30
OWN_STRIDE = 1 << 20
# The tag of the commands rank 0 passes on to the other ranks under --serve.
COMMAND_TAG = 7301
#: Seconds the ranks of a serving program exchange messages after a pause,
#: before a command's timings (``Profiler.settle``).  Half of it left the
#: first points of a stencil build's rounds 2.0% slow in one of two 15 s
#: builds, and that build chose right at 95.0%.
SETTLE = 0.1


# ---- loading the implementations ------------------------------------------------------


class Sources:
    """Loads names from the description's ``.py`` files and from the compiled
    extensions of its ``.pyx`` files."""

    def __init__(self, base: str, compiled: str | None = None):
        self.base = Path(base)
        self.compiled = Path(compiled) if compiled else None
        self._modules: dict[str, Any] = {}

    def load(self, relative: str, name: str) -> Any:
        return getattr(self._module(relative), name)

    def _module(self, relative: str) -> Any:
        if relative in self._modules:
            return self._modules[relative]
        path = self.base / relative
        if path.suffix == ".pyx":
            module = self._extension(path)
        else:
            module_name = "_hlc_source_" + "_".join(Path(relative).with_suffix("").parts)
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        self._modules[relative] = module
        return module

    def _extension(self, path: Path) -> Any:
        if self.compiled is None:
            raise ImportError(f"{path} is Cython and no folder of compiled extensions was given")
        from hlc.compile import extension_name

        name = extension_name(path)
        if str(self.compiled) not in sys.path:
            sys.path.insert(0, str(self.compiled))
        return importlib.import_module(name)


# ---- loops and draws ----------------------------------------------------------------------

#: Each rank's arguments are drawn with the point's seed plus this many times
#: its rank (a sample records rank 0's seed, which gives every rank's).
RANK_SEED_STRIDE = 1_000_003


def multiplied(start: int, stop: int, factor: float) -> list[int]:
    """The values of ``for x in start .. stop *= factor``, factor any number
    above 1: start · factorⁱ rounded, each once (hlc.language.nest.geometric)."""
    return geometric(start, stop, factor) if start <= stop else []


def size_of(arguments: tuple) -> int:
    """Bytes the arguments hold (arrays and other buffers by their size, a
    sequence by its length in 8-byte items): before anything is timed, the
    only clue to what a call there will cost."""
    total = 0
    for argument in arguments:
        if hasattr(argument, "nbytes"):
            total += int(argument.nbytes)
        elif isinstance(argument, list | tuple | str | bytes):
            total += 8 * len(argument)
        else:
            total += 8
    return total


def log_uniform(rng: random.Random, low: int, high: int) -> int:
    """An integer of ``low .. high`` drawn uniformly in its logarithm: each
    octave of the range gets as many draws as any other.  ValueError when
    the range is empty or starts below 1."""
    if low < 1 or low > high:
        raise ValueError(f"no log-uniform draw from {low} .. {high}")
    return min(high, math.floor(math.exp(rng.uniform(math.log(low), math.log(high + 1)))))


def block_order(candidates: list[tuple[Implementation, dict]], reference: str | None,
                rng: random.Random) -> list[tuple[Implementation, dict]]:
    """The order in which a point's candidates are timed, one block each: the
    reference implementation first (the others' results are checked against
    its own), then each implementation's settings together, in an order
    drawn anew at every point.

    The first block of an implementation at a point runs after another
    implementation's, and a large task wins its pace back over several
    calls, more slowly than the block's cold timings show
    (benchmarks/pause_pace.py measures one cause): on a two-core Intel Xeon
    host, in a fresh process, a radix sort of 1,482,910 keys took 16.2,
    13.7, 12.7, 12.6, 12.4, 12.1, 11.8, 11.5, 11.3 and 11.0 ms in ten calls
    after a numpy.sort, each no more than 5% faster than the last.  Its
    settings in ascending order put that slower block on the narrowest
    digit at every point: one build's fitting samples over 100,000 keys
    lay 1.12 times its model at the first setting timed there, 1.05 at the
    second and 1.04 at the others.  Drawn in turn, the slower block falls
    on every setting alike, as noise the fit averages rather than a slope
    in the parameter that it learns."""
    ordered = sorted(candidates, key=lambda c: c[0].name != reference)
    groups: dict[str, list[tuple[Implementation, dict]]] = {}
    for candidate in ordered:
        groups.setdefault(candidate[0].name, []).append(candidate)
    for group in groups.values():
        rng.shuffle(group)
    return [candidate for group in groups.values() for candidate in group]


def load_attribute(module: str, name: str) -> Any:
    """``numpy.sort`` and the like."""
    return getattr(importlib.import_module(module), name)


# ---- the samples file ---------------------------------------------------------------------


@dataclass
class State:
    """What a samples file already holds."""

    done: set[tuple] = field(default_factory=set)  # (interface, P, verify, index)
    excluded: dict[tuple[str, str], str] = field(default_factory=dict)  # (interface, impl) → cause
    verified: dict[tuple[str, int, str], int] = field(default_factory=dict)  # (interface, P, impl) → samples
    fitted: dict[tuple[str, int, str], set[int]] = field(default_factory=dict)  # (interface, P, impl) → points
    seed: int | None = None


def read_state(path: Path) -> State:
    found = Samples.read(path)
    state = State(seed=found.headers[0].seed if found.headers else None)
    state.done.update((point.interface, point.P, point.verify, point.index) for point in found.points)
    for failure in found.failures:
        state.excluded.setdefault((failure.interface, failure.implementation), failure.cause)
    for sample in found.samples:
        key = (sample.interface, sample.P, sample.implementation)
        if sample.verify:
            state.verified[key] = state.verified.get(key, 0) + 1
        else:
            state.fitted.setdefault(key, set()).add(sample.index)
    return state


# ---- one run of a program -------------------------------------------------------------------


def host_meter(options: argparse.Namespace, context: Context) -> HostMeter:
    """The meter of a run.  The oracle waits for the host's usual pace and
    takes a block again when a slow spell hit it (within the meter's
    budget): its timings are the verdict, and no other point can stand in
    for one.  The profiler, unless ``--host-waits``, does neither: it
    records each sample's slowdown, the fit leaves out the samples a spell
    hit (or keeps them, when the host was slow throughout), and the time
    goes to measuring more points.  On a 2-core host slow for two thirds of
    a minute's readings, four default sort builds each way, alternating:
    their measuring share rose from 36–44% to 54–56%, and, replayed at two
    seeds of 200 held-out points at one rank, their right choices from a
    median of 91.5% to 94.3% and their expected penalty fell from 2.4% to
    1.3%.  On several ranks it reads the link between them too."""
    link = {"link": link_yardstick(context.world)} if context.size > 1 else {}
    if options.evaluate or options.host_waits:
        return HostMeter(tolerance=options.host_tolerance, **link)
    return HostMeter(tolerance=options.host_tolerance, share=0.0, allowance=0.0, **link)


class ProgramRun:
    """One run of a profiling program, whatever it measures: its ranks, the
    samples file it resumes from and appends to, its events for the parent,
    its account of where the time goes, and the timing engine.  The
    profiler and the oracle (hlc.evaluation.oracle) each hold one and say
    which points to measure and what to write of them."""

    def __init__(self, options: argparse.Namespace):
        self.started = time.perf_counter()
        self.output = Path(options.out)
        self.deadline = options.deadline
        self.context = Context(options.ranks)
        self.events = options.events and self.context.rank == 0
        self.state = read_state(self.output)  # every rank reads it before rank 0 appends
        self.context.barrier()
        self.seed = self.state.seed if self.state.seed is not None else options.seed
        self.engine = TimingEngine(self.context, calibrate_clock(), host_meter(options, self.context),
                                   self.state.excluded, self.exclude, self.emit)
        self.host_waits = True if options.host_waits and not options.evaluate else None  # as the header says
        self.stream = None

    @property
    def spent(self) -> Breakdown:
        """Where this run's time goes (the engine's account)."""
        return self.engine.spent

    def restart_account(self) -> None:
        """Start this run's account again (a serving program's next command)."""
        self.started, self.engine.spent = time.perf_counter(), Breakdown()

    # -- output
    def emit(self, **event: Any) -> None:
        """A progress or task event for the parent process (standard output)."""
        if self.events:
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()

    def breakdown(self) -> Breakdown:
        """This run's account so far."""
        return Breakdown(dict(self.spent.seconds), time.perf_counter() - self.started)

    def open(self, header: Header) -> None:
        """Start appending to the samples file (rank 0), with ``header``."""
        if self.context.rank == 0:
            self.output.parent.mkdir(parents=True, exist_ok=True)
            repair(self.output)
            self.stream = self.output.open("a", encoding="utf-8")
        self.write([header])

    def write(self, records: Iterable[Record]) -> None:
        """Append records in one write, so a point is either wholly there or not."""
        if self.context.rank != 0:
            return
        self.stream.write(lines(records))
        self.stream.flush()

    def exclude(self, interface: Interface, implementation: Implementation, cause: str, point: dict) -> None:
        """Leave an implementation out of this run and the runs that resume it
        (a ``failure`` line), and tell the parent (an event); the engine calls it."""
        key = (interface.name, implementation.name)
        if key in self.state.excluded:
            return
        self.state.excluded[key] = cause
        self.write([Failure(interface.name, implementation.name, cause, self.context.size, point)])
        self.emit(event="failure", interface=interface.name, implementation=implementation.name, cause=cause)

    def header(self, library: str, description: str) -> Header:
        """The first line of each run: what ran where."""
        return Header(library, description, self.seed, self.context.size, time.time(), self.engine.clock.as_dict(),
                      platform.python_version(), platform.node(), self.engine.host.tolerance,
                      host_waits=self.host_waits)

    # -- the run
    def inputs(self, interface: Interface, seed: int, point: dict) -> tuple[tuple, dict]:
        """The arguments and the variables (agreed over the ranks) at a point."""
        size = self.context.size
        with self.spent.spending("inputs"):
            arguments = described(interface, point, "arguments", lambda: interface.arguments(point, seed, size))
            computed = described(interface, point, "variables",
                                 lambda: dict(interface.variables(*arguments, P=size)))
            try:
                variables = self.context.agree(computed, interface.uniform)
            except NotUniform as error:  # every rank sees the same all-reduce, and stops alike
                raise HelperFailed(f"the profile's arguments of {interface.name}() at "
                                   f"{point_text(point) or 'its only point'} differ between the ranks: {error}; "
                                   f"build every rank's arguments alike there, or leave out 'uniform'") from None
        variables.update(P=size, logP=math.log2(size))
        return arguments, variables

    def take(self, work: list[tuple[Interface, bool, int, dict]], measure: Callable[[Interface, bool, int, dict], Any],
             again: Callable[[Interface, bool, int], bool] | None = None) -> int:
        """``measure`` each point of ``work`` (interface, verify, index, point)
        that the samples file does not hold yet, or that ``again`` names, until
        the deadline; then say how the run ended.

        Points are taken in a seeded random order, fitting and verification
        mixed: slow drift of the machine then adds noise instead of biasing
        one region of the nest (or all verification samples), and a run cut
        short by its budget still samples the whole nest."""
        random.Random(f"{self.seed}:order").shuffle(work)
        done = 0
        for interface, verify, index, point in work:
            if (interface.name, self.context.size, verify, index) not in self.state.done \
                    or (again is not None and again(interface, verify, index)):
                # The ranks agree on it: one rank past the deadline and another not
                # would part them, one waiting for a command, the other in a point.
                if self.deadline is not None and self.context.any(time.time() > self.deadline):
                    return self.finish("budget", done, len(work))
                measure(interface, verify, index, point)
            done += 1
            self.emit(event="progress", done=done, total=len(work), breakdown=self.breakdown().as_dict())
        return self.finish("finished", done, len(work))

    def finish(self, event: str, done: int, total: int) -> int:
        """Record where this run's time went, and say how it ended."""
        spent = self.breakdown().as_dict()
        self.write([Account(self.context.size, **spent)])
        self.emit(event=event, done=done, total=total, breakdown=spent)
        return 0


# ---- the profiling loop ---------------------------------------------------------------------


class Profiler:
    """Profiling: the fitting points of every interface's nest and the random
    verification points, every applicable implementation timed in a block
    at each (see the module doc), one ``sample`` line for each."""

    def __init__(self, library: str, description: str, interfaces: list[Interface], options: argparse.Namespace):
        self.library = library
        self.description = description
        self.interfaces = interfaces
        self.verification_only = options.verification_only
        self.fitting_only = options.fitting_only
        # a serving command's share of the verification points still wanted,
        # taken beside its fitting points (None: all of them)
        self.verifying: float | None = None
        # a serving command's cap on each implementation's verification samples:
        # this many per fitting point it was timed at (None: the interface's verify)
        self.verify_per_fit: float | None = None
        # --select: the fitting points to take, by interface and index (all when None)
        self.selected: dict[str, set[int]] | None = None
        if options.select:
            chosen = json.loads(Path(options.select).read_text(encoding="utf-8"))
            self.selected = {name: set(indices) for name, indices in chosen.items()}
        # the candidates to time at a selected point, where a serving command narrows them
        self.narrowed: dict[tuple[str, int], dict[str, list[dict]]] = {}
        # points between the grid's, by interface and index, that a serving command adds
        self.refined: dict[str, dict[int, dict]] = {}
        # random points of the nest a serving command wants for one implementation
        # alone: interface → implementation → how many in all (own_points)
        self.own: dict[str, dict[str, int]] = {}
        # the implementation each of those points is for, by (interface, index)
        self.own_of: dict[tuple[str, int], str] = {}
        self.surveying = options.survey
        self.serving = options.serve
        self.only = set(options.implementations.split(",")) if options.implementations else None
        self.program_run = ProgramRun(options)
        self.engine = self.program_run.engine
        self.context = self.program_run.context
        self.state = self.program_run.state

    # -- the run
    def run(self) -> int:
        self.program_run.open(self.header())
        return self.serve() if self.serving else self.take()

    def take(self) -> int:
        """Take what the options select: the survey, or the points."""
        if self.surveying:
            return self.survey()
        work = [(interface, *item) for interface in self.interfaces for item in self.plan(interface)]
        return self.program_run.take(work, self.measure, self.again)

    def again(self, interface: Interface, verify: bool, index: int) -> bool:
        """Whether a point measured before is measured again: at the candidates a command names there."""
        return not verify and (interface.name, index) in self.narrowed

    def serve(self) -> int:
        """--serve: take one command after another from standard input, each a
        JSON line with the options it sets (``select``, ``settings``,
        ``fitting_only``, ``verification_only``, ``verifying``, ``survey``, ``refined``,
        ``own``, ``deadline``), each
        ended like a run
        (its account, then a finished or budget event), until the input ends.
        An adaptive profile's rounds then cost one process start per rank
        count, not one per round."""
        while (command := self.next_command()) is not None:
            self.program_run.restart_account()
            chosen = command.get("select")
            self.selected = None if chosen is None else {name: set(indices) for name, indices in chosen.items()}
            # settings: {interface: {index: {implementation: [settings, ...]}}}, the
            # candidates worth timing at a selected point; a point not named times all
            self.narrowed = {(name, int(index)): kept for name, points in command.get("settings", {}).items()
                             for index, kept in points.items()}
            # refined: {interface: {index: point}}, points between the grid's that an
            # adaptive profile bisects towards a boundary; selected by index like the grid's
            self.refined = {name: {int(index): point for index, point in points.items()}
                            for name, points in command.get("refined", {}).items()}
            # own: {interface: {implementation: count}}, random points timed for
            # one implementation alone, as many in all (own_points)
            self.own = {name: {implementation: int(count) for implementation, count in wanted.items()}
                        for name, wanted in command.get("own", {}).items()}
            self.fitting_only = bool(command.get("fitting_only", False))
            self.verification_only = bool(command.get("verification_only", False))
            share = command.get("verifying")
            self.verifying = None if share is None else min(max(float(share), 0.0), 1.0)
            per_fit = command.get("verify_per_fit")
            self.verify_per_fit = None if per_fit is None else max(float(per_fit), 0.0)
            self.surveying = bool(command.get("survey", False))
            self.program_run.deadline = command.get("deadline")
            if not self.surveying:
                self.settle()
            self.take()
        return 0

    def settle(self) -> None:
        """Exchange messages between the ranks for SETTLE seconds before a
        command's timings (a survey times nothing and goes without).  The
        ranks slept while the parent fitted, and the first points of a
        round then timed the layouts that exchange halos slower, against
        those that do not, than the same points later in a round
        (hlc.adaptive's rounds are short, so most of a short build's points
        were early in theirs).  Every rank leaves after the same number of
        rounds: each sees the same maximum."""
        if self.context.size == 1:
            return
        with self.program_run.spent.spending("warm-up"):
            started = time.perf_counter()
            while self.context.maximum(time.perf_counter() - started) < SETTLE:
                pass

    def next_command(self) -> dict | None:
        """The next command, read by rank 0 and sent to every rank; None at the
        end of the input.  The other ranks wait for it by polling, asleep in
        between, so that an idle rank leaves its core to the parent's fit."""
        if self.context.rank == 0:
            line = sys.stdin.readline()
            message = numpy.frombuffer(line.encode("utf-8"), dtype=numpy.uint8)
            for rank in range(1, self.context.size):
                self.context.world.send(message, rank, tag=COMMAND_TAG)
        else:
            while self.context.world.probe(0, COMMAND_TAG) is None:
                time.sleep(0.005)
            line = self.context.world.receive(0, tag=COMMAND_TAG).tobytes().decode("utf-8")
        return json.loads(line) if line.strip() else None

    def survey(self) -> int:
        """Write, for every fitting point, its variables and each applicable
        implementation's candidate settings there, timing nothing: what an
        adaptive profile needs to predict every point before choosing where
        to measure.  Building the arguments is the only cost.  With refined
        points, only those (marked ``refined``)."""
        points = [(interface, index, point) for interface in self.interfaces
                  for index, point in (self.refined.get(interface.name, {}).items() if self.refined
                                       else enumerate(interface.points()))]
        for done, (interface, index, point) in enumerate(points, start=1):
            _, arguments, variables = self.inputs(interface, False, index, point)
            applicable = [i for i in interface.implementations if i.applies(variables)]
            survey = Survey(interface.name, self.context.size, index, point, variables, size_of(arguments),
                            {i.name: list(i.settings(point, variables)) for i in applicable},
                            {i.name: list(i.candidates(point, variables)) for i in applicable},
                            refined=bool(self.refined))
            self.program_run.write([survey])
            self.program_run.emit(event="progress", done=done, total=len(points),
                                  breakdown=self.program_run.breakdown().as_dict())
        return self.program_run.finish("finished", len(points), len(points))

    def header(self) -> Header:
        """The first line of each run: what ran where."""
        return self.program_run.header(self.library, self.description)

    def plan(self, interface: Interface) -> list[tuple[bool, int, dict]]:
        """The fitting points in nest order (the refined ones a command names
        last), then the verification points, each with its index: all of
        them, or the ``verifying`` share of those still wanted, the first
        drawn first."""
        fitting = [] if self.verification_only else [
            (False, index, point)
            for index, point in [*enumerate(interface.points()), *self.refined.get(interface.name, {}).items()]
            if self.selected is None or index in self.selected.get(interface.name, ())]
        rng = random.Random(f"{self.program_run.seed}:{interface.name}:verify")
        draws = []
        for _ in range(0 if self.fitting_only else VERIFY_DRAWS * interface.verify):
            try:
                draws.append(interface.random_point(rng))
            except ValueError:  # a range that is empty at this draw
                continue
        fitting += [] if self.verification_only else self.own_points(interface)
        verification = [(True, index, point) for index, point in enumerate(draws)]
        if not any(self.verification_needed(interface, implementation) for implementation in interface.implementations
                   if (interface.name, implementation.name) not in self.state.excluded):
            verification = []  # every implementation has what its cap allows for now
        if self.verifying is not None and not self.fitting_only:
            done = {index for index, _ in enumerate(draws)
                    if (interface.name, self.context.size, True, index) in self.state.done}
            wanted = max(interface.verify - len(done), 0)
            verification = [item for item in verification if item[1] not in done][:math.ceil(self.verifying * wanted)]
        return fitting + verification

    def own_points(self, interface: Interface) -> list[tuple[bool, int, dict]]:
        """The fitting points a serving command wants for one implementation
        alone (``own``), not yet taken: the first ``count`` of that
        implementation's own stream of random points of the nest, drawn as
        verification points are (so they fall anywhere on the finer grid,
        not only on the nest's), each at a random setting of its parameters.
        An adaptive profile asks for them where a model fits its samples
        worse than the timings' noise: a cheap implementation that wins in
        few places has few points of the nest, and its model, fitted on
        them, misses costs that step between them."""
        taken = []
        names = [implementation.name for implementation in interface.implementations]
        for name, count in self.own.get(interface.name, {}).items():
            if name not in names or (interface.name, name) in self.state.excluded:
                continue
            for k in range(count):
                index = OWN_INDEX + OWN_STRIDE * names.index(name) + k
                if (interface.name, self.context.size, False, index) in self.state.done:
                    continue
                rng = random.Random(f"{self.program_run.seed}:{interface.name}:own:{name}:{k}")
                for _ in range(VERIFY_DRAWS):
                    try:
                        point = interface.random_point(rng)
                    except ValueError:  # a range that is empty at this draw
                        continue
                    self.own_of[interface.name, index] = name
                    taken.append((False, index, point))
                    break
        return taken

    def sample_seed(self, interface: Interface, verify: bool, index: int) -> int:
        stream = random.Random(f"{self.program_run.seed}:{interface.name}:{'verify' if verify else 'fit'}:{index}")
        return stream.randrange(2**31) + RANK_SEED_STRIDE * self.context.rank

    def verification_needed(self, interface: Interface, implementation: Implementation) -> bool:
        """Whether the implementation still lacks verification samples at this
        rank count: the interface's ``verify``, or with a serving command's
        ``verify_per_fit``, no more than that many per fitting point it was
        timed at so far.  An adaptive profile on a short budget, or on a
        busy host, times an implementation at few fitting points where it
        cannot win; a sort build of 30 s took 8 fitting samples of counting
        sort and 40 verification samples, which judge the model but do not
        fit it, and its model of a constant chose counting sort at 79 of 200
        points, up to 300 times slower than the fastest."""
        key = (interface.name, self.context.size, implementation.name)
        wanted = interface.verify
        if self.verify_per_fit is not None:
            wanted = min(wanted, math.ceil(self.verify_per_fit * len(self.state.fitted.get(key, ()))))
        return self.state.verified.get(key, 0) < wanted

    def inputs(self, interface: Interface, verify: bool, index: int, point: dict) -> tuple[int, tuple, dict]:
        """The seed, the arguments and the variables (agreed over the ranks) at a point."""
        seed = self.sample_seed(interface, verify, index)
        return seed, *self.program_run.inputs(interface, seed, point)

    def measure(self, interface: Interface, verify: bool, index: int, point: dict) -> None:
        size = self.context.size
        seed, arguments, variables = self.inputs(interface, verify, index, point)
        rng = random.Random(f"{self.program_run.seed}:{interface.name}:settings:{index}")
        candidates: list[tuple[Implementation, dict]] = []
        narrowed = None if verify else self.narrowed.get((interface.name, index))
        own = None if verify else self.own_of.get((interface.name, index))
        for implementation in interface.implementations:
            if (interface.name, implementation.name) in self.state.excluded or not implementation.applies(variables) \
                    or (self.only is not None and implementation.name not in self.only) \
                    or (own is not None and implementation.name != own):
                continue
            if verify or own is not None:
                if verify and not self.verification_needed(interface, implementation):
                    continue
                drawn = implementation.random_settings(rng, point, variables)
                candidates += [(implementation, drawn)] if drawn is not None else []
            else:
                candidates += [(implementation, s) for s in implementation.settings(point, variables)
                               if narrowed is None or s in narrowed.get(implementation.name, ())]
        candidates = block_order(candidates, interface.reference,
                                 random.Random(f"{self.program_run.seed}:{interface.name}:order:{verify}:{index}"))
        timed = self.engine.time_blocks(interface, candidates, arguments, point)
        records: list[Record] = []
        for (implementation, settings, repeat), values, slowdown in timed:
            if (interface.name, implementation.name) in self.state.excluded:
                continue
            timing = Timing(tuple(values), repeat)
            key = (interface.name, size, implementation.name)
            if verify:
                self.state.verified[key] = self.state.verified.get(key, 0) + 1
            else:
                self.state.fitted.setdefault(key, set()).add(index)
            records.append(Sample(interface.name, implementation.name, verify, size, index, settings, variables,
                                  timing.seconds, seed, point, timing.timings, repeat, round(timing.spread, 4),
                                  not timing.settled, round(slowdown, 3)))
        records.append(Point(interface.name, size, verify, index))
        self.program_run.write(records)
        self.state.done.add((interface.name, size, verify, index))


def parser(library: str) -> argparse.ArgumentParser:
    """The options of a generated profiling program."""
    parser = argparse.ArgumentParser(description=f"Profile the implementations of library {library}.")
    parser.add_argument("--out", default=f"{library}.samples.jsonl", help="samples file (appended to)")
    parser.add_argument("--seed", type=int, default=0, help="seed of a new samples file")
    parser.add_argument("--ranks", type=int, default=int(os.environ.get("PMI_SIZE", "1")),
                        help="number of ranks (set by mpiexec)")
    parser.add_argument("--deadline", type=float, help="stop taking new points after this UNIX time")
    parser.add_argument("--events", action="store_true", help="report progress as JSON lines on stdout")
    parser.add_argument("--verification-only", action="store_true",
                        help="take only the random verification samples (for a quick check of the models)")
    parser.add_argument("--fitting-only", action="store_true",
                        help="take only the fitting points (an adaptive profile takes the verification last)")
    parser.add_argument("--implementations", metavar="NAME,…", help="profile only these implementations")
    parser.add_argument("--select", metavar="FILE",
                        help="take only the fitting points listed in FILE (JSON: interface → indices in nest order)")
    parser.add_argument("--serve", action="store_true",
                        help="take commands (JSON lines of these options) from standard input until it ends")
    parser.add_argument("--survey", action="store_true",
                        help="time nothing: write each fitting point's variables and candidate settings")
    parser.add_argument("--host-tolerance", type=float, default=HOST_TOLERANCE, metavar="FRACTION",
                        help="a block of timings is steady when a yardstick runs within this fraction of its "
                             "fastest time around it (default %(default)s): a sample taken slower is marked so; "
                             "the evaluator, and the profiler with --host-waits, wait (a bounded time) for it; "
                             "inf: never wait")
    parser.add_argument("--host-waits", action="store_true",
                        help="profiling, wait for the host's usual pace before each block and take a block again "
                             "when it slowed down meanwhile, as the evaluator always does (a bounded share of the "
                             "time); by default the profiler only marks such samples")
    parser.add_argument("--evaluate", metavar="BUILD",
                        help="instead of profiling, measure the built library's choices against every alternative "
                             "(hlc evaluate: the program's evaluator, hlc.evaluation.oracle)")
    parser.add_argument("--points", type=int, default=200, help="held-out points per interface (with --evaluate)")
    parser.add_argument("--params", choices=("chosen", "exhaustive"), default="chosen",
                        help="time parameterized implementations at the module's parameters only, or at every "
                             "value too (with --evaluate)")
    parser.add_argument("--tolerance", type=float,
                        help="the share within which a choice of the fastest is right: verdicts near it get more "
                             "rounds (with --evaluate; default hlc.evaluation.oracle.TOLERANCE)")
    return parser


EvaluatorFactory = Callable[[str, str, list[Interface], argparse.Namespace], Any]  # → an object with run() -> int


def main(library: str, description: str, interfaces: list[Interface], argv: list[str] | None = None,
         evaluator: EvaluatorFactory | None = None) -> int:
    """Entry point of a generated profiling program: profile, or with
    ``--evaluate`` run what ``evaluator`` makes of the same arguments (the
    program passes the oracle of hlc.evaluation, imported only then: profiling
    needs nothing of the built modules the oracle loads)."""
    options_parser = parser(library)
    options = options_parser.parse_args(argv)
    keep_freed_memory()
    if options.evaluate and evaluator is None:
        options_parser.error("--evaluate: this program has no evaluator (an older hlc generated it); "
                             "build the library again")
    try:
        if options.evaluate:
            return evaluator(library, description, interfaces, options).run()
        return Profiler(library, description, interfaces, options).run()
    except HelperFailed as failed:
        if options.events:  # the parent blames no implementation for it
            sys.stdout.write(json.dumps({"event": "helper failed"}) + "\n")
            sys.stdout.flush()
        raise SystemExit(str(failed)) from None
