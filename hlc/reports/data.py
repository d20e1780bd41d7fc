"""Reading a build folder for the report: models, samples, evaluation, description, module.

Every artefact but ``models.json`` may be missing or unreadable; what cannot
be read becomes a note, so that a report of a half-broken build still shows
what there is.  Interfaces, variables and parameters come from the parsed
description when it can be found, else from what the models and samples
record, so the report never needs more than the build folder.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from hlc.artefacts import evaluation as evaluation_artefact
from hlc.artefacts.evaluation import EvaluationDocument
from hlc.artefacts.files import ArtefactError
from hlc.artefacts.models import Models, TimeModel, load_used
from hlc.artefacts.models import load as load_models
from hlc.artefacts.samples import Failure, Sample, Samples
from hlc.language import ast
from hlc.language.nest import constant_values
from hlc.model.findings import in_words_at_samples
from hlc.model.predict import Predictor


@dataclass
class ParameterInfo:
    """An integer parameter: its declared range (may depend on variables) and the values profiled."""

    name: str
    range: ast.Range | None
    observed: tuple[int, int] | None


@dataclass
class ImplementationInfo:
    name: str
    doc: str | None
    parameters: list[ParameterInfo]
    entry: TimeModel  # its time model (NOT_CALIBRATED when the models do not name it)
    findings: list[str] = field(default_factory=list)  # what the fitter found, in words, the largest first


@dataclass
class InterfaceInfo:
    name: str
    doc: str | None
    variables: list[str]  # explanatory variables in declaration order (without P and logP)
    implementations: list[ImplementationInfo]
    samples: list[Sample]  # the samples of this interface
    failures: list[Failure]  # the implementations of this interface excluded while profiling
    domain: dict[str, tuple[float, float]]  # calibrated range of each variable, union over implementations
    integers: set[str]  # variables that only took integer values
    ranks: list[int]  # calibrated rank counts, smallest first

    @property
    def names(self) -> list[str]:
        return [i.name for i in self.implementations]


@dataclass
class BuildData:
    folder: Path
    models: Models
    description: Path | None
    library: ast.Library | None
    interfaces: list[InterfaceInfo]
    evaluation: EvaluationDocument | None
    module: ModuleType | None
    constants: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def read_build(folder: str | Path) -> BuildData:
    """Everything the report draws from, read once."""
    folder = Path(folder)
    models_path = folder / "models.json"
    if not models_path.is_file():
        raise FileNotFoundError(f"{folder} has no models.json: it is not a built library "
                                f"(build it with `hlc build DESCRIPTION`)")
    models = load_models(models_path)
    notes: list[str] = []
    try:
        records = Samples.read(folder / "samples.jsonl")
    except ArtefactError as error:
        notes.append(f"the samples could not be read ({error}): no measured-vs-predicted or residual plots")
        records = Samples()
    if not records.headers and not records.samples:
        notes.append("no samples.jsonl (or it is empty): no measured-vs-predicted or residual plots")
    description, library = _description(folder, models, records, notes)
    evaluation = _evaluation(folder, notes)
    module = _module(folder, notes)
    constants = constant_values(library) if library is not None else {}
    interfaces = _interfaces(models, library, records)
    _weigh_findings(folder, models, library, interfaces)
    return BuildData(folder, models, description, library, interfaces, evaluation, module, constants, notes)


def _weigh_findings(folder: Path, models: Models, library: ast.Library | None,
                    interfaces: list[InterfaceInfo]) -> None:
    """Each fitted model's findings in words, weighed at its samples where
    the description was read (hlc.model.findings), else in the order found."""
    predictor = None
    if library is not None:
        try:
            predictor = Predictor.of_models(library, models, load_used(folder / "used_models.json"))
        except (ArtefactError, OSError):
            predictor = None
    for interface in interfaces:
        for info in interface.implementations:
            if info.entry.status != "fitted":
                continue
            implementation = library.interface(interface.name).implementation(info.name) \
                if library is not None else None
            info.findings = in_words_at_samples(predictor, implementation, info.entry, interface.samples)


def _description(folder: Path, models: Models, records: Samples,
                 notes: list[str]) -> tuple[Path | None, ast.Library | None]:
    """The description the build was made from, parsed: the build's own copy,
    else (a build made before builds kept one) the path it records, relative
    paths tried from here and from the build folder's parents (where `hlc
    build` usually runs)."""
    from hlc.language.errors import HLError
    from hlc.language.parse import parse_file

    header = records.headers[0] if records.headers else None
    written = [p for p in (models.description, header.description if header else None) if p]
    candidates: list[Path] = []
    if models.description and not Path(models.description).is_absolute():
        candidates.append(folder / models.description)
    for text in written:
        path = Path(text)
        candidates += [path] if path.is_absolute() else [path, *(p / path for p in folder.resolve().parents)]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        notes.append(f"the description {written[0] if written else '(not recorded)'} was not found: "
                     "interfaces and parameter ranges are taken from the models and samples")
        return None, None
    try:
        return found.resolve(), parse_file(found)
    except (HLError, OSError) as error:
        notes.append(f"the description {found} could not be parsed ({str(error).splitlines()[0]}): "
                     "interfaces and parameter ranges are taken from the models and samples")
        return found.resolve(), None


def _evaluation(folder: Path, notes: list[str]) -> EvaluationDocument | None:
    path = folder / "evaluation.json"
    if not path.is_file():
        notes.append("no evaluation.json: run `hlc evaluate` on the build to compare the choices with measured "
                     "times and to overlay right and wrong choices on the region maps")
        return None
    try:
        return evaluation_artefact.load(path)
    except ArtefactError as error:
        notes.append(f"evaluation.json could not be read ({error}): no evaluation is shown")
        return None


def _module(folder: Path, notes: list[str]) -> ModuleType | None:
    """The built module, whose decisions and predictions the report shows; its
    import-time warnings (models calibrated elsewhere) become notes."""
    from hlc.dispatch.loading import load

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = load(folder)
    except Exception as error:  # any import failure: the report shows the models only
        notes.append(f"the built module could not be imported ({type(error).__name__}: {error}): "
                     "no predictions, region maps or parameter plots")
        return None
    for warning in caught:
        notes.append(f"importing the module warned: {warning.message}")
    return module


def _interfaces(models: Models, library: ast.Library | None,
                records: Samples) -> list[InterfaceInfo]:
    implementations = models.implementations
    samples, failures = list(records.samples), list(records.failures)
    interfaces: list[InterfaceInfo] = []
    if library is not None:
        for interface in library.interfaces:
            impls = [ImplementationInfo(i.name, i.doc,
                                        [ParameterInfo(p.name, p.range, None) for p in i.parameters],
                                        models.time(i.name))
                     for i in interface.implementations]
            interfaces.append(_info(interface.name, interface.doc, [v.name for v in interface.variables],
                                    impls, samples, failures))
        return interfaces
    names: dict[str, list[str]] = {}
    for name, record in implementations.items():
        names.setdefault(record.interface, []).append(name)
    for interface, members in names.items():
        mine = [s for s in samples if s.interface == interface]
        variables = list(dict.fromkeys(v for s in mine for v in s.variables if v not in ("P", "logP")))
        if not variables:
            domain = next((models.time(m).domain for m in members if models.time(m).domain), {})
            variables = [v for v in domain if v not in ("P", "logP")]
        impls = []
        for member in members:
            parameters = list(dict.fromkeys(p for s in mine if s.implementation == member for p in s.parameters))
            impls.append(ImplementationInfo(member, None, [ParameterInfo(p, None, None) for p in parameters],
                                            models.time(member)))
        interfaces.append(_info(interface, None, variables, impls, samples, failures))
    return interfaces


def _info(name: str, doc: str | None, variables: list[str], implementations: list[ImplementationInfo],
          samples: list[Sample], failures: list[Failure]) -> InterfaceInfo:
    mine = [s for s in samples if s.interface == name]
    for implementation in implementations:
        taken = [s for s in mine if s.implementation == implementation.name]
        for parameter in implementation.parameters:
            values = [s.parameters[parameter.name] for s in taken if parameter.name in s.parameters]
            if values:
                parameter.observed = (int(min(values)), int(max(values)))
    domain: dict[str, tuple[float, float]] = {}
    for implementation in implementations:
        for variable, (low, high) in implementation.entry.domain.items():
            known = domain.get(variable, (low, high))
            domain[variable] = (min(known[0], low), max(known[1], high))
    for sample in mine:  # implementations without a model still say where they were measured
        for variable, value in sample.variables.items():
            known = domain.get(variable, (value, value))
            domain[variable] = (min(known[0], value), max(known[1], value))
    integers = {v for v in variables if _integral(v, mine, domain)}
    ranks = sorted({int(s.P) for s in mine})
    if not ranks and "P" in domain:
        low, high = domain["P"]
        ranks = sorted({int(low), int(high)})
    return InterfaceInfo(name, doc, variables, implementations, mine,
                         [f for f in failures if f.interface == name], domain, integers, ranks or [1])


def _integral(variable: str, samples: list[Sample], domain: dict[str, tuple[float, float]]) -> bool:
    """A variable that only ever took integer values is drawn on an integer grid."""
    values = [s.variables[variable] for s in samples if variable in s.variables]
    values = values or list(domain.get(variable, ()))
    return bool(values) and all(isinstance(v, int | float) and math.isfinite(v) and float(v).is_integer()
                                for v in values)
