"""Jobs run side by side: this process and worker processes.

The fitter's jobs (a model's fit, its searches and its bags) run while
nothing is timed: between an adaptive build's rounds, at the end of a
build, in ``hlc fit`` and in replays.  The profiling programs wait
meanwhile, and every core but the fitter's is idle.  A job's result may
make others ready (a model's bags wait for its fit, a model whose terms
call another for that one's): they join the queue at once.  On two cores
the fit of the sort library's seven models from 2,622 stored samples
took 5.3 s where it took 9.1 s one after the other
(``benchmarks/fit_workers.py``): about the time of its longest chain of
jobs, the radix sort's fit, its bags, and the two-rank model's that calls
it.

A worker is a plain child process, ``python -m hlc.model.workers``, that
reads pickled jobs (a module-level function and its arguments) on its
standard input and writes their pickled results to its standard output.
It is not a ``multiprocessing`` child: those re-import the caller's
``__main__`` (a user's script without a main guard would build again in
every worker) or fork a process whose threads (a build's readers of its
profiling programs) may hold locks.  Workers start on first use and stay
for the life of this process, each with what it keeps between jobs (the
term values of the samples it fitted); they end with it, or when its end
of their pipe closes.

A result never depends on the workers: a job runs the same code on the
same data in any process, and a worker that fails, or a job that raises
in one, is run again here, where it raises as it would have.  An error or
an interrupt here while a worker works ends that worker: its answer would
otherwise meet the next jobs.

``HLC_FIT_WORKERS`` sets how many workers may run (0: none); by default
one fewer than the cores this process may use.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import hashlib
import heapq
import importlib
import itertools
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from hlc.errors import UserError
from hlc.language.machine import usable_cores

#: Environment variable: how many worker processes may run.
WORKERS_VARIABLE = "HLC_FIT_WORKERS"
_LENGTH = struct.Struct("<Q")
#: A worker's libraries of linear algebra run one thread each: the fitter's
#: matrices are small, and the workers already use the other cores.
_ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def worker_count() -> int:
    """How many worker processes may run: ``HLC_FIT_WORKERS``, else one
    fewer than the cores this process may run on."""
    setting = os.environ.get(WORKERS_VARIABLE, "").strip()
    if setting:
        try:
            count = int(setting)
        except ValueError:
            raise WorkerSettingError(f"{WORKERS_VARIABLE} must be a whole number, not {setting!r}") from None
        if count < 0:
            raise WorkerSettingError(f"{WORKERS_VARIABLE} must be 0 or more, not {count}")
        return count
    return max((usable_cores() or 1) - 1, 0)


def _write(stream: BinaryIO, value: Any) -> None:
    _send(stream, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def _send(stream: BinaryIO, data: bytes) -> None:
    """One message: its length, then its bytes (a pickled value)."""
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _read(stream: BinaryIO) -> Any:
    """The next value on ``stream``; EOFError at its end."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        raise EOFError("the stream ended")
    size = _LENGTH.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the stream ended within a message")
    return pickle.loads(data)


class Shared:
    """A value that many jobs share (a library's description): pickled once,
    and unpickled once per worker, where equal values are then one object,
    as they are here, so that what a worker keeps by object (term values by
    implementation) serves its next jobs too."""

    def __init__(self, value: Any):
        self.value = value
        self._pickled: tuple[str, bytes] | None = None  # digest and data, made at the first pickling

    def __reduce__(self) -> tuple:
        if self._pickled is None:
            data = pickle.dumps(self.value, protocol=pickle.HIGHEST_PROTOCOL)
            self._pickled = (hashlib.sha256(data).hexdigest(), data)
        return _shared, self._pickled


_SHARED: dict[str, Shared] = {}
#: Shared values a worker keeps at most (a build shares one description).
MOST_SHARED = 8


def _shared(digest: str, data: bytes) -> Shared:
    if digest not in _SHARED:
        if len(_SHARED) >= MOST_SHARED:
            _SHARED.clear()
        _SHARED[digest] = Shared(pickle.loads(data))
    return _SHARED[digest]


class WorkerSettingError(UserError, ValueError):
    """A value of HLC_FIT_WORKERS that is not a count."""


