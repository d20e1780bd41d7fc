"""Samples → models: which samples a fit uses, and what it reports per rank count."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hlc.artefacts.models import TimeModel
from hlc.artefacts.samples import Header, Sample
from hlc.language.parse import parse, parse_file
from hlc.model.calibration import Samples, _deviation_rows, calibrate, fitted_seconds, host_tolerance
from hlc.model.predict import Predictor

DESCRIPTION = """
library line "A line."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)
    reference linear

    impl linear = numpy.sum "a pass"
        time ~ 1 + n

    profile
        for i in 4 .. 16 ++
        values = ones(1 << i)
"""

TRUE_CONSTANT, TRUE_SLOPE = 2e-6, 3e-9
ROOT = Path(__file__).resolve().parents[2]
QUICK_SPELL = ROOT / "tests" / "data" / "quick-spell" / "samples.jsonl"


def samples(disturbed_share: float, ranks: tuple[int, ...] = (1,), seed: int = 0, felt: bool = True,
            usual: float = 1.0) -> Samples:
    """Samples of time = 2 µs + 3 ns·n with 1% noise; a share of them (every
    k-th) taken while the host meter read a spell 1.5-3x slow, and (when the
    spell was ``felt``) timed that much slower.  ``usual``: what the meter
    reads of the host outside the spells."""
    rng = np.random.default_rng(seed)
    records = []
    every = round(1 / disturbed_share) if disturbed_share else 0
    for verify, count in ((False, 60), (True, 20)):
        for index in range(count):
            for size in ranks:
                n = int(rng.integers(10, 100_000))
                seconds = (TRUE_CONSTANT + TRUE_SLOPE * n) * (1 + rng.normal(0, 0.01)) * (1 + 0.2 * (size - 1))
                host = usual * (1.0 + abs(rng.normal(0, 0.02)))
                if every and index % every == 0:
                    host = usual * float(rng.uniform(1.5, 3.0))
                    seconds *= host / usual if felt else 1.0
                records.append(Sample("work", "linear", verify, size, index, {},
                                      {"n": n, "P": size, "logP": float(np.log2(size))}, seconds, host=round(host, 3)))
    return taken(0.10, records)


def taken(tolerance: float, records: list[Sample]) -> Samples:
    """``records`` as the samples of a profile whose host meter had ``tolerance``."""
    header = Header("line", "line.hl", 0, 1, 0.0, {"resolution": 1e-9, "overhead": 0.0}, "3.11", "here", tolerance)
    return Samples(headers=(header,), samples=tuple(records))


def fitted(samples_: Samples) -> TimeModel:
    return calibrate(parse(DESCRIPTION), samples_).time("linear")


def test_samples_taken_while_the_host_ran_slow_are_left_out():
    entry = fitted(samples(0.1))
    assert entry.disturbed_samples == 8  # every tenth of 60 + 20
    assert entry.samples == 54 and entry.verification_samples == 18
    assert entry.coefficients["n"] == pytest.approx(TRUE_SLOPE, rel=0.02)
    assert entry.verification_mre < 1.02
    # The same samples with the slow ones kept: the fit and its verification suffer.
    kept = calibrate(parse(DESCRIPTION), taken(5.0, list(samples(0.1).samples))).time("linear")
    assert kept.disturbed_samples == 0 and kept.samples == 60
    assert kept.verification_mre > 1.05


def test_a_spell_the_tasks_did_not_feel_leaves_the_samples_in():
    """The meter times a yardstick: where the samples it calls disturbed ran
    at the others' pace, they are kept, and the model says so."""
    entry = fitted(samples(1 / 3, felt=False))
    assert entry.disturbed_samples == 0 and entry.samples == 60
    assert any(w.startswith("27 of 80 samples were taken while the host meter read a slow spell") and "kept" in w
               for w in entry.warnings), entry.warnings
    assert entry.verification_mre < 1.02
    # Felt, a third of the samples as slow as the meter read are left out.
    felt = fitted(samples(1 / 3))
    assert felt.disturbed_samples == 27 and felt.samples == 40
    assert felt.coefficients["n"] == pytest.approx(TRUE_SLOPE, rel=0.02)
    assert not any("slow spell" in w for w in felt.warnings)


