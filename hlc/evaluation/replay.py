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

A replay also says how each implementation's timings in the evaluation
stand to its model (:func:`offsets`): the geometric mean of measured over
predicted time at the evaluation's points.  A model fitted well has it near
1 whatever its noise; alternatives whose offsets lie apart by a few percent
were measured otherwise by the profile than by the evaluation (another
process, its calls in blocks there and in rounds here), and the choices
between them lean to the one the profile saw faster, wherever the two are
close.

Another exhaustive evaluation of the same points and inputs can stand in
for the models (:func:`replay_oracle`): its fastest candidates, judged by
the second evaluation's timings, say how often a choice that was right in
one run of the oracle is right in another.  Models, learnt from a profile
taken in yet another process, beat that on the same timings only by
chance: it is the practical ceiling of replays against them, lower where
costs move between processes (a sort of the same keys, its memory placed
otherwise) than the noise within one run shows.

Several evaluations of the same points judge together
(:mod:`hlc.evaluation.combined`): a candidate's rounds are those of all of
them, and two candidates are compared by the median of their ratios in the
rounds of each evaluation that timed both.  Where a candidate's cost moves
by the minute, that judges a choice against the moments the evaluations
saw rather than against one of them.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from hlc.artefacts import evaluation as artefact
from hlc.artefacts.evaluation import Candidate, Chosen, EvaluationDocument, InterfaceResult, JudgedPoint, Replayed
from hlc.artefacts.files import ArtefactError
from hlc.dispatch.bundle import description_of
from hlc.dispatch.reference import Decider
from hlc.evaluation.combined import changed_sources, combine
from hlc.evaluation.inputs import models_of, used_models_of
from hlc.evaluation.oracle import label
from hlc.evaluation.text import Figures, format_document
from hlc.evaluation.verdicts import oracle_verdict, summaries
from hlc.language import ast
from hlc.language.parse import parse_file
from hlc.model.fingerprint import machine_differences
from hlc.model.predict import ModelUnavailable, Predictor


@dataclass
class Replay(Figures):
    """The figures of one replay, per interface (and per rank count when
    several), as an evaluation document that says what it replayed."""

    document: EvaluationDocument  # its ``replayed`` names the two below
    models: Path  # the models file whose choices were judged (or the evaluation whose fastest candidates)
    evaluation: Path  # the evaluation whose timings judged them (the first, where several did together)
    oracle: bool = False  # whether the choices were another evaluation's fastest candidates
    #: the implementations' source files that changed between the evaluation
    #: and the models (or the other evaluation): its timings are not their costs
    changed: tuple[str, ...] = ()
    #: how the machine the evaluation was timed on differs from the models' (or the other evaluation's)
    other_machine: tuple[str, ...] = ()
    #: each implementation's measured time against its model's (none when another evaluation chose)
    offsets: list[Offset] = field(default_factory=list)
    #: every evaluation whose timings judged together (hlc.evaluation.combined); () where one did
    judges: tuple[Path, ...] = ()

    def table(self) -> str:
        """The figures as text, in the form ``hlc evaluate`` prints them."""
        chooser = (f"the fastest candidates measured by {self.models}" if self.oracle
                   else f"the models of {self.models}")
        timings = (f"the timings of {len(self.judges)} evaluations of the same points, their rounds taken "
                   f"together ({', '.join(map(str, self.judges))})" if self.judges
                   else f"the timings of {self.evaluation}")
        lines = [f"replayed: {chooser} against {timings} (nothing timed)"]
        if self.changed:
            lines.append(f"warning: {self.evaluation} timed other versions of {', '.join(self.changed)}; "
                         f"its timings are not the costs of the implementations these choices were made for")
        if self.other_machine:
            lines.append(f"warning: {self.evaluation} was timed on another machine ({'; '.join(self.other_machine)}); "
                         f"its timings are not the costs these choices were made for")
        lines += ["", *format_document(self.document)]
        if self.offsets:
            lines += ["", *format_offsets(self.offsets)]
        return "\n".join(lines).rstrip()


@dataclass(frozen=True)
class Offset:
    """How one implementation's times measured at an evaluation's points (at
    one rank count, every parameter value timed) stand to its model's."""

    interface: str
    implementation: str
    P: int
    ratio: float  # the geometric mean of measured / predicted time
    timings: int  # the candidates it is the mean over


