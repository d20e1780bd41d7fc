"""What deciding costs on every call.

Builds the test library `vector` (4 implementations, one with a parameter
search) and prints, as medians of repeated runs measured side by side:

* the decision alone (the compiled C: preconditions, parameter search,
  models), per call;
* choose(), the same decision reported as a Python object;
* a whole dispatched call against calling the chosen implementation directly
  with the same arguments: the overhead in ns and as a ratio.

Then, on the sort library (built here, or the build given with --sort), what
the dispatch adds where it matters to a user: the dispatched call against
its choice called directly at held-out random points of the calibrated
domain (sizes log-uniform), each pair timed in alternation; and a sort of
100 keys against numpy.sort, called with the same keys (the module keeps
its last decision) and with 100 and 101 keys in turn (it decides at every
call).  Its last line gives all three.

    python benchmarks/dispatch.py [--build DIR] [--sort BUILD] [--points 60]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import timeit
from pathlib import Path

import numpy as np

from hlc.artefacts.models import Models
from hlc.artefacts.models import load as load_models
from hlc.dispatch.build import build
from hlc.dispatch.loading import load

ROOT = Path(__file__).resolve().parent.parent
DESCRIPTIONS = ROOT / "tests" / "descriptions"
LIBRARIES = ROOT / "libraries"


def per_call(function, number: int, repeat: int = 9) -> float:
    return statistics.median(timeit.repeat(function, number=number, repeat=repeat)) / number


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--build", help="build folder (default: a temporary one)")
    options.add_argument("--sort", help="a build of libraries/sort.hl (default: built here, in about a minute)")
    options.add_argument("--points", type=int, default=60, help="held-out sort points (default 60)")
    args = options.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.build or scratch)
        build(DESCRIPTIONS / "comm.hl", out=folder / "comm", quick=True)
        build(DESCRIPTIONS / "vector.hl", out=folder / "vector", quick=True)
        vector = load(folder / "vector")
        module = vector.dispatch_vector
        direct = {"numpy": module._impl_numpy, "fsum": module._impl_fsum, "kahan": module.kahan_sum,
                  "blocked": module.blocked_sum}
        print("library vector: 4 implementations, blocked's block chosen by a search at every call")
        print(f"{'n':>8} {'chosen':>16} {'decision':>10} {'choose()':>10} {'call':>10} {'direct':>10} "
              f"{'overhead':>10} {'ratio':>6}")
        for n in (4, 1000, 100_000):
            x = np.random.default_rng(1).standard_normal(n)
            choice = vector.choose(x)
            target = direct[choice.implementation]
            decision = statistics.median(module._time_decisions_total(x, 200_000) for _ in range(9))
            choosing = per_call(lambda x=x: vector.choose(x), 20_000)
            number = 20_000 if n < 10_000 else 500
            call = per_call(lambda x=x: vector.total(x), number)
            alone = per_call(lambda x=x, t=target, p=choice.parameters: t(x, **p), number)
            label = choice.implementation + "".join(f" {k}={v}" for k, v in choice.parameters.items())
            print(f"{n:>8} {label:>16} {decision * 1e9:>8.0f}ns {choosing * 1e9:>8.0f}ns {call * 1e9:>8.0f}ns "
                  f"{alone * 1e9:>8.0f}ns {(call - alone) * 1e9:>8.0f}ns {call / alone:>6.2f}")


        sort_folder = Path(args.sort) if args.sort else folder / "sort"
        if not args.sort:
            build(LIBRARIES / "sort.hl", out=sort_folder)
        sort_overhead(load(sort_folder), load_models(sort_folder / "models.json"), args.points)


def alternated(first, second, number: int, rounds: int = 15) -> float:
    """The median over rounds of t_first / t_second, the two timed in turn
    within each round, so that a change of the machine's pace hits both."""
    ratios = []
    for _ in range(rounds):
        a = timeit.timeit(first, number=number)
        b = timeit.timeit(second, number=number)
        ratios.append(a / b)
    return statistics.median(ratios)


def sort_overhead(sort, models: Models, points: int) -> None:
    """The dispatched sort against its choice called directly, at held-out
    points, and against numpy.sort at 100 keys."""
    module = sort.dispatch_sort
    direct = {"radix": module.radix_sort, "counting": module.counting_sort, "narrow": module.narrow_sort,
              "numpy": np.sort, "sample": module.sample_sort}
    domain = {}
    for entry in models.fitted().values():
        for name, (low, high) in entry.domain.items():
            known = domain.get(name, (low, high))
            domain[name] = (min(known[0], low), max(known[1], high))
    rng = np.random.default_rng(20261126)
    low, high = np.log2(domain["n"][0]), np.log2(domain["n"][1])
    overheads, shown = [], []
    for _ in range(points):
        n = int(2 ** rng.uniform(low, high))
        width = int(rng.integers(int(domain["width"][0]), int(domain["width"][1]) + 1))
        keys = rng.integers(0, 2 ** min(width, 62), n, dtype=np.int64)
        choice = sort.choose(keys)
        target = direct[choice.implementation.removesuffix("_spmd")]
        dispatched = functools.partial(sort.sort, keys)
        chosen = functools.partial(target, keys, **choice.parameters)
        number = max(1, int(2e-3 / max(timeit.timeit(dispatched, number=1), 1e-7)))
        ratio = alternated(dispatched, chosen, number)
        overheads.append(ratio - 1)
        shown.append((n, width, choice.implementation, ratio - 1))
    print(f"\nlibrary sort: the dispatched call against its choice called directly, at {points} held-out "
          f"points (n log-uniform over {domain['n'][0]:.0f} .. {domain['n'][1]:.0f}, width uniform)")
    for n, width, chosen, overhead in sorted(shown)[:: max(1, len(shown) // 10)]:
        print(f"  n = {n:>9}, {width:>2} bits: {chosen:<10} overhead {overhead:+7.1%}")
    keys = rng.integers(0, 2**31, 100, dtype=np.int64)
    small = alternated(lambda: sort.sort(keys), lambda: np.sort(keys), 20_000)
    # The module keeps its last decision for a call with the same variables;
    # 100 and 101 keys in turn make it decide at every call.
    other = rng.integers(0, 2**31, 101, dtype=np.int64)
    changing = alternated(lambda: (sort.sort(keys), sort.sort(other)), lambda: (np.sort(keys), np.sort(other)),
                          10_000)
    median = statistics.median(overheads)
    p95 = float(np.quantile(overheads, 0.95))
    print(f"dispatch overhead on sort: median {median:+.1%} at {points} held-out points (95th percentile "
          f"{p95:+.1%}); 100 keys: {small:.2f}x numpy.sort, {changing:.2f}x deciding at every call")


if __name__ == "__main__":
    main()
