"""The samples file: what a profiling program measured, one JSON line a record.

A generated profiling program (hlc.calibrate.harness) appends to it, and so
does the oracle of ``hlc evaluate`` (its ``evaluation.jsonl`` is a samples
file of the same format).  Each line is one record, named by its ``kind``:

* ``header``: the first line of each run of the program, what ran where; its
  ``format`` is the version of the whole file's shape;
* ``sample``: one implementation timed at one point, at given parameters;
* ``failure``: an implementation excluded, and why;
* ``point``: a point done (every sample of it written before);
* ``survey``: a fitting point's variables and candidates, nothing timed;
* ``breakdown``: where a run's time went (its :class:`Account`);
* ``evaluation``: a held-out point with every alternative timed (the oracle's);
* ``probe``: a fitting sample of the evaluated build timed again by the oracle.

The file is the program's only state: a restarted program resumes from it,
and a program killed while writing leaves a torn last line, which a reader
skips (and the next run cuts, :func:`repair`, before it appends).  Any other
line that is not a record of this format is an :class:`ArtefactError`
naming the file and the line.

This module runs inside every profiling program, under ``mpiexec`` too: it
needs the standard library only (and the evaluation artefact's
:class:`~hlc.artefacts.evaluation.Candidate`, which the oracle's lines hold).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from hlc.artefacts.evaluation import Candidate
from hlc.artefacts.files import ArtefactError, check_format, parse_fields

FORMAT = 1
KIND = "samples"


def _optional(record: dict[str, Any], **values: Any) -> dict[str, Any]:
    """``record`` with the ``values`` that were recorded (not None): a field a
    file did not have stays out of the record written again."""
    record.update((name, value) for name, value in values.items() if value is not None)
    return record


@dataclass(frozen=True, slots=True)
class Header:
    """The first line of each run of a profiling program: what ran where."""

    KIND: ClassVar[str] = "header"

    library: str
    description: str  # the description's path, as the program was generated from it
    seed: int  # the file's seed: a resumed run keeps the first run's
    P: int  # ranks
    started: float  # UNIX time
    clock: dict[str, float]  # the timer's resolution and overhead (hlc.calibrate.timing.Clock)
    python: str
    host: str
    host_tolerance: float | None = None  # the host meter's (hlc.calibrate.host)
    format: int = FORMAT
    # an evaluation run's (hlc evaluate): the built module, held-out points per interface,
    # whether it timed the module's parameters only ("chosen") or every value ("exhaustive"),
    # and the tolerance whose near ties it timed again (hlc.evaluation.oracle.Evaluator.settle)
    evaluate: str | None = None
    points: int | None = None
    params: str | None = None
    tolerance: float | None = None
    # a profile that waited for the host's usual pace before each block (its
    # program's --host-waits), as an evaluation always does; else it marked
    # the samples a slow spell hit
    host_waits: bool | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Header:
        return cls(record["library"], record["description"], record["seed"], record["P"], record["started"],
                   dict(record["clock"]), record["python"], record["host"], record.get("host_tolerance"),
                   record["format"], record.get("evaluate"), record.get("points"), record.get("params"),
                   record.get("tolerance"), record.get("host_waits"))

    def as_record(self) -> dict[str, Any]:
        record = {"kind": self.KIND, "format": self.format, "library": self.library,
                  "description": self.description, "seed": self.seed, "P": self.P, "started": self.started,
                  "clock": dict(self.clock), "python": self.python, "host": self.host}
        return _optional(record, host_tolerance=self.host_tolerance, evaluate=self.evaluate, points=self.points,
                         params=self.params, tolerance=self.tolerance, host_waits=self.host_waits)


@dataclass(frozen=True, slots=True)
class Sample:
    """One implementation timed at one point, at given parameters.

    The fields after ``seconds`` are what the profiler records about the
    timing; None where a file does not hold them (then they stay out when it
    is written again)."""

    KIND: ClassVar[str] = "sample"

    interface: str
    implementation: str
    verify: bool  # a verification sample (a random point), not a fitting one
    P: int
    index: int  # the point's: in nest order (fitting) or of the draws (verification)
    parameters: dict[str, int]
    variables: dict[str, float]  # the explanatory variables, agreed over the ranks
    seconds: float  # the median of the timings
    seed: int | None = None  # the arguments' seed (rank 0's)
    point: dict[str, int] | None = None  # the loop values
    timings: tuple[float, ...] | None = None  # seconds per call, one for each timing kept
    repeat: int | None = None  # calls per timing
    spread: float | None = None  # (max − min) / median of the timings
    noisy: bool | None = None  # the timings never settled (hlc.calibrate.timing.Timing.settled)
    host: float | None = None  # the host's worst slowdown while they were taken (hlc.calibrate.host)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Sample:
        timings = record.get("timings")
        return cls(record["interface"], record["implementation"], record["verify"], record["P"], record["index"],
                   dict(record["parameters"]), dict(record["variables"]), record["seconds"], record.get("seed"),
                   record.get("point"), None if timings is None else tuple(timings), record.get("repeat"),
                   record.get("spread"), record.get("noisy"), record.get("host"))

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"kind": self.KIND, "interface": self.interface,
                                  "implementation": self.implementation, "verify": self.verify, "P": self.P,
                                  "index": self.index}
        _optional(record, seed=self.seed, point=self.point)
        record.update(parameters=dict(self.parameters), variables=dict(self.variables), seconds=self.seconds)
        return _optional(record, timings=None if self.timings is None else list(self.timings), repeat=self.repeat,
                         spread=self.spread, noisy=self.noisy, host=self.host)

    @property
    def environment(self) -> dict[str, Any]:
        """The variables and the parameters: what a model's terms are valued on."""
        return {**self.variables, **self.parameters}


