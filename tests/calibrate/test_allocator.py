"""Profiling processes keep freed memory, so a call's temporaries cost no page faults by chance."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hlc.calibrate import harness
from hlc.calibrate.allocator import keep_freed_memory

# Six temporaries of 512 KiB freed together, as a call of a two-rank radix
# sort frees its tables: the page faults per call, after a first call.
FAULTS_PER_CALL = textwrap.dedent("""
    import resource, sys
    import numpy as np
    if sys.argv[1] == "kept":
        from hlc.calibrate.allocator import keep_freed_memory
        assert keep_freed_memory()
    def call():
        parts = [np.ones(1 << 16) for _ in range(6)]
        return sum(float(part[0]) for part in parts)
    call()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        call()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
""")


def faults_per_call(mode: str) -> float:
    result = subprocess.run([sys.executable, "-c", FAULTS_PER_CALL, mode], capture_output=True, text=True,
                            check=True)
    return float(result.stdout)


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's allocator")
def test_kept_memory_spares_the_temporaries_page_faults():
    if not keep_freed_memory():
        pytest.skip("this C library has no mallopt")
    # By default the allocator returns the freed tables to the system, and
    # each call faults their 768 pages in again.
    assert faults_per_call("default") > 300
    assert faults_per_call("kept") < 10


def test_the_profiling_program_keeps_freed_memory_before_it_times(monkeypatch):
    calls = []
    monkeypatch.setattr(harness, "keep_freed_memory", lambda: calls.append("kept"))

    class Evaluator:
        def run(self) -> int:
            calls.append("ran")
            return 0

    assert harness.main("lib", "lib.hl", [], ["--evaluate", "build"], lambda *_: Evaluator()) == 0
    assert calls == ["kept", "ran"]