def offsets(library: ast.Library, predictor: Predictor, document: EvaluationDocument) -> list[Offset]:
    """Each implementation's offset against its model at the points of
    ``document`` (module doc), per interface and rank count; an
    implementation without a model there is left out."""
    found = []
    for interface in library.interfaces:
        part = document.interfaces.get(interface.name)
        described = {implementation.name for implementation in interface.implementations}
        logs: dict[tuple[str, int], list[float]] = defaultdict(list)
        for point in part.points if part else ():
            for candidate in point.candidates:
                if candidate.implementation not in described:  # timed, but the description has it no more
                    continue
                try:
                    predicted = predictor.evaluate(candidate.implementation,
                                                   {**point.variables, **candidate.parameters})
                except ModelUnavailable:
                    continue
                if candidate.seconds > 0 and predicted > 0:
                    logs[candidate.implementation, point.P].append(math.log(candidate.seconds / predicted))
        found += [Offset(interface.name, implementation, P, math.exp(statistics.fmean(values)), len(values))
                  for (implementation, P), values in sorted(logs.items(), key=lambda item: (item[0][1], item[0][0]))]
    return found


def format_offsets(found: list[Offset]) -> list[str]:
    """The offsets as ``hlc evaluate --replay`` prints them: one line per
    interface and rank count, the alternatives from the slowest against
    their models to the fastest, and how far apart those two lie."""
    lines = ["measured / predicted time, geometric mean over the evaluation's timings (where alternatives lie "
             "far apart, the close choices between them lean to the larger ratio: its model promises more than "
             "these timings show):"]
    groups: dict[tuple[str, int], list[Offset]] = defaultdict(list)
    for offset in found:
        groups[offset.interface, offset.P].append(offset)
    for (interface, P), group in groups.items():
        group.sort(key=lambda o: -o.ratio)
        apart = f" ({group[0].ratio / group[-1].ratio - 1:.1%} apart)" if len(group) > 1 else ""
        lines.append(f"  {interface}, P={P}: " + ", ".join(f"{o.implementation} {o.ratio:.3f}" for o in group) + apart)
    return lines


def replay(build: str | Path, evaluation: str | Path | Sequence[str | Path] | None = None, *,
           tolerance: float | None = None, description: str | Path | None = None) -> Replay:
    """Judge the choices of the models in ``build`` against the candidates
    timed by a stored ``evaluation`` (default: the build's own), or by
    several of the same points together."""
    models_file, models = models_of(build)
    judges = _paths(evaluation) or [models_file.with_name("evaluation.json")]
    stored, document = judges[0], _judge(judges)
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
                                     Replayed(str(models_file), ", ".join(map(str, judges))), document.sources),
                  models_file, stored, changed=changed_sources(document.sources, models.fingerprint.sources),
                  other_machine=tuple(machine_differences(document.machine, models.fingerprint)),
                  offsets=offsets(library, predictor, document), judges=tuple(judges) if len(judges) > 1 else ())


