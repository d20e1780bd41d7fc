"""Running a profiling program, and surviving what its implementations do.

The program runs in a child process (under ``mpiexec -n P`` for P > 1) and
reports each task it starts on its standard output.  The parent watches:

* a task that runs longer than the timeout is a hang: the child is killed;
* a child that dies (segfault, abort, exit) during a task crashed in it;

either way the implementation is recorded as a failure in the samples file,
and the program is started again: it resumes from the file, without that
implementation.  An implementation that raises or returns a wrong result is
excluded by the program itself and needs no restart.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hlc.artefacts.samples import Failure, Samples, append
from hlc.calibrate.breakdown import Breakdown
from hlc.calibrate.generate import profiling_program, pyx_sources
from hlc.compile import Background, compile_extensions
from hlc.errors import UserError
from hlc.language import ast
from hlc.language.machine import usable_cores


class ProfileError(UserError):
    """The profiling program failed outside any implementation (a broken
    description helper, a missing MPI launcher, …)."""


@dataclass
class ProfileResult:
    samples: Path
    program: Path
    failures: list[Failure] = field(default_factory=list)
    coverage: str | None = None  # set when the budget ran out
    ranks: list[int] = field(default_factory=list)
    breakdown: Breakdown = field(default_factory=Breakdown)  # where the time went

    @property
    def complete(self) -> bool:
        return self.coverage is None


Progress = Callable[[int, int, int], None]  # (P, done, total)


def prepare(library: ast.Library, build: Path, spent: Breakdown | None = None) -> Path:
    """Compile the description's Cython sources and write its profiling
    program into ``build``; returns the program's path."""
    build.mkdir(parents=True, exist_ok=True)
    pyx = pyx_sources(library)
    with (spent or Breakdown()).spending("compile"):
        compiled = compile_extensions(pyx, build / "ext") if pyx else None
    program = build / f"profile_{library.name}.py"
    program.write_text(profiling_program(library, compiled, program.name, build), encoding="utf-8")
    return program


def mpiexec() -> str:
    """The MPI launcher installed with the mpich package (beside this Python)."""
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise ProfileError("profiling with several ranks needs mpiexec; install the mpich package")
    return found


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def append_failure(samples: Path, failure: Failure) -> None:
    """Record an implementation that crashed or hung the program (which could not say so itself)."""
    append(samples, [failure])


def failures_in(samples: Path) -> list[Failure]:
    return list(Samples.read(samples).failures)


def profile(library: ast.Library, samples: Path, build: Path, *, ranks: Sequence[int] | None = None,
            budget: float | None = None, resume: bool = False, seed: int = 0, timeout: float | None = None,
            progress: Progress | None = None, verification_only: bool = False,
            implementations: Sequence[str] | None = None,
            meanwhile: Background | None = None, smoke: bool = False, host_waits: bool = False) -> ProfileResult:
    """Profile every implementation of ``library`` into the samples file.
    ``host_waits``: the program waits for the host's usual pace before each
    block, as the evaluator does (its ``--host-waits``), instead of marking
    the samples a slow spell hit.
    ``meanwhile``: a compile that runs beside the profile's own, and is
    paused while the programs run; but for a ``smoke`` profile (a quick
    build's), whose timings no choice rests on, where a program's ranks
    leave it a core: it then runs beside them instead of after, which a
    quick build of a small library spent waiting for it."""
    started = time.monotonic()
    spent = Breakdown()
    program = prepare(library, build, spent)
    if not resume and samples.exists():
        samples.unlink()
    samples.parent.mkdir(parents=True, exist_ok=True)
    ranks, timeout = profile_defaults(library, ranks, timeout)
    deadline = time.time() + budget if budget is not None else None
    result = ProfileResult(samples=samples, program=program, ranks=list(ranks), breakdown=spent)
    cores = usable_cores() or 1
    for size in ranks:
        options = _program_options(verification_only, implementations, host_waits)
        beside = smoke and size < cores
        with meanwhile.paused() if meanwhile is not None and not beside else contextlib.nullcontext():
            coverage = run_program(program, samples, size, seed, deadline, timeout, progress, options, spent)
        if coverage is not None:
            result.coverage = coverage
            break
    result.failures = failures_in(samples)
    spent.wall = time.monotonic() - started
    return result


