"""The models artefact (``models.json``): what the fitter made of the samples.

One :class:`Models` per build: the library, where its description is, the
fit's settings, the machine fingerprint it is valid for, and per
implementation a :class:`TimeModel` — fitted (terms, coefficients, their
confidence, errors, and its generated Python and C), factored (an expression
of other models), excluded while profiling, or not fitted, each with its
cause.  The dispatch generator, the decision reference, ``explain``,
evaluation and the report all read it through these classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hlc.artefacts.files import ArtefactError, check_format, parse_fields, read_json, save_document

KIND = "models"
FORMAT = 1
#: The model statuses under which the dispatcher may call an implementation.
CALLABLE = ("fitted", "factored")


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(round(float(value), 6))


@dataclass(frozen=True)
class Factor:
    """One shape of a cost change at a knot of one variable: a step, a hinge,
    or a tent (one at the knot, falling to none ``width`` away on either
    side: a cost that changes near one value only)."""

    kind: str  # "step", "hinge" or "tent"
    variable: str  # a name, or the text of a family's expression
    knot: float  # in log2 of the variable when ``log``, else in its own units
    log: bool
    width: float = 0.0  # a tent's half-width, in the knot's units; 0 for the others
    whole: bool = False  # the variable took whole numbers only, in the samples the factor was found in

    @property
    def text(self) -> str:
        """The factor in the description language."""
        x = f"log2({self.variable})" if self.log else self.variable
        knot = _number_text(self.knot)
        if self.kind == "step":
            return f"({x} >= {knot})"
        if self.kind == "tent":
            scaled = "" if self.width == 1 else f" / {_number_text(self.width)}"
            return f"max(0, 1 - abs({x} - {knot}){scaled})"
        return f"max(0, {x} - {knot})"

    def to_json(self) -> dict[str, Any]:
        data = {"kind": self.kind, "variable": self.variable, "knot": self.knot, "log": self.log}
        if self.whole:
            data["whole"] = True
        return {**data, "width": self.width} if self.kind == "tent" else data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Factor:
        if data["kind"] not in ("step", "hinge", "tent"):
            raise ValueError(f"a discovered factor is a step, a hinge or a tent, not {data['kind']!r}")
        width = float(data.get("width", 0.0))
        if data["kind"] == "tent" and not width > 0:
            raise ValueError(f"a tent needs a positive width, not {data.get('width')!r}")
        return cls(str(data["kind"]), str(data["variable"]), float(data["knot"]), bool(data["log"]), width,
                   bool(data.get("whole", False)))


def is_product(text: str) -> bool:
    """Whether a term's text binds as tightly as ``*`` does: no top-level
    sum, difference, comparison or logical operator (each printed between
    spaces), so that ``x * TERM`` means what it says."""
    depth = 0
    for i, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and i > 0 and text[i - 1] == " " and (
                char in "+-<>=!" or text.startswith(("and ", "or ", "not "), i)):
            return False
    return True


@dataclass(frozen=True)
class Discovered:
    """A term the fitter added: a written term (``"1"``: the constant) times
    one or more factors."""

    base: str
    factors: tuple[Factor, ...]

    def __post_init__(self) -> None:
        # The fitter's search keys its caches by terms and tuples of terms,
        # and hashes them millions of times: the hash is computed once.
        object.__setattr__(self, "_hash", hash((self.base, self.factors)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type, tuple[str, tuple[Factor, ...]]]:
        # A string's hash differs from one process to the next: the fit's
        # workers compute their own.
        return Discovered, (self.base, self.factors)

    @property
    def text(self) -> str:
        factors = " * ".join(f.text for f in self.factors)
        if self.base == "1":
            return factors
        base = self.base if is_product(self.base) else f"({self.base})"
        return f"{base} * {factors}"

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "factors": [factor.to_json() for factor in self.factors]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Discovered:
        return cls(str(data["base"]), tuple(Factor.from_json(f) for f in data["factors"]))


@dataclass(frozen=True)
class TimeModel:
    """One implementation's time model, in whichever state the fit left it."""

    status: str  # "fitted", "factored", "excluded" or "unfitted"
    cause: str | None = None  # why excluded or not fitted
    ranks: int | None = None  # excluded: the rank count it failed at
    point: dict[str, Any] | None = None  # excluded: the loop point it failed at
    samples: int = 0
    verification_samples: int = 0
    noisy_samples: int = 0
    disturbed_samples: int = 0  # left out: taken while the host ran slow
    # The factor the times of samples taken while the host ran slow were divided
    # by, where the fit kept them scaled back (hlc.model.calibration._steady).
    slowdown: float | None = None
    # Where only the samples taken in spells that no steady one lay near were
    # kept scaled back, their names (hlc.model.calibration.sample_key).
    scaled_alone: tuple[str, ...] = ()
    # The points whose settings, timed side by side in a slow spell, the fit
    # took for their ratios: the factor each one's times were divided by (1
    # where it kept the point's level), by its name
    # (hlc.model.calibration.point_key, _leveled).
    leveled: dict[str, float] = field(default_factory=dict)
    discovered: tuple[Discovered, ...] = ()
    terms: tuple[str, ...] = ()  # every term fitted: written, then discovered
    kept: tuple[str, ...] = ()  # the terms the relevance test kept
    coefficients: dict[str, float] = field(default_factory=dict)
    half_widths: dict[str, float] = field(default_factory=dict)
    covariance: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    quantile: float | None = None  # two-sided Student-t quantile of the confidence bands
    dropped: tuple[str, ...] = ()
    aliases: dict[str, list[str]] = field(default_factory=dict)
    r2: float | None = None
    mre: float | None = None
    residuals: tuple[float, ...] = field(default=(), repr=False)
    warnings: tuple[str, ...] = ()
    verification_mre: float | None = None
    verification_mre_by_ranks: dict[str, float] = field(default_factory=dict)
    # Whether the model kept was searched and fitted again on the fitting and
    # the verification samples together, after the verification judged the
    # one fitted without them (verification_mre is that one's).
    on_every_sample: bool = False
    # How many searches on parts of the samples (bags) the model's terms
    # and coefficients are the mean of, beside the search on them all (hlc.model.calibration._bagged).
    bags: int = 0
    # The typical deviation of the samples from the model, by term (hlc.model.deviation) ...
    deviations: dict[str, float] = field(default_factory=dict)
    risk: float | None = None  # ... and how many of them a decision adds to the prediction
    domain: dict[str, list[float]] = field(default_factory=dict)  # variable → [lowest, highest] profiled
    python: str | None = field(default=None, repr=False)
    c: str | None = field(default=None, repr=False)

    @property
    def usable(self) -> bool:
        """Whether the dispatcher may call the implementation."""
        return self.status in CALLABLE

    @property
    def weighs_deviations(self) -> bool:
        """Whether a decision plans for more than the prediction (hlc.model.deviation)."""
        return bool(self.deviations and self.risk)

    @property
    def plan_deviations(self) -> dict[str, float]:
        """What a decision adds to the prediction, by term: ``risk`` times
        each term's typical deviation (a sum of the same terms); none
        where the model knows no deviation."""
        if not self.weighs_deviations:
            return {}
        return {term: self.risk * deviation for term, deviation in self.deviations.items()}

    @property
    def has_band(self) -> bool:
        """Whether the model carries what a confidence band needs."""
        return self.status == "fitted" and bool(self.covariance) and self.quantile is not None

    def to_json(self) -> dict[str, Any]:
        """The entry as ``models.json`` holds it: the fields its status has."""
        data: dict[str, Any] = {"status": self.status}
        for name in _FIELDS_OF.get(self.status, _FIELDS_OF["fitted"]):
            value = getattr(self, name)
            if name in _OPTIONAL and not value:
                continue
            if name == "discovered":
                value = [term.to_json() for term in value]
            data["P" if name == "ranks" else name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TimeModel:
        if not isinstance(data.get("status"), str):
            raise ValueError("an implementation's model has no status")
        values: dict[str, Any] = {}
        for f in fields(cls):
            key = "P" if f.name == "ranks" else f.name
            if key not in data or data[key] is None:
                continue
            value = data[key]
            if f.name == "discovered":
                value = tuple(Discovered.from_json(d) for d in value)
            elif f.name in ("terms", "kept", "dropped", "warnings", "scaled_alone"):
                value = tuple(str(v) for v in value)
            elif f.name == "residuals":
                value = tuple(float(v) for v in value)
            elif f.name in ("coefficients", "half_widths", "verification_mre_by_ranks", "deviations", "leveled"):
                value = {str(k): float(v) for k, v in value.items()}
            elif f.name in ("covariance", "aliases", "domain", "point") and not isinstance(value, dict):
                raise ValueError(f"{key} is not an object")
            values[f.name] = value
        return cls(**values)


_COUNTS = ("samples", "verification_samples", "noisy_samples", "disturbed_samples")
_GENERATED = ("domain", "python", "c")
#: The fields ``models.json`` records for a model in each status.
_FIELDS_OF = {
    "excluded": ("cause", "ranks", "point"),
    "unfitted": ("cause",),
    "factored": (*_COUNTS, "verification_mre", *_GENERATED),
    "fitted": (*_COUNTS, "discovered", "terms", "kept", "coefficients", "half_widths", "covariance", "quantile",
               "dropped", "aliases", "r2", "mre", "residuals", "warnings", "verification_mre",
               "verification_mre_by_ranks", "on_every_sample", "bags", "deviations", "risk", "slowdown",
               "scaled_alone", "leveled", *_GENERATED),
}
#: Fields left out of the file when empty.
_OPTIONAL = ("verification_mre_by_ranks", "on_every_sample", "bags", "deviations", "risk", "slowdown", "scaled_alone",
             "leveled", "domain", "python", "c", "point")


#: What a models file without an entry for an implementation says of it.
NOT_CALIBRATED = TimeModel("not calibrated", cause="the models have no entry for it")


@dataclass(frozen=True)
class ImplementationModel:
    """An implementation's entry: its interface and its time model."""

    interface: str
    time: TimeModel

    def to_json(self) -> dict[str, Any]:
        return {"interface": self.interface, "time": self.time.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ImplementationModel:
        return cls(str(data["interface"]), TimeModel.from_json(data["time"]))


@dataclass(frozen=True)
class FitSettings:
    """How the models were fitted."""

    relative: bool = True  # least squares of relative, not absolute, error
    confidence: float = 0.95
    discovering: bool = True  # the fitter searched for steps and hinges

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FitSettings:
        return cls(bool(data.get("relative", True)), float(data.get("confidence", 0.95)),
                   bool(data.get("discovering", True)))

    def to_json(self) -> dict[str, Any]:
        return {"relative": self.relative, "confidence": self.confidence, "discovering": self.discovering}


@dataclass(frozen=True)
class Fingerprint:
    """What the models are valid for: the machine, the versions, the sources' digests."""

    machine: dict[str, Any] = field(default_factory=dict)  # hlc.model.fingerprint.machine(): cpu, cores, …
    quick: bool = False  # calibrated with the quick (smaller) profile
    sources: dict[str, str] = field(default_factory=dict)  # file, relative to the description → sha256

    def get(self, name: str, default: Any = None) -> Any:
        """A machine field (``cpu``, ``cores``, …)."""
        return self.machine.get(name, default)

    def __contains__(self, name: object) -> bool:
        """Whether the machine field was recorded (fingerprints older than a field lack it)."""
        return name in self.machine

    def to_json(self) -> dict[str, Any]:
        return {**self.machine, "quick": self.quick, "sources": dict(self.sources)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fingerprint:
        machine = {k: v for k, v in data.items() if k not in ("quick", "sources")}
        sources = {str(k): str(v) for k, v in data.get("sources", {}).items()}
        return cls(machine, bool(data.get("quick", False)), sources)


@dataclass(frozen=True)
class Models:
    """A library's calibrated models."""

    library: str
    description: str  # the description the build parses: relative to the build folder, or absolute
    implementations: dict[str, ImplementationModel]
    settings: FitSettings = FitSettings()
    fingerprint: Fingerprint = Fingerprint()
    created: str = ""
    samples_header: dict[str, Any] = field(default_factory=dict, repr=False)  # the profile's header record
    origin: str | None = None  # where the description was before the build copied it
    static: dict[str, float] | None = None  # the workload whose choices the build fixed at compile time

    def time(self, implementation: str) -> TimeModel:
        """The implementation's time model (:data:`NOT_CALIBRATED` if it has none)."""
        entry = self.implementations.get(implementation)
        return entry.time if entry else NOT_CALIBRATED

    def times(self) -> dict[str, TimeModel]:
        """Every implementation's time model, by implementation."""
        return {name: entry.time for name, entry in self.implementations.items()}

    def fitted(self) -> dict[str, TimeModel]:
        """The fitted time models, by implementation."""
        return {name: entry.time for name, entry in self.implementations.items() if entry.time.status == "fitted"}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": FORMAT, "library": self.library, "description": self.description, "created": self.created,
            "samples_header": self.samples_header, "settings": self.settings.to_json(),
            "fingerprint": self.fingerprint.to_json(),
            "implementations": {name: entry.to_json() for name, entry in self.implementations.items()},
        }
        if self.origin is not None:
            data["origin"] = self.origin
        if self.static is not None:
            data["static"] = self.static
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Models:
        return cls(
            library=str(data["library"]), description=str(data["description"]),
            implementations={str(name): ImplementationModel.from_json(entry)
                             for name, entry in data["implementations"].items()},
            settings=FitSettings.from_json(data.get("settings", {})),
            fingerprint=Fingerprint.from_json(data.get("fingerprint", {})),
            created=str(data.get("created", "")), samples_header=dict(data.get("samples_header", {})),
            origin=data.get("origin"), static=data.get("static"),
        )

    def save(self, path: Path | str) -> None:
        save_document(path, self.to_json())


def _parsed(data: Any, where: Path | str) -> Models:
    """The models in the JSON value ``data`` read from ``where``, checked."""
    document = check_format(data, where, KIND, (FORMAT,))
    if "implementations" not in document:
        raise ArtefactError(f"{where}: not a models file of hlc (it has no implementations)")
    return parse_fields(where, KIND, lambda: Models.from_json(document))


def load(path: Path | str) -> Models:
    """The models in ``path``; an :class:`ArtefactError` naming the file if it
    is missing, damaged, not a models file, or of an unknown format."""
    return _parsed(read_json(path), path)


def load_if_exists(path: Path | str) -> Models | None:
    """The models in ``path``, or None if there is no such file."""
    return load(path) if Path(path).exists() else None


def load_each(paths: Mapping[str, Path | str]) -> dict[str, Models]:
    """The models at ``paths`` (by library name) that exist."""
    return {name: load(path) for name, path in paths.items() if Path(path).exists()}


def load_used(path: Path | str) -> dict[str, Models]:
    """The models of the libraries a build uses (``used_models.json``: library
    name → its models), each checked as a models file; none if there is no file."""
    if not Path(path).exists():
        return {}
    document = read_json(path)
    if not isinstance(document, dict):
        raise ArtefactError(f"{path}: not a file of used models (it holds a JSON {type(document).__name__})")
    return {name: _parsed(data, f"{path} ({name})") for name, data in document.items()}


def save_used(path: Path | str, used: Mapping[str, Models]) -> None:
    save_document(path, {name: models.to_json() for name, models in used.items()}, indent=None)
