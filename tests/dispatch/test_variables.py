"""Explanatory variables that use P and earlier variables work in every stage:
the profiling program, the compiled module and the pure-Python module."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hlc
from hlc.artefacts.models import ImplementationModel, Models, TimeModel
from hlc.artefacts.models import load as load_models
from hlc.dispatch.build import package
from hlc.language.functions import bitwidth
from hlc.model.predict import Predictor, term_values
from hlc.model.terms import model_terms

DESCRIPTION = """\
library chained
from numpy import ones
interface f(x: float64[]) -> float
    n = len(x)
    cells = n * 2 + P
    halves = cells / 2 + logP
    impl a = numpy.sum
        time ~ 1 + cells
    impl b = math.fsum
        time ~ 1 + halves
    profile
        for i in 4 .. 10 ++
        x = ones(1 << i)
"""


def test_variables_may_use_p_and_earlier_variables(tmp_path, monkeypatch):
    description = tmp_path / "chained.hl"
    description.write_text(DESCRIPTION)
    result = hlc.build(description, out=tmp_path / "chained", quick=True)
    samples = [json.loads(line) for line in (tmp_path / "chained" / "samples.jsonl").read_text().splitlines()]
    recorded = next(s["variables"] for s in samples if s["kind"] == "sample")
    assert recorded["cells"] == 2 * recorded["n"] + 1 and recorded["halves"] == recorded["cells"] / 2
    compiled = hlc.load(tmp_path / "chained")
    x = np.ones(100)
    assert compiled.variables_f(x) == {"n": 100, "cells": 201, "halves": 100.5, "P": 1, "logP": 0}
    monkeypatch.setenv("CC", "no-such-compiler")
    (tmp_path / "python").mkdir()
    with pytest.warns(RuntimeWarning, match="no C compiler"):
        assert not package(hlc.parse_file(description), result.models, {}, tmp_path / "python")[1]
    python = hlc.load(tmp_path / "python")
    assert python.choose(x).implementation == compiled.choose(x).implementation
    assert python.f(x) == compiled.f(x) == 100.0


def test_hlc_explain_prints_the_module_s_predictions_and_choice(tmp_path, capsys):
    from hlc.cli import main
    from hlc.dispatch.explain import _seconds

    description = tmp_path / "chained.hl"
    description.write_text(DESCRIPTION)
    hlc.build(description, out=tmp_path / "chained", quick=True)
    module = hlc.load(tmp_path / "chained")
    # inside the profiled range (n = 16 .. 1024): beyond it, a model of a
    # nearly constant cost fitted on a busy host may extrapolate to a
    # non-positive time, which a choice reports as none (hlc_time)
    variables = {"n": 500.0, "cells": 1001.0, "halves": 500.5}
    assert main(["explain", str(tmp_path / "chained"), *(f"{k}={v}" for k, v in variables.items())]) == 0
    lines = capsys.readouterr().out.splitlines()
    choice = module.choose_f_at(**variables)
    for name in ("a", "b"):
        line = next(line for line in lines if line.startswith(f"{name} "))
        assert _seconds(module.predict(name, **variables)) in line
        assert _seconds(choice.predicted[name]) in line
        assert ("← chosen" in line) == (name == choice.implementation)
    assert main(["explain", str(tmp_path / "chained"), "n=1"]) == 2
    assert "missing cells, halves" in capsys.readouterr().err


UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def _printed_band(lines: list[str], name: str) -> str:
    """The "± 95%" column of an implementation's row: "1.234 µs" or "—"."""
    header = next(line for line in lines if line.startswith("implementation "))
    assert "± 95%" in header
    row = next(line for line in lines if line.startswith(f"{name} "))
    fields = row.split()  # name, predicted value, unit, band value, unit, fit, verified, …
    return fields[3] if fields[3] == "—" else f"{fields[3]} {fields[4]}"


