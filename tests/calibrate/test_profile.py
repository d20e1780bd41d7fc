"""Profiling end to end: the generated program, failures, budget, resume, interruption."""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import queue
import random
import re
import runpy
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import hlc
from hlc.artefacts import samples as artefact
from hlc.artefacts.models import TimeModel
from hlc.artefacts.samples import Header, Samples
from hlc.calibrate import harness, run
from hlc.calibrate.breakdown import Breakdown
from hlc.calibrate.run import Server, prepare, profile
from hlc.language.nest import points
from hlc.model.calibration import calibrate, fitted_seconds, host_tolerance

ROOT = Path(__file__).resolve().parents[2]
DESCRIPTIONS = ROOT / "tests" / "descriptions"


def points_of(samples: Path) -> list[tuple]:
    return [(r.interface, r.P, r.verify, r.index) for r in Samples.read(samples).points]


def test_generated_program_runs_on_its_own(tmp_path):
    library = hlc.parse_file(DESCRIPTIONS / "vector.hl")
    program = prepare(library, tmp_path / "build")
    source = program.read_text()
    assert source.startswith("#!/usr/bin/env python3\n")
    assert "do not edit" in source and "def total_points():" in source
    compile(source, str(program), "exec")
    out = tmp_path / "samples.jsonl"
    subprocess.run([sys.executable, str(program), "--out", str(out)], check=True, cwd=tmp_path, timeout=300)
    records = Samples.load(out)
    assert isinstance(next(iter(artefact.records(out))), Header) and records.header.library == "vector"
    samples = records.samples
    fitting = collections.Counter(r.implementation for r in samples if not r.verify)
    # 9 sizes (2 .. 2**17); kahan only where n <= 100000 (8 sizes); blocked at 6 block sizes each.
    assert fitting == {"numpy": 9, "fsum": 9, "kahan": 8, "blocked": 54}
    verification = collections.Counter(r.implementation for r in samples if r.verify)
    assert verification == {"numpy": 10, "fsum": 10, "kahan": 10, "blocked": 10}
    for sample in samples:
        assert 3 <= len(sample.timings) <= 9  # retaken when no other timing agrees with the median
        assert sample.seconds == statistics.median(sample.timings)
        assert sample.repeat >= 1 and sample.variables["P"] == 1
        assert sample.seconds * sample.repeat > 0
    assert len(points_of(out)) == len(set(points_of(out)))


def test_a_searched_parameter_is_profiled_and_evaluated_at_the_values_its_search_proposes(tmp_path):
    """A parameter set by a search ``over i … with bpd = VALUE`` is timed only at
    the values of its loop that the search can propose at the point (the
    dispatcher never calls the others), and `<impl>_choices` (what hlc
    evaluate --params exhaustive times) is every value the search can
    propose, once; a parameter without a search keeps its loop's values."""
    library = hlc.parse_file(DESCRIPTIONS / "decisions.hl")
    program = runpy.run_path(str(prepare(library, tmp_path / "build")))
    point, variables = {"i": 8, "w": 22}, {"n": 256, "width": 22, "P": 1, "logP": 0.0}
    # ceil(22 / i) for i in 2 .. 22: the narrowest digit for each number of passes
    proposed = [1, 2, 3, 4, 5, 6, 8, 11]
    assert program["digits_searched"](variables) == {"bpd": proposed}
    assert list(program["digits_choices"](point, variables)) == [{"bpd": b} for b in proposed]
    # the loop's values are 1, 6, 11, 16; the search never proposes 16
    assert list(program["digits_settings"](point, variables)) == [{"bpd": b} for b in (1, 6, 11)]
    narrow = {**variables, "width": 3}  # ceil(3 / i) for i in 1 .. 3: 3, 2, 1
    assert list(program["digits_settings"](point, narrow)) == [{"bpd": 1}]
    assert list(program["digits_choices"](point, narrow)) == [{"bpd": b} for b in (1, 2, 3)]
    assert list(program["tiles_choices"](point, variables)) == list(program["tiles_settings"](point, variables))
    assert len(list(program["tiles_settings"](point, variables))) == 4
    assert list(program["plain_choices"](point, variables)) == [{}]
    assert "plain_searched" not in program


