"""Do the profile and the oracle measure the same costs?

The profile times each candidate in a block of back-to-back timings; the
oracle of ``hlc evaluate`` times the candidates in rounds, each timing
after a few milliseconds of untimed calls of its own (``WARM_SECONDS``).
Where the two contexts give an implementation different costs, the models
(learnt from the profile) and the evaluation disagree by that much, and
the choices between alternatives whose costs move apart lean one way at
near ties (``hlc evaluate BUILD --replay`` prints each implementation's
offset against its model).

This times the points of the build's own exhaustive evaluation again, in
one process of the build's profiling program (under ``mpiexec`` at the
evaluation's rank count), side by side:

* ``blocks``: the profiler's blocks (``TimingEngine.time_blocks``);
* ``rounds W ms``: the oracle's rounds, every timing warmed for W ms
  (``TimingEngine.time_rounds``), for each W of ``--warm``;
* ``loop``: what a program calling the implementation sees: its calls back
  to back for about ``LOOP_SECONDS`` after one barrier, the
  implementations alternating;
* ``model``: the build's model, learnt from the profile's samples, which
  its serving program timed in blocks between the build's fits.

and prints, per implementation, the geometric mean over the points of
each context's median time divided by the blocks' (at the parameters the
evaluation timed first, or with ``--settings all`` at every setting it
timed, one row each, labelled as the evaluation labels them; no loop for
an interface whose calls change their arguments).  ``--within`` keeps the
points whose variable lies in a range: a parameter's choice errs where
some settings' costs depend on how they are timed, and at some sizes
only.  The last line gives, in each context, the ratio of the first
implementation to the one whose ratio to it moves most between the
profile's blocks and the oracle's rounds at ``WARM_SECONDS``:

    A/B: blocks X.XXX, rounds W ms X.XXX (for each W of --warm), loop X.XXX, model X.XXX

    python benchmarks/measuring_context.py BUILD [--interface NAME] [--points N] [--warm 0,1,2,5]
        [--settings first|all] [--within VAR=LOW..HIGH ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Seconds of back-to-back calls a user-like loop lasts.
LOOP_SECONDS = 0.04
#: Times each context is taken at a point, the contexts alternating.
REPETITIONS = 3


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", type=Path)
    parser.add_argument("--interface", help="the interface to time (default: the evaluation's first)")
    parser.add_argument("--points", type=int, default=60, help="the evaluation's first N points (default 60)")
    parser.add_argument("--warm", default="0,1,2,5", help="the oracle's warm-ups to try, in ms")
    parser.add_argument("--settings", choices=("first", "all"), default="first",
                        help="each implementation at the first setting the evaluation timed (default), or at all")
    parser.add_argument("--within", metavar="VAR=LOW..HIGH", action="append", type=_range, default=[],
                        help="only the points whose variable VAR lies from LOW to HIGH (repeatable)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    evaluation = json.loads((options.build / "evaluation.json").read_text())
    if evaluation["settings"]["params"] != "exhaustive":
        parser.error(f"{options.build}/evaluation.json is not exhaustive: run hlc evaluate BUILD --params exhaustive")
    name = options.interface or next(iter(evaluation["interfaces"]))
    if name not in evaluation["interfaces"]:
        parser.error(f"--interface: the evaluation has no interface {name!r}")
    if options.child:
        with tempfile.TemporaryDirectory(prefix="measuring-context-") as scratch:
            return measure(options, evaluation, name, Path(scratch))
    ranks = evaluation["settings"]["ranks"][-1]
    from hlc.calibrate.run import mpiexec

    command = [sys.executable, __file__, *argv, "--child"]
    if ranks > 1:
        command = [mpiexec(), "-n", str(ranks), *command]
    finished = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(finished.stdout)
    sys.stderr.write(finished.stderr)
    return finished.returncode


def measure(options: argparse.Namespace, evaluation: dict, name: str, scratch: Path) -> int:
    from hlc.calibrate import harness
    from hlc.calibrate.allocator import keep_freed_memory
    from hlc.calibrate.timing import WARM_SECONDS
    from hlc.evaluation.inputs import predictor_of

    keep_freed_memory()
    program = next(options.build.glob("profile_*.py"))
    spec = importlib.util.spec_from_file_location(program.stem, program)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    interface = next(value for value in vars(module).values()
                     if isinstance(value, harness.Interface) and value.name == name)
    implementations = {i.name: i for i in interface.implementations}
    run = harness.ProgramRun(harness.parser(name).parse_args(["--out", str(scratch / f"{os.getpid()}.jsonl")]))
    engine, context = run.engine, run.context
    warms = [float(w) / 1000 for w in options.warm.split(",")]
    contexts = ["blocks", *(f"rounds {w * 1000:g} ms" for w in warms)] + ([] if interface.mutable else ["loop"])
    contexts.append("model")
    predictor = predictor_of(options.build)[1]
    timed_at_warm = engine.timing
    points = [p for p in evaluation["interfaces"][name]["points"] if p["P"] == context.size
              and all(low <= p["variables"][variable] <= high for variable, low, high in options.within)]
    points = points[:options.points]
    # medians[context][implementation][point's number]: its median time there
    medians: dict[str, dict[str, dict[int, float]]] = {c: {} for c in contexts}
    for number, point in enumerate(points):
        arguments, _ = run.inputs(interface, 1, point["point"])
        # label → (implementation, its parameters): a row of the table each
        first: dict[str, tuple[str, dict]] = {}
        for candidate in point["candidates"]:
            if candidate["implementation"] in implementations:
                row = candidate["label"] if options.settings == "all" else candidate["implementation"]
                first.setdefault(row, (candidate["implementation"], candidate["parameters"]))
        candidates = [(implementations[i], dict(parameters)) for i, parameters in first.values()]
        label = {(i, _setting(parameters)): row for row, (i, parameters) in first.items()}
        times: dict[str, dict[str, list[float]]] = {c: {i: [] for i in first} for c in contexts}
        for _ in range(REPETITIONS):
            for (implementation, parameters, _), values, _ in engine.time_blocks(interface, candidates, arguments,
                                                                                point["point"]):
                times["blocks"][label[implementation.name, _setting(parameters)]].append(statistics.median(values))
            for warm in warms:
                ready = engine.warm_up(interface, candidates, arguments, point["point"])
                engine.timing = lambda *given, warm=warm, **named: timed_at_warm(*given, **{**named, "warm": warm})
                try:
                    timings = engine.time_rounds(interface, ready, arguments, point["point"])
                finally:
                    engine.timing = timed_at_warm
                for (implementation, parameters, _), values in zip(ready, timings, strict=True):
                    if values:
                        times[f"rounds {warm * 1000:g} ms"][label[implementation.name, _setting(parameters)]].append(
                            statistics.median(values))
            if "loop" in times:
                for implementation, parameters in candidates:
                    times["loop"][label[implementation.name, _setting(parameters)]].append(
                        loop(context, implementation, parameters, arguments))
        for implementation, parameters in candidates:
            times["model"][label[implementation.name, _setting(parameters)]].append(
                predictor.evaluate(implementation.name, {**point["variables"], **parameters}))
        for c in contexts:
            for i in first:
                if times[c][i]:
                    medians[c].setdefault(i, {})[number] = statistics.median(times[c][i])
    if context.rank != 0:
        return 0

    def mean_ratio(numerators: dict[int, float], denominators: dict[int, float]) -> float:
        """The geometric mean of numerator / denominator at the points both have."""
        logs = [math.log(numerators[n] / denominators[n]) for n in numerators.keys() & denominators.keys()
                if numerators[n] > 0 and denominators[n] > 0]
        return math.exp(statistics.fmean(logs)) if logs else math.nan

    print(f"{options.build.name}: {name}, {len(points)} points of its evaluation at {context.size} rank(s); "
          f"each context's time / the profile's blocks', geometric mean over the points")
    names = list(medians["blocks"])
    width = max([16, *(len(i) + 2 for i in names)])
    print(f"{'implementation':<{width}}" + "".join(f"{c:>14}" for c in contexts[1:]))
    for i in names:
        print(f"{i:<{width}}" + "".join(f"{mean_ratio(medians[c].get(i, {}), medians['blocks'][i]):>14.3f}"
                                   for c in contexts[1:]))
    oracle = f"rounds {WARM_SECONDS * 1000:g} ms"
    if len(names) < 2 or oracle not in medians:
        return 0
    base = names[0]
    def between(c: str, a: str, b: str) -> float:
        return mean_ratio(medians[c].get(a, {}), medians[c].get(b, {}))

    shifts = {i: abs(math.log(between(oracle, base, i) / between("blocks", base, i))) for i in names[1:]}
    moved = max((i for i in shifts if not math.isnan(shifts[i])), key=shifts.__getitem__, default=None)
    if moved is not None:
        print(f"{base}/{moved}: " + ", ".join(f"{c} {between(c, base, moved):.3f}" for c in contexts))
    return 0


def _setting(parameters: dict) -> tuple:
    """A candidate's parameters as a key."""
    return tuple(sorted(parameters.items()))


def _range(text: str) -> tuple[str, float, float]:
    """``VAR=LOW..HIGH`` as (VAR, LOW, HIGH)."""
    variable, _, bounds = text.partition("=")
    low, _, high = bounds.partition("..")
    try:
        return variable.strip(), float(low), float(high)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected VAR=LOW..HIGH, such as n=500000..1000000") from None


def loop(context, implementation, parameters: dict, arguments: tuple) -> float:
    """Seconds a call of the implementation takes in a loop of calls back
    to back, LOOP_SECONDS long, after one call and a barrier (every rank's
    slowest)."""
    call = implementation.call
    call(*arguments, **parameters)
    context.barrier()
    started = time.perf_counter()
    call(*arguments, **parameters)
    one = context.maximum(time.perf_counter() - started)
    count = max(3, int(LOOP_SECONDS / max(one, 1e-7)))
    context.barrier()
    started = time.perf_counter()
    for _ in range(count):
        call(*arguments, **parameters)
    return context.maximum(time.perf_counter() - started) / count


if __name__ == "__main__":
    sys.exit(main())