def test_hlc_explain_prints_the_confidence_band_of_the_models(tmp_path, capsys):
    from hlc.cli import main
    from hlc.dispatch.explain import explanation

    description = tmp_path / "chained.hl"
    description.write_text(DESCRIPTION)
    hlc.build(description, out=tmp_path / "chained", quick=True)
    module = hlc.load(tmp_path / "chained")
    raw = json.loads((tmp_path / "chained" / "models.json").read_text())
    models = Models.from_json(raw)
    variables = {"n": 600.0, "cells": 1201.0, "halves": 600.5}
    assert main(["explain", str(tmp_path / "chained"), *(f"{k}={v}" for k, v in variables.items())]) == 0
    lines = capsys.readouterr().out.splitlines()
    choice = module.choose_f_at(**variables)
    assert choice.implementation in ("a", "b")
    library = hlc.parse_file(description)
    predictor = Predictor(library, models.times())
    for name in ("a", "b"):  # the chosen one among them
        entry = models.time(name)
        kept = list(entry.covariance)
        assert sorted(kept) == sorted(entry.kept)
        implementation = library.interface("f").implementation(name)
        values = term_values(predictor, implementation, model_terms(implementation.model("time"), entry.discovered),
                             variables)
        x = np.array([1.0 if term == "1" else values[term] for term in kept])
        sigma = np.array([[entry.covariance[a][b] for b in kept] for a in kept])
        expected = entry.quantile * np.sqrt(x @ sigma @ x)
        value, unit = _printed_band(lines, name).split()
        # printed to 4 significant digits
        assert float(value) * UNITS[unit] == pytest.approx(expected, rel=1e-3)
        # Σ's diagonal is the half-widths' source: (h/t)² = Σ_ii
        for term in kept:
            assert (entry.half_widths[term] / entry.quantile) ** 2 == pytest.approx(
                entry.covariance[term][term], rel=1e-9)
    # the module's own explain_f_at prints the same table
    assert _printed_band(module.explain_f_at(**variables).splitlines(), choice.implementation) == \
        _printed_band(lines, choice.implementation)

    # models.json written before bands (no covariance, no quantile) still explains, band "—"
    old = json.loads(json.dumps(raw))
    for record in old["implementations"].values():
        record["time"].pop("covariance")
        record["time"].pop("quantile")
    library = hlc.parse_file(description)
    shown = {**variables, "P": 1.0, "logP": 0.0}
    text = explanation(library, Models.from_json(old), "f", shown, choice).splitlines()
    assert _printed_band(text, "a") == _printed_band(text, "b") == "—"
    assert "← chosen" in next(line for line in text if line.startswith(f"{choice.implementation} "))
    # not fitted: "—" as well
    old["implementations"]["b"]["time"] = {"status": "unfitted", "cause": "no samples"}
    assert _printed_band(explanation(library, Models.from_json(old), "f", shown, choice).splitlines(), "b") == "—"


FACTORED = """\
library factored
from numpy import ones
interface f(x: float64[]) -> float
    n = len(x)
    impl a = numpy.sum
        time ~ 1 + n
    impl b = math.fsum
        time = 2e-9 * n
    profile
        for i in 4 .. 10 ++
        x = ones(1 << i)
"""


def test_explain_shows_no_band_for_a_factored_model():
    from hlc.dispatch.explain import explanation
    from hlc.dispatch.reference import Choice

    library = hlc.parse(FACTORED)
    entry = TimeModel("fitted", terms=("n",), kept=("1", "n"), coefficients={"1": 1e-6, "n": 1e-9},
                      half_widths={"1": 2e-7, "n": 3e-11}, mre=1.01, verification_mre=1.02,
                      covariance={"1": {"1": 4e-15, "n": -1e-18}, "n": {"1": -1e-18, "n": 9e-22}}, quantile=2.0)
    factored = TimeModel("factored", verification_mre=1.1)
    models = Models("factored", "<string>",
                    {"a": ImplementationModel("f", entry), "b": ImplementationModel("f", factored)})
    variables = {"n": 1000.0, "P": 1.0, "logP": 0.0}
    choice = Choice("a", {}, {"a": 2e-6, "b": 2e-6})
    lines = explanation(library, models, "f", variables, choice).splitlines()
    expected = 2.0 * np.sqrt(4e-15 - 2 * 1e-18 * 1000 + 9e-22 * 1000**2)
    value, unit = _printed_band(lines, "a").split()
    assert float(value) * UNITS[unit] == pytest.approx(expected, rel=1e-3)
    assert _printed_band(lines, "b") == "—"


