"""What the fitter found, weighed: the findings that make most of a prediction first."""

from __future__ import annotations

import numpy as np
import pytest

from hlc.artefacts.models import Discovered, Factor, TimeModel
from hlc.artefacts.samples import Header, Sample, Samples
from hlc.language.expressions import unparse
from hlc.language.parse import parse
from hlc.model.findings import LEAST_SHARE, MOST_LISTED, Finding, findings, in_words, listed
from hlc.model.predict import Predictor
from hlc.model.terms import discovered_in_words, model_terms

from .test_every_sample import DESCRIPTION  # one pass, whose cost is 1 + n as written

#: Found in the order a fit may keep them: a negligible change first, the one
#: that doubles the cost per element past 2^12 elements last.
TINY = Discovered("n", (Factor("step", "n", 6.0, True),))
MIDDLE = Discovered("n", (Factor("hinge", "n", 16.0, True),))
LARGE = Discovered("n", (Factor("step", "n", 12.0, True),))
BETAS = {TINY: 1e-13, MIDDLE: 5e-11, LARGE: 1e-9}


@pytest.fixture
def fitted():
    library = parse(DESCRIPTION)
    implementation = library.interfaces[0].implementations[0]
    found = (TINY, MIDDLE, LARGE)
    texts = [unparse(term) for term in model_terms(implementation.model("time"), found)]
    coefficients = {"1": 2e-6, "n": 1e-9, **{text: BETAS[term] for term, text in zip(found, texts[-3:], strict=True)}}
    entry = TimeModel("fitted", discovered=found, terms=tuple(texts), kept=tuple(texts), coefficients=coefficients)
    return Predictor(library, {"scan": entry}), implementation, entry


def at(n: float) -> dict[str, float]:
    return {"n": n, "P": 1, "logP": 0.0}


def test_the_findings_are_weighed_by_the_largest_part_of_a_prediction_they_make(fitted):
    predictor, implementation, entry = fitted
    weighed = findings(predictor, implementation, entry, [at(2.0**k) for k in range(4, 21)])
    assert [f.words for f in weighed] == [
        "the cost per n rises by 1 ns from n = 2^12 (4,096)",
        "the cost per n grows by 50 ps per octave of n beyond n = 2^16 (65,536)",
        "the cost per n rises by 0.1 ps from n = 2^6 (64)"]
    large, middle, tiny = weighed
    # The step makes most of a prediction at 2^16 elements, just before the
    # hinge adds to the cost per element: 1 ns of 2 ns (and 0.1 ps), 2 us a call.
    n = 2.0**16
    assert large.share == pytest.approx(1e-9 * n / (2e-6 + (2e-9 + 1e-13) * n))
    assert large.seconds == pytest.approx(1e-9 * n)
    n = 2.0**20  # the hinge, 4 octaves past its knot, at the largest point
    assert middle.share == pytest.approx(4 * 5e-11 * n / (2e-6 + (2.2e-9 + 1e-13) * n))
    assert tiny.share < LEAST_SHARE


def test_one_point_weighs_the_findings_there_and_counts_those_that_add_nothing(fitted):
    predictor, implementation, entry = fitted
    assert in_words(predictor, implementation, entry, [at(2.0**10)]) == [
        "3 findings, none 1% of the prediction here"]
    assert in_words(predictor, implementation, entry, [at(2.0**20)]) == [
        "the cost per n rises by 1 ns from n = 2^12 (4,096): +1.05 ms here",
        "the cost per n grows by 50 ps per octave of n beyond n = 2^16 (65,536): +210 µs here",
        "and 1 more, none 1% of the prediction here"]


def test_a_build_s_findings_say_the_most_each_makes_of_a_sample_s_time(fitted):
    predictor, implementation, entry = fitted
    assert in_words(predictor, implementation, entry, [at(2.0**k) for k in range(4, 21)]) == [
        "the cost per n rises by 1 ns from n = 2^12 (4,096): up to 49% of a sample's predicted time",
        "the cost per n grows by 50 ps per octave of n beyond n = 2^16 (65,536): up to 9% of a sample's "
        "predicted time",
        "and 1 more, none 1% of the prediction at any sample"]


