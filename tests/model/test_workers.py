"""Jobs side by side in worker processes (hlc.model.workers), and the fitter
that runs its models' fits that way: the same results in any process."""

from __future__ import annotations

import json
import operator
import os
from pathlib import Path

import pytest

from hlc.language.parse import parse_file
from hlc.model import calibration, workers
from hlc.model.calibration import Samples, calibrate
from hlc.model.workers import Job, run_jobs, side_by_side, worker_count

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def queue_order(costs: list[float]) -> list[int]:
    """The order in which one lane runs jobs of these costs."""
    ran: list[int] = []
    run_jobs([Job(ran.append, (position,), cost) for position, cost in enumerate(costs)], workers=0)
    return ran


def test_jobs_wait_the_costliest_first_the_first_of_equals_first():
    assert queue_order([5, 1, 1, 1, 1, 1]) == [0, 1, 2, 3, 4, 5]
    assert queue_order([1, 4, 2, 3]) == [1, 3, 2, 0]
    assert queue_order([]) == []


def test_a_lane_free_early_takes_the_next_jobs_whatever_their_costs_said():
    """Costs are estimates: the costliest job, here, runs long, and the
    worker, done with the next ones, takes the rest too (dealt by their
    costs alone, the last two would have waited for this process)."""
    side_by_side(os.getpid, [(), ()], [1.0, 1.0], workers=1)  # a worker started and ready
    sleep_then_pid = "__import__('time').sleep({}) or __import__('os').getpid()"
    pids = side_by_side(eval, [(sleep_then_pid.format(seconds),) for seconds in (1.5, 0.01, 0.01, 0.01, 0.01)],
                        [5.0, 4.0, 3.0, 2.0, 1.0], workers=1)
    assert pids[0] == os.getpid()
    assert os.getpid() not in pids[1:]


def test_jobs_made_ready_by_a_result_join_the_queue_at_once():
    """A chain of three jobs, each made ready by the one before, runs in the
    worker while this process works on a longer job that was ready first;
    a job meant for this process runs here, after the chain."""
    side_by_side(os.getpid, [(), ()], [1.0, 1.0], workers=1)  # a worker started and ready
    ran: dict[str, int] = {}

    def then(name: str, following: list[Job]):
        def record(pid: int) -> list[Job]:
            ran[name] = pid
            return following
        return record

    pid_after = "__import__('time').sleep({}) or __import__('os').getpid()"
    here = Job(os.getpid, (), 0.0, then("here", []), here=True)
    chain = [here]
    for name in ("third", "second", "first"):
        chain = [Job(eval, (pid_after.format(0.01),), 1.0, then(name, chain))]
    run_jobs([Job(eval, (pid_after.format(1.5),), 5.0, then("long", [])), *chain], workers=1)
    assert ran["long"] == ran["here"] == os.getpid()
    assert os.getpid() not in (ran["first"], ran["second"], ran["third"])
    assert list(ran) == ["first", "second", "third", "long", "here"]  # the chain done while "long" ran


def test_a_then_that_raises_in_a_feeders_thread_raises_here():
    def broken(value):
        raise ValueError(f"no room for {value}")

    with pytest.raises(ValueError, match="no room for 2"):  # the cheaper job is the worker's
        run_jobs([Job(operator.neg, (-1,), 5.0), Job(operator.neg, (-2,), 1.0, broken)], workers=1)
    assert side_by_side(operator.neg, [(1,), (2,)], [5.0, 1.0], workers=1) == [-1, -2]


def test_jobs_run_in_other_processes_and_come_back_in_order():
    pids = side_by_side(os.getpid, [()] * 3, [1.0, 1.0, 1.0], workers=2)
    assert pids[0] == os.getpid() and len(set(pids)) == 3
    powers = side_by_side(operator.pow, [(2, k) for k in range(8)], [float(k) for k in range(8)], workers=1)
    assert powers == [2**k for k in range(8)]


