"""The compiled module decides exactly as the Python reference (hlc.dispatch.reference)."""

from __future__ import annotations

import math
import random
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import hlc
from hlc.artefacts.models import Discovered, Factor, ImplementationModel, Models, TimeModel
from hlc.dispatch.build import package
from hlc.dispatch.cmodels import comment
from hlc.dispatch.explain import composition, explanation
from hlc.dispatch.loading import load
from hlc.dispatch.reference import Choice, Decider
from hlc.language.expressions import EvaluationError, unparse
from hlc.language.families import family_knots
from hlc.language.nest import constant_values
from hlc.model.predict import Predictor
from hlc.model.terms import model_terms
from hlc.optimize import COARSE, spread

DESCRIPTIONS = Path(__file__).resolve().parents[1] / "descriptions"
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def synthetic_models(library: hlc.Library, rng: random.Random, negative: float = 0.0) -> Models:
    """A models artefact with random coefficients on most terms, a share
    ``negative`` of them negative, and on most fitted models typical
    deviations on some of their terms (hlc.model.deviation)."""
    spread = random.Random(rng.random())  # the deviations' own draws
    implementations = {}
    constants = constant_values(library)
    for interface in library.interfaces:
        for implementation in interface.implementations:
            model = implementation.model("time")
            if not model.fitted:
                entry = TimeModel("factored")
            else:
                # a member of each family, as the fitter would add it
                discovered = tuple(
                    Discovered(unparse(f.base) if f.base is not None else "1",
                               tuple(Factor("hinge" if family.kind == "hinges" else "step", unparse(family.expression),
                                            rng.choice(family_knots(family, constants) or [4, 9]), False)
                                     for family in f.families))
                    for f in model.families)
                terms = ["1"] + [unparse(t) for t in model_terms(model, discovered)]
                kept = [t for t in terms if rng.random() < 0.85] or ["1"]
                entry = TimeModel("fitted", discovered=discovered, terms=tuple(terms), kept=tuple(kept), coefficients={
                    t: rng.uniform(1e-9, 1e-6) * (-1 if negative and rng.random() < negative else 1) for t in kept})
                deviations = {t: spread.uniform(1e-10, 3e-7) for t in kept if spread.random() < 0.5}
                if deviations and spread.random() < 0.8:
                    entry = replace(entry, deviations=deviations, risk=2.0)
            implementations[implementation.name] = ImplementationModel(interface.name, entry)
    return Models(library.name, library.filename, implementations)


