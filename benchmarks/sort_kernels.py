"""The sort kernels of this tree against those of another revision: how long
they take to compile, and how fast they sort, side by side in one process.

Both revisions' ``libraries/sort/radix.pyx`` are compiled afresh (the compile
cache is not used), with the same compiler and settings; the compile's wall
seconds are printed.  Then radix, counting and narrow sort are timed on the
same keys (several sizes, key widths and dtypes; the radix sort at several
digit widths), each case timed alternately by the two modules; a case's
ratio is the median time of this tree over the median time of the other.
Where the modules' kept scratch lies in memory changes a sort's time by up
to a fifth at a few sizes (the cache sets its streams share), and it
depends on which module was loaded first: so the cases are timed in two
processes, one loading each module first, and a case's ratio is the
geometric mean of the two.  The last line gives both compile times, the
geometric mean of the ratios of each sort, and the worst case.

    python benchmarks/sort_kernels.py --against REF [--repeats 9]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def compiled(source: Path, folder: Path) -> tuple[Path, float]:
    """The library compiled from ``source`` into ``folder``, and the compile's seconds."""
    started = time.monotonic()
    compile_extensions([source], folder, cached=False)
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


def ratio(call: Callable, this, other, repeats: int) -> float:
    """Median time of ``call(this)`` over median time of ``call(other)``, timed alternately."""
    times: dict[int, list[float]] = {id(this): [], id(other): []}
    call(this), call(other)  # kept scratch and counters allocated for both
    for repeat in range(repeats):
        for module in (this, other) if repeat % 2 else (other, this):
            started = time.perf_counter()
            call(module)
            times[id(module)].append(time.perf_counter() - started)
    return statistics.median(times[id(this)]) / statistics.median(times[id(other)])


def timed(first: Path, second: Path, repeats: int) -> list[float]:
    """In a process of its own that loads ``first`` first: each case's time
    ratio of ``first`` over ``second``."""
    result = subprocess.run([sys.executable, __file__, "--time", str(first), str(second), "--repeats", str(repeats)],
                            check=True, capture_output=True, text=True)
    return json.loads(result.stdout)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--against", metavar="REF", help="git revision whose kernels to compare")
    options.add_argument("--repeats", type=int, default=9, help="timings of each case by each module")
    options.add_argument("--time", nargs=2, metavar="LIBRARY", help=argparse.SUPPRESS)
    args = options.parse_args()
    if args.time:
        this, other = map(loaded, map(Path, args.time))
        print(json.dumps([ratio(call, this, other, args.repeats) for _, _, call in cases()]))
        return
    if not args.against:
        options.error("--against REF is required")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        theirs = folder / "against" / SOURCE.name
        theirs.parent.mkdir()
        theirs.write_bytes(subprocess.run(["git", "-C", str(ROOT), "show", f"{args.against}:{SOURCE}"],
                                          check=True, capture_output=True).stdout)
        other, other_seconds = compiled(theirs, folder / "against-build")
        this, this_seconds = compiled(ROOT / SOURCE, folder / "this-build")
        print(f"compile: this tree {this_seconds:.1f} s, {args.against} {other_seconds:.1f} s")
        loaded_first = timed(this, other, args.repeats)
        loaded_second = timed(other, this, args.repeats)
    ratios: dict[str, list[float]] = {}
    worst = (0.0, "")
    for (sort, label, _), one, two in zip(cases(), loaded_first, loaded_second, strict=True):
        value = math.sqrt(one / two)
        ratios.setdefault(sort, []).append(value)
        worst = max(worst, (value, f"{sort} {label}"))
        print(f"  {sort:9} {label:32} {value:.3f}  (loaded first {one:.3f}, second {1 / two:.3f})")
    means = {sort: math.exp(statistics.fmean(map(math.log, values))) for sort, values in ratios.items()}
    print(f"kernels against {args.against}: compile {this_seconds:.1f} s against {other_seconds:.1f} s; "
          "time ratio (geometric mean) " + ", ".join(f"{sort} {mean:.3f}" for sort, mean in means.items())
          + f"; worst {worst[0]:.3f} ({worst[1]})")


if __name__ == "__main__":
    main()
