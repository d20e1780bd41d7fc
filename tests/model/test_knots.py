"""Loose knots: where the samples leave a discovered step's place open, a
prediction is a guess, and the adaptive profile measures there."""

from __future__ import annotations

import numpy as np
import pytest

from hlc.adaptive import Judge, Site
from hlc.artefacts.samples import Header, Sample
from hlc.language.parse import parse
from hlc.model.calibration import Samples, calibrate
from hlc.model.knots import loose_knots
from hlc.model.predict import Predictor

DESCRIPTION = """
library tables "Two ways to count."

from numpy import ones

interface work(values: float64[], extent: int) -> float "Some work."
    n = len(values)
    width = extent
    reference scan

    impl table = numpy.sum "random access into a table of 2**width counters"
        time ~ 1 + n + n * steps(width)

    impl scan = numpy.sum "a pass"
        time ~ 1 + n

    profile
        for i in 4 .. 16 ++
        for w in 1 .. 24 ++
        values = ones(1 << i)
        extent = w
"""

STEP = 19  # the table's cost per key rises by 10 ns from this width
WIDE, NARROW = 11e-9, 1e-9  # per key, past the step and before it
SCAN = 4e-9


def table_seconds(n: float, width: int) -> float:
    return 1e-6 + (WIDE if width >= STEP else NARROW) * n


def samples(widths_at_large_n: list[int], seed: int = 0) -> Samples:
    """Both implementations with 2% noise: the table's large inputs only at
    ``widths_at_large_n``, and at every width with 10 keys (where its per-key
    cost is too small a part of the time to show a step)."""
    rng = np.random.default_rng(seed)
    records = []
    index = 0
    points = [(int(n), w) for w in widths_at_large_n for n in (1e5, 2e5, 5e5, 1e6)]
    points += [(10, w) for w in range(1, 25)]
    for verify in (False, True):
        for n, width in points if not verify else points[::5]:
            noise = 1 + rng.normal(0, 0.02)
            variables = {"n": n, "width": width, "P": 1, "logP": 0.0}
            records.append(Sample("work", "table", verify, 1, index, {}, variables, table_seconds(n, width) * noise))
            records.append(Sample("work", "scan", verify, 1, index, {}, variables, (1e-6 + SCAN * n) * noise))
            index += 1
    header = Header("tables", "tables.hl", 0, 1, 0.0, {"resolution": 1e-9, "overhead": 0.0}, "3.11", "here", 0.1)
    return Samples(headers=(header,), samples=tuple(records))


def knots_of(records: Samples):
    """The loose knots of the table's model as an adaptive profile's round
    fits it: on the fitting samples alone (the verification samples, at
    other widths, are not where its next points are planned from)."""
    library = parse(DESCRIPTION)
    models = calibrate(library, records, every_sample=False)
    implementation = library.interfaces[0].implementation("table")
    fitted = [s for s in records.samples if s.implementation == "table" and not s.verify]
    predictor = Predictor.of_models(library, models, {})
    return library, models, loose_knots(predictor, implementation, models.time("table"),
                                        [s.environment for s in fitted], [s.seconds for s in fitted])


def test_a_step_between_the_widths_the_large_inputs_hold_is_loose_between_them():
    records = samples([10, 12, 14, 16, 21, 22, 23, 24])
    _, models, knots = knots_of(records)
    [knot] = knots
    assert knot.factor.variable == "width" and 16 < knot.factor.knot <= 21
    # the widths with 10 keys do not pin it: the step is a tenth of their time
    assert (knot.below, knot.above) == (16, 21)
    n = 500_000
    for width in (17, 18, 19, 20):
        assert knot.ambiguity(n, width) == pytest.approx(abs(knot.coefficient) * n)
        assert knot.ambiguity(n, width) == pytest.approx((WIDE - NARROW) * n, rel=0.1)
    for width in (14, 16, 21, 23):
        assert knot.ambiguity(n, width) == 0.0


def test_measuring_inside_the_gap_pins_the_step():
    _, _, [knot] = knots_of(samples([10, 12, 14, 16, 17, 18, 19, 20, 21, 22, 23, 24]))
    assert knot.factor.knot == STEP
    assert (knot.below, knot.above) == (18, 19)
    assert all(knot.ambiguity(500_000, width) == 0.0 for width in range(1, 25))


def test_the_profile_times_an_implementation_predicted_slow_where_its_step_may_not_yet_apply():
    """Where the step's place is open, the table may be the fastest or the
    slowest: the decision is uncertain, and both are worth timing; where it
    is pinned, the scan alone (past the step) or the table alone (before it)."""
    records = samples([10, 12, 14, 16, 21, 22, 23, 24])
    library, models, _ = knots_of(records)
    judge = Judge(library, models, records=records)

    def at(width: int) -> Site:
        both = {"table": [{}], "scan": [{}]}
        return Site("work", 1, width, {"w": width}, {"n": 500_000, "width": width, "P": 1, "logP": 0.0}, both, both)

    for width in (17, 18, 19, 20):
        assert set(judge.worth_timing(at(width))) == {"table", "scan"}
        assert judge.uncertainty(at(width)) > 0.0
    assert set(judge.worth_timing(at(14))) == {"table"}
    assert set(judge.worth_timing(at(23))) == {"scan"}
    assert judge.uncertainty(at(14)) == judge.uncertainty(at(23)) == 0.0
    # without the samples, the Judge trusts the knot where the fit put it
    blind = Judge(library, models)
    assert len(blind.worth_timing(at(18 if models.time("table").discovered[0].factors[0].knot <= 18 else 20))) == 1


def test_the_values_over_arrays_are_those_point_by_point(monkeypatch):
    """The loose knots found from the terms valued over arrays of the
    samples' values are the ones found from them valued sample by sample."""
    from hlc.model import knots

    valued = []
    real = knots.array_columns
    monkeypatch.setattr(knots, "array_columns", lambda *arguments: valued.append(real(*arguments)) or valued[-1])
    library, models, over_arrays = knots_of(samples([16, 22]))
    assert valued and all(columns is not None for columns in valued)
    assert any(knot.below is not None and knot.above is not None for knot in over_arrays)
    monkeypatch.setattr(knots, "array_columns", lambda *arguments: None)  # point by point
    _, _, point_by_point = knots_of(samples([16, 22]))
    assert over_arrays == point_by_point