def replay_oracle(first: str | Path, second: str | Path | Sequence[str | Path], *,
                  tolerance: float | None = None) -> Replay:
    """Judge the fastest candidates ``first`` measured at each point against
    the timings of ``second``, an exhaustive evaluation of the same points
    and inputs (the same library, seed and points, at the rank counts both
    timed: a run at one rank is judged against one at one and two), or of
    several such evaluations together: the oracle's agreement with itself,
    what models can expect to reach on ``second``'s timings at best.  A
    ValueError says why two evaluations cannot be compared."""
    judges = _paths(second)
    if not judges:
        raise ValueError(f"name the evaluation of the same points whose timings judge {first}'s fastest candidates")
    chooser, judge_by = Path(first), judges[0]
    documents = mine, theirs = _exhaustive(chooser), _judge(judges)
    if mine.library != theirs.library:
        raise ValueError(f"{chooser} evaluated {mine.library}, {judge_by} {theirs.library}")
    settings = [(d.settings.seed, d.settings.points) for d in documents]
    ranks = [P for P in theirs.settings.ranks if P in mine.settings.ranks]
    if settings[0] != settings[1] or not ranks:
        raise ValueError(f"{chooser} and {judge_by} were not made with the same seed and points at a rank count "
                         f"they share ({settings[0][0]}, {settings[0][1]}, {list(mine.settings.ranks)} against "
                         f"{settings[1][0]}, {settings[1][1]}, {list(theirs.settings.ranks)}): their points differ")
    tolerance = theirs.settings.tolerance if tolerance is None else tolerance
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must lie in [0, 1), not {tolerance}")
    interfaces = {}
    for name, part in theirs.interfaces.items():
        chosen = {(p.P, p.index): p for p in mine.interfaces[name].points} if name in mine.interfaces else {}
        judged, unmeasured = [], 0
        for point in (p for p in part.points if p.P in ranks):
            own = chosen.get((point.P, point.index))
            if own is None:
                unmeasured += 1
                continue
            if own.variables != point.variables:
                raise ValueError(f"{chooser} and {judge_by} differ at {name}'s point {point.index} "
                                 f"(P={point.P}): {own.variables} against {point.variables}")
            best = own.candidate(_overall(own.candidates))
            replayed = rejudge(point, best.implementation, dict(best.parameters),
                               {implementation: dict(c.parameters) for implementation, c in _fastest(own).items()},
                               tolerance)
            if replayed is None:
                unmeasured += 1
            else:
                judged.append(replayed)
        # the stored evaluation named its baseline (by default the reference, which the noise floor times twice)
        baseline = part.summary.baseline.implementation if part.summary and part.summary.baseline else ""
        summary, by_ranks = summaries(judged, ranks, tolerance, theirs.settings.baseline or baseline, baseline)
        interfaces[name] = InterfaceResult(summary, by_ranks, judged, unmeasured)
    return Replay(EvaluationDocument(theirs.library, replace(theirs.settings, tolerance=tolerance, ranks=ranks),
                                     interfaces, theirs.created, theirs.machine,
                                     Replayed(str(chooser), ", ".join(map(str, judges))), theirs.sources),
                  chooser, judge_by, oracle=True, changed=changed_sources(theirs.sources, mine.sources),
                  other_machine=tuple(machine_differences(theirs.machine, mine.machine)),
                  judges=tuple(judges) if len(judges) > 1 else ())


def _paths(given: str | Path | Sequence[str | Path] | None) -> list[Path]:
    """The evaluations named: none, one path, or several."""
    if given is None:
        return []
    if isinstance(given, (str, Path)):
        return [Path(given)]
    return [Path(path) for path in given]


def _judge(paths: Sequence[Path]) -> EvaluationDocument:
    """The stored evaluation at the one path, or those at several combined."""
    if len(paths) == 1:
        return _exhaustive(paths[0])
    return combine([(path, _exhaustive(path)) for path in paths])


def _exhaustive(path: Path) -> EvaluationDocument:
    """The stored evaluation at ``path``, which must have timed every
    candidate (``--params exhaustive``) for a replay to look choices up in."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; run `hlc evaluate --params exhaustive` to make one")
    document = artefact.load(path)
    if document.settings.params != "exhaustive":
        raise ValueError(f"{path} timed the chosen parameters only; replay needs an evaluation made with "
                         f"--params exhaustive")
    return document


def is_evaluation(path: str | Path) -> bool:
    """Whether ``path`` is an evaluation file (rather than a build or a models file)."""
    if not Path(path).is_file():
        return False
    try:
        artefact.load(path)
    except ArtefactError:
        return False
    return True


def _overall(candidates: tuple[Candidate, ...]) -> str:
    """The label of the fastest candidate as the oracle compares them: the
    one that the fewest others beat, by the least."""
    by_label = {c.label: c for c in candidates}
    return min(by_label, key=lambda name: oracle_verdict(by_label, name)[1])


def _fastest(point: JudgedPoint) -> dict[str, Candidate]:
    """Each implementation's fastest candidate at ``point``: the parameters
    the oracle would give it."""
    fastest: dict[str, Candidate] = {}
    for implementation in dict.fromkeys(c.implementation for c in point.candidates):
        own = tuple(c for c in point.candidates if c.implementation == implementation)
        fastest[implementation] = point.candidate(_overall(own))
    return fastest


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