def point_text(point: Mapping[str, Any] | None) -> str:
    """A point of the profile's loops as messages name it: "m = 16384, k = 2"."""
    return ", ".join(f"{name} = {value}" for name, value in (point or {}).items())


@dataclass(frozen=True, slots=True)
class Failure:
    """An implementation excluded, by the program (it raised, or returned a
    wrong result) or by the parent process (it crashed or hung)."""

    KIND: ClassVar[str] = "failure"

    interface: str
    implementation: str
    cause: str
    P: int
    point: dict | None = None  # the loop values where it failed

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Failure:
        return cls(record["interface"], record["implementation"], record["cause"], record["P"], record.get("point"))

    def as_record(self) -> dict[str, Any]:
        return {"kind": self.KIND, "interface": self.interface, "implementation": self.implementation,
                "cause": self.cause, "point": self.point, "P": self.P}


@dataclass(frozen=True, slots=True)
class Point:
    """A point done: every record of it was written in the same write, before this one."""

    KIND: ClassVar[str] = "point"

    interface: str
    P: int
    verify: bool
    index: int

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Point:
        return cls(record["interface"], record["P"], record["verify"], record["index"])

    def as_record(self) -> dict[str, Any]:
        return {"kind": self.KIND, "interface": self.interface, "P": self.P, "verify": self.verify,
                "index": self.index}


@dataclass(frozen=True, slots=True)
class Survey:
    """A fitting point surveyed, nothing timed: its variables and what
    profiling it would time (hlc.adaptive plans its rounds from these)."""

    KIND: ClassVar[str] = "survey"

    interface: str
    P: int
    index: int
    point: dict[str, int]
    variables: dict[str, float]
    bytes: int  # the arguments' size: the clue to its cost before any model
    settings: dict[str, list[dict[str, int]]]  # implementation → the settings profiling it times
    choices: dict[str, list[dict[str, int]]]  # implementation → the settings the dispatcher chooses among
    refined: bool = False  # a point between the grid's, bisecting towards a boundary

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Survey:
        return cls(record["interface"], record["P"], record["index"], dict(record["point"]),
                   dict(record["variables"]), record.get("bytes", 0), dict(record["settings"]),
                   dict(record["choices"]), bool(record.get("refined", False)))

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"kind": self.KIND, "interface": self.interface, "P": self.P, "index": self.index}
        if self.refined:
            record["refined"] = True
        record.update(point=dict(self.point), variables=dict(self.variables), bytes=self.bytes,
                      settings=dict(self.settings), choices=dict(self.choices))
        return record


@dataclass(frozen=True, slots=True)
class Account:
    """A ``breakdown`` line: where one run's time went, activity by activity
    (hlc.calibrate.breakdown.Breakdown)."""

    KIND: ClassVar[str] = "breakdown"

    P: int
    wall: float
    restarts: int
    seconds: dict[str, float]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Account:
        return cls(record["P"], record["wall"], record["restarts"], dict(record["seconds"]))

    def as_record(self) -> dict[str, Any]:
        return {"kind": self.KIND, "P": self.P, "wall": self.wall, "restarts": self.restarts,
                "seconds": dict(self.seconds)}


@dataclass(frozen=True, slots=True)
class Decision:
    """What the evaluated module chose at a point, and the time it predicted."""

    implementation: str
    parameters: dict[str, int]
    predicted: float | None  # seconds

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Decision:
        return cls(record["implementation"], dict(record["parameters"]), record.get("predicted"))

    def as_record(self) -> dict[str, Any]:
        return {"implementation": self.implementation, "parameters": dict(self.parameters),
                "predicted": self.predicted}