def test_a_job_that_raises_in_a_worker_raises_here_and_the_worker_serves_on():
    # the cheaper job is the worker's: the one that cannot parse
    with pytest.raises(ValueError, match="invalid literal"):
        side_by_side(int, [("12",), ("twelve",)], [5.0, 1.0], workers=1)
    assert side_by_side(int, [("12",), ("13",)], [5.0, 1.0], workers=1) == [12, 13]


def test_a_job_that_raises_here_leaves_no_answer_for_the_next_jobs():
    with pytest.raises(ValueError):
        side_by_side(int, [("twelve",), ("13",)], [5.0, 1.0], workers=1)
    assert side_by_side(int, [("1",), ("2",)], [5.0, 1.0], workers=1) == [1, 2]


def test_a_worker_that_died_is_replaced_and_its_jobs_done():
    side_by_side(os.getpid, [(), ()], [1.0, 1.0], workers=1)
    dead = workers._workers[0]
    dead.process.kill()
    dead.process.wait()
    pids = side_by_side(os.getpid, [(), ()], [1.0, 1.0], workers=1)
    assert pids[1] not in (os.getpid(), dead.process.pid)


def test_the_worker_count_is_the_setting_else_one_fewer_than_the_cores(monkeypatch):
    monkeypatch.setenv("HLC_FIT_WORKERS", "3")
    assert worker_count() == 3
    monkeypatch.setenv("HLC_FIT_WORKERS", "several")
    with pytest.raises(ValueError, match="HLC_FIT_WORKERS"):
        worker_count()
    monkeypatch.delenv("HLC_FIT_WORKERS")
    assert worker_count() == len(os.sched_getaffinity(0)) - 1


def _fitted(models) -> str:
    record = {name: entry.to_json() for name, entry in models.implementations.items()}
    return json.dumps(record, sort_keys=True, default=str)


@pytest.mark.parametrize("description, folder, used", [
    ("sort.hl", "sort", {}),
    ("stencil.hl", "stencil", {"runtime": DATA / "stencil" / "runtime_models.json"}),
])
def test_the_fits_are_the_same_side_by_side_as_one_after_the_other(monkeypatch, description, folder, used):
    """Every model of the sort library (a two-rank model calls a one-rank
    one) and of the stencil (its models call the runtime library's),
    fitted from stored samples in this process alone and with workers;
    the stencil's with their bags (searched side by side too), the sort's
    without (half the time)."""
    library = parse_file(ROOT / "libraries" / description)
    samples = Samples.read(DATA / folder / "samples.jsonl")
    monkeypatch.setattr(calibration, "FIT_SIDE_BY_SIDE", 0.0)
    if folder == "sort":
        monkeypatch.setattr(calibration, "BAGS", 0)
    monkeypatch.setenv("HLC_FIT_WORKERS", "0")
    alone = calibrate(library, samples, models_of=used)
    monkeypatch.setenv("HLC_FIT_WORKERS", "2")
    together = calibrate(library, samples, models_of=used)
    assert list(together.implementations) == list(alone.implementations)
    assert _fitted(together) == _fitted(alone)
    assert all(entry.status in ("fitted", "factored") for entry in together.times().values())
    if folder == "stencil":
        assert any(entry.bags for entry in together.times().values())


def test_waves_put_each_model_after_those_its_terms_call():
    waves = calibration._waves(parse_file(ROOT / "libraries" / "sort.hl"))
    position = {implementation.name: k for k, wave in enumerate(waves) for _, implementation in wave}
    assert position["radix_spmd"] > position["radix"]
    assert position["radix"] == 0 and len(waves) == 2


def test_a_result_that_cannot_travel_is_made_here():
    import importlib

    found = side_by_side(importlib.import_module, [("json",), ("operator",)], [5.0, 1.0], workers=1)
    assert found == [json, operator]


