"""How good are the sort library's choices?  Measured against an oracle.

Draws random held-out points (n, width) in the calibrated domain — n
log-uniform, width uniform — and at each point measures, interleaved and
side by side, every applicable implementation (the radix sort at all 16
digit widths), numpy.sort and the dispatched call.  Each is timed ROUNDS
times, round-robin, and its time is the least of those: on a shared machine
noise only ever adds time, and a host that slows down for a while must not
make one choice look worse than its neighbour.  The oracle is the fastest of
all the choices.  Prints:

* the share of calls whose choice (with its bpd) is within 3% of the oracle,
  the mean and worst penalty t_chosen / t_oracle − 1;
* the geometric-mean speed-up of the dispatched call over numpy.sort (all
  points, and n ≥ 1e5), and over the best single fixed choice;
* the share of points where the bpd the radix model picks is within 3% of
  the best of the 16 measured (whether or not radix was chosen).

    python benchmarks/sort_eval.py [BUILD] [--points 200] [--seed 1] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
from rich.progress import Progress

import hlc

TIE = 0.03
AGAIN = "numpy, again"
ROUNDS = 7
MINIMUM_TIMING = 0.002


def seconds_per_call(call, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat


def measure(calls: dict[str, object]) -> dict[str, float]:
    """The least of ROUNDS interleaved timings, each at least MINIMUM_TIMING long."""
    repeats = {}
    for name, call in calls.items():
        once = seconds_per_call(call, 1)  # also the warm-up
        repeats[name] = max(1, math.ceil(MINIMUM_TIMING / max(once, 1e-9)))
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            timings[name].append(seconds_per_call(call, repeats[name]))
    return {name: min(values) for name, values in timings.items()}


def domain(models: dict) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (n, width) ranges calibrated for every implementation that runs on one rank."""
    ranges = [record["time"]["domain"] for record in models["implementations"].values()
              if "domain" in record.get("time", {}) and record["time"]["domain"].get("P", (1, 1))[0] == 1]
    n = (max(r["n"][0] for r in ranges), min(r["n"][1] for r in ranges))
    width = (max(r["width"][0] for r in ranges), min(r["width"][1] for r in ranges))
    return (int(n[0]), int(n[1])), (int(width[0]), int(width[1]))


def candidates(sort, module, keys: np.ndarray, width: int) -> dict[str, object]:
    """Every choice the dispatcher could make here, by label."""
    calls = {f"radix bpd={bpd}": (lambda bpd=bpd: module.radix_sort(keys, bpd=bpd)) for bpd in range(1, 17)}
    if width <= 24:
        calls["counting"] = lambda: module.counting_sort(keys)
    calls["narrow"] = lambda: module.narrow_sort(keys)
    calls["numpy"] = lambda: np.sort(keys)
    calls[AGAIN] = lambda: np.sort(keys)  # the same call twice: the noise floor of these measurements
    calls["dispatched"] = lambda: sort.sort(keys)
    return calls


def label(implementation: str, parameters: dict[str, int]) -> str:
    return implementation + (f" bpd={parameters['bpd']}" if "bpd" in parameters else "")


def evaluate(build: Path, points: int, seed: int) -> list[dict]:
    sort = hlc.load(build)
    module = sort.dispatch_sort
    (n_low, n_high), (w_low, w_high) = domain(sort.__models__)
    rng = np.random.default_rng(seed)
    rows = []
    with Progress() as progress:
        task = progress.add_task("measuring", total=points)
        for _ in range(points):
            n = int(round(math.exp(rng.uniform(math.log(n_low), math.log(n_high)))))
            bits = int(rng.integers(w_low, w_high + 1))
            keys = module.random_keys(n, bits, int(rng.integers(2**31)))
            variables = sort.variables_sort(keys)
            choice = sort.choose(keys)
            times = measure(candidates(sort, module, keys, variables["width"]))
            rows.append({"n": n, "width": variables["width"], "chosen": label(choice.implementation, choice.parameters),
                         "radix_bpd": choice.settings["radix"]["bpd"], "times": times})
            progress.advance(task)
    return rows


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def report(rows: list[dict]) -> None:
    penalties, right, bpd_right = [], 0, 0
    for row in rows:
        times = {k: v for k, v in row["times"].items() if k not in ("dispatched", AGAIN)}
        oracle = min(times.values())
        penalty = times[row["chosen"]] / oracle - 1
        penalties.append(penalty)
        right += penalty <= TIE
        radix = {k: v for k, v in times.items() if k.startswith("radix")}
        bpd_right += radix[f"radix bpd={row['radix_bpd']}"] <= (1 + TIE) * min(radix.values())
    count = len(rows)
    print(f"{count} held-out points, one rank; a choice is right within {TIE:.0%} of the fastest measured choice")
    print(f"  right choices:            {right / count:6.1%}  ({right} of {count})")
    print(f"  penalty (chosen/oracle-1): mean {statistics.fmean(penalties):.2%}, "
          f"median {statistics.median(penalties):.2%}, worst {max(penalties):.2%}")
    print(f"  radix bpd within {TIE:.0%} of the best of 16: {bpd_right / count:6.1%}  ({bpd_right} of {count})")
    over_numpy = [row["times"]["numpy"] / row["times"]["dispatched"] for row in rows]
    large = [row["times"]["numpy"] / row["times"]["dispatched"] for row in rows if row["n"] >= 100_000]
    print(f"  dispatched vs numpy.sort:  geometric-mean speed-up {geometric_mean(over_numpy):.2f}x "
          f"(n >= 1e5: {geometric_mean(large):.2f}x over {len(large)} points); "
          f"slowest {min(over_numpy):.2f}x" + (f", n >= 1e5 slowest {min(large):.2f}x" if large else ""))
    floor = sorted(abs(row["times"][AGAIN] / row["times"]["numpy"] - 1) for row in rows)
    print(f"  noise floor (numpy.sort timed twice, |t2/t1 - 1|): median {statistics.median(floor):.2%}, "
          f"95th percentile {floor[int(0.95 * (count - 1))]:.2%}")
    fixed = {}
    for name in rows[0]["times"]:
        if name not in ("dispatched", AGAIN) and all(name in row["times"] for row in rows):
            fixed[name] = geometric_mean([row["times"][name] / row["times"]["dispatched"] for row in rows])
    best = min(fixed, key=fixed.__getitem__)
    print(f"  dispatched vs the best single fixed choice ({best}): geometric-mean speed-up {fixed[best]:.2f}x")
    chosen = sorted({row["chosen"].split()[0] for row in rows})
    print("  chosen: " + ", ".join(f"{name} {sum(r['chosen'].split()[0] == name for r in rows)}" for name in chosen))


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("build", nargs="?", default="build/sort")
    options.add_argument("--points", type=int, default=200)
    options.add_argument("--seed", type=int, default=1)
    options.add_argument("--json", help="also write the measurements here")
    args = options.parse_args()
    rows = evaluate(Path(args.build), args.points, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    report(rows)


if __name__ == "__main__":
    main()