#: DESCRIPTION with a second implementation of the same cost.
TWICE = DESCRIPTION.replace("time ~ 1 + n\n", "time ~ 1 + n\n\n"
                            "    impl twice = numpy.sum \"another pass\"\n"
                            "        time ~ 1 + n\n", 1)


def test_samples_mostly_taken_in_spells_are_kept_scaled_back():
    """Where most of an implementation's samples were taken in spells (its
    two-rank runs on two busy cores) and ran slow, the others cover too
    little: the fitting ones are kept, their times divided by how much
    slower they ran, and the verification is the others'.  So too where
    fewer than STEADY_PER_TERM others per term are left (and enough to
    tell how much slower: test_too_few_steady_samples_keep_the_disturbed_ones)."""
    steady = list(samples(0.0).samples)
    spelled = [replace(r, implementation="twice", host=2.0, seconds=2 * r.seconds) if r.index % 3
               else replace(r, implementation="twice") for r in samples(0.0, seed=1).samples]
    models = calibrate(parse(TWICE), taken(0.10, steady + spelled))
    assert models.time("linear").disturbed_samples == 0 and not models.time("linear").warnings
    entry = models.time("twice")
    # every fitting sample kept, 40 of them scaled; the 13 verification ones of spells left out
    assert entry.samples == 60 and entry.verification_samples == 7 and entry.disturbed_samples == 13
    assert entry.coefficients["n"] == pytest.approx(TRUE_SLOPE, rel=0.02)
    assert entry.verification_mre < 1.02
    assert any(w.startswith("53 of 80 samples were taken while the host meter read a slow spell")
               and "ran 2.00 times as long" in w and "most were" in w and "divided" in w
               for w in entry.warnings), entry.warnings

    few = [r for r in spelled if r.verify or r.index % 3 or r.index < 15]  # 5 calm for 2 terms: too few alone
    entry = calibrate(parse(TWICE), taken(0.10, steady + few)).time("twice")
    assert entry.samples == 45 and entry.disturbed_samples == 13
    assert entry.coefficients["n"] == pytest.approx(TRUE_SLOPE, rel=0.02)
    assert any(w.startswith("53 of 65 samples were taken while the host meter read a slow spell")
               and "too few others" in w and "divided" in w for w in entry.warnings), entry.warnings


def test_the_typical_deviation_is_the_steady_samples_where_the_spells_scaled_back_scatter():
    """Samples kept scaled back by their spells' mean factor still lie off
    the model by how much each one's own spell differed from that mean (1.5
    to 3 here): the host's scatter, not the implementation's.  The typical
    deviation, which a decision adds twice to the prediction, is fitted on
    the steady samples where there are enough of them (three per term), so
    that an implementation profiled in spells is not planned for as an
    erratic one; with too few steady samples, on all of them."""
    rng = np.random.default_rng(3)
    steady = list(samples(0.0).samples)
    spelled = []
    for r in samples(0.0, seed=1).samples:
        if r.index % 3:
            factor = round(float(rng.uniform(1.5, 3.0)), 3)
            spelled.append(replace(r, implementation="twice", host=factor, seconds=factor * r.seconds))
        else:
            spelled.append(replace(r, implementation="twice"))

    def planned_over_predicted(records: list[Sample]) -> float:
        """The model of ``twice``'s planned time over its prediction, the slowdown it found, at 50,000 values."""
        library = parse(TWICE)
        models = calibrate(library, taken(0.10, steady + records))
        assert models.time("twice").slowdown is not None
        predicted, planned = Predictor.of_models(library, models, {}).prediction_and_planned(
            "twice", {"n": 50_000, "P": 1, "logP": 0.0})
        return planned / predicted

    # On every sample, the spells' scatter planned for 23% more than predicted
    # (1.229); on the steady ones, what the model misses of them.
    assert planned_over_predicted(spelled) < 1.15


def test_the_typical_deviation_takes_every_sample_where_the_steady_ones_are_too_few():
    steady = np.array([True, False, True, True, False, True, True, False])
    assert list(_deviation_rows(steady, 8, 1)) == [0, 2, 3, 5, 6]  # 5 steady: at least 3 for one term
    assert list(_deviation_rows(steady, 8, 2)) == list(range(8))  # fewer than 3 for each of two terms
    assert list(_deviation_rows(None, 4, 1)) == [0, 1, 2, 3]
    assert list(_deviation_rows(steady, 9, 1)) == list(range(9))  # a mask of other samples says nothing


