"""The model kept is searched and fitted again on the verification samples
too, once they have judged the one fitted without them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hlc.artefacts.models import TimeModel, load
from hlc.artefacts.samples import Header, Sample
from hlc.language.parse import parse
from hlc.model.calibration import Samples, calibrate, summary
from hlc.model.predict import Predictor

DESCRIPTION = """
library scans "One pass whose cost per element steps up past a cache."

from numpy import ones

interface work(values: float64[]) -> float "Some work."
    n = len(values)
    reference scan

    impl scan = numpy.sum "a pass"
        time ~ 1 + n

    profile
        for i in 4 .. 20 ++
        values = ones(1 << i)
"""

STEP = 12.3  # log2 of the size from which each element costs STEEP more
FLAT, STEEP = 1e-9, 2e-9


def seconds(n: float) -> float:
    return 1e-6 + n * (FLAT + (STEEP if math.log2(n) >= STEP else 0.0))


def samples(seed: int) -> Samples:
    """Two fitting samples at every power of two, 34, fewer than the
    automatic search takes (hlc.model.discover.MIN_SAMPLES); 40
    verification samples at random sizes, log-uniform, as a profile's
    are; 2% noise."""
    rng = np.random.default_rng(seed)
    records = []
    sizes = [(False, 2.0 ** i) for i in range(4, 21) for _ in range(2)]
    sizes += [(True, float(round(2 ** rng.uniform(4, 20)))) for _ in range(40)]
    for index, (verify, n) in enumerate(sizes):
        variables = {"n": n, "P": 1, "logP": 0.0}
        records.append(Sample("work", "scan", verify, 1, index, {}, variables,
                              seconds(n) * (1 + rng.normal(0, 0.02))))
    header = Header("scans", "scans.hl", seed, 1, 0.0, {"resolution": 1e-9, "overhead": 0.0}, "3.11", "here", 0.1)
    return Samples(headers=(header,), samples=tuple(records))


def error_against_truth(library, entry: TimeModel) -> float:
    """Mean relative error of ``entry`` against the noise-free cost, on a
    grid of sizes 64 times finer than the fitting samples'."""
    predictor = Predictor(library, {"scan": entry})
    sizes = [2 ** (k / 64) for k in range(4 * 64, 20 * 64 + 1)]
    return float(np.mean([abs(predictor.evaluate("scan", {"n": n, "P": 1, "logP": 0.0}) / seconds(n) - 1)
                          for n in sizes]))


@pytest.mark.parametrize("seed", range(5))
def test_the_verification_judges_the_model_fitted_without_it_and_the_kept_one_uses_it(seed):
    library = parse(DESCRIPTION)
    records = samples(seed)
    judged = calibrate(library, records, every_sample=False).time("scan")
    kept = calibrate(library, records).time("scan")
    assert not judged.on_every_sample and kept.on_every_sample
    # the verdict is the judged model's, on samples it was not fitted on
    assert kept.verification_mre == judged.verification_mre
    assert (kept.samples, kept.verification_samples) == (judged.samples, judged.verification_samples) == (34, 40)
    # the kept one was fitted on all 74: its residuals are theirs
    assert len(judged.residuals) == 34 and len(kept.residuals) == 74
    # searched on all 74, the kept one has the step the 34 could not be searched for
    assert not judged.discovered and error_against_truth(library, judged) > 0.25
    assert any(12 <= term.factors[0].knot <= 13 for term in kept.discovered)
    assert error_against_truth(library, kept) < 0.03


def test_the_summary_says_what_the_kept_model_was_fitted_on(tmp_path):
    library = parse(DESCRIPTION)
    models = calibrate(library, samples(0))
    models.save(tmp_path / "models.json")
    again = load(tmp_path / "models.json").time("scan")
    assert again.on_every_sample
    assert "fitted on the 34 fitting and 40 verification samples, after these judged the model fitted without " \
           "them" in summary(models)
    assert "fitted on" not in summary(calibrate(library, samples(0), every_sample=False))
