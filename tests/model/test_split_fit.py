"""A parameterized model's final fit, split into jobs that run side by side:
its judged search beside its search on every sample, the points of the
host's spells leveled by that, then the judged search again."""

from __future__ import annotations

from pathlib import Path

import pytest

from hlc.artefacts.samples import Samples
from hlc.language.parse import parse_file
from hlc.model import calibration
from hlc.model.calibration import calibrate
from hlc.model.predict import Predictor

ROOT = Path(__file__).resolve().parents[2]
#: A busy Zen 4 host's default sort build: many of its radix points were timed in spells, and are leveled.
SAMPLES = ROOT / "tests" / "data" / "sort-zen4" / "samples.jsonl"


@pytest.fixture
def in_this_process(monkeypatch):
    """Every job in this process (where the bags' count is patched), no bags."""
    monkeypatch.setenv("HLC_FIT_WORKERS", "0")
    monkeypatch.setattr(calibration, "BAGS", 0)


def test_the_split_fit_keeps_the_model_of_its_searches_one_after_the_other(in_this_process):
    """The radix model of a build whose spells leveled its points: fitted
    by the split jobs, exactly the model that the judged search, the search
    on every sample, the leveling and the judged search again give one
    after the other in one job."""
    library = parse_file(ROOT / "libraries" / "sort.hl")
    samples = Samples.read(SAMPLES)
    split = calibrate(library, samples).time("radix")
    assert split.status == "fitted" and split.leveled

    implementation = next(i for i in library.implementations if i.name == "radix")
    within = Predictor(library, {})
    fitting = calibration._within(within, implementation, samples.of("sort", "radix", verify=False))
    verification = calibration._within(within, implementation, samples.of("sort", "radix", verify=True))
    sites = calibration.sites_of(samples, "sort")
    tolerance = calibration.host_tolerance(samples)
    model = implementation.model("time")

    def searched(on):
        return calibration._search_and_fit(within, implementation, model, on, True, 0.95, True, None, None, sites)

    judged = calibration._judge(within, implementation, model, fitting, verification, True, 0.95, tolerance,
                                True, None, None, sites)
    leveled = calibration._leveled(within, implementation, judged.kept(model, searched(judged.everything),
                                                                        True).entry, fitting, tolerance)
    steadiness = judged.steadiness
    again = calibration._judge(within, implementation, model, calibration.leveled_samples(leveled, fitting),
                               verification, True, 0.95, tolerance, True, None, None, sites,
                               steadiness.slowdown if steadiness.scaled else None)
    whole = calibration._Pending(again, leveled, calibration._leveled_text(leveled, fitting),
                                 calibration._domain(fitting + verification)).done(
        model, searched(again.everything), True).entry
    for field in ("discovered", "terms", "coefficients", "leveled", "verification_mre", "samples",
                  "verification_samples", "on_every_sample", "domain", "warnings"):
        assert getattr(split, field) == getattr(whole, field), field


def test_the_judged_search_and_the_search_on_every_sample_are_jobs_of_their_own(in_this_process, monkeypatch):
    """Each parameterized model's two searches start as two jobs at once
    (run_jobs may give them to two workers); a model without parameters
    is one job, as before."""
    started: list[tuple[str, str]] = []
    run_jobs = calibration.run_jobs

    def recording(jobs, workers=None):
        started.extend((job.function.__name__, job.arguments[3]) for job in jobs)
        return run_jobs(jobs, workers)

    monkeypatch.setattr(calibration, "run_jobs", recording)
    calibrate(parse_file(ROOT / "libraries" / "sort.hl"), Samples.read(SAMPLES))
    assert ("_fit_job", "radix") in started and ("_every_sample_job", "radix") in started
    assert ("_fit_job", "counting") in started and ("_every_sample_job", "counting") not in started