class WorkerGone(RuntimeError):
    """A worker that exited, or whose answer could not be read."""


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, preload: Sequence[str] = ()) -> None:
        # The worker imports this process's hlc: its folder first on the path,
        # and not the working folder, which -m would put first (-P), where a
        # checkout of another hlc may lie.
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
        # its error output goes to a file, read only to say why it failed
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115
        self.process = subprocess.Popen([sys.executable, "-P", "-m", "hlc.model.workers", *preload],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                        env={**os.environ, **_ONE_THREAD, "PYTHONPATH": path})
        self.started = False  # whether it said it is ready

    def ready(self) -> None:
        """Wait until the worker has imported what it was to preload."""
        if not self.started:
            try:
                _read(self.process.stdout)
            except (EOFError, OSError, pickle.UnpicklingError) as error:
                raise WorkerGone(f"the worker did not start: {error}{self._last_error()}") from error
            self.started = True

    def send(self, message: bytes) -> None:
        """Pass a message (pickled jobs)."""
        try:
            _send(self.process.stdin, message)
        except (OSError, ValueError) as error:
            raise WorkerGone(f"could not pass jobs to the worker: {error}") from error

    def receive(self) -> list[tuple[bool, Any]]:
        self.ready()
        try:
            return _read(self.process.stdout)
        except (EOFError, OSError, pickle.UnpicklingError, AttributeError, ImportError) as error:
            raise WorkerGone(f"no answer from the worker: {error}{self._last_error()}") from error

    def _last_error(self) -> str:
        try:
            self.errors.seek(0)
            lines = self.errors.read().decode(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return f" ({lines[-1]})" if lines else ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """End the worker now, whatever it is doing."""
        with contextlib.suppress(OSError):
            self.process.kill()
        self.close()

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.errors.close()


_workers: list[_Worker] = []
#: Workers that died or answered nothing readable, in this process.  From
#: MOST_FAILURES on, jobs run here only: workers that cannot work here (an
#: interpreter that cannot import hlc by itself) would only cost their starts.
_failures = 0
MOST_FAILURES = 3


def _started(count: int, preload: Sequence[str] = ()) -> list[_Worker]:
    """``count`` running workers: those of earlier calls, and new ones
    (which import ``preload`` first)."""
    for worker in [worker for worker in _workers if not worker.alive()]:
        worker.close()
        _workers.remove(worker)
    if count and not _workers:
        atexit.unregister(close_workers)
        atexit.register(close_workers)
    while len(_workers) < count:
        _workers.append(_Worker(preload))
    return _workers[:count]


def start_workers(count: int | None = None, preload: Sequence[str] = ()) -> None:
    """Start the workers (default: :func:`worker_count`) that later jobs will
    use, each importing the modules ``preload`` names, without waiting for
    them (:func:`wait_for_workers`): a worker takes half a second to import
    the fitter, which then overlaps this process's own work rather than
    delaying the worker's first jobs."""
    if _failures < MOST_FAILURES:
        _started(worker_count() if count is None else count, preload)


def wait_for_workers() -> None:
    """Wait until the started workers are ready for jobs: what they import
    then no longer runs beside whatever this process does next."""
    for worker in list(_workers):
        try:
            worker.ready()
        except WorkerGone:
            _failed(worker)


def close_workers() -> None:
    """End every worker (they also end when this process does)."""
    while _workers:
        _workers.pop().close()


def side_by_side(function: Callable[..., Any], arguments: Sequence[tuple], costs: Sequence[float],
                 workers: int | None = None) -> list[Any]:
    """``function(*a)`` for each of ``arguments``, in this process and up to
    ``workers`` (default: :func:`worker_count`) worker processes; the
    results in the order of ``arguments``.  The jobs wait in one queue, the
    most costly first by their ``costs``, and each
    lane takes the next one whenever it is free (:func:`run_jobs`).
    ``function`` must be defined at a module's top level, and the arguments
    and results picklable."""
    results: dict[int, Any] = {}

    def keeping(position: int) -> Callable[[Any], Sequence[Job]]:
        def keep(value: Any) -> Sequence[Job]:
            results[position] = value
            return ()
        return keep

    workers = worker_count() if workers is None else workers
    run_jobs([Job(function, a, cost, keeping(position))
              for position, (a, cost) in enumerate(zip(arguments, costs, strict=True))],
             workers=min(workers, len(arguments) - 1))
    return [results[i] for i in range(len(arguments))]


@dataclass
class Job:
    """``function(*arguments)``, an estimate of its ``cost``, and what is done
    with its result once it is back: ``then(result)``, called in this
    process, one at a time, returns the jobs the result makes ready (the
    searches of a model once its fit is back; the models whose terms call
    it once its own is done).  A ``then`` may run in a thread beside a job
    of this process: it should do little, and hand anything more to a job
    that runs ``here``, in this process's own lane, one after another with
    its other jobs."""

    function: Callable[..., Any]
    arguments: tuple
    cost: float
    then: Callable[[Any], Sequence[Job]] | None = None
    here: bool = False


def run_jobs(jobs: Sequence[Job], workers: int | None = None) -> None:
    """Run ``jobs`` and the jobs their ``then`` makes ready, in this process
    and up to ``workers`` (default: :func:`worker_count`) worker processes.

    The ready jobs wait in one queue, the most costly first (the first
    ready of equals first), and each lane takes the next one whenever it is
    free: a cost is an estimate (a model's samples times its terms), and a
    model whose search runs long then delays no job.  Every lane starts with
    one job, this process with the first, each worker with the next (a
    worker still starting would otherwise leave its share to the others).
    A job made ready while the lanes work joins the queue at once, so a
    model that calls another is fitted as soon as that one is done, beside
    the searches of the others, not after all of them.

    A job that cannot travel (a local function), or whose worker failed,
    or that raised in a worker, is done here, where it raises as it would
    have without workers.  An error or an interrupt here, in a job or in a
    ``then``, stops the workers that are busy: their answers would
    otherwise meet the next jobs."""
    workers = worker_count() if workers is None else workers
    count = workers if _failures < MOST_FAILURES else 0
    order = itertools.count()
    # a heap: the costliest first, then the first ready
    waiting = [(-job.cost, next(order), job) for job in jobs if not job.here]
    heapq.heapify(waiting)
    here = collections.deque(job for job in jobs if job.here)  # jobs for this process alone, first

    def join(ready: Sequence[Job]) -> None:
        for each in ready:
            if each.here:
                here.append(each)
            else:
                heapq.heappush(waiting, (-each.cost, next(order), each))

    if count <= 0:
        while here or waiting:
            job = here.popleft() if here else heapq.heappop(waiting)[2]
            join(_then(job, job.function(*job.arguments)))
        return
    outstanding = len(waiting) + len(here)  # jobs not done: waiting, here, or running
    condition = threading.Condition()
    continuing = threading.Lock()  # the thens, one at a time
    failed: list[BaseException] = []  # a then that raised in a feeder's thread
    stopping = threading.Event()  # set when this process stops the workers (an error or an interrupt here)

    def take(mine: bool) -> Job | None:
        """The next job for a lane (``mine``: this process's, which takes those
        meant for it first); None once every job is done, or on an error."""
        with condition:
            while not (failed or stopping.is_set()):
                if mine and here:
                    return here.popleft()
                if waiting:
                    return heapq.heappop(waiting)[2]
                if not outstanding:
                    return None
                condition.wait()  # a running job may make more ready
            return None

    def done(job: Job, result: Any) -> None:
        nonlocal outstanding
        with continuing:
            ready = _then(job, result)
        with condition:
            join(ready)
            outstanding += len(ready) - 1
            condition.notify_all()

    def hand_back(job: Job) -> None:
        with condition:
            here.append(job)
            condition.notify_all()

    def feed(worker: _Worker, job: Job | None) -> None:
        """Pass the worker one job at a time, ``job`` first (else the first made
        ready), until none is left or it fails."""
        if job is None:
            job = take(mine=False)
        while job is not None:
            try:
                message = pickle.dumps([(job.function, job.arguments)], protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - a job that cannot travel (a local function) is done here
                hand_back(job)
                job = take(mine=False)
                continue
            try:
                worker.send(message)
                [(finished, value)] = worker.receive()
            except (WorkerGone, ValueError):  # ValueError: its pipes closed as it was stopped
                if not stopping.is_set():
                    _failed(worker)
                    hand_back(job)
                return
            if not finished:  # a job that raised there raises here, as it would have without workers
                hand_back(job)
            else:
                try:
                    done(job, value)
                except BaseException as error:  # noqa: BLE001 - raised here, in this process's lane
                    with condition:
                        failed.append(error)
                        condition.notify_all()
                    return
            job = take(mine=False)

    first = here.popleft() if here else heapq.heappop(waiting)[2]
    started = _started(count)
    feeders = [threading.Thread(target=feed, args=(worker, heapq.heappop(waiting)[2] if waiting else None),
                                daemon=True) for worker in started]
    for feeder in feeders:
        feeder.start()
    try:
        job: Job | None = first
        while job is not None:
            done(job, job.function(*job.arguments))
            job = take(mine=True)
        if failed:
            raise failed[0]
        for feeder in feeders:
            feeder.join()
    except BaseException:
        # An error here, or an interrupt: an answer still on its way would
        # answer the next jobs sent to its worker, which goes instead.
        stopping.set()
        with condition:
            waiting.clear()
            here.clear()
            condition.notify_all()
        for worker, feeder in zip(started, feeders, strict=True):
            if feeder.is_alive():
                worker.stop()
        raise


def _then(job: Job, result: Any) -> Sequence[Job]:
    return job.then(result) if job.then is not None else ()


def _failed(worker: _Worker) -> None:
    global _failures
    _failures += 1
    worker.close()


def _serve(source: BinaryIO, sink: BinaryIO) -> None:
    """A worker's loop: jobs in, results out, until the input ends."""
    while True:
        try:
            jobs = _read(source)
        except EOFError:
            return
        answers = []
        for function, arguments in jobs:
            try:
                answers.append((True, function(*arguments)))
            except Exception:  # noqa: BLE001 - the caller runs it again and sees the error itself
                answers.append((False, None))
        try:
            message = pickle.dumps(answers, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a result that cannot travel: the caller makes it itself
            message = pickle.dumps([answer if _picklable(answer) else (False, None) for answer in answers],
                                   protocol=pickle.HIGHEST_PROTOCOL)
        _send(sink, message)


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - whatever pickling raises
        return False
    return True


def _main(preload: Sequence[str]) -> None:
    """The worker: imports ``preload``, says it is ready, then serves; its
    standard output carries the messages alone, what a job prints goes to
    its error output."""
    sink = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for module in preload:
        importlib.import_module(module)
    _write(sink, "ready")
    _serve(sys.stdin.buffer, sink)


if __name__ == "__main__":
    _main(sys.argv[1:])
