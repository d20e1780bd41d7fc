"""The fitter on real samples (tests/data/sort): the sort library measured
on one machine, refitted, and its choices replayed against the timings of a
stored exhaustive evaluation.  Nothing is timed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hlc.artefacts.models import Models, load, save_used
from hlc.evaluation.replay import replay, replay_oracle
from hlc.language.parse import parse_file
from hlc.model import discover
from hlc.model.calibration import Samples, calibrate, point_key

DATA = Path(__file__).resolve().parents[1] / "data" / "sort"
ROOT = Path(__file__).resolve().parents[2]
DESCRIPTION = ROOT / "libraries" / "sort.hl"


@pytest.fixture(scope="module")
def samples() -> Samples:
    return Samples.read(DATA / "samples.jsonl")


@pytest.fixture(scope="module")
def models(samples) -> Models:
    return calibrate(parse_file(DESCRIPTION), samples)


def verification(models: Models) -> dict[str, float]:
    return {name: entry.verification_mre for name, entry in models.fitted().items()}


def test_discovery_finds_what_the_algorithm_s_terms_miss(samples, models):
    """The sort description writes the algorithm's terms and families; with
    automatic discovery on top, every model predicts its verification
    samples better, or as well (measured: counting 1.091 -> 1.074, its
    families of hinges in the table's bits leaving less than steps left,
    1.137 -> 1.085; sample sort 1.159 -> 1.078; radix 1.072 -> 1.079: its
    families leave little).  The two-rank radix sort calls the one-rank
    model as a term, which with discovery is the mean of its searches
    (hlc.model.calibration._bagged): within 0.02 (measured 1.088 -> 1.104)."""
    written = verification(calibrate(parse_file(DESCRIPTION), samples, discovering=False))
    found = verification(models)
    assert set(written) == set(found) == {"radix", "radix_spmd", "counting", "counting_spmd", "narrow", "numpy",
                                           "sample"}
    for name, gain in (("counting", 1.01), ("sample", 1.02)):
        assert found[name] < written[name] / gain, (name, written[name], found[name])
    for name in found:
        assert found[name] <= written[name] + (0.02 if name == "radix_spmd" else 0.01), \
            (name, written[name], found[name])


@pytest.mark.parametrize("seed", [1, 2])
def test_the_refitted_models_choose_right_against_the_stored_evaluations(models, tmp_path, seed):
    """The choices of the models fitted here, judged against every
    alternative the stored evaluations timed at 200 held-out points on one
    rank (measured: 100.0% at both within 3% of the fastest, expected
    penalty 0.01%; the bounds leave room for another BLAS's rounding) and,
    at seed 1, on two ranks (97.0%)."""
    path = tmp_path / "models.json"
    models.save(path)
    result = replay(path, DATA / f"evaluation-{seed}.json")
    entry = result.interfaces["sort"]
    assert entry.unmeasured == 0
    one = entry.by_ranks.get(1) or entry.summary
    assert one.points == 200
    assert one.right_share >= 0.975
    assert one.expected_penalty <= 0.005
    if 2 in entry.by_ranks:
        assert entry.by_ranks[2].right_share >= 0.95


EPYC = DATA.parent / "sort-epyc"


@pytest.fixture(scope="module")
def epyc_models() -> Models:
    return calibrate(parse_file(DESCRIPTION), Samples.read(EPYC / "samples.jsonl"))


@pytest.mark.parametrize("seed", [1, 2])
def test_the_models_of_a_second_machine_choose_right_against_its_evaluations(epyc_models, tmp_path, seed):
    """The same on another processor (tests/data/sort-epyc, a two-core AMD
    EPYC): its default build's samples refitted, and the choices replayed
    against its own two evaluations (measured: 98.5% right at both,
    expected penalty 0.09% and 0.19%, worst 5.5% and 20.3%; the worst is a
    radix sort of two passes of 11 bits chosen over narrow at 651,091 keys
    of 22 bits.  Fitted without the verification samples, the models chose
    a radix sort of three passes there, and were worst at exactly 2^21
    keys, 13.5%: a power of two, where the scatter's write streams share
    their low address bits, and which the profile never samples).  Before the search
    took terms for the choices they make (hlc.model.discover.CHOICE_GAIN):
    97.5% and 98.0%, expected penalty 0.14% and 0.12%, worst 5.5% and 6.8%.
    The radix model's cost per pass in the mean bits
    per pass chose 3 and 2 of these near ties wrong that its steps in the
    widest pass's bits chose right; refitted on 53 builds of a Zen 5 host
    and replayed against that host's evaluations, it lowered the expected
    penalty from 0.85% to 0.76% and the worst from 68% to 59% (means)."""
    path = tmp_path / "models.json"
    epyc_models.save(path)
    entry = replay(path, EPYC / f"evaluation-{seed}.json").interfaces["sort"]
    assert entry.unmeasured == 0 and entry.summary.points == 200
    assert entry.summary.right_share >= 0.98
    assert entry.summary.expected_penalty <= 0.002
    assert entry.summary.worst_penalty <= 0.25
    assert {name for name, model in epyc_models.fitted().items()} >= {"radix", "counting", "narrow", "numpy"}


ZEN3 = DATA.parent / "sort-zen3"


@pytest.fixture(scope="module")
def zen3_models() -> Models:
    return calibrate(parse_file(DESCRIPTION), Samples.read(ZEN3 / "samples.jsonl"))


@pytest.mark.parametrize("evaluation", ["evaluation-1.json", "evaluation-1-again.json", "evaluation-2.json"])
def test_the_models_of_a_noisy_host_choose_about_as_well_as_its_own_timings_agree(zen3_models, tmp_path,
                                                                                 evaluation):
    """A third processor (tests/data/sort-zen3: a two-core AMD EPYC of the
    Zen 3 generation, no AVX-512, shared with busy tenants): the same call
    timed in two fresh processes differed by 10-20%, and two evaluations of
    the same 200 points judged each other's fastest candidates right at
    93.5% and 95.5% of them.  Its default build's samples, most taken while
    the host meter read a slow spell, refitted and replayed against its
    three evaluations (measured: 93.0%, 91.5% and 94.0% right, expected
    penalty 1.4%, 1.5% and 0.7%): about as often right as the host agrees
    with itself, and never far below."""
    path = tmp_path / "models.json"
    zen3_models.save(path)
    entry = replay(path, ZEN3 / evaluation).interfaces["sort"]
    assert entry.unmeasured == 0 and entry.summary.points == 200
    assert entry.summary.right_share >= 0.90
    assert entry.summary.expected_penalty <= 0.02


def test_the_noisy_host_s_evaluations_agree_as_recorded():
    """The ceiling the test above is held to: each of two evaluations of the
    same points, its fastest candidates judged by the other's timings."""
    first, again = ZEN3 / "evaluation-1.json", ZEN3 / "evaluation-1-again.json"
    shares = [replay_oracle(a, b).interfaces["sort"].summary.right_share for a, b in ((first, again), (again, first))]
    assert min(shares) >= 0.92 and max(shares) <= 0.97, shares


ZEN4 = DATA.parent / "sort-zen4"


@pytest.fixture(scope="module")
def zen4_models() -> Models:
    return calibrate(parse_file(DESCRIPTION), Samples.read(ZEN4 / "samples.jsonl"))


@pytest.mark.parametrize("seed", [1, 2])
def test_settings_a_busy_host_timed_side_by_side_in_spells_inform_the_choices(zen4_models, tmp_path, seed):
    """A two-core Zen 4 host (tests/data/sort-zen4) whose meter read a slow
    spell at half the samples: its build took all nine radix sorts of two
    to three million keys in spells, and most of the wide digits' at a
    quarter to two million.  Left out with the others of spells, they took
    with them what wide digits cost there: the fit chose passes of 12-16
    bits where 8 or 9 ran 1.5-2 times faster (79.0% and 89.0% right,
    expected penalty 8.0% and 5.6%).  Kept, scaled back by the slowdown of
    all the spells' samples, where no steady sample lies near: 90.5% and
    94.5% right, 2.7% and 1.6%.  Fitted for the ratios of the settings
    timed side by side at each point, at the level the model gives there
    where a spell shifted it (hlc.model.calibration._leveled): 96.5% and
    95.0%, 1.17% and 1.33% with the search on every sample alone; with the
    mean of it and its bags (hlc.model.calibration._bagged), measured 93.0%
    and 94.0%, 1.28% and 1.71%.  Of 13 builds of that host replayed
    against five evaluations, this is one of the four whose choices the
    bags made worse; the other nine chose better with them."""
    radix = zen4_models.time("radix")
    largest = [s for s in Samples.read(ZEN4 / "samples.jsonl").samples
               if s.implementation == "radix" and not s.verify and s.variables["n"] >= 2 ** 21]
    assert largest and all(point_key(s) in radix.leveled for s in largest if s.host and s.host > 1.2)
    path = tmp_path / "models.json"
    zen4_models.save(path)
    entry = replay(path, ZEN4 / f"evaluation-{seed}.json").interfaces["sort"]
    assert entry.unmeasured == 0 and entry.summary.points == 200
    assert entry.summary.right_share >= 0.92
    assert entry.summary.expected_penalty <= 0.02


def test_the_terms_kept_leave_no_term_the_forward_steps_would_add(monkeypatch, tmp_path):
    """The forward steps stop when no candidate lowers the held-out error
    clearly; the terms the search keeps at last hold to that rule too,
    whatever exchange, knot refinement and the choice among its starts did
    after the steps stopped.  A Zen 4 build of another hour
    (tests/data/sort-zen4/samples-2.jsonl) left out the counters' cost
    rising with the keys, first among the candidates and clearly better
    from its radix sort's final terms; taken, its choices were right at
    96.0% of the later evaluation's points (measured: 93.0% without).  The
    search on the fitting samples takes it; the model kept, searched again
    with the verification samples, need not."""
    from hlc.model import calibration

    found = []
    search = calibration.discover

    def searched(written, times, variables, **options):
        result = search(written, times, variables, **options)
        found.append((written, times, variables, options, result.terms))
        return result

    monkeypatch.setattr(calibration, "discover", searched)
    models = calibrate(parse_file(DESCRIPTION), Samples.read(ZEN4 / "samples-2.jsonl"))
    assert found
    for written, times, variables, options, terms in found:
        again = discover._Search(written, times, variables, options.get("integers", ()),
                                 options.get("relative", True), None, options.get("families", ()),
                                 options.get("shortlist") or discover.SHORTLIST, options.get("choices"))
        assert again.forward(list(terms)) == list(terms)
    assert any("bins * iter * max(0, log2(n) - 12)" in [term.text for term in terms] for *_, terms in found)
    path = tmp_path / "models.json"
    models.save(path)
    entry = replay(path, ZEN4 / "evaluation-1-later.json").interfaces["sort"]
    assert entry.summary.right_share >= 0.95


def test_a_term_is_taken_for_the_choices_it_makes_where_it_cuts_their_penalty_by_two_fifths(tmp_path):
    """A Zen 4 build's radix samples (tests/data/sort-zen4/samples-3.jsonl)
    hold few points above 2^19 keys, where passes of 8 or 9 bits ran up to
    2.4 times as fast as passes of 10 to 13.  A term for the wide digits'
    cost there lowers the held-out error by 2%, no clear gain, and the
    penalty of the held-out choices among the settings timed side by side
    from 3.1% to 1.8%: less than half, so a rule asking for half left it
    out, and the build chose right at 88.5% of the evaluation's points, at
    an expected penalty of 5.9% (measured with it: 93.5%, 2.1%)."""
    models = calibrate(parse_file(DESCRIPTION), Samples.read(ZEN4 / "samples-3.jsonl"))

    def above(factor) -> bool:  # a hinge or step in log2 of the keys, from 2^18 on
        return (factor.variable == "log2(n)" or (factor.variable == "n" and factor.log)) and factor.knot >= 18

    assert any(any(f.variable == "bits" for f in term.factors) and any(map(above, term.factors))
               for term in models.time("radix").discovered)
    path = tmp_path / "models.json"
    models.save(path)
    for evaluation in ("evaluation-1.json", "evaluation-1-later.json"):
        summary = replay(path, ZEN4 / evaluation).interfaces["sort"].summary
        assert summary.right_share >= 0.92
        assert summary.expected_penalty <= 0.03


STENCIL = DATA.parent / "stencil"


def test_the_runtime_s_families_find_its_steps():
    """BlockTransfer writes `1 + bytes` and families of steps in its block's
    octave.  Without automatic discovery the families are searched all the
    same, and the fitter keeps the steps this machine's MPI has; with it,
    it may find better (measured: verification MRE 1.054 with the family's
    steps, 1.042 with the two hinges in log2(bytes) discovery found)."""
    samples = Samples.read(STENCIL / "runtime_samples.jsonl")
    library = parse_file(ROOT / "libraries" / "runtime.hl")
    families = calibrate(library, samples, discovering=False).time("BlockTransfer")
    assert families.discovered and all(term.factors[0].variable == "log2(bytes)" for term in families.discovered)
    assert families.verification_mre <= 1.06
    transfer = calibrate(library, samples).time("BlockTransfer")
    assert transfer.verification_mre <= min(1.06, families.verification_mre + 0.005)


def test_a_pair_of_terms_is_found_where_no_one_term_was_clearly_better(monkeypatch):
    """A two-core Zen 5 build of the runtime whose all-reduce model found no
    term alone: its cost at two ranks steps up at 2,048 elements and bends
    at the largest vectors, and neither change alone lowered the held-out
    error clearly.  The pair search finds them together.  (The models
    searched on the fitting samples, which the verification judges.)"""
    samples = Samples.read(ROOT / "tests" / "data" / "runtime-epyc" / "samples.jsonl")
    library = parse_file(ROOT / "libraries" / "runtime.hl")
    paired = calibrate(library, samples, every_sample=False).time("CombineVector")
    assert paired.discovered and paired.verification_mre <= 1.09
    assert any(term.factors[0].variable == "log2(length)" and 10 <= term.factors[0].knot <= 11.5
               for term in paired.discovered)
    monkeypatch.setattr(discover._Search, "best_pair", lambda search, firsts: [])
    alone = calibrate(library, samples, every_sample=False).time("CombineVector")
    assert not alone.discovered and alone.verification_mre >= paired.verification_mre + 0.03


def test_the_stencil_models_fit_their_stored_samples():
    """Eight written terms at most; on one rank every model verifies within
    5% (measured 1.035-1.047); two ranks on a shared two-core host are far
    noisier (1.04-1.31)."""
    samples = Samples.read(STENCIL / "samples.jsonl")
    library = parse_file(ROOT / "libraries" / "stencil.hl")
    models = calibrate(library, samples, models_of={"runtime": STENCIL / "runtime_models.json"})
    for name, entry in models.times().items():
        assert entry.status == "fitted", name
        assert entry.verification_mre_by_ranks["1"] <= 1.05, (name, entry.verification_mre_by_ranks)


@pytest.mark.parametrize("name", ["sort", "stencil", "runtime"])
def test_the_libraries_write_at_most_eight_terms_per_implementation(name):
    """The algorithm's terms, the constant included; families come on top."""
    library = parse_file(ROOT / "libraries" / f"{name}.hl")
    for implementation in library.implementations:
        model = implementation.model("time")
        if model.fitted:
            assert len(model.terms) + model.constant <= 8, implementation.name


def test_the_stencil_models_choose_right_at_two_ranks_against_the_stored_evaluation(tmp_path):
    """Replayed against the layouts a stored evaluation timed at 100
    held-out points per interface on two ranks (measured: relax 98.0%,
    converge 98.0% within 3% of the fastest)."""
    samples = Samples.read(STENCIL / "samples.jsonl")
    models = calibrate(parse_file(ROOT / "libraries" / "stencil.hl"), samples,
                       models_of={"runtime": STENCIL / "runtime_models.json"})
    path = tmp_path / "models.json"
    models.save(path)
    save_used(tmp_path / "used_models.json", {"runtime": load(STENCIL / "runtime_models.json")})
    result = replay(path, STENCIL / "evaluation-1.json")
    for interface in ("relax", "converge"):
        entry = result.interfaces[interface]
        assert entry.unmeasured == 0 and entry.summary.points == 100
        assert entry.summary.right_share >= 0.95, (interface, entry.summary)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_terms_found_do_not_turn_on_the_last_bits_of_the_timings(samples, seed):
    """Two processors' BLAS kernels round a fit's sums differently, in the
    last bits.  The terms the search finds must not depend on them: the
    NumPy sort's samples, each timing moved by a few parts in 10^13 (more
    than such rounding, nothing a clock could show), give the same terms.
    Ties between candidates that only rounding tells apart once gave this
    model a step at 8 copies on AVX2 kernels and at 12 on AVX-512 ones."""
    rng = np.random.default_rng(seed)
    own = [s for s in samples.samples if s.implementation == "numpy"]
    moved = [replace(s, seconds=s.seconds * (1 + 3e-13 * rng.standard_normal())) for s in own]
    library = parse_file(DESCRIPTION)
    exact = calibrate(library, replace(samples, samples=tuple(own))).time("numpy")
    rounded = calibrate(library, replace(samples, samples=tuple(moved))).time("numpy")
    assert rounded.discovered == exact.discovered
    assert rounded.kept == exact.kept
