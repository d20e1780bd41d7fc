"""Discovery of a machine's cost changes on synthetic costs with known
steps: the knots are found, the model reaches the noise, and smooth costs
get no knot."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlc.artefacts.models import Discovered
from hlc.model.discover import (
    KNOT_STEP,
    FamilyCandidates,
    HeldOutBase,
    _rank,
    discover,
    factor_values,
    factors_of,
    family_factors,
    held_out_predictions,
)
from hlc.model.fit import fit, mean_relative_error

NOISE = 0.03  # multiplicative: each time is the cost times 1 + N(0, 0.03)
SEEDS = range(20)


def costs(kind: str, n: np.ndarray, bpd: np.ndarray) -> np.ndarray:
    """Seconds: a per-element cost that jumps by half at 2**14 elements and by
    as much again at 2**20 ("jumps"); passes whose cost per key rises by 40%
    from 9 bits a digit ("digits"); or costs smooth in n ("smooth")."""
    if kind == "jumps":
        return 1e-6 + n * 1e-9 * (1 + 0.5 * (np.log2(n) >= 14) + 1.0 * (np.log2(n) >= 20))
    if kind == "digits":
        return 1e-6 + n * 1e-9 * (1 + 0.4 * (bpd >= 9)) * np.ceil(24 / bpd)
    return 1e-6 + n * 1e-9 + n * np.log2(n) * 1e-10


def written(kind: str, n: np.ndarray, bpd: np.ndarray) -> dict[str, np.ndarray]:
    """The algorithm's terms, as an author writes them."""
    terms = {"1": np.ones_like(n), "n": n}
    if kind == "digits":
        terms["n * iter"] = n * np.ceil(24 / bpd)
    if kind == "smooth":
        terms["n * log2(n)"] = n * np.log2(n)
    return terms


def profile(kind: str, seed: int):
    """The samples of a profile: fitting samples at every point of a nest
    (``for i in 32 .. 96`` with ``n = floor(2 ** (i / 4))``: sizes every
    quarter octave; or ``for i in 8 .. 22`` times ``for bpd in 1 .. 16``),
    and 60 verification samples at iteration values drawn uniformly, as
    hlc draws them, with fresh noise."""
    rng = np.random.default_rng(seed)
    if kind == "digits":
        logn, bpd = (a.ravel() for a in np.meshgrid(np.arange(8, 22.01, 1.0), np.arange(1, 17), indexing="ij"))
        held_logn, held_bpd = rng.integers(8, 23, 60).astype(float), rng.integers(1, 17, 60).astype(float)
    else:
        logn = np.arange(32, 97) / 4
        bpd = np.ones_like(logn)
        held_logn, held_bpd = rng.integers(32, 97, 60) / 4, np.ones(60)
    n, held_n = np.floor(2**logn), np.floor(2**held_logn)
    times = costs(kind, n, bpd) * (1 + rng.normal(0, NOISE, n.size))
    truth = costs(kind, held_n, held_bpd)
    held_times = truth * (1 + rng.normal(0, NOISE, truth.size))
    return (n, bpd, times), (held_n, held_bpd, held_times, truth)


def discovered_model(kind: str, seed: int):
    (n, bpd, times), (held_n, held_bpd, held_times, truth) = profile(kind, seed)
    variables = {"n": n, "bpd": bpd} if kind == "digits" else {"n": n}
    found = discover(written(kind, n, bpd), times, variables)
    held_variables = {"n": held_n, "bpd": held_bpd}

    def columns(n_, bpd_, variables_):
        terms = written(kind, n_, bpd_)
        for term in found.terms:
            terms[term.text] = terms[term.base] * np.prod([factor_values(f, variables_) for f in term.factors], axis=0)
        return {name: values for name, values in terms.items() if name != "1"}

    result = fit(columns(n, bpd, variables), times)
    predicted = result.predict({k: v for k, v in columns(held_n, held_bpd, held_variables).items()
                                if k in result.coefficients})
    return found, mean_relative_error(held_times, predicted), mean_relative_error(held_times, truth)


