"""What deciding costs on every call.

Builds the test library `vector` (4 implementations, one with a parameter
search) and prints, as medians of repeated runs measured side by side:

* the decision alone (the compiled C: preconditions, parameter search,
  models), per call;
* choose(), the same decision reported as a Python object;
* a whole dispatched call against calling the chosen implementation directly
  with the same arguments: the overhead in ns and as a ratio.

    python benchmarks/dispatch.py [--build DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import timeit
from pathlib import Path

import numpy as np

from hlc.dispatch.build import build, load

DESCRIPTIONS = Path(__file__).resolve().parent.parent / "tests" / "descriptions"


def per_call(function, number: int, repeat: int = 9) -> float:
    return statistics.median(timeit.repeat(function, number=number, repeat=repeat)) / number


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--build", help="build folder (default: a temporary one)")
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


if __name__ == "__main__":
    main()