# One interface per (signature, variables, implementation): the same profile.
INTERFACE = """\
interface {signature}
    n = len(x)
{variables}
    impl {implementation}
        time ~ 1 + n
    profile
        for i in 4 .. 8 ++
        x = arange(1 << i)
"""
WIDTH = "    width = bitwidth(x)"
# bitwidth() of floats, its span over the ranks combined with the agreement or before it
FLOATS = """
interface floats{name}(x: float[])
    n = len(x)
    width = bitwidth(x){later}
    impl told_floats{name} = told_span
        time ~ 1 + n
    profile
        for i in 4 .. 8 ++
        x = linspace(-1.5, 1 << i, 1 << i)
"""
# Two implementations alike but for their names: a choice the ranks must agree on, unless n is uniform
# (the interface the uniform-dispatch benchmark times).
_BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "uniform_dispatch.py"
_spec = importlib.util.spec_from_file_location("uniform_dispatch_script", _BENCHMARK)
uniform_dispatch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(uniform_dispatch)
COUNTED = uniform_dispatch.INTERFACE
# Every other argument function, which the module reads in C from the checked arrays.
SHAPES = """
interface shapes(x: float64[,], y: int[])
    n = len(x)
    r = rows(x)
    c = cols(x)
    cells = size(x)
    bytes = nbytes(y)
    item = itemsize(y)
    impl shape_of = told_extremes
        time ~ 1 + cells + bytes
    profile
        for i in 2 .. 6 ++
        x = grid(i)
        y = arange(i)
"""
HEADER = ("library widths\nfrom numpy import arange, linspace\n"
          "from \"probe.py\" import told_extremes, told_span, grid\n")
WIDTHS = HEADER + "".join(
    INTERFACE.format(signature=signature, variables=variables, implementation=implementation)
    for signature, variables, implementation in (
        ("span(x: int[]) -> int", WIDTH, "numpy = numpy.max"),
        ("shared(x: int[])", WIDTH, "told = told_extremes"),
        ("changed(x: mutable int[])", WIDTH, "told_changed = told_extremes"),
        # a call that stops after bitwidth() read x: at 4096 elements, a division by zero
        ("halting(x: int[])", WIDTH + "\n    after = 1 // (n - 4096)", "told_halting = told_extremes"),
        ("plain(x: int[])", "", "told_plain = told_extremes"),
        ("spanned(x: int[])", WIDTH, "told_over_ranks = told_span"),
        # a later variable reads the width: its span is combined before the agreement
        ("read_later(x: int[])", WIDTH + "\n    bits = width + 1", "told_later = told_span"))) + "".join(
    FLOATS.format(name=name, later=later) for name, later in (("", ""), ("_read_later", "\n    bits = width + 1"))) + \
    COUNTED.format(name="counted", uniform="") + COUNTED.format(name="counted_uniform", uniform="uniform ") + SHAPES
# What the implementations are told of their argument's extremes.
PROBE = """\
from hlc.runtime.extremes import measured, measured_over_ranks


def told_extremes(x):
    return measured(x)


def told_span(x):
    return measured_over_ranks()


def grid(rows):
    import numpy

    return numpy.ones((rows, rows + 1))
"""
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.fixture(scope="module")
def widths(tmp_path_factory):
    folder = tmp_path_factory.mktemp("widths")
    (folder / "widths.hl").write_text(WIDTHS)
    (folder / "probe.py").write_text(PROBE)
    hlc.build(folder / "widths.hl", out=folder / "build", quick=True)
    return hlc.load(folder / "build")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(0, 40), cols=st.integers(0, 40), layout=st.sampled_from(["C", "F", "strided", "list"]),
       dtype=st.sampled_from(DTYPES), length=st.integers(0, 50))
def test_the_module_reads_the_argument_functions_as_the_language_defines_them(widths, rows, cols, layout, dtype,
                                                                              length):
    """len, rows, cols, size, nbytes and itemsize, which the module reads in
    C from the checked arrays, are NumPy's, whatever the layout; a list is
    read as the array it becomes."""
    x = np.arange(rows * cols * 2, dtype=np.float64).reshape(rows, cols * 2)
    x = {"C": x[:, :cols].copy(), "F": np.asfortranarray(x[:, :cols]), "strided": x[:, ::2],
         "list": x[:, :cols].tolist()}[layout]
    y = np.arange(length).astype(dtype)
    if layout == "list" and rows == 0:  # [] is no matrix
        with pytest.raises(ValueError, match="argument 'x' must be 2-dimensional, not 1-dimensional"):
            widths.variables_shapes(x, y)
        return
    assert widths.variables_shapes(x, y) == {"n": rows, "r": rows, "c": cols, "cells": rows * cols,
                                             "bytes": y.nbytes, "item": y.itemsize, "P": 1, "logP": 0}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dtype=st.sampled_from(DTYPES), length=st.integers(2, 20_000), seed=st.integers(0, 2**32 - 1),
       order=st.sampled_from(["native", "swapped", "strided"]))