def test_an_inaccurate_model_of_samples_mostly_taken_in_spells_names_the_spells_too():
    """Spells that slowed each task by its own factor (1-4x), unrelated to
    what the meter read, leave the samples scaled back by one factor off
    the model: the verification MRE exceeds the limit, and where most
    samples were taken in spells the warning names them beside the terms.
    On a quiet host, terms that miss a cost are named alone."""
    rng = np.random.default_rng(5)
    records = [replace(r, host=round(float(rng.uniform(1.5, 3.0)), 3), seconds=r.seconds * float(rng.uniform(1.0, 4.0)))
               if r.index % 3 else r for r in samples(0.0).samples]
    entry = fitted(taken(0.10, records))
    assert entry.verification_mre > 1.1
    assert f"verification MRE {entry.verification_mre:.3f} exceeds 1.1: the terms may miss a cost, or the host's " \
           f"slow spells may, in which 53 of the 80 samples were taken" in entry.warnings
    # On a quiet host, every other call costing 60% more by what no variable says: the terms miss it,
    # and nothing else is named.
    quiet = [replace(r, seconds=r.seconds * (1.6 if r.index % 2 else 1.0)) for r in samples(0.0).samples]
    missing = fitted(taken(0.10, quiet))
    assert missing.verification_mre > 1.1
    assert f"verification MRE {missing.verification_mre:.3f} exceeds 1.1: the terms may miss a cost" in missing.warnings


def test_a_host_slow_most_of_the_time_keeps_its_usual_pace():
    """The usual pace is the one the host keeps outside its spells, even
    when the spells hold most of the readings: there, a median reading is
    a spell's.  Measured from it, the spells' samples are scaled back."""
    records = [replace(r, host=round(1.6 * r.host, 3), seconds=1.6 * r.seconds) if r.index % 3 else r
               for r in samples(0.0).samples]
    spelled = taken(0.10, records)
    assert float(np.median([r.host for r in spelled.samples])) > 1.5
    assert host_tolerance(spelled).at(1) < 0.15
    entry = fitted(spelled)
    assert entry.samples == 60 and entry.disturbed_samples == 13
    assert entry.coefficients["n"] == pytest.approx(TRUE_SLOPE, rel=0.02)
    assert entry.verification_mre < 1.02
    # Measured from the median reading, no sample is disturbed, and the fit holds the spells' factor.
    slow = fitted(taken(0.6, records))
    assert slow.disturbed_samples == 0 and slow.verification_mre > 1.2


def test_the_meter_s_usual_reading_is_the_host_s_pace():
    """A meter that reads the host 1.12 times as slow as its yardstick at
    every sample has found the host's usual pace, not a spell: only the
    readings above that pace by more than the tolerance are spells."""
    records = samples(0.1, usual=1.12)
    usual = float(np.median([r.host for r in records.samples if r.host < 1.5]))
    assert 1.12 < usual < 1.15 and host_tolerance(records).at(1) == pytest.approx(1.1 * usual - 1)
    entry = fitted(records)
    assert entry.disturbed_samples == 8 and entry.samples == 54
    assert entry.verification_mre < 1.02


#: DESCRIPTION with a cost that grows with the rank count.
BY_RANKS = DESCRIPTION.replace("time ~ 1 + n\n", "time ~ 1 + n + logP + n * logP\n")


def test_each_rank_count_keeps_its_own_usual_pace():
    """A sample's meter reading is its slowest rank's, and with many ranks
    one of them runs below its own best throughout: that rank count's usual
    pace, not a spell.  Measured from the one-rank pace, every nine-rank
    sample would be disturbed and, most samples being so, scaled back by how
    much slower they ran than a model of the one-rank samples predicts:
    their whole cost of the ranks.  Measured from their own pace, only the
    spells' samples are disturbed, at each rank count alike."""
    one, nine = samples(0.1, ranks=(1,)), samples(0.1, ranks=(9,), usual=1.8, seed=1)
    records = taken(0.10, list(one.samples) + list(nine.samples))
    tolerance = host_tolerance(records)
    assert tolerance.at(1) < 0.15 and tolerance.at(9) == pytest.approx(1.1 * 1.8 - 1, rel=0.03)
    entry = calibrate(parse(BY_RANKS), records).time("linear")
    assert entry.disturbed_samples == 16 and entry.samples == 108
    assert entry.coefficients["n"] == pytest.approx(TRUE_SLOPE, rel=0.02)
    assert entry.verification_mre < 1.02
    assert not any("slow spell" in w for w in entry.warnings), entry.warnings


