"""The sort library's description before and after its rewrite, side by
side on the same stored samples and evaluations: each is fitted (with
discovery, as a build fits it) and its choices are replayed against every
alternative the stored exhaustive evaluations timed.  Nothing is timed.

    python benchmarks/sort_descriptions.py
    python benchmarks/sort_descriptions.py --samples build/sort/samples.jsonl EVALUATION.json ...

The second form judges this machine's build: its samples, and the
exhaustive evaluations of it (`hlc evaluate build/sort --params exhaustive
--json E.json`, one per seed).

Before: tests/data/sort/before.hl, one machine's cache steps placed by hand
(42 terms for the radix sort).  After: libraries/sort.hl, the algorithm's
terms (at most 8 per implementation) and families.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hlc.artefacts.models import Models
from hlc.evaluation.replay import replay
from hlc.language.parse import parse_file
from hlc.model.calibration import Samples, calibrate

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "sort"
DESCRIPTIONS = {"before": DATA / "before.hl", "after": ROOT / "libraries" / "sort.hl"}


def written_terms(description: Path) -> dict[str, str]:
    """Terms written per implementation (the constant included), and families: "5+2"."""
    library = parse_file(description)
    counts = {}
    for implementation in library.implementations:
        model = implementation.model("time")
        terms = len(model.terms) + model.constant
        counts[implementation.name] = f"{terms}+{len(model.families)}" if model.families else str(terms)
    return counts


def figures(models: Models, evaluation: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "models.json"
        models.save(path)
        result = replay(path, evaluation)
    entry = result.interfaces["sort"]
    summary = entry.by_ranks.get(1) or entry.summary
    digit = summary.optimal_parameters.get("radix")
    return {"right": summary.right_share, "expected": summary.expected_penalty, "worst": summary.worst_penalty,
            "digit": digit.share if digit else float("nan"), "points": summary.points}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, default=DATA / "samples.jsonl",
                        help="the samples both descriptions are fitted to (a build's samples.jsonl)")
    parser.add_argument("evaluations", nargs="*", type=Path,
                        help="exhaustive evaluations to replay (default: the stored ones beside the samples)")
    options = parser.parse_args()
    samples = Samples.read(options.samples)
    evaluations = options.evaluations or sorted(options.samples.parent.glob("evaluation-*.json"))
    rows = {}
    for label, description in DESCRIPTIONS.items():
        started = time.perf_counter()
        models = calibrate(parse_file(description), samples)
        seconds = time.perf_counter() - started
        mre = {name: entry.verification_mre for name, entry in models.fitted().items()}
        rows[label] = (models, seconds, mre, written_terms(description))
    print("verification MRE (in parentheses: written terms, the constant included, + families)")
    print(f"{'implementation':<16} {'before':>14} {'after':>14}")
    for name in rows["after"][2]:
        cells = [f"{rows[label][2][name]:.3f} ({rows[label][3][name]:>3})" for label in DESCRIPTIONS]
        print(f"{name:<16} {cells[0]:>14} {cells[1]:>14}")
    print(f"{'fit seconds':<16} {rows['before'][1]:>14.1f} {rows['after'][1]:>14.1f}")
    for evaluation in evaluations:
        shown = evaluation.relative_to(ROOT) if evaluation.is_relative_to(ROOT) else evaluation
        print(f"\nchoices at one rank against {shown} (replayed, nothing timed)")
        print(f"{'':<8} {'points':>6} {'right':>7} {'expected':>9} {'worst':>7} {'digit optimal':>14}")
        for label in DESCRIPTIONS:
            f = figures(rows[label][0], evaluation)
            print(f"{label:<8} {f['points']:>6} {f['right']:>7.1%} {f['expected']:>9.2%} {f['worst']:>7.1%} "
                  f"{f['digit']:>14.1%}")


if __name__ == "__main__":
    main()