def test_failing_implementations_are_excluded_and_the_others_calibrate(tmp_path):
    library = hlc.parse_file(DESCRIPTIONS / "faulty.hl")
    samples = tmp_path / "samples.jsonl"
    result = profile(library, samples, tmp_path / "build")
    causes = {f.implementation: f.cause for f in result.failures}
    assert set(causes) == {"raises", "crashes", "hanging", "reversed"}
    assert re.match(r"raised ValueError: \d+ keys are too many for me \(at impls.py:\d+\)", causes["raises"])
    assert "SIGSEGV" in causes["crashes"]
    assert causes["hanging"].startswith("timed out")
    assert causes["reversed"].startswith("wrong result") and "reference good returned" in causes["reversed"]
    # The crash and the hang each cost a restart, and the time after their last point is lost.
    assert result.breakdown.restarts == 2 and result.breakdown.seconds["restarts"] > 0
    models = calibrate(library, Samples.read(samples))
    assert models.time("good").status == "fitted"
    assert models.time("numpy").status == "fitted"
    points = {f.implementation: f.point for f in result.failures}
    for name in causes:
        assert models.time(name) == TimeModel("excluded", cause=causes[name], ranks=1, point=points[name])
        assert models.time(name).to_json() == {"status": "excluded", "cause": causes[name], "P": 1,
                                               "point": points[name]}
    # Every line of the file is whole JSON, whatever happened to the processes writing it.
    assert all(line.endswith("}") for line in samples.read_text().splitlines())


def test_budget_stops_early_and_resume_completes(tmp_path):
    library = hlc.parse_file(DESCRIPTIONS / "vector.hl")
    samples = tmp_path / "samples.jsonl"
    partial = profile(library, samples, tmp_path / "build", budget=0.0)
    assert not partial.complete
    assert "budget ran out after" in partial.coverage and "--resume" in partial.coverage
    before = points_of(samples)
    finished = profile(library, samples, tmp_path / "build", resume=True)
    assert finished.complete
    after = points_of(samples)
    assert after[: len(before)] == before
    assert len(after) == len(set(after))
    fresh = tmp_path / "fresh.jsonl"
    profile(library, fresh, tmp_path / "build")
    assert sorted(after) == sorted(points_of(fresh))


SLOW = """\
library slow
from "pause.py" import pause, make
interface f(x: float64[])
    n = len(x)
    impl a = pause
        time ~ 1 + n
    profile
        for i in 1 .. 200 ++
        x = make(i, seed)
        verify 2
"""