def compile_synthetic(tmp_path_factory, negative: float):
    library = hlc.parse_file(DESCRIPTIONS / "decisions.hl")
    rng = random.Random(20261121)
    models = synthetic_models(library, rng, negative)
    used = {"comm": synthetic_models(library.used["comm"], rng, negative)}
    assert all(models.time(name).discovered for name in ("plain", "digits"))
    folder = tmp_path_factory.mktemp("decisions")
    assert package(library, models, used, folder)[1]
    source = (folder / "decisions_decisions.c").read_text()
    assert "(v_n >= " in source and "log2(v_n) >=" not in source  # the steps of the size, as powers of two
    # the searched models split: what their searches do not vary is valued once a decision
    assert all(f"hlc_fix_decisions__{name}(" in source for name in ("digits", "tiles", "chunks"))
    with pytest.warns(hlc.StaleModelWarning):  # the synthetic models have no fingerprint
        module = load(folder)
    predictor = Predictor(library, models.times(), {"comm": Predictor(library.used["comm"], used["comm"].times())})
    return library, module, Decider(library, predictor)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The library with positive coefficients: every search has a minimum inside its range somewhere."""
    return compile_synthetic(tmp_path_factory, 0.0)


@pytest.fixture(scope="module")
def negative_compiled(tmp_path_factory):
    """The library with a fifth of its coefficients negative."""
    return compile_synthetic(tmp_path_factory, 0.2)


@pytest.fixture(scope="module", params=["positive", "a-fifth-negative"])
def any_compiled(request, compiled):
    return compiled if request.param == "positive" else request.getfixturevalue("negative_compiled")


def random_variables(rng: random.Random) -> dict:
    ranks = rng.choice([1, 1, 2, 4, 8])
    return {"n": int(10 ** rng.uniform(0, 7)) if rng.random() < 0.97 else 0, "width": rng.randint(0, 64),
            "P": ranks, "logP": math.log2(ranks)}


def test_compiled_and_python_decisions_agree_on_3000_random_calls(any_compiled):
    library, module, decider = any_compiled
    interface = library.interface("work")
    rng = random.Random(7)
    chosen = set()
    steadier = 0  # decisions where the planned time chose other than the least prediction
    for _ in range(3_000):
        variables = random_variables(rng)
        expected = decider.decide(interface, variables)
        actual = module.choose_work_at(**variables)
        assert (actual.implementation, actual.parameters) == (expected.implementation, expected.parameters), \
            (variables, actual, expected)
        assert actual.settings == expected.settings, variables  # every search's value, chosen or not
        # a dispatched call asks for no predictions, and takes a search's least time as its model's
        assert module.dispatch_decisions._decide_work_at(**variables) == (expected.implementation,
                                                                          expected.parameters), variables
        for name, seconds in expected.predicted.items():
            assert actual.predicted[name] == pytest.approx(seconds, rel=1e-12), (variables, name)
        chosen.add(actual.implementation)
        least = min(expected.predicted, key=expected.predicted.__getitem__)
        steadier += expected.implementation is not None and expected.predicted[least] < expected.seconds
    assert len(chosen) >= 3  # the random models make several implementations win somewhere
    assert steadier > 50  # and the deviations change some decisions


def test_a_time_predicted_below_zero_ranks_behind_every_positive_one(negative_compiled):
    """With a fifth of the coefficients negative, some models predict times
    of zero or less (a step down in a per-key cost, found where the samples
    reached, sums below zero where they did not).  Both modules report such
    a prediction as infinite and choose its implementation only where no
    implementation that applies predicts a positive time; there the first
    that applies runs, for the call is valid."""
    library, module, decider = negative_compiled
    interface = library.interface("work")
    rng = random.Random(11)
    below_zero = 0
    for _ in range(2_000):
        variables = random_variables(rng)
        expected = decider.decide(interface, variables)
        actual = module.choose_work_at(**variables)
        assert all(seconds > 0 for seconds in actual.predicted.values())
        assert actual.implementation == expected.implementation, variables
        raw = {}
        for implementation in interface.implementations:
            if decider.applies(implementation, variables):
                settings = expected.settings.get(implementation.name, {})
                environment = {**decider.predictor.constants, **variables, **settings}
                try:
                    raw[implementation.name] = decider.predictor.evaluate(implementation.name, environment)
                except EvaluationError:  # a parameter its rule left unset
                    raw[implementation.name] = math.nan
        for name, seconds in raw.items():
            if seconds <= 0:
                below_zero += 1
                assert math.isinf(actual.predicted[name])
        if actual.implementation is not None and raw[actual.implementation] <= 0:
            assert all(math.isinf(actual.predicted[name]) for name in raw), variables
            assert actual.implementation == next(name for name, seconds in raw.items() if math.isfinite(seconds))
    assert below_zero > 20


def test_every_kind_of_parameter_search_is_exercised(compiled):
    library, module, decider = compiled
    interface = library.interface("work")
    rng = random.Random(11)
    seen: dict[str, set] = {}
    for _ in range(2000):
        variables = random_variables(rng)
        for name in ("digits", "blocks", "tiles", "chunks"):
            implementation = interface.implementation(name)
            if decider.applies(implementation, variables):
                seen.setdefault(name, set()).add(tuple(decider.parameters(implementation, variables).items()))
    assert set(seen) == {"digits", "blocks", "tiles", "chunks"}
    assert all(len(values) > 3 for values in seen.values()), seen


def test_explain_shows_the_search_the_make_up_and_what_lies_beyond_the_samples(compiled):
    library, module, decider = compiled
    models = module.__models__
    # as if profiled at n <= 2**20 on two ranks only
    models = replace(models, implementations={
        name: replace(record, time=replace(record.time, domain={"n": [16, 2**20], "P": [2, 2]}))
        for name, record in models.implementations.items()})
    interface = library.interface("work")
    variables = {"n": 300_000, "width": 29, "P": 1, "logP": 0.0}
    decided = decider.decide(interface, variables)
    # explained as if digits had won, at the parameters its search set
    choice = Choice("digits", decided.settings["digits"], decided.predicted, decided.settings)
    text = explanation(library, models, "work", variables, choice, {})
    weighed = next(line for line in text.splitlines() if line.strip().startswith("bpd weighed:"))
    # every digit width the search proposes (one per number of passes), the chosen one marked
    proposed = sorted({max(1, math.ceil(variables["width"] / i))
                       for i in range(max(1, math.ceil(variables["width"] / 16)), variables["width"] + 1)})
    assert [int(part.split(" → ")[0]) for part in weighed.split(": ", 1)[1].split(", ")] == proposed
    assert f"{choice.parameters['bpd']} → " in weighed and "(chosen)" in weighed
    assert "every sample had P = 2, so its prediction at P = 1 extrapolates" in text
    assert "%" in text and "-" not in "".join(line.split()[-1] for line in text.splitlines() if line.endswith("%"))


def explained_as_if_chunks_won(compiled) -> tuple[Choice, Choice, str]:
    """The dispatcher's decision at 300,000 keys of 29 bits, the choice as if
    chunks had won at the parameters its search set, and its explanation."""
    library, module, decider = compiled
    variables = {"n": 300_000, "width": 29, "P": 1, "logP": 0.0}
    decided = decider.decide(library.interface("work"), variables)
    choice = Choice("chunks", decided.settings["chunks"], decided.predicted, decided.settings)
    return decided, choice, explanation(library, module.__models__, "work", variables, choice, {})


def test_explain_shows_the_values_spread_over_a_wide_range_that_its_search_compares_first(compiled):
    decided, choice, text = explained_as_if_chunks_won(compiled)
    weighed = next(line for line in text.splitlines() if line.strip().startswith("chunk weighed:"))
    shown = [int(part.split(" → ")[0]) for part in weighed.split(": ", 1)[1].split(", ")]
    spread_values = {spread(8, 4096, j) for j in range(COARSE)}
    assert set(shown) == spread_values | {choice.parameters["chunk"]} and shown == sorted(shown)
    assert f"{choice.parameters['chunk']} → " in weighed and "(chosen)" in weighed


def test_explain_shows_where_the_searches_of_the_implementations_not_chosen_ended(compiled):
    """Why not the radix sort, and at which digit width would it have run: an
    implementation not chosen shows the values its search ended at in the
    table, and the values it weighed, its best marked."""
    decided, choice, text = explained_as_if_chunks_won(compiled)
    best = decided.settings["digits"]["bpd"]
    row = next(line for line in text.splitlines() if line.startswith("digits "))
    assert row.endswith(f"at bpd = {best}")
    assert next(line for line in text.splitlines() if line.startswith("chunks ")).endswith("← chosen")
    searched = next(line for line in text.splitlines() if line.strip().startswith("digits: bpd weighed:"))
    entries = searched.split("weighed: ", 1)[1].split(", ")
    assert [entry for entry in entries if entry.endswith(" (best)")] == \
        [entry for entry in entries if entry.startswith(f"{best} → ")]
    assert len(entries) > 1
    # the chosen implementation's own search is the one without a name before it
    own = next(line for line in text.splitlines() if line.strip().startswith("chunk weighed:"))
    assert "(chosen)" in own


def test_terms_equal_at_the_point_are_shown_as_one():
    """A base term and its steps that hold here are one term here: their
    shares summed under the base's name; a step that does not hold is left
    out, and a term of another value stays apart."""
    from hlc.dispatch.explain import merged_shares

    values = {"1": 1.0, "m * k * n": 262144.0, "m * k * n * (log2(k) >= 0.5)": 262144.0,
              "m * k * n * (log2(m) >= 0.5)": 262144.0, "m * k * n * (log2(n) >= 7)": 0.0,
              "m * k * n * max(0, log2(n) - 4)": 524288.0}
    coefficients = {"1": 1e-6, "m * k * n": 1.2e-9, "m * k * n * (log2(k) >= 0.5)": -1.16e-9,
                    "m * k * n * (log2(m) >= 0.5)": 1.4e-10, "m * k * n * (log2(n) >= 7)": 5e-9,
                    "m * k * n * max(0, log2(n) - 4)": 1.5e-11}
    shares = dict(merged_shares(values, coefficients))
    assert set(shares) == {"1", "m * k * n (and 2 terms equal to it here)", "m * k * n * max(0, log2(n) - 4)"}
    assert shares["m * k * n (and 2 terms equal to it here)"] == pytest.approx(262144 * 1.8e-10)
    assert shares["1"] == 1e-6 and shares["m * k * n * max(0, log2(n) - 4)"] == pytest.approx(524288 * 1.5e-11)


def test_the_make_up_of_a_prediction_has_no_negative_share():
    lines = composition([("n", 3e-3), ("1", 1e-3), ("n * (log2(n) >= 18)", -5e-4)])
    assert lines[0].split()[-1] == "75.0%" and lines[1].split()[-1] == "25.0%"
    assert "less corrections" in lines[2] and lines[3].split()[-2:] == ["-500", "µs"]


def test_the_make_up_of_a_prediction_lines_up_its_figures_whatever_the_labels():
    """A label longer than the column (a merged term's, a correction's)
    widens it for every row, so that the seconds still line up; one past
    LABEL_WIDTH_MOST pushes its own row's figures out alone."""
    from hlc.dispatch.explain import LABEL_WIDTH_MOST

    long = "iters * cells (and 1 term equal to it here)"
    lines = composition([(long, 3e-3), ("iters", 1e-3), ("cells", 1e-4), ("1", 1e-5), ("n", 1e-5), ("m", 1e-5),
                         ("k", 1e-6), ("iters * cells * max(0, log2(width) - 4) * (height >= 64)", -2e-4)])
    figures = [line for line in lines if "less corrections" not in line]
    ends = {line.index(" ms") if " ms" in line else line.index(" µs") for line in figures}
    assert len(ends) == 1, lines
    assert figures[-2].split()[:3] == ["1", "more", "term"]
    huge = "t" * (LABEL_WIDTH_MOST + 10)
    wide = composition([(huge, 2e-3), ("iters", 1e-3)])
    assert wide[0].startswith("  " + huge + " ")  # the long one's own figures pushed out
    assert wide[1][:2 + LABEL_WIDTH_MOST + 1] == "  " + "iters".ljust(LABEL_WIDTH_MOST) + " "  # the others at the cap


