"""The verification-floor benchmark: a build's verification points timed
again in fresh processes, each pair judged by its ratio."""

from __future__ import annotations

import json
from pathlib import Path

import benchmark_scripts
import pytest

import hlc

ROOT = Path(__file__).resolve().parent.parent
floor = benchmark_scripts.load("verification_floor")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("build") / "comm"
    hlc.build(ROOT / "tests" / "descriptions" / "comm.hl", out=folder, quick=True)
    return folder


def sample(index: int, seconds: float, implementation: str = "a", ranks: int = 1):
    return floor.Sample("work", implementation, True, ranks, index, {}, {"n": index}, seconds)


def test_a_uniform_factor_is_an_offset_and_no_difference():
    first = {(s.implementation, s.P, s.index, "{}"): s for s in (sample(i, 1e-3 * (i + 1)) for i in range(5))}
    second = {key: sample(s.index, 1.3 * s.seconds) for key, s in first.items()}
    [values] = floor.ratios(first, second).values()
    assert floor.offset(values) == pytest.approx(1.3)
    assert floor.apart(values) == pytest.approx((1.0, 1.0))


def test_only_calls_timed_in_both_are_paired_and_each_pair_counts_by_its_ratio():
    first = {("a", 1, i, "{}"): sample(i, 1e-3) for i in range(4)}
    second = {("a", 1, i, "{}"): sample(i, 1e-3 * (2.0 if i == 0 else 1.0)) for i in range(3)}
    second[("b", 1, 0, "{}")] = sample(0, 1e-3, "b")  # no partner in the first
    found = floor.ratios(first, second)
    assert list(found) == [("a", 1)] and sorted(found[("a", 1)]) == [1.0, 1.0, 2.0]
    mean, worst = floor.apart(found[("a", 1)])
    scale = 2 ** (1 / 3)
    assert worst == pytest.approx(2.0 / scale)
    assert mean == pytest.approx((2 * scale + 2.0 / scale) / 3)


def test_a_build_is_timed_again_and_judged_against_itself(built, capsys):
    assert floor.main([str(built), "--runs", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    [row] = [line for line in lines if line.startswith("BlockTransfer")]
    fields = row.split()
    pairs, offset, apart, worst, again = int(fields[2]), *map(float, fields[3:7])
    verification = sum(1 for line in (built / "samples.jsonl").read_text().splitlines()
                       if json.loads(line).get("verify"))
    assert 0 < pairs <= verification
    assert offset > 0 and 1.0 <= apart <= worst and again >= 1.0
    assert lines[-1].startswith("largest difference between processes: BlockTransfer P=1 build vs again ")