def knots(found, variable: str) -> list[float]:
    return sorted({f.knot for term in found.terms for f in term.factors if f.variable == variable})


@pytest.mark.parametrize("seed", SEEDS)
def test_two_jumps_in_the_per_element_cost_are_found_and_the_model_reaches_the_noise(seed):
    found, error, noise = discovered_model("jumps", seed)
    for true in (14, 20):
        assert any(abs(knot - true) <= KNOT_STEP for knot in knots(found, "n")), (true, [t.text for t in found.terms])
    assert error <= noise + 0.01, [t.text for t in found.terms]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_step_in_an_integer_parameter_is_found(seed):
    found, error, noise = discovered_model("digits", seed)
    assert 9 in knots(found, "bpd"), [t.text for t in found.terms]
    assert error <= noise + 0.01, [t.text for t in found.terms]


def test_smooth_costs_get_no_knot_in_19_of_20_runs():
    added = [seed for seed in SEEDS if discovered_model("smooth", seed)[0].terms]
    assert len(added) <= 1, added


def _lengths(seed: int, cheaper_single: bool):
    """A nest like the runtime's all-reduce lengths, ``floor(2 ** (h / 2))``
    for h in 0 .. 47 (so two samples of length 1), and 40 verification
    samples at random h: a per-call cost plus a per-element one, the call of
    one element 30% cheaper when ``cheaper_single`` (as an all-reduce of one
    double is under MPICH)."""
    rng = np.random.default_rng(seed)

    def cost(n: np.ndarray) -> np.ndarray:
        return (2e-6 + n * 1e-9) * (1 - 0.3 * (n == 1) * cheaper_single)

    n, held = np.floor(2 ** (np.arange(48) / 2)), np.floor(2 ** (rng.integers(0, 48, 40) / 2))
    times, held_times = (cost(x) * (1 + rng.normal(0, NOISE, x.size)) for x in (n, held))
    found = discover({"1": np.ones_like(n), "n": n}, times, {"n": n})

    def columns(x: np.ndarray) -> dict[str, np.ndarray]:
        terms = {"n": x}
        for term in found.terms:
            base = np.ones_like(x) if term.base == "1" else terms[term.base]
            terms[term.text] = base * np.prod([factor_values(f, {"n": x}) for f in term.factors], axis=0)
        return terms

    predicted = fit(columns(n), times).predict(columns(held))
    return found, mean_relative_error(held_times, predicted), mean_relative_error(held_times, cost(held))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_cheaper_call_at_the_least_size_is_found_as_a_step_above_it(seed):
    # A knot needs two sizes on each side; a step at either end of the sizes
    # singles out the smallest (or largest) size when the samples hold it twice.
    found, error, noise = _lengths(seed, cheaper_single=True)
    assert any(0 < knot <= 1 for knot in knots(found, "n")), [t.text for t in found.terms]
    assert error <= noise + 0.01, [t.text for t in found.terms]


def test_smooth_costs_get_no_step_at_either_end_of_their_sizes_in_19_of_20_runs():
    top = np.log2(np.floor(2 ** (47 / 2)))
    added = [seed for seed in SEEDS
             if any(knot <= 1 or knot > top - 0.5 for knot in knots(_lengths(seed, cheaper_single=False)[0], "n"))]
    assert len(added) <= 1, added


def test_discovery_is_deterministic():
    first, second = discovered_model("jumps", 3)[0], discovered_model("jumps", 3)[0]
    assert [t.text for t in first.terms] == [t.text for t in second.terms]


def test_knots_lie_in_the_middle_of_the_gaps_between_sampled_sizes():
    """The samples cannot tell where in a gap a cost changes: a knot at the
    middle is at most half a gap off."""
    n = np.floor(2.0 ** np.arange(8, 16.01, 1.0))
    steps = [f for f in factors_of({"n": n}) if f.kind == "step"]
    assert [f.knot for f in steps] == [9.5, 10.5, 11.5, 12.5, 13.5, 14.5]
    bpd = np.arange(1, 17, dtype=float)
    # an integer steps at each value but its smallest: one value below may be a kernel of its own
    assert [f.knot for f in factors_of({"bpd": bpd})] == list(range(2, 17))
    assert factors_of({"constant": np.full(10, 4.0)}) == []