def profile_defaults(library: ast.Library, ranks: Sequence[int] | None,
                     timeout: float | None) -> tuple[list[int], float]:
    """The rank counts and the timeout of a profile: as given, else the
    description's (every rank count its profiles name; their longest timeout)."""
    profiled = [i.profile for i in library.interfaces if i.profile is not None]
    if ranks is None:
        ranks = sorted({p for profile_ in profiled for p in profile_.ranks}) or [1]
    if timeout is None:
        timeout = max((p.timeout for p in profiled), default=60.0)
    return list(ranks), timeout


def _program_options(verification_only: bool, implementations: Sequence[str] | None,
                     host_waits: bool = False) -> list[str]:
    """Program options that restrict what is profiled, and how it is timed."""
    options = ["--verification-only"] if verification_only else []
    options += ["--host-waits"] if host_waits else []
    return options + (["--implementations", ",".join(implementations)] if implementations else [])


def _command(program: Path, samples: Path, size: int, seed: int, deadline: float | None,
             options: list[str]) -> list[str]:
    command = [sys.executable, str(program), "--out", str(samples), "--seed", str(seed), "--events",
               "--ranks", str(size), *options]
    if deadline is not None:
        command += ["--deadline", repr(deadline)]
    if size > 1:
        command = [mpiexec(), "-n", str(size)] + command
    return command


def run_program(program: Path, samples: Path, size: int, seed: int, deadline: float | None,
                timeout: float, progress: Progress | None, options: list[str],
                spent: Breakdown | None = None) -> str | None:
    """Run (and restart) a profiling program at one rank count, with the extra
    program ``options`` (_program_options); returns the coverage message when the
    budget ran out, else None.  ``spent`` gets the programs' accounts, the
    time their processes took to start, and the time lost to runs that
    crashed or hung past their last finished point."""
    spent = spent if spent is not None else Breakdown()
    restarts = 0
    while True:
        started = time.monotonic()
        outcome = _run_once(_command(program, samples, size, seed, deadline, options), timeout, size, progress)
        wall = time.monotonic() - started
        account = outcome.breakdown.closed()
        spent.merge(account, wall=False)
        if outcome.kind in ("finished", "budget"):
            spent.add("process starts", max(wall - account.wall, 0.0))
        else:  # what it did after its last finished point is lost
            spent.add("restarts", max(wall - account.wall, 0.0))
            spent.restarts += 1
        if outcome.kind == "finished":
            return None
        if outcome.kind == "budget":
            return _budget_message(outcome.event, size)
        if outcome.task is None:
            raise ProfileError(failed_outside(program.name, outcome))
        task = outcome.task
        append_failure(samples, Failure(task["interface"], task["implementation"], outcome.cause, size,
                                        task.get("point")))
        restarts += 1
        if restarts > 100:
            raise ProfileError("the profiling program keeps failing; giving up after 100 restarts")