def test_the_module_computes_bitwidth_as_the_language_defines_it(widths, dtype, length, seed, order):
    """The compiled one-pass span (vectorized where the compiler can) at every
    length, against the definition: the bits of max − min."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    low = int(rng.integers(info.min, info.max, dtype=dtype, endpoint=True))
    high = int(rng.integers(low, info.max, dtype=dtype, endpoint=True))
    x = rng.integers(low, high, size=length, dtype=dtype, endpoint=True)
    where = rng.choice(length, size=2, replace=False)  # the extremes anywhere, also in a vector loop's tail
    x[where] = high, low
    if order == "swapped":
        x = x.astype(x.dtype.newbyteorder())
    elif order == "strided":
        x = np.repeat(x, 2)[::2]
    assert widths.variables_span(x)["width"] == bitwidth(x) == (high - low).bit_length()


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_extremes_bitwidth_reads_are_shared_with_the_implementation_for_that_call_only(widths, dtype):
    """From SHARED_FROM elements on, the implementation a call goes to is told
    the smallest and largest value the dispatcher's pass found, for that
    array object alone; not for a short array, a copy, an argument the
    implementations may change, nor once the call is over."""
    from hlc.runtime import extremes

    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    x = rng.integers(info.min, info.max, size=extremes.SHARED_FROM, dtype=dtype, endpoint=True)
    assert widths.shared(x) == (int(x.min()), int(x.max()))
    assert extremes.measured(x) is None  # forgotten when the call returned
    assert widths.shared(x[: extremes.SHARED_FROM - 1]) is None  # too short to be worth it
    if x.dtype.itemsize > 1:  # the other byte order: measured in Python, by NumPy
        assert widths.shared(x.astype(x.dtype.newbyteorder())) is None
    assert widths.shared(np.repeat(x, 2)[::2]) is None  # not contiguous: likewise
    assert widths.changed(x.copy()) is None  # mutable: never shared
    widths.choose_shared(x)
    widths.variables_shared(x)
    assert extremes.measured(x) is None and widths.shared(x) == (int(x.min()), int(x.max()))


SPANNED = """
import sys
import numpy as np
import hlc
from hlc.runtime import world
from hlc.runtime.extremes import measured_over_ranks

from reduce_counter import ReduceCounter

team = world()
widths = hlc.load(sys.argv[1])
reduces = ReduceCounter(team)
rng = np.random.default_rng(team.rank)
for dtype in ("int8", "uint16", "int64", "uint64"):
    info = np.iinfo(dtype)
    for length in (0, 3, 5000):
        x = rng.integers(info.min, info.max, size=length if team.rank else 7, dtype=dtype, endpoint=True)
        if length == 3:  # not contiguous: its extremes read in Python
            x = np.repeat(x, 2)[::2]
        parts = team.allgatherv(np.ascontiguousarray(x))
        expected = (int(parts.min()), int(parts.max()))
        before = reduces.calls
        told = widths.spanned(x)
        right = told == expected and reduces.calls == before + 1 and measured_over_ranks() is None
        before = reduces.calls
        right = right and widths.read_later(x) == expected and reduces.calls == before + 1
        right = right and widths.variables_span(x)["width"] == (expected[1] - expected[0]).bit_length()
        if team.rank == 0:
            print(dtype, length, team.allgatherv(np.array([right])).tolist())
        else:
            team.allgatherv(np.array([right]))
for first, others, expected in (([-3.5, 100.25], [7.0, -0.5], (-3.5, 100.25)),
                                ([-1.0], [2.0 ** 70], (-1.0, 2.0 ** 70)), ([], [], (None, None))):
    x = np.array(others if team.rank else first, dtype=np.float64)
    before = reduces.calls
    right = widths.floats(x) == expected and reduces.calls == before + 1
    before = reduces.calls
    right = right and widths.floats_read_later(x) == expected and reduces.calls == before + 1
    if team.rank == 0:
        print("float64", expected, team.allgatherv(np.array([right])).tolist())
    else:
        team.allgatherv(np.array([right]))
