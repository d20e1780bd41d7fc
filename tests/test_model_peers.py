"""The peers benchmark (benchmarks/model_peers.py) on the stored sort samples,
run where its optional peers are not installed: hlc's side of every row,
the samples the peers would get, and the last line."""

from __future__ import annotations

from pathlib import Path

import benchmark_scripts

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "sort"
model_peers = benchmark_scripts.load("model_peers")


def test_every_sort_model_is_compared_on_the_samples_its_fit_used():
    """The radix sort over the ranks calls the one-rank model as a term: the
    samples are sorted out with the fitted callee, as the fitter does (the
    benchmark once stopped there, the callee not calibrated)."""
    data = model_peers.DataSet("sort", DATA / "samples.jsonl", ROOT / "libraries" / "sort.hl")
    rows, notes = model_peers.compare(data)
    assert [row.implementation for row in rows] == ["radix", "radix_spmd", "counting", "counting_spmd", "narrow",
                                                    "numpy", "sample"]
    assert not [note for note in notes if "differ from hlc's" in note], notes
    for row in rows:
        assert 1.0 < row.scores["hlc"] < 1.2 and row.fitting and row.verification, row.implementation
        if model_peers.HistGradientBoostingRegressor is None:
            assert row.scores["gradient boosting"] is None
    line, _ = model_peers.worst_line(rows)
    assert line.startswith("worst verification MRE over one-rank models: hlc 1.0"), line