def test_a_search_whose_predictions_are_all_alike_is_said_in_one_line(compiled):
    """Where the prediction does not turn on a searched parameter (the
    stencil's extra rows below three rows of processes), explain says so
    once instead of listing every value at the same time."""
    from hlc.dispatch.explain import searches

    library, module, _ = compiled
    interface = library.interface("work")
    digits = interface.implementation("digits")
    variables = {"n": 300_000, "width": 29, "P": 1, "logP": 0.0}

    class Flat:
        """A predictor whose every prediction is one millisecond."""

        constants: dict = {}

        def evaluate(self, implementation, environment):
            return 1e-3

    [line] = searches(Flat(), digits, variables, {"bpd": 8}, "chosen")
    assert line.startswith("  bpd weighed: ") and line.endswith("all predicted at 1 ms (chosen: 8)"), line
    count, span = line.split("weighed: ", 1)[1].split(", ")[:2]
    assert int(count.split()[0]) > 1 and " .. " in span


def test_the_c_reads_one_term_a_line_and_stores_nothing_it_does_not_read(compiled, tmp_path):
    """The decision's C, as the build writes it beside the module: each model
    a sum written one term a line with the term as the description writes
    it, and nothing that gcc -Wall calls unused or set but not used.  The
    module's Cython holds no models: it includes their header, which the
    decisions' C includes too."""
    library, module, _ = compiled
    folder = Path(module.__file__).parent
    text = (folder / "decisions_decisions.c").read_text()
    assert re.search(r"^    seconds \+= -?[0-9.e+-]+ \* v_n;\s+/\* n \*/$", text, re.MULTILINE), text[:2000]
    assert '#include "hlc_dispatch.h"\n#include "dispatch_decisions.h"' in text
    assert "hlc_integer_minimum(hlc_objective" not in text
    cython = (folder / "dispatch_decisions.pyx").read_text()
    block = textwrap.dedent(cython.split('cdef extern from *:\n    """\n', 1)[1].split('\n    """', 1)[0])
    assert block == '#include "hlc_dispatch.h"\n#include "dispatch_decisions.h"' and "seconds +=" not in cython
    compiler = subprocess.run(["cc", "-fsyntax-only", "-Wall", "-Werror", f"-I{folder}",
                               str(folder / "decisions_decisions.c")], capture_output=True, text=True)
    assert compiler.returncode == 0, compiler.stderr


