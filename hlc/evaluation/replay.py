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

from dataclasses import dataclass, replace
from pathlib import Path

from hlc.artefacts import evaluation as artefact
from hlc.artefacts.evaluation import Chosen, EvaluationDocument, InterfaceResult, JudgedPoint, Replayed
from hlc.dispatch.bundle import description_of
from hlc.dispatch.reference import Decider
from hlc.evaluation.inputs import models_of, used_models_of
from hlc.evaluation.oracle import label
from hlc.evaluation.text import Figures, format_document
from hlc.evaluation.verdicts import oracle_verdict, summaries
from hlc.language.parse import parse_file
from hlc.model.predict import Predictor


@dataclass
class Replay(Figures):
    """The figures of one replay, per interface (and per rank count when
    several), as an evaluation document that says what it replayed."""

    document: EvaluationDocument  # its ``replayed`` names the two below
    models: Path  # the models file whose choices were judged
    evaluation: Path  # the evaluation whose timings judged them

    def table(self) -> str:
        """The figures as text, in the form ``hlc evaluate`` prints them."""
        lines = [f"replayed: the models of {self.models} against the timings of {self.evaluation} "
                 f"(nothing timed)", "", *format_document(self.document)]
        return "\n".join(lines).rstrip()


def replay(build: str | Path, evaluation: str | Path | None = None, *, tolerance: float | None = None,
           description: str | Path | None = None) -> Replay:
    """Judge the choices of the models in ``build`` against the candidates
    timed by a stored ``evaluation`` (default: the build's own)."""
    models_file, models = models_of(build)
    stored = Path(evaluation) if evaluation is not None else models_file.with_name("evaluation.json")
    if not stored.exists():
        raise FileNotFoundError(f"{stored} does not exist; run `hlc evaluate --params exhaustive` to make one")
    document = artefact.load(stored)
    if document.settings.params != "exhaustive":
        raise ValueError(f"{stored} timed the chosen parameters only; replay needs an evaluation made with "
                         f"--params exhaustive")
    library = parse_file(description or description_of(models, models_file.parent))
    if document.library != library.name:
        raise ValueError(f"{stored} evaluated {document.library}, not {library.name}")
    tolerance = document.settings.tolerance if tolerance is None else tolerance
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must lie in [0, 1), not {tolerance}")
    predictor = Predictor.of_models(library, models, used_models_of(models_file, library))
    decider = Decider(library, predictor)
    settings = replace(document.settings, tolerance=tolerance)
    interfaces = {}
    for interface in library.interfaces:
        part = document.interfaces.get(interface.name)
        if part is None or not part.points:
            continue
        judged, unmeasured = [], 0
        for point in part.points:
            choice = decider.decide(interface, point.variables)
            replayed = rejudge(point, choice.implementation, choice.parameters, choice.settings, tolerance)
            if replayed is None:
                unmeasured += 1
            else:
                judged.append(replayed)
        reference = interface.reference_implementation.name
        summary, by_ranks = summaries(judged, settings.ranks, tolerance, settings.baseline or reference, reference)
        interfaces[interface.name] = InterfaceResult(summary, by_ranks, judged, unmeasured)
    return Replay(EvaluationDocument(library.name, settings, interfaces, document.created, document.machine,
                                     Replayed(str(models_file), str(stored))), models_file, stored)


def rejudge(point: JudgedPoint, implementation: str | None, parameters: dict[str, int],
            settings: dict[str, dict[str, int]], tolerance: float) -> JudgedPoint | None:
    """A stored judged point judged again for another choice; None when that
    choice (or the parameters it gives another implementation) was not timed.

    The candidates are reordered so that each implementation's first one is
    at the parameters the replayed models give it, as the oracle orders them
    for the module it evaluates."""
    if implementation is None:
        return None
    candidates = point.candidates
    by_label = {c.label: c for c in candidates}
    chosen_label = label(implementation, parameters)
    if chosen_label not in by_label:
        return None
    ordered = []
    for name in dict.fromkeys(c.implementation for c in candidates):
        own = [c for c in candidates if c.implementation == name]
        wanted = label(name, settings[name]) if settings.get(name) else own[0].label
        if wanted not in by_label:
            continue  # the models give it parameters that were not timed: it cannot stand for itself here
        ordered += [by_label[wanted]] + [c for c in own if c.label != wanted]
    best_label, penalty = oracle_verdict(by_label, chosen_label)
    return replace(point, chosen=Chosen(implementation, dict(parameters)), candidates=tuple(ordered),
                   chosen_label=chosen_label, best_label=best_label, penalty=penalty, right=penalty <= tolerance,
                   dispatched=None)
