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
  host slowed down meanwhile, which its samples record (the oracle
  instead checks every candidate first, then
  interleaves their timings round after round, because it compares
  candidates round by round);
* an implementation that raises or returns a wrong result is excluded (a
  ``failure`` line) and the others go on;
* before each timed task an event names it on standard output, so the parent
  process can blame a crash or a hang on the right implementation;
* the samples file is the only state: a restarted program skips the points
  already done and the implementations already excluded.

Under ``mpiexec`` every rank runs the same points with its own data; rank 0
writes.  Timings start after a barrier and take the slowest rank's time.
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import importlib
import importlib.util
import json
import math
import os
import platform
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

from hlc.calibrate.breakdown import MEASURING, Breakdown
from hlc.calibrate.host import TOLERANCE as HOST_TOLERANCE
from hlc.calibrate.host import HostMeter
from hlc.calibrate.timing import (
    MAXIMUM_REPEAT,
    RETAKES,
    WARM_SECONDS,
    Clock,
    Timing,
    calibrate_clock,
    cold_timings,
    repeat_count,
    time_calls,
)
from hlc.language.nest import geometric
from hlc.runtime import world

SAMPLES_FORMAT = 1
# How many candidate points verification draws at most, per sample wanted.
VERIFY_DRAWS = 4
# A round during which the host slowed down is taken again at most this often.
HOST_RETAKES = 2
# The tag of the commands rank 0 passes on to the other ranks under --serve.
COMMAND_TAG = 7301
# A block may take this many timings beyond RETAKES × k while its first ones are cold.
COLD_TIMINGS = 6


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
    verify: int = 20
    repeat: int = 3
    setup: Callable[[dict, tuple, int], None] | None = None
    cleanup: Callable[[dict, tuple, int], None] | None = None


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


def load_attribute(module: str, name: str) -> Any:
    """``numpy.sort`` and the like."""
    return getattr(importlib.import_module(module), name)


# ---- the parallel context -----------------------------------------------------------------


class Context:
    """Rank and size; the agreements all ranks must reach.  One rank without MPI."""

    def __init__(self, ranks: int):
        self.world = world()
        self.size = self.world.size
        self.rank = self.world.rank
        if self.size != ranks:
            raise SystemExit(f"--ranks {ranks} but this program runs on {self.size} rank(s)")

    def barrier(self) -> None:
        self.world.barrier()

    def maximum(self, value: float) -> float:
        return float(self.world.reduce(numpy.array([value], dtype=float), "max")[0])

    def agree_count(self, count: int) -> int:
        """The largest of the ranks' counts."""
        return count if self.size == 1 else int(self.maximum(float(count)))

    def any(self, flag: bool) -> bool:
        return bool(self.maximum(1.0 if flag else 0.0))

    def agree(self, variables: dict[str, float]) -> dict[str, float]:
        """Each variable's largest value over the ranks, as the dispatcher takes it."""
        if self.size == 1:
            return variables
        values = self.world.reduce(numpy.array(list(variables.values()), dtype=float), "max")
        return {name: _plain(value) for name, value in zip(variables, values.tolist(), strict=True)}


def _plain(value: float) -> float | int:
    return int(value) if value.is_integer() else value


# ---- comparing results ----------------------------------------------------------------------


def same_result(result: Any, reference: Any) -> bool:
    """Whether two implementations' results agree: exactly for integers and
    everything else, to 1e-9 relative for floating point."""
    import numpy

    if isinstance(result, tuple | list) and isinstance(reference, tuple | list):
        return len(result) == len(reference) and all(map(same_result, result, reference))
    if isinstance(result, numpy.ndarray | numpy.generic | float | int) and not isinstance(result, bool):
        a, b = numpy.asarray(result), numpy.asarray(reference)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            scale = float(numpy.max(numpy.abs(b))) if b.size else 0.0
            return bool(numpy.allclose(a, b, rtol=1e-9, atol=1e-12 * max(scale, 1.0)))
        return bool(numpy.array_equal(a, b))
    return result == reference


