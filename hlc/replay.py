"""``hlc evaluate --replay``: judge models against the timings of a stored evaluation.

An evaluation with ``--params exhaustive`` timed, at each held-out point,
every applicable implementation at every parameter value the dispatcher
chooses among.  Those timings do not depend on the models that made the
choice, so any other models of the same library — refitted, fitted with
another description, fitted without discovery — can be judged against them
in seconds, timing nothing: decide in Python (:mod:`hlc.dispatch.reference`,
the definition the compiled module is tested against), look the choice up
among the measured candidates, and compare it with the fastest.

A point where the replayed choice was not measured (the models choose an
implementation or a parameter value the evaluation did not time, because the
description it was built from excluded it) cannot be judged; such points are
counted and reported, never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hlc.calibrate.oracle import label
from hlc.dispatch.bundle import description_of
from hlc.dispatch.reference import Decider
from hlc.evaluation import TOLERANCE, format_summary, oracle_verdict, summarize
from hlc.language import ast
from hlc.language.parse import parse_file
from hlc.model.predict import Predictor


@dataclass
class Replay:
    """The figures of one replay, per interface (and per rank count when several)."""

    library: str
    models: Path
    evaluation: Path
    settings: dict[str, Any]
    interfaces: dict[str, dict[str, Any]]  # name → {"summary", "by_ranks", "points", "unmeasured"}

    def table(self) -> str:
        """The figures as text, in the form ``hlc evaluate`` prints them."""
        lines = [f"replayed: the models of {self.models} against the timings of {self.evaluation} "
                 f"(nothing timed)", ""]
        for name, entry in self.interfaces.items():
            blocks = entry["by_ranks"] or {"": entry["summary"]}
            for ranks, summary in blocks.items():
                lines += format_summary(name + (f", P = {ranks}" if ranks else ""), summary, self.settings)
                lines.append("")
            if entry["unmeasured"]:
                lines.append(f"  not judged: {entry['unmeasured']} points where the replayed choice was not "
                             f"timed by the evaluation")
                lines.append("")
        return "\n".join(lines).rstrip()


def models_of(build: str | Path) -> tuple[Path, dict[str, Any]]:
    """The models file of ``build`` (a build folder or a models file), and the models."""
    path = Path(build)
    models_file = path / "models.json" if path.is_dir() else path
    if not models_file.exists():
        raise FileNotFoundError(f"{build} is neither a built library nor a models file")
    return models_file, json.loads(models_file.read_text(encoding="utf-8"))


def used_models_of(models_file: Path, library: ast.Library) -> dict[str, Any]:
    """The models of the libraries ``library`` uses: those the build recorded
    beside its models, else each one's build under build/."""
    recorded = models_file.with_name("used_models.json")
    if recorded.exists():
        return json.loads(recorded.read_text(encoding="utf-8"))
    found = (Path("build") / name / "models.json" for name in library.used)
    return {path.parent.name: json.loads(path.read_text(encoding="utf-8")) for path in found if path.exists()}


def replay(build: str | Path, evaluation: str | Path | None = None, *, tolerance: float | None = None,
           description: str | Path | None = None) -> Replay:
    """Judge the choices of the models in ``build`` against the candidates
    timed by a stored ``evaluation`` (default: the build's own)."""
    models_file, models = models_of(build)
    stored = Path(evaluation) if evaluation is not None else models_file.with_name("evaluation.json")
    if not stored.exists():
        raise FileNotFoundError(f"{stored} does not exist; run `hlc evaluate --params exhaustive` to make one")
    document = json.loads(stored.read_text(encoding="utf-8"))
    if document.get("params") != "exhaustive":
        raise ValueError(f"{stored} timed the chosen parameters only; replay needs an evaluation made with "
                         f"--params exhaustive")
    library = parse_file(description or description_of(models, models_file.parent))
    if document.get("library") != library.name:
        raise ValueError(f"{stored} evaluated {document.get('library')}, not {library.name}")
    tolerance = document.get("tolerance", TOLERANCE) if tolerance is None else tolerance
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must lie in [0, 1), not {tolerance}")
    predictor = Predictor.of_models(library, models, used_models_of(models_file, library))
    decider = Decider(library, predictor)
    ranks = document.get("ranks", [1])
    settings = {"seed": document.get("seed"), "points": document.get("points"), "params": "exhaustive",
                "tolerance": tolerance, "ranks": ranks, "replayed": str(stored)}
    interfaces = {}
    for interface in library.interfaces:
        stored_points = document["interfaces"].get(interface.name, {}).get("points", [])
        judged, unmeasured = [], 0
        for point in stored_points:
            choice = decider.decide(interface, point["variables"])
            replayed = rejudge(point, choice.implementation, choice.parameters, choice.settings, tolerance)
            if replayed is None:
                unmeasured += 1
            else:
                judged.append(replayed)
        if not stored_points:
            continue
        reference = interface.reference_implementation.name
        baseline = document.get("baseline") or reference
        by_ranks = {str(size): summarize([p for p in judged if p["P"] == size], tolerance, baseline, reference)
                    for size in ranks} if len(ranks) > 1 else {}
        interfaces[interface.name] = {"summary": summarize(judged, tolerance, baseline, reference),
                                      "by_ranks": by_ranks, "points": judged, "unmeasured": unmeasured}
    return Replay(library.name, models_file, stored, settings, interfaces)


def rejudge(point: dict[str, Any], implementation: str | None, parameters: dict[str, int],
            settings: dict[str, dict[str, int]], tolerance: float) -> dict[str, Any] | None:
    """A stored judged point judged again for another choice; None when that
    choice (or the parameters it gives another implementation) was not timed.

    The candidates are reordered so that each implementation's first one is
    at the parameters the replayed models give it, as the oracle orders them
    for the module it evaluates."""
    if implementation is None:
        return None
    candidates = point["candidates"]
    by_label = {c["label"]: c for c in candidates}
    chosen_label = label(implementation, parameters)
    if chosen_label not in by_label:
        return None
    ordered = []
    for name in dict.fromkeys(c["implementation"] for c in candidates):
        own = [c for c in candidates if c["implementation"] == name]
        wanted = label(name, settings[name]) if settings.get(name) else own[0]["label"]
        if wanted not in by_label:
            continue  # the models give it parameters that were not timed: it cannot stand for itself here
        ordered += [by_label[wanted]] + [c for c in own if c["label"] != wanted]
    best_label, penalty = oracle_verdict(by_label, chosen_label)
    return {**point, "chosen": {"implementation": implementation, "parameters": dict(parameters)},
            "candidates": ordered, "chosen_label": chosen_label, "best_label": best_label,
            "penalty": penalty, "right": penalty <= tolerance, "dispatched": None}