#: DESCRIPTION with a parameterized implementation whose cost per element
#: rises with its parameter above 2**16 elements.
KNEE = DESCRIPTION.replace("time ~ 1 + n\n", "time ~ 1 + n\n\n"
                           "    impl blocked(b: int in 1 .. 4) = numpy.sum \"a pass in blocks\"\n"
                           "        time ~ 1 + n + n * b * max(0, log2(n) - 16)\n"
                           "        choose b minimizing time\n", 1).replace(
    "        for i in 4 .. 16 ++\n", "        for i in 4 .. 16 ++\n        for b in 1 .. 4 ++\n", 1)


def test_settings_timed_side_by_side_in_spells_keep_their_ratios_and_those_alone_are_scaled_back():
    """A parameterized implementation's settings are timed side by side at
    each point, so a spell slows them alike: where every setting of a point
    was timed in one, the fit takes their ratios and sets their level at
    its model's (hlc.model.calibration._leveled), each point by its own
    factor.  A setting timed alone in a spell, with no steady sample within
    NEAR_STEADY octaves in every variable and parameter (the large sizes,
    where spells fall most), is kept, scaled back by how much slower the
    spells' samples ran, all of them; the verification samples of spells
    are left out.
    An implementation without parameters leaves out all of its own."""
    rng = np.random.default_rng(3)
    records = []
    for verify, count in ((False, 40), (True, 12)):
        for index in range(count):
            large = index % 4 == 0  # a quarter of the points at 2**18 to 2**20 elements, one setting each, in spells
            n = int(2 ** (rng.uniform(18, 20) if large else rng.uniform(4, 16.5)))
            spell = large or index % 3 == 1
            slowdown = 1.65 if large else float(rng.uniform(1.3, 2.0))  # a spell of its own at each point
            host = round(slowdown, 3) if spell else round(1.0 + abs(rng.normal(0, 0.02)), 3)
            variables = {"n": n, "P": 1, "logP": 0.0}
            for b in ((1 + (index // 4) % 4,) if large else (1, 2, 3, 4)):
                seconds = (TRUE_CONSTANT + TRUE_SLOPE * n + 1e-9 * n * b * max(0.0, np.log2(n) - 16)) \
                    * (1 + rng.normal(0, 0.01)) * (slowdown if spell else 1.0)
                records.append(Sample("work", "blocked", verify, 1, index, {"b": b}, variables, seconds, host=host))
            records.append(Sample("work", "linear", verify, 1, index, {}, variables,
                                  (TRUE_CONSTANT + TRUE_SLOPE * n) * (slowdown if spell else 1.0), host=host))
    samples_ = taken(0.10, records)
    models = calibrate(parse(KNEE), samples_)
    entry = models.time("blocked")
    blocked = [r for r in records if r.implementation == "blocked" and not r.verify]
    large = [r for r in blocked if r.variables["n"] >= 2 ** 18]
    side_by_side = [r for r in blocked if r.host > 1.2 and r.variables["n"] < 2 ** 18]
    steady = [r for r in blocked if r.host < 1.2]

    def alone(sample: Sample) -> bool:
        return all(max(abs(np.log2(sample.variables["n"] / r.variables["n"])),
                       abs(np.log2(sample.parameters["b"] / r.parameters["b"]))) > 0.5 for r in steady)

    assert set(entry.leveled) == {f"1:{r.index}" for r in side_by_side}
    for r in side_by_side:
        assert entry.leveled[f"1:{r.index}"] == pytest.approx(r.host, rel=0.03)
    expected = {f"1:{r.index}:b={r.parameters['b']}" for r in large if alone(r)}
    assert expected and set(entry.scaled_alone) == expected
    assert entry.slowdown == pytest.approx(1.65, rel=0.05)  # what the spells' samples showed, all of them
    assert entry.coefficients["n * b * max(0, log2(n) - 16)"] == pytest.approx(1e-9, rel=0.1)
    assert entry.verification_mre < 1.02
    tolerance = host_tolerance(samples_)
    leveled = side_by_side[0]
    assert fitted_seconds(entry, leveled, tolerance) == pytest.approx(leveled.seconds / leveled.host, rel=0.03)
    kept = next(r for r in large if alone(r))
    assert fitted_seconds(entry, kept, tolerance) == pytest.approx(kept.seconds / entry.slowdown)
    left_out = next(r for r in records if r.implementation == "blocked" and r.verify and r.host > 1.2)
    assert fitted_seconds(entry, left_out, tolerance) is None
    again = TimeModel.from_json(entry.to_json())
    assert again.scaled_alone == entry.scaled_alone and again.leveled == entry.leveled
    assert any("fitted for their ratios" in w for w in entry.warnings), entry.warnings
    # Measured once per point, the implementation without parameters leaves out all of its spells' samples.
    assert models.time("linear").disturbed_samples == 26 and not models.time("linear").scaled_alone
    assert not models.time("linear").leveled


def test_too_few_steady_samples_keep_the_disturbed_ones():
    """Left out, the disturbed samples would leave no more fitting samples
    than terms, too few to tell how much slower they ran: all are kept as
    they are, and the model says why."""
    records = [r for r in samples(0.5).samples if r.verify or r.index < 4]  # 2 steady fitting samples, 2 terms
    entry = fitted(taken(0.10, records))
    assert entry.disturbed_samples == 0 and entry.samples == 4
    assert any("too few others" in w for w in entry.warnings), entry.warnings


def test_a_slowdown_beyond_what_the_meter_read_is_the_model_s_not_the_spell_s():
    """Real samples (tests/data/quick-spell): a quick build's counting sort,
    15 samples, two of them in spells the meter read at 1.20 and 1.73.  The
    written terms fitted to the eight steady fitting samples miss those
    two's points by 3.94 times; divided by that, a sort of 92,681 keys
    looked like 16 µs, and the fit dropped the cost per key (verification
    MRE 1.205; counting chosen at 162,772 keys of 21 bits, three times the
    fastest).  More than the meter read, the factor is not taken: with too
    few others to fit, both samples are kept as they are."""
    entry = calibrate(parse_file(ROOT / "libraries" / "sort.hl"), Samples.read(QUICK_SPELL)).time("counting")
    assert entry.slowdown is None
    assert any(w.startswith("2 of 15 samples were taken while the host meter read a slow spell")
               and "kept, as too few others" in w for w in entry.warnings), entry.warnings
    assert "n" in entry.kept and entry.coefficients["n"] > 0
    assert entry.verification_mre < 1.1


def test_verification_error_is_reported_per_rank_count():
    entry = fitted(samples(0.0, ranks=(1, 2)))
    assert set(entry.verification_mre_by_ranks) == {"1", "2"}
    assert all(1.0 <= error < 1.2 for error in entry.verification_mre_by_ranks.values())
    assert not fitted(samples(0.0)).verification_mre_by_ranks
    assert "verification_mre_by_ranks" not in fitted(samples(0.0)).to_json()


def test_samples_that_never_settled_are_left_out_like_disturbed_ones():
    """A sample flagged noisy has a median no other timing confirmed: here every
    tenth sample, 2x slow, is flagged and left out of the fit and verification."""
    records = [replace(r, host=1.0, noisy=r.index % 10 == 0) for r in samples(0.1).samples]
    entry = fitted(taken(0.10, records))
    assert entry.disturbed_samples == 8
    assert entry.samples == 54 and entry.verification_mre < 1.02


def test_too_few_fitting_samples_are_fitted_with_the_verification_ones():
    """An implementation with fewer fitting samples than its terms, and
    enough with its verification samples, is fitted on all of them and
    says it is unverified; with too few even together, it stays unfitted."""
    records = list(samples(0.0).samples)
    few = [r for r in records if r.verify or r.index < 1]  # 1 fitting sample for 2 terms, 20 held out
    entry = fitted(taken(0.10, few))
    assert entry.status == "fitted"
    assert entry.samples == 21 and entry.verification_samples == 0 and entry.verification_mre is None
    assert entry.coefficients["n"] == pytest.approx(TRUE_SLOPE, rel=0.05)
    assert any("fitted on the verification samples too (21 in all)" in note for note in entry.warnings)
    enough = fitted(taken(0.10, [r for r in records if r.verify or r.index < 3]))
    assert enough.samples == 3 and enough.verification_samples == 20 and enough.verification_mre is not None
    too_few = calibrate(parse(DESCRIPTION), taken(0.10, [r for r in records if r.index < 1 or
                                                         (r.verify and r.index < 1)])).time("linear")
    assert too_few.status == "unfitted"


STEPPED = """
library stepped "A pass whose digits change its cost."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)
    reference digits

    impl digits(bits: int in 1 .. 12) = numpy.sum "a pass per digit of bits"
        time ~ 1 + n

    profile
        for i in 4 .. 16 ++
        for bits in 1 .. 12 ++
        values = ones(1 << i)
"""


def stepped_samples(seed: int = 0) -> Samples:
    """A per-element cost of 3 ns at every digit width, but the few samples
    at 8 bits and more, all of small arrays, came out cheaper the larger
    they were (as disturbed small samples can): a fit that follows them
    steps the cost per element down below zero from 8 bits.  The arrays at
    fewer bits are of every size, small ones as often as large (log-uniform),
    so that no step in the size stands in for the one in the bits: drawn
    uniformly, nearly all were larger than any at 8 bits, and which of the
    two steps the fitter took turned on the last bits of the machine's
    floating point."""
    rng = np.random.default_rng(seed)
    records = []
    for verify, count in ((False, 120), (True, 30)):
        for index in range(count):
            bits = int(rng.integers(1, 13))
            if bits >= 8:
                n = int(rng.integers(10, 200))
                seconds = 20e-6 - 50e-9 * n
            else:
                n = int(10 ** rng.uniform(1, 5))  # log-uniform: as many small arrays as at 8 bits and more
                seconds = 2e-6 + 3e-9 * n
            records.append(Sample("work", "digits", verify, 1, index, {"bits": bits},
                                  {"n": n, "P": 1, "logP": 0.0}, seconds * (1 + rng.normal(0, 0.01)), host=1.0))
    return taken(0.10, records)


def test_a_discovered_step_may_not_pull_a_cost_per_unit_below_zero(monkeypatch):
    """The fitter finds the step down in the cost per element from 8 bits;
    where the model may be asked with 8 bits or more and more than a few
    hundred elements (the points the samples at fewer bits reached), it
    predicts less than nothing, so the term is left out, and says so.  With
    no points to probe, the term stays (what the check changes)."""
    from hlc.model import calibration

    library = parse(STEPPED)
    entry = calibrate(library, stepped_samples()).time("digits")
    assert not any(term.base == "n" for term in entry.discovered), entry.discovered
    assert entry.coefficients["n"] == pytest.approx(3e-9, rel=0.05)  # the larger arrays' cost per element
    assert any("left out the fitter's term n * (bits >=" in note and "predicted no positive time" in note
               for note in entry.warnings), entry.warnings
    monkeypatch.setenv("HLC_FIT_WORKERS", "0")  # every job in this process, where PROBES is patched
    monkeypatch.setattr(calibration, "PROBES", 0)
    unchecked = calibrate(library, stepped_samples()).time("digits")
    assert any(term.base == "n" and term.factors[0].kind == "step" and term.factors[0].variable == "bits"
               and unchecked.coefficients[term.text] < -unchecked.coefficients.get("n", 0.0)
               for term in unchecked.discovered), unchecked.discovered


COUNTERS = """
library counters "A table of 2**width counters beside the values."

from numpy import ones

interface work(values: float64[], extent: int) -> float "Some work."
    n = len(values)
    width = extent

    impl table = numpy.sum "clear a table, count the values"
        time ~ 1 + n + 2 ** width

    profile
        for i in 4 .. 20 ++
        for w in 1 .. 16 ++
        values = ones(1 << i)
        extent = w
"""


def counters_samples(seed: int = 0) -> Samples:
    """Samples whose cost falls by 3 ns a counter (as disturbed samples of a
    table that outgrows a cache can seem to), at every width from 1 to 12
    bits and every size, and from 13 bits only with a million values and
    more, whose cost per value keeps their times positive.  A fit follows
    them: the written term ``2 ** width`` takes a negative weight, and the
    model predicts less than nothing for few values with wide tables, a
    part of the domain that no site reached (the sites of 13 bits and more
    hold a million values)."""
    rng = np.random.default_rng(seed)
    records = []
    points = [(1 << i, w) for i in range(4, 21) for w in range(1, 13)]
    points += [(1 << i, w) for i in (20, 21) for w in range(13, 17)]
    for verify in (False, True):
        for index, (n, width) in enumerate(points if not verify else points[::4]):
            seconds = 50e-6 + 1e-9 * n - 3e-9 * 2 ** width + (60e-9 * n if width > 12 else 0.0)
            records.append(Sample("work", "table", verify, 1, index, {},
                                  {"n": n, "width": width, "P": 1, "logP": 0.0},
                                  seconds * (1 + rng.normal(0, 0.01)), host=1.0))
    return taken(0.10, records)


def test_a_written_term_of_negative_weight_may_not_pull_a_model_below_zero_between_the_sites(monkeypatch):
    """The written term ``2 ** width`` fitted at a negative weight makes the
    model predict no positive time for few values with wide tables, where
    no sample lay: the lattice over the domain finds it, and the term is
    left out (listed as dropped, with a note that says why), so that the
    model predicts a positive time everywhere.  Checked at the sites only,
    the term stays (what the lattice changes)."""
    from hlc.model import calibration
    from hlc.model.predict import Predictor

    library = parse(COUNTERS)
    samples_ = counters_samples()
    entry = calibrate(library, samples_).time("table")
    assert "2 ** width" in entry.terms and "2 ** width" in entry.dropped
    assert "2 ** width" not in entry.coefficients
    assert any("left out the written term 2 ** width" in note and "predict no positive time" in note
               for note in entry.warnings), entry.warnings
    predictor = Predictor(library, {"table": entry})
    for n in (16, 1000, 1 << 21):
        for width in range(1, 17):
            assert predictor.implementation("table", {"P": 1, "logP": 0.0}, n, width) > 0

    sites = calibration.sites_of(samples_, "work")
    assert not any(site["width"] > 12 and site["n"] < 1 << 20 for site in sites)
    lattice = calibration._lattice(sites)
    assert {p["width"] for p in lattice} == set(range(1, 17))
    assert min(p["n"] for p in lattice) == 16 and max(p["n"] for p in lattice) == 1 << 21

    monkeypatch.setattr(calibration, "_lattice", lambda sites: [])
    unchecked = calibrate(library, samples_).time("table")
    assert unchecked.coefficients.get("2 ** width", 0.0) < 0
    assert Predictor(library, {"table": unchecked}).implementation("table", {"P": 1, "logP": 0.0}, 16, 16) < 0


WIDE = """
library wide "A chunk size over a range far too long to probe at each value."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)

    impl chunked(chunk: int in 16 .. n * 1000000) = numpy.sum "in chunks"
        time ~ 1 + n + n / chunk

    profile
        for m in 1 .. 64 *= 2
        for chunk in 16 .. 1024 *= 2
        values = ones(m)
"""


def test_a_long_parameter_range_is_probed_at_values_spread_over_it():
    """A range of up to 64 million values a site is probed at PROBE_VALUES of
    them, its ends included, not at each (which would take minutes and
    gigabytes); a short range at each of its values."""
    from hlc.model import calibration
    from hlc.model.predict import Predictor

    library = parse(WIDE)
    implementation = library.interfaces[0].implementations[0]
    sites = [{"n": float(n), "P": 1.0, "logP": 0.0} for n in (1, 2, 4, 8, 16, 32, 64)]
    probes = calibration._probes(Predictor(library, {}), implementation, sites)
    assert len(probes) <= calibration.PROBES
    at_largest = sorted(p["chunk"] for p in probes if p["n"] == 64)
    assert at_largest[0] == 16 and at_largest[-1] == 64_000_000
    assert all(isinstance(value, int) for value in at_largest)
    assert calibration._probed_values(16, 16 + calibration.PROBE_VALUES - 1) == list(
        range(16, 16 + calibration.PROBE_VALUES))
    spread = calibration._probed_values(16, 64_000_000)
    assert len(spread) == calibration.PROBE_VALUES and spread == sorted(set(spread))
    assert spread[0] == 16 and spread[-1] == 64_000_000


TILED = """
library tiled "Two tile sides over long ranges."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)

    impl tiles(tall: int in 1 .. 100000, wide: int in 1 .. 100000) = numpy.sum "in tiles"
        time ~ 1 + n + n / tall + n / wide

    profile
        for m in 1 .. 64 *= 2
        for tall in 1 .. 1024 *= 32
        for wide in 1 .. 1024 *= 32
        values = ones(m)
"""


def test_two_long_parameter_ranges_share_the_settings_probed_at_a_site():
    """Two parameters are probed at the square root of PROBE_VALUES each (16
    by 16 at a site, the ends of both ranges among them), not at the
    product of two ranges' probes."""
    from hlc.model import calibration
    from hlc.model.predict import Predictor

    library = parse(TILED)
    implementation = library.interfaces[0].implementations[0]
    site = {"n": 64.0, "P": 1.0, "logP": 0.0}
    probes = calibration._probes(Predictor(library, {}), implementation, [site])
    assert len(probes) <= calibration.PROBE_VALUES
    assert {p["tall"] for p in probes} >= {1, 100000} and {p["wide"] for p in probes} >= {1, 100000}
    assert len({p["tall"] for p in probes}) == len({p["wide"] for p in probes}) == 16


def _every_setting_thinned(predictor, implementation, sites):
    """The probes made one by one: each site's every setting, then thinned to PROBES."""
    from hlc.language.expressions import integer_bounds
    from hlc.model import calibration

    each = max(2, round(calibration.PROBE_VALUES ** (1 / len(implementation.parameters))))
    probes = []
    for site in sites:
        settings = [dict(site)]
        for parameter in implementation.parameters:
            settings = [{**setting, parameter.name: value} for setting in settings
                         for value in calibration._probed_values(
                             *integer_bounds(parameter.range, {**predictor.constants, **setting}), each)]
        probes += settings
    if len(probes) > calibration.PROBES:
        probes = [probes[i] for i in np.linspace(0, len(probes) - 1, calibration.PROBES).round().astype(int)]
    return probes


def test_the_probes_are_each_site_s_settings_thinned():
    """The settings kept of many sites are those that making every setting
    of every site and thinning them would keep, in the same order, though
    only the settings kept are made."""
    from hlc.model import calibration
    from hlc.model.predict import Predictor

    library = parse(TILED)
    implementation = library.interfaces[0].implementations[0]
    predictor = Predictor(library, {})
    sites = [{"n": float(n), "P": 1.0, "logP": 0.0} for n in range(1, 40)]
    probes = calibration._probes(predictor, implementation, sites)
    assert probes == _every_setting_thinned(predictor, implementation, sites)
    assert len(probes) == calibration.PROBES


def test_a_factored_model_far_from_its_samples_says_so():
    """A factored model is not fitted, but its samples judge it as they judge
    a fitted one: off by a factor of three on the line's samples, it gets
    the warning a fitted model gets (and the table of `hlc fit` shows it);
    the true line gets none."""
    from hlc.model.calibration import VERIFICATION_LIMIT, summary

    for scale, warned in ((3.0, True), (1.0, False)):
        factored = DESCRIPTION.replace("time ~ 1 + n", f"time = {scale} * ({TRUE_CONSTANT} + {TRUE_SLOPE} * n)")
        models = calibrate(parse(factored), samples(0.0))
        entry = models.time("linear")
        assert entry.status == "factored"
        assert (entry.verification_mre > VERIFICATION_LIMIT) is warned
        assert bool(entry.warnings) is warned
        if warned:
            assert entry.warnings[0].startswith(f"verification MRE {entry.verification_mre:.3f} exceeds "
                                                f"{VERIFICATION_LIMIT}: the formula (or a model it calls) may miss")
            assert "  warning: verification MRE" in summary(models)
