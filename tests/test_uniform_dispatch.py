"""The uniform-dispatch benchmark (benchmarks/uniform_dispatch.py) end to
end at two ranks: its library builds, both dispatched calls run beside the
direct one, and the last line has its form."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_benchmark_times_both_dispatched_calls_against_the_direct_one():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "uniform_dispatch.py"), "--rounds", "2"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"dispatch under mpiexec at 2 ranks, against the implementation called directly: "
                        r"agreeing x\d+\.\d\d, uniform x\d+\.\d\d \(medians\)", last), last