def test_factors_and_terms_read_as_the_description_language():
    n = np.floor(2.0 ** np.arange(8, 16.01, 0.5))
    step = next(f for f in factors_of({"n": n}) if f.kind == "step")
    hinge = next(f for f in factors_of({"n": n}) if f.kind == "hinge")
    assert step.text == "(log2(n) >= 8.75)" and hinge.text == "max(0, log2(n) - 8.75)"
    assert np.array_equal(factor_values(step, {"n": np.array([2.0**8.7, 2.0**8.8])}), [0.0, 1.0])


def test_a_discovered_term_is_an_expression_and_reads_in_words():
    from hlc.language import ast
    from hlc.language.expressions import evaluate, to_c, unparse
    from hlc.model.terms import describe, discovered_expression

    written = {"n * iter": ast.Binary(0, 0, "*", ast.Name(0, 0, "n"), ast.Name(0, 0, "iter"))}
    spec = {"base": "n * iter", "factors": [{"kind": "step", "variable": "digit", "knot": 9, "log": False},
                                            {"kind": "hinge", "variable": "n", "knot": 18.25, "log": True}]}
    expression = discovered_expression(written, Discovered.from_json(spec))
    assert unparse(expression) == "n * iter * (digit >= 9) * max(0, log2(n) - 18.25)"
    assert to_c(expression) == "n * iter * (digit >= 9.0) * hlc_max(0.0, hlc_log2(n) - 18.25)"
    assert evaluate(expression, {"n": 2.0**20, "iter": 3, "digit": 11}) == 2.0**20 * 3 * 1.75
    assert evaluate(expression, {"n": 2.0**20, "iter": 3, "digit": 8}) == 0
    assert describe(Discovered.from_json(spec), -4e-10) == (
        "the cost per n * iter where digit = 9 or more shrinks by 400 ps per octave of n beyond n = 2^18.25 (311,744)")
    step = {"base": "n", "factors": [{"kind": "step", "variable": "n", "knot": 18.25, "log": True}]}
    assert describe(Discovered.from_json(step), 2.1e-9) == "the cost per n rises by 2.1 ns from n = 2^18.25 (311,744)"
    # a small knot of a variable of whole numbers: the first one the step holds at
    few = {"base": "n", "factors": [{"kind": "step", "variable": "k", "knot": 3.75, "log": True, "whole": True},
                                    {"kind": "step", "variable": "m", "knot": 0.5, "log": True, "whole": True}]}
    assert describe(Discovered.from_json(few), 7e-9) == "the cost per n where k = 14 or more rises by 7 ns from m = 2"
    assert Discovered.from_json(few).to_json() == few
    few["factors"][1] = {"kind": "hinge", "variable": "m", "knot": 0.5, "log": True, "whole": True}
    assert describe(Discovered.from_json(few), 7e-9) == (
        "the cost per n where k = 14 or more grows by 7 ns per octave of m beyond m = 2^0.5 (1.41)")


def test_a_change_over_a_term_that_calls_a_model_is_a_multiple_of_its_time():
    """A hybrid term's value is another model's time, in seconds: the change
    over it is a pure number, not a cost in seconds."""
    from hlc.model.terms import describe

    hinge = {"base": "radix(n, width, bpd)", "factors": [{"kind": "hinge", "variable": "n", "knot": 14, "log": True}]}
    assert describe(Discovered.from_json(hinge), 0.223) == (
        "the cost, in multiples of radix(n, width, bpd), grows by 0.223 per octave of n beyond n = 2^14 (16,384)")
    step = {"base": "counting(n, width) * logP",
            "factors": [{"kind": "step", "variable": "width", "knot": 20, "log": False}]}
    assert describe(Discovered.from_json(step), -0.05) == (
        "the cost, in multiples of counting(n, width) * logP, falls by 0.05 from width = 20")
    # the functions a description may call without importing them are not models
    step["base"] = "n * log2(n)"
    assert describe(Discovered.from_json(step), 2e-9) == "the cost per n * log2(n) rises by 2 ns from width = 20"