def test_comments_in_the_c_are_ascii_and_cannot_close_early():
    """Cython before 3.1 writes the embedded C in Latin-1: a doc string with
    '≤' or '∞' must not break the build."""
    text = comment("keys ≤ 2**20 → ∞ */ done ✓")
    assert text == "keys <= 2**20 -> infinity * / done ?"
    assert text.isascii()


def test_a_built_library_loads_without_the_fitter(compiled):
    """A program that only calls a library does not pay for the fitter:
    hlc.load imports neither it nor SciPy (1.5 s of a start when they came)."""
    folder = Path(compiled[1].__file__).parent
    program = textwrap.dedent(f"""
        import sys, warnings
        import hlc
        warnings.simplefilter("ignore")
        hlc.load({str(folder)!r})
        print(" ".join(sorted(name for name in sys.modules if name.split(".")[0] == "scipy"
                              or name.startswith(("hlc.model.calibration", "hlc.model.discover")))))
    """)
    loaded = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


LAST_RESORT = """\
library resort
from numpy import sum, ones
from math import fsum

interface total(x: float64[]) -> float "The sum of x."
    n = len(x)
    impl fourfold = sum
        requires n >= 4
        time ~ 1 + n
    impl any = fsum
        time ~ 1 + n
    profile
        for i in 4 .. 10 ++
        x = ones(1 << i)
"""