def test_at_most_a_few_findings_are_listed_and_the_rest_counted():
    many = [Finding(f"finding {k}", 0.5 - k / 100, 1e-6) for k in range(MOST_LISTED + 3)]
    lines = listed(many, at_one_point=False)
    assert lines[:-1] == [f"finding {k}: up to {0.5 - k / 100:.0%} of a sample's predicted time"
                          for k in range(MOST_LISTED)]
    assert lines[-1] == "and 3 more, each a smaller part of the prediction at any sample"
    offset = listed([Finding("a hinge", 2.5, 1e-3)], at_one_point=False)
    assert offset == ["a hinge: up to 250% of a sample's predicted time, other terms taking time off there"]


def test_without_a_description_to_weigh_them_the_findings_keep_the_order_found(fitted):
    _, _, entry = fitted
    assert in_words(None, None, entry, []) == discovered_in_words(entry)
    assert discovered_in_words(entry)[0] == "the cost per n rises by 0.1 ps from n = 2^6 (64)"


TABLES = """
library counts "Counting keys into a table."

from numpy import ones

interface count(keys: float64[], bits: int) -> float "Count the keys."
    n = len(keys)
    width = bits
    reference table

    impl table = numpy.sum "random access into a table of 2**width counters"
        time ~ 1 + n + n * steps(width)

    profile
        for i in 4 .. 20 ++
        for w in 1 .. 24 ++
        keys = ones(1 << i)
        bits = w
"""


def table_samples() -> Samples:
    """A table whose cost per key steps from 1 to 11 ns at width 19, with 2%
    noise, at every width from 8 to 24."""
    rng = np.random.default_rng(0)
    records = []
    points = [(int(n), w) for w in range(8, 25) for n in (1e5, 2e5, 5e5, 1e6)] + [(10, w) for w in range(1, 25)]
    for verify in (False, True):
        for n, width in points if not verify else points[::5]:
            index = len(records)
            seconds = (1e-6 + (11e-9 if width >= 19 else 1e-9) * n) * (1 + rng.normal(0, 0.02))
            records.append(Sample("count", "table", verify, 1, index, {},
                                  {"n": n, "width": width, "P": 1, "logP": 0.0}, seconds))
    header = Header("counts", "counts.hl", 0, 1, 0.0, {"resolution": 1e-9, "overhead": 0.0}, "3.11", "here", 0.1)
    return Samples(headers=(header,), samples=tuple(records))

def test_a_build_s_summary_and_report_list_the_step_its_samples_show_first(tmp_path):
    """A fit of samples whose cost per key steps up tenfold at width 19: the
    build's summary and its report put that step first, whatever else the
    searches found, each finding's share no larger than the one before."""
    import re

    from hlc.artefacts.samples import append
    from hlc.dispatch.build import BuildResult, summary_table
    from hlc.language.parse import parse_file
    from hlc.model.calibration import calibrate
    from hlc.reports.data import read_build

    records = table_samples()
    (tmp_path / "counts.hl").write_text(TABLES)
    append(tmp_path / "samples.jsonl", [*records.headers, *records.samples])
    models = calibrate(parse_file(tmp_path / "counts.hl"), records)
    models.save(tmp_path / "models.json")

    summary = summary_table(BuildResult("counts", tmp_path, models)).splitlines()
    start = summary.index("table: the fitter found that (the largest first)")
    found = [line for line in summary[start + 1:] if line.startswith("  - ")]
    assert found[0].startswith("  - the cost per n rises by") and "from width = 19" in found[0]
    shares = [int(share) for share in re.findall(r"up to (\d+)% of a sample's", " ".join(summary[start + 1:]))]
    assert shares == sorted(shares, reverse=True) and shares[0] >= 80
    report = next(i for face in read_build(tmp_path).interfaces for i in face.implementations if i.name == "table")
    assert report.findings[0].startswith("the cost per n rises by") and "from width = 19" in report.findings[0]