def test_steps_of_a_variable_of_whole_numbers_say_so():
    """Discovery marks the factors of a variable whose samples are whole numbers."""
    x = np.repeat(np.array([1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 512, 4096]), 3).astype(float)
    whole = factors_of({"k": x})
    assert whole and all(f.log and f.whole for f in whole)
    halves = factors_of({"k": x + 0.5})
    assert halves and not any(f.whole for f in halves)


def test_a_family_step_is_found_in_few_samples_of_a_model_with_many_written_terms():
    """Five written terms and 26 samples leave no room at five samples a term;
    the author's family still may show where the cost per key triples (a
    counting table outgrowing a cache), and nothing is added where it does not."""
    rng = np.random.default_rng(3)
    width = np.tile(np.arange(8, 21, dtype=float), 2)
    n = np.floor(2 ** rng.uniform(12, 21, width.size))
    values = 2**width
    present = 1 - np.exp(-n / values)
    terms = {"1": np.ones_like(n), "n": n, "values": values, "values * present": values * present,
             "values * present * (1 - present)": values * present * (1 - present)}
    step = FamilyCandidates("n", n, (tuple(family_factors("steps", "width", width, None)),), (width,))
    for jump, expected in ((2.0, [("width", 18.0)]), (0.0, [])):
        times = (2e-6 + 1e-9 * n * (1 + jump * (width >= 18)) + 5e-10 * values) * (1 + rng.normal(0, 0.02, n.size))
        found = discover(terms, times, {"n": n, "width": width}, families=[step], automatic=False)
        assert [(f.variable, f.knot) for term in found.terms for f in term.factors] == expected


