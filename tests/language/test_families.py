"""Families of candidate terms and machine constants in descriptions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from hlc.artefacts.models import Discovered
from hlc.language.expressions import family_text, unparse
from hlc.language.families import family_knots
from hlc.language.machine import MACHINE_CONSTANTS, machine_constants, read_machine
from hlc.language.nest import constant_values
from hlc.language.parser import parse_syntax
from hlc.language.summary import describe
from hlc.model.discover import FamilyCandidates, discover, family_factors

DESCRIPTION = textwrap.dedent("""\
    library demo
    interface sort(keys: int[])
      n = len(keys)
      width = bitwidth(keys)
      impl radix(bpd: int in 1 .. 16) = numpy.sort
        let iter = ceil(width / bpd)
        time ~ 1 + n * iter + n * iter * steps(bpd) + n * hinges(log2(n) at log2(cache_l1) - 3 .. 24 += 0.5)
               + hinges(width at 4 .. 8 *= 2)
""")


def model():
    library = parse_syntax(DESCRIPTION, "demo.hl")
    return library, library.interfaces[0].implementations[0].model("time")


def test_a_family_is_a_factor_of_a_term_that_the_fitter_expands():
    _, time = model()
    assert [unparse(t) for t in time.terms] == ["n * iter"]  # the families are not written terms
    assert [(unparse(f.base) if f.base else None, family_text(f.families[0])) for f in time.families] == [
        ("n * iter", "steps(bpd)"),
        ("n", "hinges(log2(n) at log2(cache_l1) - 3 .. 24 += 0.5)"),
        (None, "hinges(width at 4 .. 8 *= 2)")]


def test_knots_advance_as_a_loop_does_and_may_read_machine_constants():
    library, time = model()
    constants = constant_values(library)
    steps, hinges, doubling = (f.families[0] for f in time.families)
    assert family_knots(steps, constants) == []  # no 'at': the fitter takes the knots from the samples
    first = np.log2(machine_constants()["cache_l1"]) - 3
    knots = family_knots(hinges, constants)
    assert knots[0] == pytest.approx(first) and knots[-1] <= 24 and np.allclose(np.diff(knots), 0.5)
    assert family_knots(doubling, constants) == [4.0, 8.0]


def test_hlc_check_lists_the_families():
    library, _ = model()
    assert "3 families: n * iter * steps(bpd), n * hinges(log2(n) at log2(cache_l1) - 3 .. 24 += 0.5)" \
        in describe(library)


def test_machine_constants_are_read_from_sysfs(tmp_path: Path):
    def cache(index: int, level: int, kind: str, size: str) -> None:
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size), ("coherency_line_size", 128)):
            (folder / name).write_text(f"{value}\n")

    cache(0, 1, "Data", "48K")
    cache(1, 1, "Instruction", "32K")
    cache(2, 2, "Unified", "2048K")
    cache(3, 3, "Unified", "32M")
    values, _ = read_machine(tmp_path)
    assert values["cache_l1"] == 48 * 1024 and values["cache_l2"] == 2 * 1024**2
    assert values["cache_l3"] == 32 * 1024**2 and values["cache_line"] == 128
    assert set(values) == set(MACHINE_CONSTANTS) and values["cores"] >= 1 and values["page_size"] > 0


def test_the_machine_constants_of_this_host_are_plausible():
    values = machine_constants()
    assert 4096 <= values["cache_l1"] <= values["cache_l2"] <= values["cache_l3"]
    assert values["cache_line"] in (32, 64, 128, 256) and values["cores"] >= 1


def test_a_family_s_members_are_offered_without_automatic_discovery():
    """A per-key cost that steps up at 2^15 keys: with automatic discovery off,
    the written family finds it, at the written knot nearest the step."""
    rng = np.random.default_rng(1)
    logn = np.arange(32, 97) / 4
    n = np.floor(2**logn)
    times = (1e-6 + n * 1e-9 * (1 + 0.6 * (logn >= 15))) * (1 + rng.normal(0, 0.02, n.size))
    written = {"1": np.ones_like(n), "n": n}
    factors = family_factors("steps", "log2(n)", logn, [10, 12, 15, 18])
    family = FamilyCandidates("n", n, (tuple(factors),), (logn,))
    found = discover(written, times, {"n": n}, families=[family], automatic=False)
    assert [t.text for t in found.terms] == ["n * (log2(n) >= 15)"]
    # without the family and without automatic discovery, nothing is offered
    assert discover(written, times, {"n": n}, automatic=False).terms == []
    # knots from the samples: at every value an integer expression takes, with support on each side
    assert [f.knot for f in family_factors("steps", "bpd", np.arange(1, 17.0), None)] == list(range(2, 17))


def test_a_term_with_two_families_offers_their_products():
    """A per-key cost that rises beyond 2^16 keys for digits of 11 bits or
    more only: neither family alone can say so; their product can, and the
    fitter finds the member at the step and the knot the costs have."""
    rng = np.random.default_rng(2)
    logn, digit = np.meshgrid(np.arange(40, 89) / 4, np.arange(1, 17), indexing="ij")
    logn, digit = logn.ravel(), digit.ravel().astype(float)
    n = np.floor(2**logn)
    times = (2e-6 + n * 1e-9 + n * 4e-10 * (digit >= 11) * np.maximum(0, logn - 16)) \
        * (1 + rng.normal(0, 0.02, n.size))
    written = {"1": np.ones_like(n), "n": n}
    steps = tuple(family_factors("steps", "digit", digit, None))
    hinges = tuple(family_factors("hinges", "log2(n)", logn, [12, 14, 16, 18]))
    product = FamilyCandidates("n", n, (steps, hinges), (digit, logn))
    assert len(product.members) == len(steps) * len(hinges)
    found = discover(written, times, {"n": n}, families=[product], automatic=False)
    assert [t.text for t in found.terms] == ["n * (digit >= 11) * max(0, log2(n) - 16)"]
    alone = discover(written, times, {"n": n}, automatic=False,
                     families=[FamilyCandidates("n", n, (steps,), (digit,)),
                               FamilyCandidates("n", n, (hinges,), (logn,))])
    assert alone.error_after > found.error_after + 0.01


def test_a_two_family_term_parses_into_its_base_and_families():
    library = parse_syntax(DESCRIPTION.replace("+ hinges(width at 4 .. 8 *= 2)",
                                               "+ n * iter * steps(bpd) * hinges(log2(n))"), "demo.hl")
    time = library.interfaces[0].implementations[0].model("time")
    last = time.families[-1]
    assert unparse(last.base) == "n * iter" and [family_text(f) for f in last.families] == \
        ["steps(bpd)", "hinges(log2(n))"]
    assert "n * iter * steps(bpd) * hinges(log2(n))" in describe(library)


def test_a_family_member_reads_in_words():
    from hlc.model.terms import describe

    hinge = {"base": "n * iter", "factors": [{"kind": "hinge", "variable": "log2(n)", "knot": 20, "log": False}]}
    assert describe(Discovered.from_json(hinge), 2.06e-9) == \
        "the cost per n * iter grows by 2.06 ns per octave of n beyond n = 2^20 (1,048,576)"
    step = {"base": "n", "factors": [{"kind": "step", "variable": "width", "knot": 11, "log": False}]}
    assert describe(Discovered.from_json(step), -4e-10) == "the cost per n falls by 400 ps from width = 11"
    other = {"base": "n", "factors": [{"kind": "hinge", "variable": "logn", "knot": 15, "log": False}]}
    assert describe(Discovered.from_json(other), 2.75e-10).endswith("per unit of logn beyond logn = 15")

    both = {"base": "n", "factors": [{"kind": "hinge", "variable": "n", "knot": 16, "log": True},
                                     {"kind": "step", "variable": "bpd", "knot": 7, "log": False}]}
    assert describe(Discovered.from_json(both), 1.65e-10) == \
        "the cost per n, per octave of n beyond n = 2^16 (65,536), rises by 165 ps from bpd = 7"
