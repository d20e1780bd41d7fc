"""The sort-kernels benchmark: its cases, what one process reports, and the
summary over processes (the compile and the timing of both revisions are
the benchmark's own run; here a stand-in module is timed)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import benchmark_scripts
import numpy as np
import pytest

kernels = benchmark_scripts.load("sort_kernels")


def test_the_cases_cover_every_sort_and_key_kind_once():
    found = kernels.cases()
    labels = [(sort, label) for sort, label, _ in found]
    assert len(set(labels)) == len(labels)
    assert {sort for sort, _ in labels} == {"radix", "counting", "narrow"}
    assert {dtype for _, dtype in kernels.KEYS} >= {"int64", "int32", "uint16", "int8"}
    # every radix case at every digit width; counting sort only where its table is small
    assert sum(sort == "radix" for sort, _ in labels) == len(kernels.SIZES) * len(kernels.KEYS) * len(kernels.DIGITS)
    assert all("40-bit" not in label for sort, label in labels if sort == "counting")


def test_the_cases_sort_signed_keys_and_run_on_a_module(monkeypatch):
    monkeypatch.setattr(kernels, "SIZES", (50,))
    seen = []

    def sort(keys, bpd=8):
        seen.append(keys.dtype)
        return np.sort(keys)

    stand_in = SimpleNamespace(radix_sort=sort, counting_sort=sort, narrow_sort=sort)
    medians = kernels.medians(stand_in, repeats=3)
    assert len(medians) == len(kernels.cases()) and all(m >= 0 for m in medians)
    assert {str(d) for d in seen} == {dtype for _, dtype in kernels.KEYS}
    assert [label for _, label, _ in kernels.cases() if "40-bit" in label][0] == "n=50 40-bit int64 bpd=6"


def test_the_summary_takes_each_revisions_median_over_its_processes():
    timed_cases = [("radix", "a", None), ("radix", "b", None), ("counting", "c", None)]
    mine = [[1.0, 2.0, 3.0], [1.2, 2.0, 3.0], [100.0, 2.0, 3.0]]  # a slow process is outvoted
    theirs = [[1.0, 1.0, 3.0], [1.0, 1.0, 3.0], [1.0, 1.0, 3.0]]
    lines = kernels.summary(timed_cases, mine, theirs, "REF", 8.0, 18.0)
    assert lines[0].split()[:3] == ["radix", "a", "1.200"]
    assert lines[1].split()[:3] == ["radix", "b", "2.000"]
    assert lines[-1] == ("kernels against REF: compile 8.0 s against 18.0 s; time ratio (geometric mean) "
                         f"radix {(1.2 * 2.0) ** 0.5:.3f}, counting 1.000; worst 2.000 (radix b)")


def test_a_revision_is_required(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["sort_kernels.py"])
    with pytest.raises(SystemExit):
        kernels.main()


@pytest.mark.parametrize("before", [None, "-Wall"])
def test_an_optimization_level_is_added_to_cflags_for_that_compile_only(tmp_path, monkeypatch, before):
    """--against=-O2 compiles with -O2 last in CFLAGS (after the interpreter's
    own flags, so it decides), and leaves CFLAGS as it found it."""
    if before is None:
        monkeypatch.delenv("CFLAGS", raising=False)
    else:
        monkeypatch.setenv("CFLAGS", before)
    seen = []

    def compile_extensions(sources, folder, cached, at_link):
        seen.append((kernels.os.environ.get("CFLAGS"), cached, at_link))
        (folder / "radix.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")

    monkeypatch.setattr(kernels, "compile_extensions", compile_extensions)
    library, seconds = kernels.compiled(Path("radix.pyx"), tmp_path, flags="-O2")
    assert library.parent == tmp_path and seconds >= 0
    assert seen == [(f"{before} -O2" if before else "-O2", False, True)]
    assert kernels.os.environ.get("CFLAGS") == before
    kernels.compiled(Path("radix.pyx"), tmp_path)
    assert seen[-1][0] == before
