"""How long the fitter takes on stored samples, in this process alone and
with its fits side by side in worker processes (hlc.model.workers), and
whether the models are the same.

Each way is run once untimed (as in a build's later rounds, each process
then keeps its term values), then RUNS times, alternating; medians.

    python benchmarks/fit_workers.py              # tests/data/sort and sort-epyc, libraries/sort.hl
    python benchmarks/fit_workers.py --runs 9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from hlc.language.parse import parse_file
from hlc.model import calibration
from hlc.model.calibration import Samples, calibrate
from hlc.model.workers import close_workers, worker_count

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def fit(library, samples: Samples, workers: int) -> tuple[float, str]:
    """Seconds of one fit with ``workers`` worker processes, and its models as text."""
    os.environ["HLC_FIT_WORKERS"] = str(workers)
    started = time.perf_counter()
    models = calibrate(library, samples)
    seconds = time.perf_counter() - started
    record = {name: entry.to_json() for name, entry in models.implementations.items()}
    return seconds, json.dumps(record, sort_keys=True, default=str)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed fits each way (default 5)")
    options = parser.parse_args()
    workers = max(worker_count(), 1)
    library = parse_file(ROOT / "libraries" / "sort.hl")
    calibration.FIT_SIDE_BY_SIDE = 0.0  # every wave of two or more fits side by side
    ratios = []
    for folder in ("sort", "sort-epyc"):
        samples = Samples.read(DATA / folder / "samples.jsonl")
        _, alone_models = fit(library, samples, 0)
        _, together_models = fit(library, samples, workers)
        alone, together = [], []
        for _ in range(options.runs):
            alone.append(fit(library, samples, 0)[0])
            together.append(fit(library, samples, workers)[0])
        ratio = statistics.median(alone) / statistics.median(together)
        ratios.append(ratio)
        print(f"{folder:<10} {len(samples.samples):>5} samples: alone {statistics.median(alone):.2f} s, "
              f"side by side {statistics.median(together):.2f} s (medians of {options.runs}), "
              f"{ratio:.2f} times as fast; the same models: {'yes' if alone_models == together_models else 'NO'}")
    close_workers()
    print(f"sort fit with {workers} worker process{'es' if workers != 1 else ''}: "
          f"{min(ratios):.2f}-{max(ratios):.2f} times as fast as alone")


if __name__ == "__main__":
    main()