def test_workers_that_cannot_work_here_are_given_up(monkeypatch):
    """A worker that dies at its start (here: one that cannot find hlc)
    costs its jobs a second run here; after MOST_FAILURES, no more starts."""
    workers.close_workers()
    monkeypatch.setattr(workers, "_failures", 0)
    monkeypatch.setattr(workers.sys, "executable", "/bin/false")
    for _ in range(workers.MOST_FAILURES):
        assert side_by_side(operator.neg, [(1,), (2,)], [1.0, 1.0], workers=1) == [-1, -2]
    assert workers._failures == workers.MOST_FAILURES
    started = []
    monkeypatch.setattr(workers, "_Worker", lambda: started.append(1))
    assert side_by_side(operator.neg, [(1,), (2,)], [1.0, 1.0], workers=1) == [-1, -2]
    assert not started


def test_workers_started_ahead_import_what_they_are_told_and_say_when_ready(monkeypatch):
    workers.close_workers()
    monkeypatch.setattr(workers, "_failures", 0)
    workers.start_workers(1, preload=["json"])
    workers.wait_for_workers()
    assert workers._workers[0].started and workers._failures == 0
    assert side_by_side(operator.neg, [(1,), (2,)], [1.0, 1.0], workers=1) == [-1, -2]
    workers.close_workers()
    workers.start_workers(1, preload=["no_such_module_here"])
    workers.wait_for_workers()
    assert workers._failures == 1
    assert side_by_side(operator.neg, [(3,), (4,)], [1.0, 1.0], workers=1) == [-3, -4]


def test_a_build_refuses_a_bad_worker_setting_before_it_starts(monkeypatch, tmp_path):
    from hlc.dispatch.build import build
    from hlc.errors import UserError

    monkeypatch.setenv("HLC_FIT_WORKERS", "two")
    with pytest.raises(UserError, match="HLC_FIT_WORKERS must be a whole number, not 'two'"):
        build(ROOT / "tests" / "descriptions" / "comm.hl", out=tmp_path / "comm", quick=True)
    assert not (tmp_path / "comm").exists()


def test_an_interrupt_while_a_worker_works_leaves_no_answer_for_the_next_jobs():
    """Interrupted while a worker works (a user's Ctrl-C in a session that
    goes on), the worker goes: the next jobs get their own answers."""
    import signal
    import time

    workers.close_workers()

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):  # here 2 s, there 1 s: interrupted here after 0.3 s
            side_by_side(time.sleep, [(2.0,), (1.0,)], [5.0, 1.0], workers=1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert side_by_side(operator.neg, [(1,), (2,)], [5.0, 1.0], workers=1) == [-1, -2]


def test_jobs_that_cannot_travel_are_done_here():
    def local(value):
        return value + 1

    assert side_by_side(local, [(1,), (2,)], [5.0, 1.0], workers=1) == [2, 3]


def test_a_build_starts_no_more_workers_than_its_widest_wave_can_use(monkeypatch):
    library = parse_file(ROOT / "libraries" / "sort.hl")
    monkeypatch.setenv("HLC_FIT_WORKERS", "15")
    assert calibration.fit_workers_wanted(library) == 4  # five models in the widest wave (the one-rank ones)
    monkeypatch.setenv("HLC_FIT_WORKERS", "1")
    assert calibration.fit_workers_wanted(library) == 1


def test_a_worker_imports_this_process_s_hlc_whatever_lies_in_the_working_folder(monkeypatch, tmp_path):
    """A worker started from a folder that holds another hlc (a checkout
    of another version, say) imports the hlc of the process that started
    it, not that one: here, one that cannot be imported."""
    (tmp_path / "hlc").mkdir()
    (tmp_path / "hlc" / "__init__.py").write_text("raise ImportError('the hlc of the working folder')\n")
    workers.close_workers()
    monkeypatch.setattr(workers, "_failures", 0)
    monkeypatch.chdir(tmp_path)
    try:
        pids = side_by_side(os.getpid, [(), ()], [1.0, 1.0], workers=1)
        assert workers._failures == 0 and pids[1] != os.getpid()
    finally:
        workers.close_workers()