@pytest.mark.parametrize("compiler", ["cc", "none"])
def test_where_no_model_predicts_a_positive_time_the_first_implementation_that_applies_runs(
        tmp_path, monkeypatch, compiler):
    """A valid call runs even where every model that applies answers with a
    time of zero or less: fourfold's below zero everywhere, any's below zero
    under a thousand elements.  In C and in the Python module alike."""
    description = tmp_path / "resort.hl"
    description.write_text(LAST_RESORT)
    library = hlc.parse_file(description)

    def fitted(coefficients):
        return TimeModel("fitted", terms=("1", "n"), kept=tuple(coefficients), coefficients=coefficients)

    models = Models(library.name, library.filename, {
        "fourfold": ImplementationModel("total", fitted({"1": -1e-3})),
        "any": ImplementationModel("total", fitted({"1": -1e-3, "n": 1e-6}))})
    if compiler == "none":
        monkeypatch.setenv("CC", "no-such-compiler")
        with pytest.warns(RuntimeWarning, match="no C compiler"):
            assert not package(library, models, {}, tmp_path / "build")[1]
    else:
        assert package(library, models, {}, tmp_path / "build")[1]
    with pytest.warns(hlc.StaleModelWarning):
        module = load(tmp_path / "build")
    for n, runs in ((100, "fourfold"), (2, "any"), (5000, "any")):
        x = [1.0] * n
        choice = module.choose(x)
        assert choice.implementation == runs, n
        assert module.total(x) == n
    assert all(math.isinf(seconds) for seconds in module.choose([1.0] * 100).predicted.values())
    assert module.choose([1.0] * 5000).seconds == pytest.approx(4e-3)
    assert "no model predicts a positive time here: fourfold runs" in module.explain([1.0] * 100)