def failed_outside(program: str, outcome: _Outcome) -> str:
    """The error of a program that failed outside any implementation: its
    cause, then what it wrote, once.  Under mpiexec every rank writes the
    same failure (a helper of the description fails alike on each), and the
    cause already holds its last line."""
    lines = outcome.stderr.strip().splitlines()
    for period in range(1, len(lines) // 2 + 1):
        if len(lines) % period == 0 and lines == lines[:period] * (len(lines) // period):
            lines = lines[:period]
            break
    said = "\n".join(lines)
    head = f"the profiling program {program} failed outside any implementation ({outcome.cause})"
    return head if not said or outcome.cause.endswith(": " + said) else f"{head}:\n{said}"


def _budget_message(event: dict, size: int) -> str:
    return (f"the budget ran out after {event['done']} of {event['total']} points at {size} rank(s); "
            f"points are taken in a random order, so those taken sample the whole nest "
            f"(continue with --resume)")


@dataclass
class _Outcome:
    kind: str  # finished, budget, crashed, timeout
    task: dict | None = None  # the last task started
    cause: str = ""
    event: dict = field(default_factory=dict)
    stderr: str = ""
    breakdown: Breakdown = field(default_factory=Breakdown)  # the program's account, as last reported


#: Seconds the reader of a program's output pauses between reads, while the
#: program is in a command.  Read line by line, the program's events (a
#: task before each timing, hlc.calibrate.engine.TimingEngine.task) woke
#: the parent's two threads up to a thousand times a second, and that 2-3%
#: of a core, taken from the ranks at moments of its choosing, slowed the
#: stencil's layouts whose ranks wait for each other by 3.5% more than
#: those whose ranks do not (a process taking 3% of a core beside a fresh
#: profiling program did the same).  A pipe holds 64 KiB, far more than
#: the events of a pause.
READ_PAUSE = 0.02
#: The events that end a command or a run: read at once, not after a pause.
FINAL_EVENTS = (b'"event": "finished"', b'"event": "budget"')


def _ends_a_command(line: bytes) -> bool:
    """Whether a line of a program's output ends its command, or comes just
    before the event that does (the progress event of its last point):
    the reader reads on without a pause after it."""
    if any(final in line for final in FINAL_EVENTS):
        return True
    if b'"event": "progress"' not in line:
        return False
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return event.get("done") == event.get("total")


def _read_lines(stream, lines: queue.Queue) -> None:
    """Runs in a thread: the child's output, as a list of the complete lines
    of each read, then None at its end, reading every READ_PAUSE seconds
    while the child is in a command.  (A thread, not select(): it reads
    the pipe itself, past the text layer's buffer.)"""
    descriptor = stream.fileno()
    pending = b""
    while chunk := os.read(descriptor, 1 << 16):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        if complete:
            lines.put([line.decode("utf-8", "replace") for line in complete])
        if not (complete and _ends_a_command(complete[-1])):
            time.sleep(READ_PAUSE)
    if pending:
        lines.put([pending.decode("utf-8", "replace")])
    lines.put(None)


class _Child:
    """A running profiling program: its events, read in a thread a batch at
    a time (``_read_lines``), and its standard error, kept in a file for the
    cause of a crash."""

    def __init__(self, command: list[str], serving: bool = False):
        # closed when the program ends (events, close or kill)
        self.errors = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.errors, text=True,
                                        stdin=subprocess.PIPE if serving else subprocess.DEVNULL,
                                        start_new_session=True)
        self.lines: queue.Queue = queue.Queue()
        self.unread: list[str] = []  # lines of a batch after the event that ended a command
        threading.Thread(target=_read_lines, args=(self.process.stdout, self.lines), daemon=True).start()

    def next_line(self, timeout: float) -> str | None:
        """The next line of the program's output, None at its end; raises
        queue.Empty when none came within ``timeout`` seconds."""
        if not self.unread:
            batch = self.lines.get(timeout=timeout)
            if batch is None:
                self.lines.put(None)  # the end stays the end for every later call
                return None
            self.unread = batch
        return self.unread.pop(0)

    def send(self, command: dict) -> bool:
        """Pass a command to a serving program; False when it has gone."""
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def events(self, timeout: float, size: int, progress: Progress | None, until_final: bool) -> _Outcome:
        """Follow the program's events until its output ends (or, with
        ``until_final``, until it ends a command); a task that runs past
        ``timeout`` is a hang, and the program is killed."""
        task: dict | None = None
        started = time.monotonic()
        final: dict | None = None
        account = Breakdown()
        try:
            while True:
                waited = timeout - (time.monotonic() - started) if task is not None else 1.0
                if task is not None and waited <= 0:
                    self.kill()
                    return _Outcome("timeout", task, f"timed out: one timing took more than {timeout:g} s",
                                    breakdown=account)
                try:
                    line = self.next_line(timeout=max(waited, 0.05))
                except queue.Empty:
                    continue
                if line is None:
                    break
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # something the implementation printed
                kind = event.get("event")
                if "breakdown" in event:
                    account = Breakdown.from_dict(event["breakdown"])
                if kind == "task":
                    task, started = event, time.monotonic()
                elif kind == "progress":
                    task = None
                    if progress is not None:
                        progress(size, event["done"], event["total"])
                elif kind in ("finished", "budget"):
                    final = event
                    if until_final:
                        return _Outcome(kind, event=event, breakdown=account)
                elif kind in ("failure", "helper failed"):
                    task = None
            code = self.process.wait()
        except BaseException:
            self.kill()
            raise
        self.errors.seek(0)
        stderr = _tail(self.errors.read())
        self.errors.close()
        if code == 0 and final is not None:
            return _Outcome(final["event"], event=final, breakdown=account)
        cause = f"crashed with {_signal_name(code)}" if code < 0 else f"the process exited with status {code}"
        if stderr:
            cause += f": {stderr.splitlines()[-1]}"
        return _Outcome("crashed", task, cause, stderr=stderr, breakdown=account)

    def close(self, patience: float = 10.0) -> None:
        """End a serving program: the end of its input, then a kill if it lingers."""
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            self.kill()
        self.errors.close()

    def kill(self) -> None:
        _kill(self.process)
        self.errors.close()


def _run_once(command: list[str], timeout: float, size: int, progress: Progress | None) -> _Outcome:
    return _Child(command).events(timeout, size, progress, until_final=False)


class Server:
    """A profiling program that stays up at one rank count and takes one
    command after another (``--serve``): an adaptive profile's rounds and its
    verification, without a process start (Python, NumPy, MPI, the clock's
    calibration) for each.  A program that crashes or hangs in a task is
    treated as ``run_program`` treats it: the implementation is recorded as
    a failure, and a new program takes the same command again, resuming
    from the samples file."""

    def __init__(self, program: Path, samples: Path, size: int, seed: int, timeout: float,
                 progress: Progress | None, spent: Breakdown, host_waits: bool = False):
        serving = ["--serve", *_program_options(False, None, host_waits)]
        self.command = _command(program, samples, size, seed, None, serving)
        self.program, self.samples, self.size = program, samples, size
        self.timeout, self.progress, self.spent = timeout, progress, spent
        self.child: _Child | None = None

    def start(self) -> None:
        """Start the program, which then waits for its first command: the
        programs of several rank counts start side by side (Python, NumPy,
        MPI and the library imported, the clock calibrated), while nothing
        is timed yet."""
        if self.child is None:
            self.child = _Child(self.command, serving=True)

    def run(self, options: dict[str, Any]) -> str | None:
        """Take the points ``options`` select (see the program's serve); returns
        the coverage message when the deadline cut them short, else None."""
        restarts = 0
        while True:
            started = time.monotonic()
            self.start()
            if self.child.send(options):
                outcome = self.child.events(self.timeout, self.size, self.progress, until_final=True)
            else:  # it ended before taking the command: its output says why
                outcome = self.child.events(self.timeout, self.size, self.progress, until_final=False)
                if outcome.kind != "crashed":
                    outcome = _Outcome("crashed", None, "the program ended before its command")
            wall = time.monotonic() - started
            account = outcome.breakdown.closed()
            self.spent.merge(account, wall=False)
            if outcome.kind in ("finished", "budget"):
                self.spent.add("process starts", max(wall - account.wall, 0.0))
                return None if outcome.kind == "finished" else _budget_message(outcome.event, self.size)
            self.spent.add("restarts", max(wall - account.wall, 0.0))
            self.spent.restarts += 1
            self.child = None
            if outcome.task is None:
                raise ProfileError(failed_outside(self.program.name, outcome))
            task = outcome.task
            append_failure(self.samples, Failure(task["interface"], task["implementation"], outcome.cause,
                                                 self.size, task.get("point")))
            restarts += 1
            if restarts > 100:
                raise ProfileError("the profiling program keeps failing; giving up after 100 restarts")

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
            self.child = None


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _kill(child: subprocess.Popen) -> None:
    """End the child and everything it started (mpiexec's ranks too)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