@dataclass(frozen=True, slots=True)
class Evaluated:
    """An ``evaluation`` line: a held-out point, the module's choice there and
    every candidate timed side by side (hlc.evaluation.oracle)."""

    KIND: ClassVar[str] = "evaluation"

    interface: str
    P: int
    index: int
    seed: int | None
    point: dict[str, int]
    variables: dict[str, float]
    chosen: Decision | None  # None: no implementation applies here
    # every alternative (an implementation at some parameters), the dispatched call and the
    # reference timed again, each with its timings by round (hlc.artefacts.evaluation keeps them so)
    candidates: tuple[Candidate, ...] = ()
    host: float | None = None  # the host's worst slowdown during the point's rounds
    # the contenders timed again on a second input drawn at the point, of the same variables
    # (none where the second input's variables differ, and in lines older than this)
    other_input: tuple[Candidate, ...] = ()

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Evaluated:
        chosen = record["chosen"]
        return cls(record["interface"], record["P"], record["index"], record.get("seed"), dict(record["point"]),
                   dict(record["variables"]), None if chosen is None else Decision.from_record(chosen),
                   tuple(Candidate.from_json(c) for c in record["candidates"]), record.get("host"),
                   tuple(Candidate.from_json(c) for c in record.get("other_input", ())))

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"kind": self.KIND, "interface": self.interface, "P": self.P, "index": self.index}
        _optional(record, seed=self.seed)
        record.update(point=dict(self.point), variables=dict(self.variables),
                      chosen=None if self.chosen is None else self.chosen.as_record(),
                      candidates=[c.to_json() for c in self.candidates])
        if self.other_input:
            record["other_input"] = [c.to_json() for c in self.other_input]
        return _optional(record, host=self.host)


@dataclass(frozen=True, slots=True)
class Probe:
    """A ``probe`` line: a fitting sample of the evaluated build timed again by
    the oracle, the same implementation at the same parameters on the same
    arguments (rebuilt from the sample's seed): how far the host's costs
    there have moved since the profile (hlc.evaluation.oracle)."""

    KIND: ClassVar[str] = "probe"

    interface: str
    implementation: str
    P: int
    index: int  # the fitting point's
    parameters: dict[str, int]
    variables: dict[str, float]
    then: float  # the sample's seconds, as the profile measured them
    now: float  # the median of this run's timings

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Probe:
        return cls(record["interface"], record["implementation"], record["P"], record["index"],
                   dict(record["parameters"]), dict(record["variables"]), record["then"], record["now"])

    def as_record(self) -> dict[str, Any]:
        return {"kind": self.KIND, "interface": self.interface, "implementation": self.implementation, "P": self.P,
                "index": self.index, "parameters": dict(self.parameters), "variables": dict(self.variables),
                "then": self.then, "now": self.now}


Record = Header | Sample | Failure | Point | Survey | Account | Evaluated | Probe
KINDS: dict[str, type[Record]] = {kind.KIND: kind for kind in (Header, Sample, Failure, Point, Survey, Account,
                                                                Evaluated, Probe)}


def record_of(record: Mapping[str, Any]) -> Record:
    """The typed record of one line's object (a header's format checked)."""
    kind = record.get("kind")
    if kind not in KINDS:
        raise ValueError(f"no record of kind {kind!r} in a samples file" if kind is not None
                         else "a line without a record kind")
    return KINDS[kind].from_record(record)


def line(record: Record) -> str:
    """One record as its line: compact JSON, as the program writes it."""
    return json.dumps(record.as_record(), separators=(",", ":")) + "\n"


def lines(records: Iterable[Record]) -> str:
    """Records as lines, for one write (a point's lines are all there or none)."""
    return "".join(map(line, records))


def repair(path: Path | str) -> None:
    """Cut a torn last line (an interrupted write), so that appending stays valid."""
    path = Path(path)
    if not path.exists():
        return
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end != len(data):
        with path.open("r+b") as stream:
            stream.truncate(end)


def append(path: Path | str, records: Iterable[Record]) -> None:
    """Append records to the file at ``path``, after cutting a torn last line."""
    repair(path)
    with Path(path).open("a", encoding="utf-8") as stream:
        stream.write(lines(records))


def records(path: Path | str) -> Iterator[Record]:
    """The records of the file at ``path``, in file order; none when it does
    not exist.  A torn last line (no line end: its write was cut short) is
    skipped; any other line that is not a record of this format raises an
    :class:`ArtefactError` naming the file and the line."""
    yield from Follower(path).taken()