def c_doubles(xs: list[float]) -> str:
    """``xs`` as the items of a C array of doubles, exactly (NaN and infinities by name)."""
    return ", ".join("NAN" if math.isnan(x) else ("-" if x < 0 else "") + "INFINITY" if math.isinf(x)
                     else float(x).hex() for x in xs)


def run_c(tmp_path: Path, name: str, source: str) -> list[str]:
    """The lines a C program prints, compiled as a module's C is (with
    ``hlc_dispatch.h`` on the include path, without ``errno`` from math)."""
    program, binary = tmp_path / f"{name}.c", tmp_path / name
    program.write_text(source)
    headers = Path(__file__).resolve().parents[2] / "templates"
    subprocess.run(["cc", "-O2", "-fno-math-errno", f"-I{headers}", str(program), "-o", str(binary), "-lm"],
                   check=True)
    return subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout.splitlines()


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_a_searched_hinge_in_log2_takes_the_logarithm_only_above_its_knot_to_the_same_value(tmp_path):
    """``max(0, log2(x) - k)`` among the factors a search values at each
    candidate compiles to C that takes the logarithm only where x lies above
    2 ** k: bit for bit the hinge's value at every x around the knot, at
    zero, negatives, NaN and infinity.  Where the factors take log2 of x
    elsewhere too, the hinge stays as it is (the compiler shares the call)."""
    from hlc.dispatch.cmodels import Library, logarithms_taken
    from hlc.language.parser import parse_syntax
    from hlc.model.terms import factor_expression

    def parse_expression(text: str):
        return parse_syntax(f"library probe\nlet value = {text}").constants[0].value

    spelled = Library(hlc.parse("library empty\n"), {}, {})
    lines, sizes = [], [0.0, -1.0, 0.5, 1.0, 3.0, 1e300, float("inf"), float("nan")]
    for k in (0, 1, 6.5, 12, 17.25, -2, 40):
        hinge = factor_expression(Factor("hinge", "x", k, log=True))  # as the fitter finds it
        guarded = spelled.guarded_hinge(hinge, [hinge, parse_expression("x * (log2(x) >= 3)")])
        assert guarded is not None and guarded.startswith("(v_x > ")
        assert spelled.guarded_hinge(hinge, [hinge, parse_expression("log2(x) * n")]) is None
        lines.append(f'        printf("%a %a\\n", (double)({spelled.c(hinge)}), (double)({guarded}));\n')
        center = 2.0 ** k
        sizes += [center, math.nextafter(center, 0), math.nextafter(center, math.inf), math.floor(center),
                  math.ceil(center) + 1, center * (1 - 2.0 ** -40), center * (1 + 2.0 ** -40)]
    assert logarithms_taken(parse_expression("log2(x) >= 3 and max(0, log2(y) - 2) > 0")) == ["y"]
    rows = run_c(tmp_path, "hinges", "#define HLC_SCAN_LIMIT 64L\n#define HLC_COARSE 16L\n#include \"hlc_dispatch.h\"\n"
                 "#include <stdio.h>\nint main(void) {\n"
                 f"    double xs[] = {{{c_doubles(sizes)}}};\n"
                 "    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {\n        double v_x = xs[i];\n"
                 f"{''.join(lines)}    }}\n    return 0;\n}}\n")
    assert len(rows) == len(sizes) * 7
    assert all(plain == guarded for plain, guarded in map(str.split, rows))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_hlc_log2_is_the_c_library_s_log2_bit_for_bit(tmp_path):
    """hlc_log2 reads the exponent of a positive power of two from its bits
    and calls log2 elsewhere: the same value at every power of two a double
    holds, beside each, at subnormals, zero, negatives, NaN, infinity and
    random numbers; and Python's at every positive finite one (the
    reference decides with math.log2)."""
    rng = random.Random(11)
    xs = [2.0 ** e for e in range(-1074, 1024)]
    xs += [math.nextafter(x, 0) for x in xs[::7]] + [math.nextafter(x, math.inf) for x in xs[::7]]
    xs += [0.0, -0.0, -1.0, -4.0, 5e-324, 3 * 5e-324, 2.0 ** -1023 * 1.5, float("inf"), float("-inf"), float("nan")]
    xs += [2 ** rng.uniform(-1000, 1000) for _ in range(500)] + [float(rng.randint(1, 1 << 40)) for _ in range(500)]
    rows = [row.split() for row in run_c(tmp_path, "log2", "#include \"hlc_dispatch.h\"\n#include <stdio.h>\n"
                                             "int main(void) {\n"
                                             f"    static const double xs[] = {{{c_doubles(xs)}}};\n"
                                             "    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++)\n"
                                             "        printf(\"%a %a\\n\", hlc_log2(xs[i]), log2(xs[i]));\n"
                                             "    return 0;\n}\n")]
    assert len(rows) == len(xs)
    assert all(ours == library for ours, library in rows)
    for x, (ours, _) in zip(xs, rows, strict=True):
        if 0 < x < math.inf:
            assert float.fromhex(ours) == math.log2(x), x