def test_the_held_out_penalty_is_that_of_choosing_by_the_predictions_among_the_settings_timed_at_each_point():
    from hlc.model.discover import CHOICE_POINTS, held_out_penalty

    points = CHOICE_POINTS
    choices = [(point, setting) for point in range(points) for setting in ("fast", "slow")]
    times = np.array([1.0, 2.0] * points)
    right = np.array([1.0, 2.0] * points)  # predicts the fast setting faster everywhere
    half = np.array([1.0, 2.0] * (points // 2) + [2.0, 1.0] * (points - points // 2))
    assert held_out_penalty(right, times, choices) == 0.0
    assert held_out_penalty(half, times, choices) == pytest.approx((points - points // 2) / points)
    # a setting timed twice at a point counts once: its mean prediction, its median time
    assert held_out_penalty(np.append(right, -5.0), np.append(times, 9.0), choices + [(0, "slow")]) == \
        pytest.approx(4.5 / points)
    # too few points timed at two settings say nothing
    assert np.isnan(held_out_penalty(right[:-2], times[:-2], choices[:-2]))


def _setting_and_size(size_cost: float) -> tuple:
    """A cost per element 3% higher at the second of two settings, timed at
    both at every point, and ``size_cost`` higher from 2^10 elements; a
    search over it, and one term for each of the two."""
    from hlc.artefacts.models import Factor
    from hlc.model.discover import CHOICE_POINTS, _Search

    rng = np.random.default_rng(0)
    points = 2 * CHOICE_POINTS
    n = np.repeat(2.0 ** rng.uniform(4, 16, points), 2)
    setting = np.tile([1.0, 2.0], points)
    times = n * (1 + 0.03 * (setting - 1) + size_cost * (np.log2(n) >= 10)) * (1 + rng.normal(0, 0.005, 2 * points))
    search = _Search({"n": n}, times, {"n": n, "s": setting}, ["s"], True, None,
                     choices=[(point, s) for point, s in zip(np.repeat(np.arange(points), 2), setting, strict=True)])
    by_setting = Discovered("n", (Factor("step", "s", 2.0, False),))
    by_size = Discovered("n", (Factor("step", "n", 10.0, True),))
    return search, by_setting, by_size


def test_a_restart_with_no_more_terms_is_judged_by_its_choices_and_one_with_more_by_its_error():
    """Of two single terms whose errors are alike, the one that sees the
    setting chooses it right and is preferred, whichever has the lower error;
    the other is not; a second term that chooses no better needs a clearly
    lower error."""
    from hlc.model.discover import _clearly_better

    for size_cost in (0.032, 0.036):  # the setting's term has the lower error, then the size's
        search, by_setting, by_size = _setting_and_size(size_cost)
        setting_errors, size_errors = search.errors_of([by_setting]), search.errors_of([by_size])
        assert not _clearly_better(setting_errors, size_errors) and not _clearly_better(size_errors, setting_errors)
        assert (search.error_of([by_setting]) < search.error_of([by_size])) == (size_cost < 0.034)
        assert search.penalty_of([by_setting]) == 0.0 < search.penalty_of([by_size])
        assert search.preferred([by_setting], setting_errors, [by_size], size_errors)
        assert not search.preferred([by_size], size_errors, [by_setting], setting_errors)
        both = [by_setting, by_size]
        assert search.preferred(both, search.errors_of(both), [by_setting], setting_errors) == \
            _clearly_better(search.errors_of(both), setting_errors)


def passes_profile(bump: float, seed: int):
    """Radix-like samples: keys of 20 to 32 bits sorted in ceil(width / bpd)
    passes of ``bits`` = width / passes bits on average, whose cost per key
    and pass is ``bump`` more at 6-bit digits than at 5 or 7 (a scatter slow
    at 64 buckets only); 3% noise; fitting samples on the grid, 60 held out."""
    rng = np.random.default_rng(seed)

    def draw(logn, width, bpd):
        n = np.floor(2**logn)
        passes = np.ceil(width / bpd)
        bits = width / passes
        truth = 1e-6 + n * passes * 1e-9 * (1 + bump * np.maximum(0, 1 - np.abs(bits - 6)))
        return n, passes, bits, truth * (1 + rng.normal(0, NOISE, n.size)), truth

    grid = np.meshgrid(np.arange(10, 22.01, 2.0), np.arange(20, 33, 4.0), np.arange(1, 17.0), indexing="ij")
    fitting = draw(*(a.ravel() for a in grid))
    held = draw(rng.integers(10, 23, 60).astype(float), rng.integers(20, 33, 60).astype(float),
                rng.integers(1, 17, 60).astype(float))
    return fitting, held


def test_a_cost_near_one_value_of_a_family_s_variable_is_found_as_one_tent():
    """A per-pass cost that is higher at 6-bit digits only takes a hinge up at
    5, one down at 6 and one back at 7 (each alone fits worse than none);
    the family's tent at 6 fits it alone, and the model reaches the noise.
    Without the bump, nothing is added."""
    for bump, expected in ((0.6, [("tent", 6.0)]), (0.0, [])):
        for seed in range(3):
            (n, passes, bits, times, _), (hn, hpasses, hbits, htimes, htruth) = passes_profile(bump, seed)
            family = FamilyCandidates("n * iter", n * passes,
                                      (tuple(family_factors("hinges", "bits", bits, list(range(1, 17)))),), (bits,))
            terms = {"1": np.ones_like(n), "n * iter": n * passes}
            found = discover(terms, times, {"bits": bits}, families=[family], automatic=False)
            assert [(f.kind, f.knot) for term in found.terms for f in term.factors] == expected, (bump, seed)
            if not found.terms:
                continue
            columns = {"n * iter": n * passes, found.terms[0].text: n * passes * factor_values(
                found.terms[0].factors[0], {"bits": bits})}
            result = fit(columns, times)
            predicted = result.predict({"n * iter": hn * hpasses, found.terms[0].text: hn * hpasses * factor_values(
                found.terms[0].factors[0], {"bits": hbits})})
            assert mean_relative_error(htimes, predicted) <= mean_relative_error(htimes, htruth) + 0.01


def test_a_family_of_hinges_offers_tents_between_its_knots():
    hinges = family_factors("hinges", "bits", np.arange(1, 17.0), [1, 2, 3, 5])
    assert [(f.kind, f.knot, f.width) for f in hinges] == [
        ("hinge", 1.0, 0.0), ("hinge", 2.0, 0.0), ("hinge", 3.0, 0.0), ("hinge", 5.0, 0.0),
        ("tent", 2.0, 1.0), ("tent", 3.0, 1.0)]  # at 3: as far as the nearer knot
    assert all(f.kind == "step" for f in family_factors("steps", "width", np.arange(4, 23.0), None))
    tent = hinges[-1]
    assert np.array_equal(factor_values(tent, {"bits": np.array([1.5, 2.0, 2.5, 3.0, 3.75, 4.5])}),
                          [0.0, 0.0, 0.5, 1.0, 0.25, 0.0])


def test_a_tent_reads_as_the_description_language_and_in_words():
    from hlc.artefacts.models import Factor
    from hlc.language import ast
    from hlc.language.expressions import evaluate, to_c, unparse
    from hlc.model.terms import describe, discovered_expression

    spec = {"base": "n * iter", "factors": [{"kind": "tent", "variable": "bits", "knot": 6, "log": False, "width": 1},
                                            {"kind": "step", "variable": "n", "knot": 19.5, "log": True}]}
    term = Discovered.from_json(spec)
    assert Discovered.from_json(term.to_json()) == term
    assert term.text == "n * iter * max(0, 1 - abs(bits - 6)) * (log2(n) >= 19.5)"
    written = {"n * iter": ast.Binary(0, 0, "*", ast.Name(0, 0, "n"), ast.Name(0, 0, "iter"))}
    expression = discovered_expression(written, term)
    assert unparse(expression) == term.text
    assert to_c(expression).startswith("n * iter * hlc_max(0.0, 1.0 - fabs(bits - 6.0)) * (n >= 741455.2")
    assert evaluate(expression, {"n": 2.0**20, "iter": 4, "bits": 6.5}) == 2.0**20 * 4 * 0.5
    assert describe(term, 1.2e-9) == ("the cost per n * iter near bits = 6 rises by 1.2 ns from n = 2^19.5 (741,455)")
    assert describe(Discovered("n * iter", (term.factors[0],)), 1.2e-9) == (
        "the cost per n * iter is 1.2 ns more at bits = 6, the difference falling to none 1 away")
    half = Factor("tent", "n", 18.0, True, 0.5)
    assert half.text == "max(0, 1 - abs(log2(n) - 18) / 0.5)"
    assert describe(Discovered("n", (half,)), -3e-10) == (
        "the cost per n is 300 ps less at n = 2^18 (262,144), the difference falling to none 0.5 octave away")
    with pytest.raises(ValueError, match="positive width"):
        Factor.from_json({"kind": "tent", "variable": "n", "knot": 18, "log": True})


@pytest.mark.parametrize(("text", "product"), [
    ("n * k", True), ("n * (log2(k) >= 1.5)", True), ("max(0, log2(n) - 4.75)", True), ("log2(k + 1)", True),
    ("log2(k) >= 0.5", False), ("n + k", False), ("n - 1", False), ("n < 4", False), ("n == 4", False),
    ("n != 4", False), ("a and b", False), ("a or b", False), ("-n", True)])
def test_a_term_is_a_product_unless_an_operator_looser_than_a_product_joins_it(text, product):
    """What a coefficient may multiply as written; anything else is parenthesized."""
    from hlc.artefacts.models import is_product

    assert is_product(text) is product


def _two_settings(seed: int, gap: float, points: int = 60) -> tuple:
    """Two settings timed side by side at ``points`` sizes from 2^6 to 2^22
    elements: the second ``gap`` slower per element below 2^19 and as much
    faster above (a few points only), 3% noise.  The sizes, settings, noisy
    times, choices (point, setting) and true times."""
    rng = np.random.default_rng(seed)
    n = np.repeat(np.floor(2 ** rng.uniform(6, 22, points)), 2)
    setting = np.tile([1.0, 2.0], points)
    truth = 1e-6 + n * 1e-9 * (1 + gap * (setting == 2) * np.where(np.log2(n) >= 19, -1.0, 1.0))
    times = truth * (1 + rng.normal(0, NOISE, n.size))
    return n, setting, times, list(zip(np.repeat(np.arange(points), 2).tolist(), setting.tolist(), strict=True)), truth


def _true_penalty(terms: list[Discovered], seed: int, gap: float) -> float:
    """The mean penalty, in true times, of choosing the setting at 200 other
    sizes by the written terms and ``terms`` fitted to profile ``seed``."""
    n, setting, times, _, _ = _two_settings(seed, gap)
    other_n, other_setting, _, _, truth = _two_settings(seed + 1000, gap, 200)

    def design(sizes: np.ndarray, settings: np.ndarray) -> np.ndarray:
        columns = [np.ones_like(sizes), sizes]
        for term in terms:
            columns.append(sizes * np.prod([factor_values(f, {"n": sizes, "s": settings}) for f in term.factors],
                                           axis=0))
        return np.column_stack(columns)

    beta = np.linalg.lstsq(design(n, setting) / times[:, None], np.ones_like(times), rcond=None)[0]
    predicted = (design(other_n, other_setting) @ beta).reshape(-1, 2)
    truth = truth.reshape(-1, 2)
    chosen = truth[np.arange(len(truth)), np.argmin(predicted, axis=1)]
    return float(np.mean(chosen / truth.min(axis=1) - 1))


def test_a_term_that_chooses_a_setting_clearly_better_is_taken_where_its_error_is_no_clear_gain():
    """Where the settings were timed side by side, the search also takes a
    term that halves the held-out penalty of choosing among them
    (hlc.model.discover.CHOICE_GAIN): a setting 4.5% faster above 2^19
    elements only, a few points of 60, lowers the error over all samples
    too little to be taken for it.  Judged by the true costs at 200 other
    sizes, the choices are better with the rule in some runs and worse in
    none; with equal settings it adds a term no more often than smooth
    costs get one (1 run of 20)."""
    better = worse = 0
    for seed in SEEDS:
        n, setting, times, choices, _ = _two_settings(seed, 0.045)
        written = {"1": np.ones_like(n), "n": n}
        by_choice = discover(written, times, {"n": n, "s": setting}, integers=["s"], choices=choices).terms
        by_error = discover(written, times, {"n": n, "s": setting}, integers=["s"]).terms
        ours, theirs = _true_penalty(by_choice, seed, 0.045), _true_penalty(by_error, seed, 0.045)
        better += ours < theirs - 1e-12
        worse += ours > theirs + 1e-12
    assert better >= 2 and worse == 0
    added = 0
    for seed in SEEDS:
        n, setting, times, choices, _ = _two_settings(seed, 0.0)
        found = discover({"1": np.ones_like(n), "n": n}, times, {"n": n, "s": setting}, integers=["s"],
                         choices=choices)
        added += bool(found.terms)
    assert added <= 1


def _bisected(seed: int, jump: bool, eighths: bool = False):
    """Sizes every half octave from 2^3 to 2^22 (or every eighth of one,
    ``eighths``), and, with ``jump``, the four sizes a bisection of a
    boundary between 2^8 and 2^8.5 adds: 2^8.03, 2^8.06, 2^8.12 and 2^8.25.
    A per-call cost that jumps by 1.2 us past 260 elements (as NumPy's sort
    leaves its small-array kernel), or none."""
    rng = np.random.default_rng(seed)
    logn = np.arange(6, 45) / 2 if not eighths else np.arange(24, 177) / 8
    if jump:
        logn = np.sort(np.r_[logn, 8 + np.array([2, 4, 8, 16]) / 64])
    n = np.floor(2**logn)
    cost = 1e-6 + 1.2e-6 * (n > 260) * jump + n * 1e-9 + n * np.log2(n) * 1e-10
    times = cost * (1 + rng.normal(0, NOISE, n.size))
    return discover({"1": np.ones_like(n), "n": n, "n * log2(n)": n * np.log2(n)}, times, {"n": n})


@pytest.mark.parametrize("seed", range(5))
def test_a_jump_a_bisection_brackets_closer_than_the_half_octave_grid_is_found_in_its_gap(seed):
    """The knots of the half-octave grid lie between 181 and 256 elements
    and between 304 and 362: neither separates 256 from 262."""
    found = _bisected(seed, jump=True)
    assert any(8.0 < knot <= math.log2(262) for knot in knots(found, "n")), [t.text for t in found.terms]


def test_sizes_sampled_finely_everywhere_get_no_step_between_them_on_smooth_costs_in_19_of_20_runs():
    added = [seed for seed in SEEDS if _bisected(seed, jump=False, eighths=True).terms]
    assert len(added) <= 1, added


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(6, 120), width=st.integers(1, 8),
       extra=st.integers(1, 6), copy=st.booleans())
def test_a_candidate_joining_a_base_is_predicted_as_the_whole_design_predicts_it(seed, count, width, extra, copy):
    """HeldOutBase's predictions with one more column are those of the whole
    design's held-out fit, with dependent columns (a copy, a zero column,
    a column zero on all but one fold) too."""
    rng = np.random.default_rng(seed)
    times = rng.uniform(0.5, 2.0, count)
    weights = times / times.mean()
    base = [rng.uniform(0, 1, count) for _ in range(width)]
    if copy:
        base.append(2.0 * base[0])
    rows = rng.uniform(0, 1, (extra, count))
    rows[0] = 3.0 * base[-1]  # explained by the base
    if extra > 1:
        rows[1] = 0.0
    if extra > 2:
        rows[2] = np.where(np.arange(count) % 5 == 1, rows[2], 0.0)  # one fold's samples only
    predicted = HeldOutBase(base, times, weights).predictions_with(rows)
    for row, prediction in zip(rows, predicted, strict=True):
        whole = held_out_predictions([*base, row], times, weights)
        assert np.allclose(prediction, whole, rtol=1e-7, atol=1e-9 * np.max(np.abs(whole)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 60), most=st.integers(1, 10), ties=st.booleans(),
       dependent=st.booleans())
def test_the_best_candidates_ranked_are_those_whose_part_outside_the_model_meets_its_residual_most(
        seed, count, most, ties, dependent):
    """_rank, from the candidates' products with the model's columns, ranks
    as the projections themselves do (a candidate's part outside the
    model's span, squared, against the residual), keeps the first ``most``
    in that order (equal candidates in theirs), and counts every one the
    model does not explain already, with dependent columns in the model too."""
    rng = np.random.default_rng(seed)
    size = 40
    columns = [np.ones(size), rng.uniform(1, 2, size)]
    if dependent:
        columns.append(3.0 * columns[1])  # as 1 and logP where one rank count was profiled
    times = rng.uniform(1, 3, size)
    weights = times / times.mean()
    candidates = rng.uniform(0, 1, (count, size))
    if ties:
        candidates[count // 2:] = candidates[0]
    candidates[::7] = 2.0 * columns[1]  # explained already
    terms = [Discovered(f"t{k}", ()) for k in range(count)]
    whitened = candidates / weights
    design = np.column_stack(columns) / weights[:, None]
    products = whitened @ design
    squares = np.einsum("ij,ij->i", whitened, whitened)
    block = (products, whitened @ (times / weights), squares, np.arange(count))
    ranked, usable = _rank(terms, [block], columns, times, weights, most)

    basis, _ = np.linalg.qr(design[:, :2])
    target = times / weights
    residual = target - basis @ (basis.T @ target)
    outside = whitened - (whitened @ basis) @ basis.T
    norms = np.einsum("ij,ij->i", outside, outside)
    explained = norms <= 1e-6 * squares
    scores = np.where(explained, -1.0, (outside @ residual) ** 2 / np.where(explained, 1.0, norms))
    expected = [terms[k] for k in np.argsort(-np.round(scores, 9), kind="stable") if not explained[k]]
    assert usable == len(expected)
    assert ranked == expected[:most]