"""


@pytest.mark.parametrize("ranks", [2, 3])
def test_under_mpiexec_the_span_over_the_ranks_is_shared_with_the_implementation(widths, tmp_path, ranks):
    """A dispatched call combines the ranks' extremes once, for bitwidth(),
    in the all-reduce that agrees on the decision's variables, and its
    implementation is told that span instead of combining it again: one
    all-reduce a call (where a later variable reads the width, the span is
    combined before the agreement, which a choice of one implementation
    does not need), and nothing is left shared after it."""
    from hlc.calibrate.run import mpiexec

    script = tmp_path / "spanned.py"
    script.write_text(SPANNED)
    helpers = Path(__file__).parent.parent / "runtime"  # reduce_counter
    result = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, str(script), widths.__path__[0]],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(helpers)})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 15 and all(line.endswith(f" {[True] * ranks}") for line in lines), result.stdout


def test_what_is_shared_is_for_the_very_array():
    from hlc.runtime import extremes

    x, y = np.arange(5), np.arange(5)
    extremes.share(x, 0, 4)
    try:
        assert extremes.measured(x) == (0, 4) and extremes.measured(y) is None
    finally:
        extremes.forget()
    assert extremes.measured(x) is None


def test_a_call_that_stopped_halfway_shares_nothing_with_the_next(widths):
    """bitwidth() read x, then the call failed: the next call, which reads no
    extremes of its own, tells its implementation nothing of x."""
    from hlc.runtime import extremes

    x = np.arange(extremes.SHARED_FROM)
    with pytest.raises(ZeroDivisionError):
        widths.halting(x)
    assert widths.plain(x) is None
    assert widths.shared(x) == (0, extremes.SHARED_FROM - 1)


UNIFORM = """
import json
import sys
import warnings
from pathlib import Path
import numpy as np
import hlc
from hlc.runtime import world

from reduce_counter import ReduceCounter

warnings.simplefilter("ignore")  # two ranks lie outside the calibrated domain
team = world()
reduces = ReduceCounter(team)
said = []  # what each call gave, and how many all-reduces it made
for folder in sys.argv[2:]:
    widths = hlc.load(folder)
    for length in (1000, 1000 + team.rank):  # alike on every rank, then not
        x = np.arange(length)
        for call in (widths.counted, widths.counted_uniform, widths.plain):
            before = reduces.calls
            try:
                result = call(x)
            except ValueError as error:
                result = str(error)
            said.append([result if isinstance(result, str) else "ran", reduces.calls - before])
Path(sys.argv[1], f"rank{team.rank}.json").write_text(json.dumps(said))
"""


@pytest.fixture(scope="module")
def python_widths(widths, tmp_path_factory):
    """The widths library's dispatch module in Python (built where no C compiler is)."""
    folder = Path(widths.__path__[0])
    target = tmp_path_factory.mktemp("python") / "widths"
    target.mkdir()
    compiler = os.environ.get("CC")
    os.environ["CC"] = "no-such-compiler"
    try:
        with pytest.warns(RuntimeWarning, match="no C compiler"):
            package(hlc.parse_file(folder / "source" / "widths.hl"), load_models(folder / "models.json"),
                    {}, target)
    finally:
        if compiler is None:
            del os.environ["CC"]
        else:
            os.environ["CC"] = compiler
    return target


@pytest.mark.parametrize("checking", [False, True])
def test_under_mpiexec_the_ranks_agree_on_no_uniform_variable(widths, python_widths, tmp_path, checking):
    """A uniform variable is taken as each rank computes it: a choice that
    reads only uniform variables makes no all-reduce, nor does one that
    cannot vary (one implementation); a variable not uniform takes one.
    With HLC_CHECK_UNIFORM=1 the ranks compare the uniform ones, in one
    all-reduce, and every rank raises where they differ.  So in the
    compiled module and in the Python one."""
    from hlc.calibrate.run import mpiexec

    script = tmp_path / "uniform.py"
    script.write_text(UNIFORM)
    helpers = Path(__file__).parent.parent / "runtime"  # reduce_counter
    environment = {**os.environ, "PYTHONPATH": str(helpers), "HLC_CHECK_UNIFORM": "1" if checking else ""}
    result = subprocess.run([mpiexec(), "-n", "2", sys.executable, str(script), str(tmp_path), widths.__path__[0],
                             str(python_widths)], capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0, result.stdout + result.stderr
    differ = ("counted_uniform(): uniform variable 'n' is 1000 on some ranks and 1001 on others; every rank "
              "must pass arguments that give it one value (HLC_CHECK_UNIFORM checks this)")
    alike = [["ran", 1], ["ran", 1 if checking else 0], ["ran", 0]]
    module = alike + ([["ran", 1], [differ, 1], ["ran", 0]] if checking else alike)
    for rank in (0, 1):
        assert json.loads((tmp_path / f"rank{rank}.json").read_text()) == module * 2, result.stdout
