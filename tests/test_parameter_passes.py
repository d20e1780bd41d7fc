"""The parameter-passes benchmark (benchmarks/parameter_passes.py) on a quick
build of its transpose library: both settings at every size, the passes'
at least as good by the models, and the last line's form."""

from __future__ import annotations

import re

import benchmark_scripts
import pytest

import hlc

passes = benchmark_scripts.load("parameter_passes")


@pytest.mark.slow
def test_the_passes_are_timed_against_the_first_pass_and_summed_up(tmp_path, capsys):
    build = hlc.build(passes.DESCRIPTION, out=tmp_path / "transpose", quick=True).path
    found = passes.settings_both_ways(build, [16, 300, 4000])
    assert [n for n, _, _ in found] == [16, 300, 4000]
    for _, first, again in found:
        assert set(first) == set(again) == {"tall", "wide"}
    passes.main(["--build", str(build), "--points", "3", "--rounds", "1"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"tile sides in passes against the first pass alone: time x\d+\.\d{3} \(geometric mean "
                        r"over 3 sizes\), the first pass more than 3% slower at \d, the passes at \d", last), last