def test_a_search_values_its_candidates_a_step_at_a_time_and_decides_as_the_reference(tmp_path):
    """A search that minimizes the time itself values all its candidates
    at once (hlc_sums_*): each helper, then each logarithm the varying
    terms take (once a candidate, however many hinges share it), then each
    term, over all candidates.  The vector library's blocked sum, with the
    hinges in log2(blocks) the fitter finds there, decides as the Python
    reference at every size, its predictions the same to the last bits."""
    library = hlc.parse_file(DESCRIPTIONS / "vector.hl")
    rng = random.Random(5)
    models = synthetic_models(library, rng)
    blocked = library.interface("total").implementation("blocked").model("time")
    discovered = (Discovered("1", (Factor("hinge", "blocks", 1.5, True),)),
                  Discovered("1", (Factor("hinge", "blocks", 3.5, True),)),
                  Discovered("n", (Factor("step", "block", 4, False),)))
    terms = ("1", *(unparse(t) for t in model_terms(blocked, discovered)))
    # the hinges weigh as much as the blocks themselves, and either way: they move the search's answer
    coefficients = {t: rng.uniform(1e-9, 1e-7) for t in terms}
    coefficients.update({t: rng.choice([-1, 1]) * rng.uniform(1e-8, 1e-7) for t in terms if "log2" in t},
                        blocks=1e-9)
    entry = TimeModel("fitted", discovered=discovered, terms=terms, kept=terms, coefficients=coefficients,
                      deviations={t: coefficients[t] / 10 for t in terms[::2]}, risk=2.0)
    models = replace(models, implementations={**models.implementations,
                                              "blocked": ImplementationModel("total", entry)})
    used = {"comm": synthetic_models(library.used["comm"], rng)}
    assert package(library, models, used, tmp_path)[1]
    source = (tmp_path / "decisions_vector.c").read_text()
    assert source.count("hlc_log2(v_blocks[j])") == 1  # one logarithm a candidate, for both hinges
    # taken only above the lowest knot, where a hinge in it rises
    below = 2.0 ** 1.5 * (1 - 2.0 ** -40)
    assert f"log2_blocks[j] = v_blocks[j] > {below!r} ? hlc_log2(v_blocks[j]) : -INFINITY;" in source
    assert "hlc_integer_minimum_of(hlc_vector__blocked__block__objectives" in source
    with pytest.warns(hlc.StaleModelWarning):
        module = load(tmp_path)
    predictor = Predictor(library, models.times(), {"comm": Predictor(library.used["comm"], used["comm"].times())})
    decider = Decider(library, predictor)
    interface = library.interface("total")
    blocks_chosen = set()
    for n in sorted({int(2 ** rng.uniform(0, 20)) for _ in range(400)} | {1, 2, 3, 4, 1 << 17}):
        expected = decider.decide(interface, {"n": n, "P": 1, "logP": 0.0})
        actual = module.choose(np.zeros(n))
        assert (actual.implementation, actual.parameters) == (expected.implementation, expected.parameters), n
        assert actual.settings == expected.settings, n
        for name, seconds in expected.predicted.items():
            assert actual.predicted[name] == pytest.approx(seconds, rel=1e-12), (n, name)
        blocks_chosen.add(actual.settings["blocked"]["block"])
    assert len(blocks_chosen) >= 3  # the search's answer moves with n
