"""The sort kernels of this tree against those of another revision: how long
they take to compile, and how fast they sort.

Both revisions' ``libraries/sort/radix.pyx`` are compiled afresh (the compile
cache is not used), with the same compiler and settings; the compile's wall
seconds are printed.  Then radix, counting and narrow sort are timed on the
same keys (several sizes, key widths and dtypes; the radix sort at several
digit widths), each module in processes of its own, the two revisions'
processes taking turns (``--rounds`` each).  Two modules loaded in one
process disturb each other: where their kept scratch lies changed some
sorts' times by up to half, against the module loaded first.  A case's
time is the median over its module's processes of each process's median;
its ratio, this tree's time over the other's.  The last line gives both
compile times, the geometric mean of the ratios of each sort, and the
worst case.

With ``--against plain``, this tree's kernels are compiled both ways that
hlc.compile can: their code generated at the link, in parallel jobs (what
builds do where the compiler can), against a plain compile.  With
``--against=-O2`` (any ``-O`` flag), against the same compile at that
optimization level (``CFLAGS``, which comes after the interpreter's own
flags and so decides, at the link too): what a faster compile of the first
build would cost every sort.

    python benchmarks/sort_kernels.py --against REF [--rounds 3] [--repeats 7]
    python benchmarks/sort_kernels.py --against plain
    python benchmarks/sort_kernels.py --against=-O2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from hlc.compile import compile_extensions, extension_name

ROOT = Path(__file__).resolve().parents[1]
SOURCE = Path("libraries/sort/radix.pyx")
SIZES = (1_000, 30_000, 300_000, 2_000_000)
#: (key width in bits, dtype): the profiled int64 keys, and narrower dtypes.
KEYS = ((8, "int64"), (16, "int64"), (22, "int64"), (31, "int64"), (40, "int64"),
        (16, "int32"), (12, "uint16"), (7, "int8"))
DIGITS = (6, 8, 11, 16)


def compiled(source: Path, folder: Path, at_link: bool = True, flags: str = "") -> tuple[Path, float]:
    """The library compiled from ``source`` into ``folder`` (with ``flags``
    added to ``CFLAGS``), and the compile's seconds."""
    before = os.environ.get("CFLAGS")
    if flags:
        os.environ["CFLAGS"] = f"{before or ''} {flags}".strip()
    started = time.monotonic()
    try:
        compile_extensions([source], folder, cached=False, at_link=at_link)
    finally:
        if before is None:
            os.environ.pop("CFLAGS", None)
        else:
            os.environ["CFLAGS"] = before
    seconds = time.monotonic() - started
    [library] = folder.glob(extension_name(source) + ".*.so")
    return library, seconds


def loaded(library: Path):
    spec = importlib.util.spec_from_file_location(library.name.split(".")[0], library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(seed: int = 0) -> list[tuple[str, str, Callable]]:
    """(sort, label, call taking the module) for every case timed."""
    rng = np.random.default_rng(seed)
    found = []
    for n in SIZES:
        for width, dtype in KEYS:
            info = np.iinfo(dtype)
            keys = (rng.integers(0, 1 << width, size=n) + max(int(info.min), -(1 << (width - 1)))).astype(dtype)
            label = f"n={n:,} {width}-bit {dtype}"
            for bpd in DIGITS:
                found.append(("radix", f"{label} bpd={bpd}", lambda m, k=keys, b=bpd: m.radix_sort(k, b)))
            if width <= 22:
                found.append(("counting", label, lambda m, k=keys: m.counting_sort(k)))
            found.append(("narrow", label, lambda m, k=keys: m.narrow_sort(k)))
    return found


def medians(module, repeats: int) -> list[float]:
    """Each case's median time by ``module``, after one untimed call."""
    found = []
    for _, _, call in cases():
        call(module)  # kept scratch and counters allocated
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            call(module)
            times.append(time.perf_counter() - started)
        found.append(statistics.median(times))
    return found


def timed(library: Path, repeats: int) -> list[float]:
    """Each case's median time by ``library``, in a process of its own."""
    result = subprocess.run([sys.executable, __file__, "--time", str(library), "--repeats", str(repeats)],
                            check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--against", metavar="REF",
                         help="git revision whose kernels to compare; 'plain': this tree's, compiled plainly; "
                              "-O2 (any -O flag, as --against=-O2): this tree's, at that optimization level")
    options.add_argument("--rounds", type=int, default=3, help="processes of each revision")
    options.add_argument("--repeats", type=int, default=7, help="timings of each case in a process")
    options.add_argument("--time", metavar="LIBRARY", help=argparse.SUPPRESS)
    args = options.parse_args()
    if args.time:
        print(json.dumps(medians(loaded(Path(args.time)), args.repeats)))
        return
    if not args.against:
        options.error("--against REF is required")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        plain = args.against == "plain"
        level = args.against if args.against.startswith("-O") else ""
        theirs = ROOT / SOURCE if plain or level else folder / "against" / SOURCE.name
        if not (plain or level):
            theirs.parent.mkdir()
            theirs.write_bytes(subprocess.run(["git", "-C", str(ROOT), "show", f"{args.against}:{SOURCE}"],
                                              check=True, capture_output=True).stdout)
        other, other_seconds = compiled(theirs, folder / "against-build", at_link=not plain, flags=level)
        this, this_seconds = compiled(ROOT / SOURCE, folder / "this-build")
        print(f"compile: this tree {this_seconds:.1f} s, {args.against} {other_seconds:.1f} s")
        runs: dict[Path, list[list[float]]] = {this: [], other: []}
        for round_ in range(args.rounds):
            for library in (this, other) if round_ % 2 == 0 else (other, this):
                runs[library].append(timed(library, args.repeats))
    for line in summary(cases(), runs[this], runs[other], args.against, this_seconds, other_seconds):
        print(line)


def summary(timed_cases: Sequence[tuple[str, str, Callable]], mine: Sequence[Sequence[float]],
            theirs: Sequence[Sequence[float]], against: str, this_seconds: float,
            other_seconds: float) -> list[str]:
    """A line per case and the last line, from each process's medians
    (``mine`` for this tree's processes, ``theirs`` for the other's)."""
    lines = []
    ratios: dict[str, list[float]] = {}
    worst = (0.0, "")
    for position, (sort, label, _) in enumerate(timed_cases):
        my_time = statistics.median(run[position] for run in mine)
        their_time = statistics.median(run[position] for run in theirs)
        value = my_time / their_time
        ratios.setdefault(sort, []).append(value)
        worst = max(worst, (value, f"{sort} {label}"))
        lines.append(f"  {sort:9} {label:32} {value:.3f}  ({my_time * 1e3:.3f} ms against {their_time * 1e3:.3f} ms)")
    means = {sort: math.exp(statistics.fmean(map(math.log, values))) for sort, values in ratios.items()}
    lines.append(f"kernels against {against}: compile {this_seconds:.1f} s against {other_seconds:.1f} s; "
                 "time ratio (geometric mean) " + ", ".join(f"{sort} {mean:.3f}" for sort, mean in means.items())
                 + f"; worst {worst[0]:.3f} ({worst[1]})")
    return lines


if __name__ == "__main__":
    main()