def describe(value: Any) -> str:
    """A short text of a result for failure messages."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


# ---- the samples file ---------------------------------------------------------------------


@dataclass
class State:
    """What a samples file already holds."""

    done: set[tuple] = field(default_factory=set)  # (interface, P, verify, index)
    excluded: dict[tuple[str, str], str] = field(default_factory=dict)  # (interface, impl) → cause
    verified: dict[tuple[str, int, str], int] = field(default_factory=dict)  # (interface, P, impl) → samples
    seed: int | None = None


def read_samples(path: Path) -> list[dict]:
    """Every complete line of a samples file (a torn last line is ignored)."""
    records = []
    if not path.exists():
        return records
    with path.open(encoding="utf-8") as stream:
        for line in stream:
            if not line.endswith("\n"):
                break
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return records


def repair(path: Path) -> None:
    """Cut a torn last line (an interrupted write) so appending stays valid."""
    if not path.exists():
        return
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end != len(data):
        with path.open("r+b") as stream:
            stream.truncate(end)


def read_state(path: Path) -> State:
    state = State()
    for record in read_samples(path):
        kind = record.get("kind")
        if kind == "header" and state.seed is None:
            state.seed = record["seed"]
        elif kind == "point":
            state.done.add((record["interface"], record["P"], record["verify"], record["index"]))
        elif kind == "failure":
            state.excluded.setdefault((record["interface"], record["implementation"]), record["cause"])
        elif kind == "sample" and record["verify"]:
            key = (record["interface"], record["P"], record["implementation"])
            state.verified[key] = state.verified.get(key, 0) + 1
    return state


# ---- the profiling loop ---------------------------------------------------------------------


class Profiler:
    def __init__(self, library: str, description: str, interfaces: list[Interface], options: argparse.Namespace):
        self.started = time.perf_counter()
        self.spent = Breakdown()  # where this run's time goes
        self.library = library
        self.description = description
        self.interfaces = interfaces
        self.output = Path(options.out)
        self.deadline = options.deadline
        self.verification_only = options.verification_only
        self.fitting_only = options.fitting_only
        # --select: the fitting points to take, by interface and index (all when None)
        self.selected: dict[str, set[int]] | None = None
        if options.select:
            chosen = json.loads(Path(options.select).read_text(encoding="utf-8"))
            self.selected = {name: set(indices) for name, indices in chosen.items()}
        # the candidates to time at a selected point, where a serving command narrows them
        self.narrowed: dict[tuple[str, int], dict[str, list[dict]]] = {}
        # points between the grid's, by interface and index, that a serving command adds
        self.refined: dict[str, dict[int, dict]] = {}
        self.surveying = options.survey
        self.serving = options.serve
        self.only = set(options.implementations.split(",")) if options.implementations else None
        self.context = Context(options.ranks)
        self.events = options.events and self.context.rank == 0
        self.state = read_state(self.output)  # every rank reads it before rank 0 appends
        self.context.barrier()
        self.seed = self.state.seed if self.state.seed is not None else options.seed
        self.clock: Clock = calibrate_clock()
        self.host = HostMeter(tolerance=options.host_tolerance)
        self.slowdown = 1.0  # the host's worst slowdown during the current point's rounds
        self.stream = None

    # -- output
    def emit(self, **event: Any) -> None:
        """A progress or task event for the parent process (standard output)."""
        if self.events:
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()

    def breakdown(self) -> Breakdown:
        """This run's account so far."""
        return Breakdown(dict(self.spent.seconds), time.perf_counter() - self.started)

    def write(self, records: list[dict]) -> None:
        """Append records in one write, so a point is either wholly there or not."""
        if self.context.rank != 0:
            return
        self.stream.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
        self.stream.flush()

    def exclude(self, interface: Interface, implementation: Implementation, cause: str, point: dict) -> None:
        key = (interface.name, implementation.name)
        if key in self.state.excluded:
            return
        self.state.excluded[key] = cause
        self.write([{"kind": "failure", "interface": interface.name, "implementation": implementation.name,
                     "cause": cause, "point": point, "P": self.context.size}])
        self.emit(event="failure", interface=interface.name, implementation=implementation.name, cause=cause)

    # -- the run
    def run(self) -> int:
        if self.context.rank == 0:
            self.output.parent.mkdir(parents=True, exist_ok=True)
            repair(self.output)
            self.stream = self.output.open("a", encoding="utf-8")
        self.write([self.header()])
        return self.serve() if self.serving else self.take()

    def take(self) -> int:
        """Take what the options select: the survey, or the points."""
        if self.surveying:
            return self.survey()
        # Points are taken in a seeded random order, fitting and verification
        # mixed: slow drift of the machine then adds noise instead of biasing
        # one region of the nest (or all verification samples), and a run cut
        # short by its budget still samples the whole nest.
        work = [(interface, *item) for interface in self.interfaces for item in self.plan(interface)]
        random.Random(f"{self.seed}:order").shuffle(work)
        done = 0
        for interface, verify, index, point in work:
            # a point measured before is measured again at the candidates a command names there
            if (interface.name, self.context.size, verify, index) not in self.state.done \
                    or (not verify and (interface.name, index) in self.narrowed):
                # The ranks agree on it: one rank past the deadline and another not
                # would part them, one waiting for a command, the other in a point.
                if self.deadline is not None and self.context.any(time.time() > self.deadline):
                    return self.finish("budget", done, len(work))
                self.measure(interface, verify, index, point)
            done += 1
            self.emit(event="progress", done=done, total=len(work), breakdown=self.breakdown().as_dict())
        return self.finish("finished", done, len(work))

    def serve(self) -> int:
        """--serve: take one command after another from standard input, each a
        JSON line with the options it sets (``select``, ``settings``,
        ``fitting_only``, ``verification_only``, ``survey``, ``refined``, ``deadline``), each
        ended like a run
        (its account, then a finished or budget event), until the input ends.
        An adaptive profile's rounds then cost one process start per rank
        count, not one per round."""
        while (command := self.next_command()) is not None:
            self.started, self.spent = time.perf_counter(), Breakdown()
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
            self.fitting_only = bool(command.get("fitting_only", False))
            self.verification_only = bool(command.get("verification_only", False))
            self.surveying = bool(command.get("survey", False))
            self.deadline = command.get("deadline")
            self.take()
        return 0

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
        marked = {"refined": True} if self.refined else {}
        for done, (interface, index, point) in enumerate(points, start=1):
            _, arguments, variables = self.inputs(interface, False, index, point)
            applicable = [i for i in interface.implementations if i.applies(variables)]
            self.write([{"kind": "survey", "interface": interface.name, "P": self.context.size, "index": index,
                         **marked,
                         "point": point, "variables": variables, "bytes": size_of(arguments),
                         "settings": {i.name: list(i.settings(point, variables)) for i in applicable},
                         "choices": {i.name: list(i.candidates(point, variables)) for i in applicable}}])
            self.emit(event="progress", done=done, total=len(points), breakdown=self.breakdown().as_dict())
        return self.finish("finished", len(points), len(points))

    def finish(self, event: str, done: int, total: int) -> int:
        """Record where this run's time went, and say how it ended."""
        spent = self.breakdown().as_dict()
        self.write([{"kind": "breakdown", "P": self.context.size, **spent}])
        self.emit(event=event, done=done, total=total, breakdown=spent)
        return 0

    def header(self) -> dict:
        """The first line of each run: what ran where."""
        return {
            "kind": "header", "format": SAMPLES_FORMAT, "library": self.library, "description": self.description,
            "seed": self.seed, "P": self.context.size, "started": time.time(), "clock": self.clock.as_dict(),
            "python": platform.python_version(), "host": platform.node(),
            "host_tolerance": self.host.tolerance,
        }

    def plan(self, interface: Interface) -> list[tuple[bool, int, dict]]:
        """The fitting points in nest order (the refined ones a command names
        last), then the verification points, each with its index."""
        fitting = [] if self.verification_only else [
            (False, index, point)
            for index, point in [*enumerate(interface.points()), *self.refined.get(interface.name, {}).items()]
            if self.selected is None or index in self.selected.get(interface.name, ())]
        rng = random.Random(f"{self.seed}:{interface.name}:verify")
        draws = []
        for _ in range(0 if self.fitting_only else VERIFY_DRAWS * interface.verify):
            try:
                draws.append(interface.random_point(rng))
            except ValueError:  # a range that is empty at this draw
                continue
        return fitting + [(True, index, point) for index, point in enumerate(draws)]

    def sample_seed(self, interface: Interface, verify: bool, index: int) -> int:
        stream = random.Random(f"{self.seed}:{interface.name}:{'verify' if verify else 'fit'}:{index}")
        return stream.randrange(2**31) + 1_000_003 * self.context.rank

    def verification_needed(self, interface: Interface, implementation: Implementation) -> bool:
        """Whether the implementation still lacks verification samples at this rank count."""
        taken = self.state.verified.get((interface.name, self.context.size, implementation.name), 0)
        return taken < interface.verify

    def inputs(self, interface: Interface, verify: bool, index: int, point: dict) -> tuple[int, tuple, dict]:
        """The seed, the arguments and the variables (agreed over the ranks) at a point."""
        size = self.context.size
        with self.spent.spending("inputs"):
            seed = self.sample_seed(interface, verify, index)
            arguments = interface.arguments(point, seed, size)
            variables = self.context.agree(dict(interface.variables(*arguments, P=size)))
        variables.update(P=size, logP=math.log2(size))
        return seed, arguments, variables

    def measure(self, interface: Interface, verify: bool, index: int, point: dict) -> None:
        size = self.context.size
        seed, arguments, variables = self.inputs(interface, verify, index, point)
        rng = random.Random(f"{self.seed}:{interface.name}:settings:{index}")
        candidates: list[tuple[Implementation, dict]] = []
        narrowed = None if verify else self.narrowed.get((interface.name, index))
        for implementation in interface.implementations:
            if (interface.name, implementation.name) in self.state.excluded or not implementation.applies(variables) \
                    or (self.only is not None and implementation.name not in self.only):
                continue
            if verify:
                if not self.verification_needed(interface, implementation):
                    continue
                drawn = implementation.random_settings(rng, point, variables)
                candidates += [(implementation, drawn)] if drawn is not None else []
            else:
                candidates += [(implementation, s) for s in implementation.settings(point, variables)
                               if narrowed is None or s in narrowed.get(implementation.name, ())]
        candidates.sort(key=lambda c: c[0].name != interface.reference)
        timed = self.time_blocks(interface, candidates, arguments, point)
        records = []
        for (implementation, settings, repeat), values, slowdown in timed:
            if (interface.name, implementation.name) in self.state.excluded:
                continue
            timing = Timing(tuple(values), repeat)
            if verify:
                key = (interface.name, size, implementation.name)
                self.state.verified[key] = self.state.verified.get(key, 0) + 1
            records.append({
                "kind": "sample", "interface": interface.name, "implementation": implementation.name,
                "verify": verify, "P": size, "index": index, "seed": seed, "point": point,
                "parameters": settings, "variables": variables, "seconds": timing.seconds,
                "timings": list(timing.timings), "repeat": repeat, "spread": round(timing.spread, 4),
                "noisy": not timing.settled, "host": round(slowdown, 3),
            })
        records.append({"kind": "point", "interface": interface.name, "P": size, "verify": verify, "index": index})
        self.write(records)
        self.state.done.add((interface.name, size, verify, index))

    def fresh(self, interface: Interface, arguments: tuple) -> tuple:
        if not interface.mutable:
            return arguments
        return tuple(copy.deepcopy(a) if i in interface.mutable else a for i, a in enumerate(arguments))

    def result_of(self, interface: Interface, returned: Any, arguments: tuple) -> Any:
        """What is compared: the return value, or the mutated arguments when it is None."""
        if returned is None and interface.mutable:
            return tuple(arguments[i] for i in interface.mutable)
        return returned

    def call(self, interface: Interface, implementation: Implementation, settings: dict, arguments: tuple,
             point: dict) -> tuple[Any, float] | None:
        """One call, timed as a timing is (after the setup and a barrier, with
        the collector off), so that a call long enough for the clock can be
        the first timing of its block; None when it raised (then it is excluded)."""
        self.emit(event="task", interface=interface.name, implementation=implementation.name, point=point)
        if interface.setup is not None:
            interface.setup(point, arguments, self.context.size)
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.context.barrier()
            start = time.perf_counter()
            returned = implementation.call(*arguments, **settings)
            elapsed = max(time.perf_counter() - start - self.clock.overhead, 0.0)
            error = None
        except Exception as raised:  # any failure of user code excludes that implementation
            error = f"raised {type(raised).__name__}: {raised}"
            frames = traceback.extract_tb(raised.__traceback__)
            if frames:
                error += f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})"
            returned, elapsed = None, 0.0
        finally:
            if collecting:
                gc.enable()
        if interface.cleanup is not None:
            interface.cleanup(point, arguments, self.context.size)
        if self.context.any(error is not None):
            self.exclude(interface, implementation, error or "raised on another rank", point)
            return None
        return self.result_of(interface, returned, arguments), elapsed

    def warm_up(self, interface: Interface, candidates: list[tuple[Implementation, dict]], arguments: tuple,
                point: dict) -> list[tuple[Implementation, dict, int]]:
        """Check each candidate (see ``check``); the ones that passed, with their first repeat counts."""
        reference: tuple[str, Any] | None = None
        ready = []
        for implementation, settings in candidates:
            checked = self.check(interface, implementation, settings, arguments, point, reference)
            if checked is not None:
                repeat, _, result = checked
                reference = reference or (implementation.name, result)
                ready.append((implementation, settings, repeat))
        return ready

    def check(self, interface: Interface, implementation: Implementation, settings: dict, arguments: tuple,
              point: dict, reference: tuple[str, Any] | None) -> tuple[int, float, Any] | None:
        """Call the candidate once and check its result against the reference's
        (None: this is the reference).  Returns a first repeat count taken from
        that call, the call's seconds and its result; None when the candidate
        is excluded.  A first call is slower than the calls that follow it, so
        the count errs low, and a timing that falls short grows it (``timing``)."""
        if (interface.name, implementation.name) in self.state.excluded:
            return None
        with self.spent.spending("checks"):
            outcome = self.call(interface, implementation, settings, self.fresh(interface, arguments), point)
            if outcome is None:
                return None
            result, elapsed = outcome
            if reference is not None and self.context.any(not same_result(result, reference[1])):
                self.exclude(interface, implementation, f"wrong result {describe(result)}; the reference "
                             f"{reference[0]} returned {describe(reference[1])}", point)
                return None
            elapsed = self.context.maximum(elapsed)
        return repeat_count(elapsed, self.clock), elapsed, result

    def timed(self, interface: Interface, implementation: Implementation, settings: dict, arguments: tuple,
              point: dict, repeat: int, warm: float = WARM_SECONDS) -> float | None:
        """Seconds per call over ``repeat`` calls, the slowest rank's; None when
        it raised.  ``warm``: seconds of untimed calls first (see time_calls)."""
        with self.spent.spending("inputs"):
            calls = [self.fresh(interface, arguments) for _ in range(repeat + 1)] if interface.mutable \
                else [arguments] * (repeat + 1)  # the first warms the caches
        if interface.setup is not None:
            interface.setup(point, arguments, self.context.size)
        self.emit(event="task", interface=interface.name, implementation=implementation.name, point=point)
        task = functools.partial(implementation.call, **settings) if settings else implementation.call
        try:
            seconds = time_calls(task, calls[1:], self.clock, before=self.context.barrier,
                                 warm=calls[0] if warm else None, agree=self.context.agree_count,
                                 warm_seconds=float(warm))
            failed = None
        except Exception as raised:  # failing on a later call is a failure too
            seconds, failed = 0.0, f"raised {type(raised).__name__}: {raised}"
        if interface.cleanup is not None:
            interface.cleanup(point, arguments, self.context.size)
        if self.context.any(failed is not None):
            self.exclude(interface, implementation, failed or "raised on another rank", point)
            return None
        return self.context.maximum(seconds)

    def timing(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]], position: int,
               arguments: tuple, point: dict, warm: float = WARM_SECONDS) -> float | None:
        """One timing of the candidate at ``position``, long enough for the
        clock: a shorter one is dropped, and the candidate's repeat count grows
        (in ``candidates``) until a timing lasts the clock's minimum.  Every
        rank sees the slowest rank's time, so all make the same choices."""
        implementation, settings, repeat = candidates[position]
        while True:
            with self.spent.spending("warm-up"):  # all but the timed calls themselves
                seconds = self.timed(interface, implementation, settings, arguments, point, repeat, warm)
                if seconds is None:
                    return None
                long_enough = seconds * repeat >= self.clock.minimum_timing or repeat >= MAXIMUM_REPEAT
                self.spent.add(MEASURING if long_enough else "sizing", seconds * repeat)
            if long_enough:
                return seconds
            # Aim 20% past the minimum, so that a slightly faster timing still reaches it.
            repeat = min(MAXIMUM_REPEAT, max(repeat * 2, repeat_count(seconds * 0.8, self.clock)))
            candidates[position] = (implementation, settings, repeat)
            warm = 0.0  # the calls just made warmed it

    def time_blocks(self, interface: Interface, candidates: list[tuple[Implementation, dict]],
                    arguments: tuple, point: dict) -> list[tuple[tuple[Implementation, dict, int], list[float], float]]:
        """Check each candidate, then time it in one block: its checking call,
        when long enough for the clock, is the block's first timing; then it is
        timed back to back until k timings agree (up to RETAKES × k), the
        leading ones that are slower than the rest dropped as cold (the
        warm-up, as long as the timings show it must be).  The block starts
        when the host runs at its usual pace and is taken again, up to
        HOST_RETAKES times, when it slowed down meanwhile.  A block lasts
        milliseconds, so the host's slower drifts affect all of a candidate's
        timings alike.  Returns, for each candidate that passed its check,
        (candidate with its repeat count, timings, the host's worst slowdown
        during its block)."""
        reference: tuple[str, Any] | None = None
        timed = []
        for implementation, settings in candidates:
            ready = [(implementation, settings, 1)]

            def measure(attempt: int, implementation=implementation, settings=settings, ready=ready):
                nonlocal reference
                first = None
                if attempt == 0:
                    checked = self.check(interface, implementation, settings, arguments, point, reference)
                    if checked is None:
                        return None
                    repeat, elapsed, result = checked
                    reference = reference or (implementation.name, result)
                    ready[0] = (implementation, settings, repeat)
                    if elapsed >= self.clock.minimum_timing:  # one call is a timing
                        first = elapsed
                        self.spent.move("checks", MEASURING, elapsed)
                # A checking call too short to be a timing warmed the candidate once
                # only: a timing's worth of untimed calls before the block's first.
                warm = self.clock.minimum_timing if attempt == 0 and first is None else 0.0
                return self.block(interface, ready, arguments, point, first, warm)

            values, slowdown = self.at_usual_pace(measure)
            if values is not None:
                timed.append((ready[0], values, slowdown))
        return timed

    def at_usual_pace(self, measure: Callable[[int], Any]) -> tuple[Any, float]:
        """Run ``measure(attempt)`` when the host runs at its usual pace
        (HostMeter), and again, up to HOST_RETAKES times, when it slowed down
        meanwhile; the timings of a dropped attempt count as retaken.  Returns
        the last attempt's outcome (None: it failed, and is not retaken) and
        the host's slowdown during it, the slowest rank's."""
        for attempt in range(HOST_RETAKES + 1):
            with self.spent.spending("host waits"):
                slowdown = self.host.settle()
            before = self.spent.seconds.get(MEASURING, 0.0)
            outcome = measure(attempt)
            with self.spent.spending("host waits"):
                slowdown = self.context.maximum(max(slowdown, self.host.slowdown()))
            if outcome is None or self.host.steady(slowdown) or attempt == HOST_RETAKES:
                return outcome, slowdown
            self.spent.move(MEASURING, "retaken", self.spent.seconds.get(MEASURING, 0.0) - before)
        raise AssertionError("unreachable: the last attempt returns")

    def block(self, interface: Interface, ready: list[tuple[Implementation, dict, int]], arguments: tuple,
              point: dict, first: float | None = None, warm: float = 0.0) -> list[float] | None:
        """The timings of one candidate's block (see time_blocks), starting with
        ``first`` when the checking call was one, and else, when ``warm``, with
        that many seconds of untimed calls; None when it failed.  The cold
        leading timings are dropped and counted as warm-up; a block that never
        warms keeps its last k timings."""
        values: list[tuple[float, int]] = [] if first is None else [(first, 1)]
        wanted = interface.repeat
        limit = wanted * RETAKES + COLD_TIMINGS
        while True:
            seconds_only = [seconds for seconds, _ in values]
            cold = cold_timings(seconds_only)
            if len(values) >= limit:
                cold = min(cold, len(values) - wanted)
                break
            kept = seconds_only[cold:]
            if len(kept) >= wanted and (Timing(tuple(kept), ready[0][2]).settled or len(kept) >= wanted * RETAKES):
                break
            seconds = self.timing(interface, ready, 0, arguments, point, warm=0.0 if values else warm)
            if seconds is None:
                return None
            values.append((seconds, ready[0][2]))
        for seconds, repeat in values[:cold]:
            self.spent.move(MEASURING, "warm-up", seconds * repeat)
        return [seconds for seconds, _ in values[cold:]]

    def time_rounds(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]],
                    arguments: tuple, point: dict) -> list[list[float]]:
        """k rounds; each round times every candidate once, starting one further
        along.  Then extra rounds, for the candidates whose median has not settled."""
        timings: list[list[float]] = [[] for _ in candidates]
        self.slowdown = 1.0
        for round_ in range(interface.repeat * RETAKES):
            if round_ < interface.repeat:
                pending = list(range(len(candidates)))
            else:
                pending = [p for p, values in enumerate(timings) if values
                           and not Timing(tuple(values), candidates[p][2]).settled]
                if self.context.size > 1:  # every rank must time the same candidates
                    pending = [p for p in range(len(candidates)) if self.context.any(p in pending)]
                if not pending:
                    break
            self.time_round(interface, candidates, pending, round_, timings, arguments, point)
        return timings

    def time_round(self, interface: Interface, candidates: list[tuple[Implementation, dict, int]],
                   positions: list[int], round_: int, timings: list[list[float]], arguments: tuple,
                   point: dict) -> list[int]:
        """Time the candidates at ``positions`` once each, starting ``round_``
        places along, so that no candidate is always the first after a pause.
        The round starts when the host runs at its usual pace (HostMeter), and
        is taken again, up to HOST_RETAKES times, when it slowed down meanwhile.
        Returns the positions that got a timing."""

        def round_once(attempt: int) -> dict[int, float]:
            taken = {}
            for offset in range(len(positions)):
                position = positions[(round_ + offset) % len(positions)]
                if (interface.name, candidates[position][0].name) in self.state.excluded:
                    continue
                seconds = self.timing(interface, candidates, position, arguments, point)
                if seconds is not None:
                    taken[position] = seconds
            return taken

        taken, slowdown = self.at_usual_pace(round_once)
        self.slowdown = max(self.slowdown, slowdown)
        for position, seconds in taken.items():
            timings[position].append(seconds)
        return list(taken)


def main(library: str, description: str, interfaces: list[Interface], argv: list[str] | None = None) -> int:
    """Entry point of a generated profiling program."""
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
                        help="before each round of timings, wait (a bounded time) until a yardstick runs within "
                             "this fraction of its fastest time; inf: never wait (default %(default)s)")
    parser.add_argument("--evaluate", metavar="BUILD",
                        help="instead of profiling, measure the built library's choices against every alternative")
    parser.add_argument("--points", type=int, default=200, help="held-out points per interface (with --evaluate)")
    parser.add_argument("--params", choices=("chosen", "exhaustive"), default="chosen",
                        help="time parameterized implementations at the module's parameters only, or at every "
                             "value too (with --evaluate)")
    options = parser.parse_args(argv)
    if options.evaluate:
        from hlc.calibrate.oracle import Evaluator

        return Evaluator(library, description, interfaces, options).run()
    return Profiler(library, description, interfaces, options).run()