def test_interrupted_profile_leaves_a_valid_file_that_resumes(tmp_path):
    # 200 points of at least 5 ms each: the interrupt lands mid-run however fast the machine.
    (tmp_path / "pause.py").write_text("import time\nimport numpy\n\n\ndef pause(x):\n    time.sleep(0.001)\n"
                                       "    return x.sum()\n\n\ndef make(count, seed):\n"
                                       "    return numpy.ones(count)\n")
    (tmp_path / "slow.hl").write_text(SLOW)
    samples = tmp_path / "samples.jsonl"
    command = [sys.executable, "-m", "hlc", "profile", str(tmp_path / "slow.hl"), "-o", str(samples),
               "--build", str(tmp_path / "build")]
    # A shell without job control starts background commands with SIGINT ignored, and
    # Python keeps that; give the child the default so that it sees a Ctrl-C.
    child = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(points_of(samples)) < 3:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr
    for line in samples.read_text().splitlines():
        json.loads(line)
    resumed = subprocess.run(command + ["--resume"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    points = points_of(samples)
    assert len(points) == len(set(points))


def test_the_implementations_are_timed_on_the_arguments_as_calls_pass_them(tmp_path):
    """A profile that builds lists where the interface takes arrays times
    the implementations on the arrays the built module will pass them (a
    Python loop over a NumPy array runs several times slower than over a
    list), and a list for an argument the implementations change in place
    is refused as the module refuses it."""
    (tmp_path / "helpers.py").write_text(
        "def values(count, seed):\n    return [float(i) for i in range(count)]\n\n\n"
        "def total(x):\n    assert type(x).__name__ == 'ndarray' and x.dtype == 'float64', type(x)\n"
        "    return float(sum(x))\n")
    description = ('library lists\nfrom "helpers.py" import values, total\ninterface f(x: float[]) -> float\n'
                   "    n = len(x)\n    reference python\n    impl python = total\n        time ~ 1 + n\n"
                   "    profile\n        for i in 1 .. 64 *= 4\n        x = values(i, seed)\n        verify 2\n")
    (tmp_path / "lists.hl").write_text(description)
    program = prepare(hlc.parse_file(tmp_path / "lists.hl"), tmp_path / "build")
    assert "x = as_array(x, \"the profile's argument 'x' of f()\", 'float', 1)" in program.read_text()
    result = profile(hlc.parse_file(tmp_path / "lists.hl"), tmp_path / "samples.jsonl", tmp_path / "build")
    assert not result.failures
    assert len(Samples.read(tmp_path / "samples.jsonl").samples) == 4 + 2
    (tmp_path / "changed.hl").write_text(description.replace("f(x: float[])", "f(x: mutable float[])"))
    failed = subprocess.run([sys.executable, "-m", "hlc", "profile", str(tmp_path / "changed.hl"),
                             "--build", str(tmp_path / "changed")], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2
    assert "the profile's argument 'x' of f() must be a NumPy array of floating-point numbers" in failed.stderr


def test_a_broken_helper_is_a_profile_error_naming_the_point_and_its_line(tmp_path):
    """A helper that fails at some points ends the profile (exit 2) with
    the interface, the point and the helper's own frames, not hlc's; in
    the variables and a setup as in the arguments, and no implementation
    is excluded for it."""
    (tmp_path / "helpers.py").write_text(
        "import numpy\n\n\ndef make(count, seed):\n    if count >= 2:\n        raise RuntimeError('no data')\n"
        "    return numpy.ones(count)\n\n\ndef width(x):\n    raise ValueError('no width')\n\n\n"
        "def boom():\n    raise OSError('no cache to flush')\n")
    broken = ('library broken\nfrom "helpers.py" import make, width, boom\ninterface f(x: float64[])\n'
              '    n = len(x)\n'
              "    impl a = numpy.sort\n        time ~ n\n    profile\n        for i in 1 .. 3 ++\n"
              "        x = make(i, seed)\n")
    for name, text, message in [
            ("arguments", broken, r"the profile's arguments of f\(\) at i = [23] could not be built:"),
            ("variables", broken.replace("n = len(x)", "n = width(x)").replace("make(i, seed)", "make(1, seed)"),
             r"the profile's variables of f\(\) at i = [123] could not be computed:"),
            ("setup", broken.replace("make(i, seed)", "make(1, seed)\n        setup boom()"),
             r"the profile's setup of f\(\) at i = [123] failed:")]:
        (tmp_path / f"{name}.hl").write_text(text.replace("library broken", f"library broken_{name}"))
        result = subprocess.run([sys.executable, "-m", "hlc", "profile", str(tmp_path / f"{name}.hl"),
                                 "--build", str(tmp_path / name)], capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, result.stderr
        assert "failed outside any implementation" in result.stderr
        assert re.search(message, result.stderr), result.stderr
        assert "helpers.py\", line" in result.stderr and "harness.py" not in result.stderr
        last = {"arguments": "RuntimeError: no data", "variables": "ValueError: no width",
                "setup": "OSError: no cache to flush"}[name]
        assert result.stderr.rstrip().endswith(last)
        assert not Samples.read(tmp_path / name / "samples.jsonl").failures  # no implementation is blamed


def test_a_uniform_variable_the_ranks_profile_unlike_is_a_profile_error(tmp_path):
    """The dispatcher takes a uniform variable on trust; the profile compares
    it over the ranks (in the all-reduce that agrees on the variables), and
    where a point's arguments make it differ, ends (exit 2) naming the
    point and the variable.  Alike on every rank, it profiles."""
    (tmp_path / "helpers.py").write_text(
        "import numpy\nfrom hlc.runtime import world\n\n\n"
        "def ranked(count):\n    return numpy.ones(count + (world().rank if count > 4 else 0))\n\n\n"
        "def alike(count):\n    return numpy.ones(count)\n")
    description = ('library ranked\nfrom "helpers.py" import ranked\ninterface f(x: float64[]) -> float\n'
                   "    uniform n = len(x)\n    impl a = numpy.sum\n        time ~ 1 + n\n"
                   "    profile\n        for i in 2 .. 8 *= 2\n        x = ranked(i)\n        ranks 2\n")
    (tmp_path / "ranked.hl").write_text(description)
    result = subprocess.run([sys.executable, "-m", "hlc", "profile", str(tmp_path / "ranked.hl"),
                             "--build", str(tmp_path / "ranked")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert ("the profile's arguments of f() at i = 8 differ between the ranks: uniform variable 'n' is 8 on some "
            "ranks and 9 on others; build every rank's arguments alike there, or leave out 'uniform'") in result.stderr
    (tmp_path / "alike.hl").write_text(description.replace("import ranked", "import alike")
                                       .replace("ranked(i)", "alike(i)"))
    result = profile(hlc.parse_file(tmp_path / "alike.hl"), tmp_path / "samples.jsonl", tmp_path / "alike")
    assert result.complete and not result.failures


def test_a_failure_every_rank_wrote_is_said_once():
    """Under mpiexec each rank writes the same failure of a helper; the error
    gives it once, and not at all where the cause ends with it already."""
    message = "the profile's arguments of f() at i = 8 differ between the ranks: uniform variable 'n' …"
    alike = run._Outcome("crashed", None, f"the process exited with status 1: {message}",
                         stderr=f"{message}\n{message}\n")
    assert run.failed_outside("p.py", alike) == (
        f"the profiling program p.py failed outside any implementation (the process exited with status 1: "
        f"{message})")
    trace = "Traceback (most recent call last):\n  File \"helpers.py\", line 5\nRuntimeError: no data"
    twice = run._Outcome("crashed", None, "the process exited with status 1: RuntimeError: no data",
                         stderr=f"{trace}\n{trace}")
    assert run.failed_outside("p.py", twice).endswith(f"(the process exited with status 1: RuntimeError: no "
                                                     f"data):\n{trace}")
    apart = run._Outcome("crashed", None, "crashed with SIGSEGV", stderr="rank 0 said\nrank 1 said other")
    assert run.failed_outside("p.py", apart).endswith("(crashed with SIGSEGV):\nrank 0 said\nrank 1 said other")


@pytest.mark.parametrize("ranks", [2])
def test_profiling_under_mpiexec(tmp_path, ranks):
    library = hlc.parse_file(DESCRIPTIONS / "comm.hl")
    samples = tmp_path / "samples.jsonl"
    result = profile(library, samples, tmp_path / "build", ranks=[1, ranks])
    assert result.complete and not result.failures
    by_ranks = collections.Counter(r.P for r in Samples.read(samples).samples)
    assert by_ranks[1] == by_ranks[ranks] == 10 + 20
    logs = {r.variables["logP"] for r in Samples.read(samples).samples}
    assert logs == {0.0, 1.0}


class PauseRecorder:
    """Stands for a background compile: counts the programs it was paused for."""

    def __init__(self):
        self.pauses = 0

    @contextlib.contextmanager
    def paused(self):
        self.pauses += 1
        yield


@pytest.mark.parametrize("cores, pauses", [(2, 1), (1, 2)])
def test_a_smoke_profile_leaves_the_compile_running_beside_a_program_that_leaves_a_core(tmp_path, monkeypatch,
                                                                                         cores, pauses):
    """A quick build's compile runs beside its one-rank program on two cores;
    it is paused for the two-rank program, which takes both, and for every
    program on one core.  A profile that is not a smoke one pauses it for all."""
    monkeypatch.setattr(run, "usable_cores", lambda: cores)
    library = hlc.parse_file(DESCRIPTIONS / "comm.hl")
    smoke, plain = PauseRecorder(), PauseRecorder()
    profile(library, tmp_path / "smoke.jsonl", tmp_path / "build", ranks=[1, 2], meanwhile=smoke, smoke=True)
    assert smoke.pauses == pauses
    if cores == 2:
        profile(library, tmp_path / "plain.jsonl", tmp_path / "build", ranks=[1, 2], meanwhile=plain)
        assert plain.pauses == 2


def test_calibrated_models_predict_their_verification_samples(tmp_path):
    """A loose bound that catches wrong term values or a broken fit; the
    accuracy itself is measured by benchmarks/model_accuracy.py."""
    library = hlc.parse_file(DESCRIPTIONS / "faulty.hl")
    samples = tmp_path / "samples.jsonl"
    profile(library, samples, tmp_path / "build")
    records = Samples.read(samples)
    models = calibrate(library, records)
    tolerance = host_tolerance(records)
    verifying = []
    for name in ("good", "numpy"):
        entry = models.time(name)
        taken = [s for s in records.samples if s.implementation == name and s.verify]
        assert len(taken) == 5
        # each one verifies the model, unless a busy host disturbed it and the fit left it out
        assert entry.verification_samples <= 5
        assert entry.verification_samples + entry.disturbed_samples >= 5, entry
        assert "n" in entry.kept
        # the median sample the fit verified with (as the fit took it: those of slow spells left
        # out or scaled back), as one of five that a spike of the host slowed many times over sets the mean
        verified = [(s, seconds) for s in taken if (seconds := fitted_seconds(entry, s, tolerance)) is not None]
        predicted = [entry.coefficients.get("1", 0.0) + entry.coefficients["n"] * s.variables["n"] for s, _ in verified]
        errors = [1 + abs(seconds - p) / seconds for (_, seconds), p in zip(verified, predicted, strict=True)]
        assert not errors or statistics.median(errors) < 1.5, (errors, entry)
        verifying.append(len(verified))
    # a slow spell may cover one implementation's five verification calls, not both's
    assert any(verifying), verifying


def test_a_point_s_blocks_start_with_the_reference_and_draw_each_implementation_s_settings_in_turn():
    """The slower first block of an implementation at a point must not fall
    on the same setting at every point (harness.block_order)."""

    def implementation(name):
        return harness.Implementation(name, print, lambda v: True, lambda p, v: [], lambda r, p, v: None)

    radix, counting, numpy = implementation("radix"), implementation("counting"), implementation("numpy")
    candidates = ([(radix, {"bpd": b}) for b in range(1, 9)] + [(counting, {})] + [(numpy, {})]
                  + [(radix, {"bpd": 12})])
    firsts = collections.Counter()
    for index in range(200):
        order = harness.block_order(candidates, "numpy", random.Random(index))
        assert sorted(order, key=repr) == sorted(candidates, key=repr)
        names = [c[0].name for c in order]
        assert names == ["numpy"] + ["radix"] * 9 + ["counting"]
        firsts[order[1][1]["bpd"]] += 1
    assert set(firsts) == {*range(1, 9), 12}  # every setting is first somewhere
    assert max(firsts.values()) < 50  # and none at most points (uniform: 22 of 200)
    again = harness.block_order(candidates, "numpy", random.Random(7))
    assert again == harness.block_order(candidates, "numpy", random.Random(7))


def test_log_uniform_draws_give_each_octave_its_share():
    rng = random.Random(7)
    draws = [harness.log_uniform(rng, 1, 2**20 - 1) for _ in range(20_000)]
    assert min(draws) >= 1 and max(draws) <= 2**20 - 1
    octaves = collections.Counter(d.bit_length() for d in draws)  # octave k holds 2^(k-1) .. 2^k - 1
    assert all(abs(octaves[k] / len(draws) - 1 / 20) < 0.01 for k in range(1, 21))
    assert all(harness.log_uniform(rng, 5, 5) == 5 for _ in range(10))
    with pytest.raises(ValueError):
        harness.log_uniform(rng, 0, 10)


def test_a_log_scale_nest_is_walked_and_drawn_as_it_says(tmp_path):
    """The program's fitting points are the nest's (a real factor included),
    and its random points of a log-drawn loop spread over the octaves."""
    library = hlc.parse_file(DESCRIPTIONS / "scales.hl")
    program = runpy.run_path(str(prepare(library, tmp_path / "build")))
    interface = library.interfaces[0]
    assert list(program["total_points"]()) == list(points(interface.profile.loops, {}))
    rng = random.Random(3)
    counts = [program["total_random_point"](rng)["count"] for _ in range(4000)]
    below = sum(c < 400 for c in counts) / len(counts)  # 400 is the geometric midpoint of 8 .. 20000
    assert 0.45 < below < 0.55


def test_a_serving_program_takes_command_after_command_and_survives_its_failures(tmp_path):
    """One program takes the commands; a crash or a hang in a task costs a new
    program, which takes the same command again, without the failed implementation."""
    library = hlc.parse_file(DESCRIPTIONS / "faulty.hl")
    samples = tmp_path / "samples.jsonl"
    program = prepare(library, tmp_path / "build")
    spent = Breakdown()
    server = Server(program, samples, 1, 0, 3.0, None, spent)
    try:
        assert server.run({"survey": True}) is None
        assert server.run({"select": {"sort": [0, 1]}, "fitting_only": True}) is None
        first = {(r.index, r.verify) for r in Samples.read(samples).points}
        assert first == {(0, False), (1, False)}
        assert server.run({"verification_only": True}) is None
    finally:
        server.close()
    records = Samples.read(samples)
    assert {r.implementation for r in records.failures} == {"raises", "crashes", "hanging", "reversed"}
    assert spent.restarts == 2  # the crash and the hang
    assert len(records.headers) == 1 + spent.restarts
    assert any(r.verify for r in records.points)
    assert all(line.endswith("}") for line in samples.read_text().splitlines())
    assert server.child is None


def test_a_serving_command_can_narrow_the_candidates_of_a_point(tmp_path):
    """A select command's settings name the candidates worth timing at a
    point: only they are timed there; the points it does not name time all."""
    library = hlc.parse_file(DESCRIPTIONS / "squares.hl")
    samples = tmp_path / "samples.jsonl"
    program = prepare(library, tmp_path / "build")
    server = Server(program, samples, 1, 0, 60.0, None, Breakdown())
    try:
        server.run({"select": {"square_sum": [3, 4]}, "fitting_only": True,
                    "settings": {"square_sum": {"4": {"dot": [{}], "chunked": [{"block": 9}]}}}})
        first = Samples.read(samples).samples
        # a measured point is measured again at the candidates a command names there
        server.run({"select": {"square_sum": [4]}, "fitting_only": True,
                    "settings": {"square_sum": {"4": {"chunked": [{"block": 6}]}}}})
        again = Samples.read(samples).samples[len(first):]
    finally:
        server.close()
    timed = collections.defaultdict(set)
    for r in first:
        timed[r.index].add((r.implementation, json.dumps(r.parameters)))
    assert timed[4] == {("dot", "{}"), ("chunked", '{"block": 9}')}
    assert {name for name, _ in timed[3]} == {"dot", "loop", "chunked"} and len(timed[3]) > 3
    assert [(r.index, r.implementation, r.parameters) for r in again] == [(4, "chunked", {"block": 6})]


def test_a_serving_command_takes_random_points_for_one_implementation_alone(tmp_path):
    """``own`` asks for that many random points of the nest in all for one
    implementation: fitting samples of it alone, each at a random setting,
    at indices apart from the nest's; drawn from its own seeded stream, so
    that a second command for as many takes nothing, and one for more
    takes the next ones."""
    library = hlc.parse_file(DESCRIPTIONS / "squares.hl")
    samples = tmp_path / "samples.jsonl"
    program = prepare(library, tmp_path / "build")
    server = Server(program, samples, 1, 0, 60.0, None, Breakdown())
    try:
        server.run({"select": {"square_sum": []}, "own": {"square_sum": {"chunked": 4}}, "verifying": 0.0})
        first = Samples.read(samples).samples
        server.run({"select": {"square_sum": []}, "own": {"square_sum": {"chunked": 4}}, "verifying": 0.0})
        unchanged = Samples.read(samples).samples
        server.run({"select": {"square_sum": []}, "own": {"square_sum": {"chunked": 6, "loop": 2}},
                    "verifying": 0.0})
        records = Samples.read(samples)
    finally:
        server.close()
    chunked = 2 * harness.OWN_STRIDE  # the implementations' order in the description: dot, loop, chunked
    assert sorted((r.implementation, r.verify, r.index) for r in first) == \
        [("chunked", False, harness.OWN_INDEX + chunked + k) for k in range(4)]
    assert unchanged == first
    later = records.samples[len(first):]
    assert sorted((r.implementation, r.index - harness.OWN_INDEX) for r in later) == \
        [("chunked", chunked + 4), ("chunked", chunked + 5), ("loop", harness.OWN_STRIDE),
         ("loop", harness.OWN_STRIDE + 1)]
    # random points and settings: off the nest's grid of sizes (1, 8, 64, ...) and blocks (6, 9, 12)
    drawn = [r for r in records.samples if r.implementation == "chunked"]
    assert len({r.variables["n"] for r in drawn}) >= 4 and any(r.variables["n"] not in (1, 8, 64, 512, 4096)
                                                               for r in drawn)
    assert all(6 <= r.parameters["block"] <= 12 for r in drawn)
    assert len({r.parameters["block"] for r in drawn}) >= 2
    # the fit takes them as fitting samples
    assert calibrate(library, records).time("chunked").samples >= 6


def test_a_serving_command_takes_a_share_of_the_verification_points_with_its_fitting_points(tmp_path):
    """An adaptive round's command takes its fitting points and a share of
    the verification points still wanted (``verifying``), new ones each
    time, so that the verification samples are spread over the profile
    instead of falling in its last seconds; verification_only takes the rest."""
    library = hlc.parse_file(DESCRIPTIONS / "squares.hl")
    samples = tmp_path / "samples.jsonl"
    program = prepare(library, tmp_path / "build")
    server = Server(program, samples, 1, 0, 60.0, None, Breakdown())
    wanted = library.interfaces[0].profile.verify  # 5
    try:
        server.run({"select": {"square_sum": [0]}, "verifying": 0.5})
        first = Samples.read(samples).points
        server.run({"select": {"square_sum": [1]}, "verifying": 0.5})
        second = Samples.read(samples).points[len(first):]
        server.run({"select": {"square_sum": [2]}, "verifying": 0.0})
        third = Samples.read(samples).points[len(first) + len(second):]
        server.run({"verification_only": True})
        records = Samples.read(samples)
    finally:
        server.close()
    verified = [r.index for r in first if r.verify]
    assert [r.index for r in first if not r.verify] == [0] and len(verified) == math.ceil(0.5 * wanted)
    again = [r.index for r in second if r.verify]
    assert len(again) == math.ceil(0.5 * (wanted - len(verified))) and not set(again) & set(verified)
    assert [(r.index, r.verify) for r in third] == [(2, False)]
    samples_of = collections.Counter(r.implementation for r in records.samples if r.verify)
    assert samples_of and all(count >= wanted for count in samples_of.values())


def test_the_ranks_of_a_serving_program_exchange_messages_before_each_timing_command(tmp_path):
    """The ranks sleep between commands; each command that times starts with
    SETTLE seconds of messages between them, accounted as warm-up, which one
    rank has no need of.  A survey times nothing and goes without; so does a
    command that selects no point, but for its settling."""
    library = hlc.parse_file(DESCRIPTIONS / "comm.hl")
    program = prepare(library, tmp_path / "build")
    for ranks in (1, 2):
        surveying, timing = Breakdown(), Breakdown()
        server = Server(program, tmp_path / f"samples-{ranks}.jsonl", ranks, 0, 60.0, None, surveying)
        try:
            assert server.run({"survey": True}) is None
            assert server.run({"survey": True}) is None
            server.spent = timing
            assert server.run({"select": {}, "fitting_only": True}) is None
            assert server.run({"select": {}, "fitting_only": True}) is None
        finally:
            server.close()
        assert surveying.seconds.get("warm-up", 0.0) == 0.0
        settling = timing.seconds.get("warm-up", 0.0)
        if ranks == 1:
            assert settling == 0.0
        else:
            assert 2 * harness.SETTLE <= settling < 2 * harness.SETTLE + 1.0


def test_the_parent_reads_a_program_s_events_in_batches_and_the_end_of_a_command_at_once(monkeypatch):
    """A program writes an event per timing.  The parent reads them a
    READ_PAUSE apart, each read's lines in one batch, not waking for every
    line; the event that ends a command, and the progress event of a
    command's last point, which the end follows, are followed by no pause,
    so that the parent learns of the end at once."""
    monkeypatch.setattr(run, "READ_PAUSE", 1.0)
    reading, writing = os.pipe()
    lines: queue.Queue = queue.Queue()
    with os.fdopen(reading, "r") as stream:
        threading.Thread(target=run._read_lines, args=(stream, lines), daemon=True).start()
        for index in range(100):
            os.write(writing, json.dumps({"event": "task", "index": index}).encode() + b"\n")
            time.sleep(0.001)
        os.write(writing, json.dumps({"event": "finished"}).encode() + b"\n")
        batches = [lines.get(timeout=10)]
        while json.loads(batches[-1][-1])["event"] != "finished":
            batches.append(lines.get(timeout=10))
        assert [json.loads(line).get("index") for batch in batches for line in batch] == [*range(100), None]
        assert len(batches) <= 3  # the first read, then what a pause gathered (a line may straddle two)
        # no pause after the end of a command, nor after its last point's progress
        for event in ({"event": "task", "index": 100}, "the pause after it",
                      {"event": "progress", "done": 3, "total": 3}, {"event": "finished"}):
            if isinstance(event, str):
                time.sleep(run.READ_PAUSE + 0.2)
                continue
            written = time.monotonic()
            os.write(writing, json.dumps(event).encode() + b"\n")
            assert lines.get(timeout=10) == [json.dumps(event)]
            assert time.monotonic() - written < run.READ_PAUSE
        os.close(writing)
        assert lines.get(timeout=10) is None


def test_a_serving_program_under_mpiexec_passes_its_commands_to_every_rank(tmp_path):
    library = hlc.parse_file(DESCRIPTIONS / "comm.hl")
    samples = tmp_path / "samples.jsonl"
    program = prepare(library, tmp_path / "build")
    server = Server(program, samples, 2, 0, 60.0, None, Breakdown())
    try:
        server.run({"select": {name: [0] for name in (i.name for i in library.interfaces)},
                    "fitting_only": True})
        server.run({"verification_only": True, "deadline": time.time() + 60})
    finally:
        server.close()
    records = Samples.read(samples)
    assert len(records.headers) == 1
    assert {r.verify for r in records.points} == {False, True}
    assert {r.P for r in records.samples} == {2}


@pytest.mark.parametrize("waits", [False, True])
def test_a_profile_asked_to_wait_for_the_host_s_pace_runs_its_programs_so(tmp_path, waits):
    """``host_waits`` (hlc profile and hlc build --host-waits) reaches the
    programs, run once or serving, and their headers say that they waited."""
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    once = tmp_path / "once.jsonl"
    profile(library, once, tmp_path / "build", host_waits=waits)
    served = tmp_path / "served.jsonl"
    server = Server(prepare(library, tmp_path / "build"), served, 1, 0, 10.0, None, Breakdown(), host_waits=waits)
    try:
        assert server.run({"select": {"square_sum": [0, 1]}, "fitting_only": True}) is None
    finally:
        server.close()
    for path in (once, served):
        records = Samples.read(path)
        assert records.samples
        assert {header.host_waits for header in records.headers} == {True if waits else None}
    assert Samples.load(once).header.host_waits is (True if waits else None)


def test_hlc_build_profile_and_recalibrate_pass_host_waits_on(tmp_path, monkeypatch):
    from hlc import cli
    from hlc.calibrate import run as running
    from hlc.dispatch import build as building

    asked = []

    def stop(*args, **options):
        asked.append(options.get("host_waits"))
        raise KeyboardInterrupt

    monkeypatch.setattr(building, "build", stop)
    monkeypatch.setattr(building, "recalibrate", stop)
    monkeypatch.setattr(running, "profile", stop)
    monkeypatch.setattr(cli, "_compile_ahead", lambda *args: None)
    description = str(DESCRIPTIONS / "crossing.hl")
    for command in (["build", description], ["recalibrate", description], ["profile", description]):
        for waits in ([], ["--host-waits"]):
            with contextlib.suppress(KeyboardInterrupt):
                cli.main([*command, "--out", str(tmp_path / "out"), *waits])
    assert asked == [False, True] * 3
