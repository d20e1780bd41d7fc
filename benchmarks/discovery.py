"""Verification MRE of each model fitted to stored samples, from its written
terms alone and with discovery, and how long each fit took.

    python benchmarks/discovery.py                        # tests/data/sort, libraries/sort.hl
    python benchmarks/discovery.py SAMPLES.jsonl LIB.hl   # other samples
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hlc.artefacts.models import TimeModel
from hlc.language.parse import parse_file
from hlc.model.calibration import Samples, calibrate

ROOT = Path(__file__).resolve().parent.parent


def fitted(library: Path, samples: Samples, discovering: bool) -> tuple[dict[str, TimeModel], float]:
    started = time.perf_counter()
    models = calibrate(parse_file(library), samples, discovering=discovering)
    return models.times(), time.perf_counter() - started


def main() -> None:
    if len(sys.argv) == 3:
        runs = [(Path(sys.argv[1]), Path(sys.argv[2]))]
    else:
        data = ROOT / "tests" / "data" / "sort"
        runs = [(data / "samples.jsonl", ROOT / "libraries/sort.hl")]
    for samples_path, library in runs:
        samples = Samples.read(samples_path)
        written, plain_seconds = fitted(library, samples, False)
        found, seconds = fitted(library, samples, True)
        print(f"\n{library.name} on {samples_path}: fit {plain_seconds:.1f} s written, {seconds:.1f} s with discovery")
        print(f"{'implementation':<16} {'written':>8} {'found':>8}  terms (written kept / with discovery kept, found)")
        for name, entry in found.items():
            before = written[name]
            if entry.status != "fitted":
                continue
            print(f"{name:<16} {before.verification_mre:>8.3f} {entry.verification_mre:>8.3f}  "
                  f"{len(before.kept)} / {len(entry.kept)}, {len(entry.discovered)}")


if __name__ == "__main__":
    main()