class Follower:
    """A samples file that a running profile appends to, read as it grows:
    each :meth:`read` parses only the lines added since the one before.
    An adaptive profile reads its file after every round and every survey,
    and parsing the whole of a sort build's file each time took 0.7 s of
    its budget.  Only whole lines are taken, so a torn last line, which a
    restarted program cuts (:func:`repair`), is never among them; a file
    replaced or shorter than what was read is read again from its start."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._taken: list[Record] = []
        self._offset = 0  # bytes parsed: whole lines
        self._lines = 0
        self._identity: tuple[int, int] | None = None

    def read(self) -> Samples:
        """What the file holds so far (as :meth:`Samples.read`)."""
        return Samples.of_records(self.taken(), self.path)

    def taken(self) -> list[Record]:
        """The file's records so far, in file order (the follower's own list)."""
        try:
            status = self.path.stat()
        except FileNotFoundError:
            status = None
        identity = None if status is None else (status.st_dev, status.st_ino)
        if status is None or identity != self._identity or status.st_size < self._offset:
            self._taken, self._offset, self._lines, self._identity = [], 0, 0, identity
        if status is not None and status.st_size > self._offset:
            try:
                with self.path.open("rb") as stream:
                    stream.seek(self._offset)
                    data = stream.read()
            except OSError as error:
                raise ArtefactError(f"{self.path}: cannot be read ({error})") from None
            whole = data[:data.rfind(b"\n") + 1]
            try:
                text = whole.decode("utf-8")
            except UnicodeDecodeError as error:
                line = self._lines + whole[:error.start].count(b"\n") + 1
                raise ArtefactError(f"{self.path}:{line}: damaged, not text ({error.reason})") from None
            for line in text.split("\n")[:-1]:  # whole ends with a line end
                self._lines += 1
                if line.strip():
                    self._taken.append(_parsed(line, f"{self.path}:{self._lines}"))
            self._offset += len(whole)
        return self._taken


def _parsed(text: str, where: str) -> Record:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ArtefactError(f"{where}: damaged line, not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict):
        raise ArtefactError(f"{where}: damaged line, a JSON {type(record).__name__} and not a record")
    return _typed(record, where)


def _typed(record: Mapping[str, Any], where: str) -> Record:
    """``record_of``, with a header's format version checked first and a
    record of the wrong shape an :class:`ArtefactError` saying ``where``."""
    if record.get("kind") == Header.KIND:
        check_format(dict(record), where, KIND, (FORMAT,))
    return parse_fields(where, KIND, lambda: record_of(record))


@dataclass(frozen=True)
class Samples:
    """The contents of a samples file, by kind, each kind in file order."""

    headers: tuple[Header, ...] = ()  # one for each run that appended to the file
    samples: tuple[Sample, ...] = ()
    failures: tuple[Failure, ...] = ()
    points: tuple[Point, ...] = ()
    surveys: tuple[Survey, ...] = ()
    accounts: tuple[Account, ...] = ()
    evaluations: tuple[Evaluated, ...] = ()
    path: Path | None = None  # where they were read from, for messages
    probes: tuple[Probe, ...] = ()

    @classmethod
    def read(cls, path: Path | str) -> Samples:
        """What the file at ``path`` holds so far: nothing when it does not exist
        (a program about to start its first run), and no header is needed."""
        return cls.of_records(records(path), path)

    @classmethod
    def load(cls, path: Path | str) -> Samples:
        """The samples file at ``path``, which must exist and have a header."""
        if not Path(path).is_file():
            raise ArtefactError(f"{path}: no such file")
        found = cls.read(path)
        if not found.headers:
            raise found.headless()
        return found

    @classmethod
    def of_records(cls, taken: Iterable[Record | Mapping[str, Any]], path: Path | str | None = None) -> Samples:
        """The records ``taken``, by kind; a dict is typed first (a record as a
        line holds it)."""
        by_kind: dict[str, list[Record]] = {kind: [] for kind in KINDS}
        for record in taken:
            typed = _typed(record, str(path or "records")) if isinstance(record, Mapping) else record
            by_kind[typed.KIND].append(typed)
        return cls(tuple(by_kind[Header.KIND]), tuple(by_kind[Sample.KIND]), tuple(by_kind[Failure.KIND]),
                   tuple(by_kind[Point.KIND]), tuple(by_kind[Survey.KIND]), tuple(by_kind[Account.KIND]),
                   tuple(by_kind[Evaluated.KIND]), None if path is None else Path(path), tuple(by_kind[Probe.KIND]))

    @property
    def header(self) -> Header:
        """The first run's header: the file's library, description and seed."""
        if not self.headers:
            raise self.headless()
        return self.headers[0]

    def headless(self) -> ArtefactError:
        return ArtefactError(f"{self.path or 'the records'}: not a samples file of hlc (it has no header line)")

    def of(self, interface: str, implementation: str, verify: bool) -> list[Sample]:
        """One implementation's fitting (or verification) samples."""
        return [s for s in self.samples if s.interface == interface and s.implementation == implementation
                and s.verify == verify]
