"""Choosing by the planned time against choosing by the prediction, side by
side on stored samples and evaluations: each corpus's samples are fitted
once (with discovery and typical deviations, as a build fits them), and the
choices are replayed against every alternative its stored exhaustive
evaluations timed, with the deviations weighed ``risk`` times (0: the
predictions alone; 2: hlc.model.deviation.RISK, what the dispatcher does).
Nothing is timed.

    python benchmarks/planned_choices.py
    python benchmarks/planned_choices.py --risks 0,1,2,3 BUILD ...

The second form judges builds of this machine: each BUILD folder's
samples.jsonl against its evaluation-1.json, evaluation-2.json, ... (copies
of the evaluation.json of `hlc evaluate BUILD --params exhaustive --seed S`).

The last line compares risk 0 with the dispatcher's:

    over N evaluations: right A% -> B%, expected penalty X% -> Y%, worst W% -> V% (risk 0 -> R)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from hlc.artefacts.models import Models
from hlc.evaluation.replay import replay
from hlc.language.parse import parse_file
from hlc.model.calibration import Samples, calibrate
from hlc.model.deviation import RISK

ROOT = Path(__file__).resolve().parent.parent
DESCRIPTION = ROOT / "libraries" / "sort.hl"
STORED = [ROOT / "tests" / "data" / "sort", ROOT / "tests" / "data" / "sort-epyc"]


def with_risk(models: Models, risk: float) -> Models:
    """The models with their deviations weighed ``risk`` times."""
    return replace(models, implementations={
        name: replace(record, time=replace(record.time, risk=risk if record.time.deviations else None))
        for name, record in models.implementations.items()})


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--risks", default=f"0,{RISK:g}", help=f"comma-separated (default 0,{RISK:g})")
    options.add_argument("folders", nargs="*", type=Path,
                         help="folders with samples.jsonl and evaluation-*.json (default: the stored corpora)")
    args = options.parse_args()
    risks = [float(r) for r in args.risks.split(",")]
    library = parse_file(DESCRIPTION)
    figures: dict[float, list[tuple[float, float, float]]] = {risk: [] for risk in risks}
    print(f"{'corpus':<28} {'evaluation':<18} " + "  ".join(f"{f'risk {r:g}: right, expected, worst':>34}"
                                                           for r in risks))
    with tempfile.TemporaryDirectory() as scratch:
        for folder in args.folders or STORED:
            evaluations = sorted(folder.glob("evaluation-*.json"))
            if not evaluations:
                print(f"{folder}: no evaluation-*.json, skipped")
                continue
            models = calibrate(library, Samples.read(folder / "samples.jsonl"))
            for evaluation in evaluations:
                cells = []
                for risk in risks:
                    path = Path(scratch) / "models.json"
                    with_risk(models, risk).save(path)
                    summary = replay(path, evaluation, description=DESCRIPTION).interfaces["sort"].summary
                    figures[risk].append((summary.right_share, summary.expected_penalty, summary.worst_penalty))
                    cells.append(f"{summary.right_share:>10.1%} {summary.expected_penalty:>10.2%} "
                                 f"{summary.worst_penalty:>10.1%}")
                print(f"{str(folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder):<28} "
                      f"{evaluation.name:<18} " + "  ".join(f"{cell:>34}" for cell in cells))
    if not figures[risks[0]]:
        return
    means = {risk: [statistics.mean(row[k] for row in rows) for k in range(3)] for risk, rows in figures.items()}
    first, last = risks[0], risks[-1]
    print(f"over {len(figures[first])} evaluations: right {means[first][0]:.1%} -> {means[last][0]:.1%}, "
          f"expected penalty {means[first][1]:.2%} -> {means[last][1]:.2%}, "
          f"worst {means[first][2]:.0%} -> {means[last][2]:.0%} (risk {first:g} -> {last:g})")


if __name__ == "__main__":
    main()
