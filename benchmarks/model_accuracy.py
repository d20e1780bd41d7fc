"""How accurate are the calibrated models on samples they were not fitted on?

Profiles a description (and the libraries it uses, first), fits the models
and prints, per implementation, the terms kept, R², the fit MRE and the
verification MRE (thesis §3.6.3: 1.05 means the predictions are off by 5% on
average, geometrically).

    python benchmarks/model_accuracy.py [LIB.hl] [--build DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import hlc
from hlc.artefacts.models import Models
from hlc.calibrate.run import profile
from hlc.model.calibration import Samples, calibrate, summary

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "descriptions" / "vector.hl"


def calibrate_library(library: hlc.Library, folder: Path) -> Models:
    """Profile and fit ``library`` after the libraries it uses."""
    models_of = {}
    for name, used in library.used.items():
        models = calibrate_library(used, folder)
        path = folder / name / "models.json"
        models.save(path)
        models_of[name] = path
    samples = folder / library.name / "samples.jsonl"
    profile(library, samples, folder / library.name, ranks=[1])
    return calibrate(library, Samples.read(samples), models_of=models_of)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("description", nargs="?", default=str(DEFAULT))
    options.add_argument("--build", help="folder for programs, samples and models (default: temporary)")
    args = options.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        models = calibrate_library(hlc.parse_file(args.description), Path(args.build or scratch))
    print(summary(models))


if __name__ == "__main__":
    main()
