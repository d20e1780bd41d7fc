"""The evaluation artefact (``evaluation.json``): a build's choices against the measured fastest.

One :class:`EvaluationDocument` per evaluation: the library, when and on
what machine it was taken, its :class:`Settings`, and per interface an
:class:`InterfaceResult` — the :class:`Summary` of every judged point, one
per rank count when there were several, and the :class:`JudgedPoint`\\ s
themselves with every :class:`Candidate` timed there, so that other models
can be judged against the same timings later (``hlc evaluate --replay``)
and the report can draw where the choices were right.

Format 1 wrote the settings beside the library and each summary flat, with
one key per implementation (``optimal_parameters_radix``,
``optimal_parameters_radix_points``, ``chosen_radix``) that a reader had to
take apart by prefix; format 2 nests the settings and gives the summary's
per-implementation figures their own objects.  Both are read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from hlc.artefacts.files import ArtefactError, load_document, parse_fields, save_document

KIND = "evaluation"
FORMAT = 2
#: The formats this hlc reads: 1 (flat settings and summaries) and 2.
VERSIONS = (1, 2)


_SCALARS: dict[str, Callable[[Any], Any]] = {"str": str, "int": int, "float": float, "bool": bool}


class Scalars:
    """A record whose fields are all numbers or strings: written as it is,
    read back with each field converted to its declared type."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Any:
        return cls(**{f.name: _SCALARS[str(f.type)](data[f.name]) for f in fields(cls)})


@dataclass(frozen=True)
class Candidate:
    """One alternative timed at a point: its median time and the time of
    each round it was timed in, so that two candidates can be compared round
    by round."""

    label: str  # ``radix bpd=8``: the implementation at its parameters
    implementation: str
    parameters: dict[str, int]
    seconds: float
    rounds: tuple[tuple[int, float], ...] = ()  # (round, seconds); none in lines older than timing by rounds
    noisy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "implementation": self.implementation, "parameters": dict(self.parameters),
                "seconds": self.seconds, "rounds": [[r, seconds] for r, seconds in self.rounds],
                "noisy": self.noisy}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Candidate:
        return cls(str(data["label"]), str(data["implementation"]),
                   {str(k): int(v) for k, v in data["parameters"].items()}, float(data["seconds"]),
                   tuple((int(r), float(seconds)) for r, seconds in data.get("rounds", ())),
                   bool(data.get("noisy", False)))


@dataclass(frozen=True)
class Chosen:
    """What the models chose at a point: an implementation at its parameters."""

    implementation: str
    parameters: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"implementation": self.implementation, "parameters": dict(self.parameters)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Chosen:
        return cls(str(data["implementation"]), {str(k): int(v) for k, v in data["parameters"].items()})


@dataclass(frozen=True)
class JudgedPoint:
    """One held-out point: the choice, every alternative timed there, and the verdict."""

    P: int
    index: int  # the draw's place in the evaluation's stream of the interface
    point: dict[str, int]  # the loop values drawn
    variables: dict[str, float]  # the explanatory variables agreed there
    chosen: Chosen
    candidates: tuple[Candidate, ...]  # each implementation's first one at the parameters the models give it
    chosen_label: str
    best_label: str  # the alternative that beat the chosen one by most; the chosen one when none did
    penalty: float  # t_chosen / t_best - 1
    right: bool  # the penalty within the tolerance
    dispatched: Candidate | None = None  # the built module's own call, decision included
    again: Candidate | None = None  # the reference timed a second time: the noise floor
    #: the contenders timed again on a second input of the same variables (none: not timed)
    other_input: tuple[Candidate, ...] = ()

    def candidate(self, label: str) -> Candidate:
        """The candidate of that label."""
        return next(c for c in self.candidates if c.label == label)

    def to_json(self) -> dict[str, Any]:
        return {"P": self.P, "index": self.index, "point": dict(self.point), "variables": dict(self.variables),
                "chosen": self.chosen.to_json(), "candidates": [c.to_json() for c in self.candidates],
                "chosen_label": self.chosen_label, "best_label": self.best_label, "penalty": self.penalty,
                "right": self.right, "dispatched": _optional(self.dispatched), "again": _optional(self.again),
                "other_input": [c.to_json() for c in self.other_input]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JudgedPoint:
        return cls(int(data["P"]), int(data["index"]), dict(data["point"]), dict(data["variables"]),
                   Chosen.from_json(data["chosen"]), tuple(Candidate.from_json(c) for c in data["candidates"]),
                   str(data["chosen_label"]), str(data["best_label"]), float(data["penalty"]), bool(data["right"]),
                   _candidate_or_none(data.get("dispatched")), _candidate_or_none(data.get("again")),
                   tuple(Candidate.from_json(c) for c in data.get("other_input", ())))


def _optional(candidate: Candidate | None) -> dict[str, Any] | None:
    return candidate.to_json() if candidate is not None else None


def _candidate_or_none(data: Any) -> Candidate | None:
    return Candidate.from_json(data) if data is not None else None


@dataclass(frozen=True)
class Gain(Scalars):
    """How much faster the dispatched call was than always calling one
    implementation: the geometric mean of t_implementation / t_dispatched."""

    implementation: str
    gain: float
    points: int  # the points where that implementation applies


@dataclass(frozen=True)
class Share(Scalars):
    """A share of points, and how many points it was taken over."""

    share: float
    points: int


@dataclass(frozen=True)
class Summary:
    """The figures over a set of judged points (at least one: a set with
    none has no summary)."""

    points: int
    tolerance: float  # a choice within this fraction of the fastest is right
    right_share: float
    mean_penalty_when_wrong: float
    expected_penalty: float  # the mean penalty over all points
    worst_penalty: float
    ratio_median: float  # of t_chosen / t_best
    ratio_p95: float
    ratio_max: float
    best_single: Gain | None = None  # the implementation that, always called, comes closest
    baseline: Gain | None = None  # the named baseline (default: the reference), where it applies
    #: per parameterized implementation: where the module's parameters were within the tolerance of its best
    optimal_parameters: dict[str, Share] = field(default_factory=dict)
    noise_median: float | None = None  # |t2 / t1 - 1| of the reference timed twice
    noise_p95: float | None = None
    overhead_median: float | None = None  # t_dispatched / t_chosen - 1
    chosen: dict[str, int] = field(default_factory=dict)  # implementation → points where it was chosen
    #: of the points timed on a second input, those where no alternative is within the tolerance
    #: of the fastest on both inputs: no choice made from the variables alone can be right there
    turns_on_input: Share | None = None
    #: the right choices among the points timed on a second input that the variables decide
    right_where_decided: Share | None = None
    #: the right choices among the points where the chosen and the fastest alternative's timings
    #: settled (None when all did): a verdict on timings that never agreed is the host's as much
    right_where_settled: Share | None = None
    #: per parameterized implementation: the same share as ``optimal_parameters``, over the points
    #: where it was the one chosen, whose parameters are the ones a call there runs with
    optimal_where_chosen: dict[str, Share] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"points": self.points, "tolerance": self.tolerance, "right_share": self.right_share,
                "mean_penalty_when_wrong": self.mean_penalty_when_wrong, "expected_penalty": self.expected_penalty,
                "worst_penalty": self.worst_penalty, "ratio_median": self.ratio_median,
                "ratio_p95": self.ratio_p95, "ratio_max": self.ratio_max,
                "best_single": self.best_single.to_json() if self.best_single else None,
                "baseline": self.baseline.to_json() if self.baseline else None,
                "optimal_parameters": {name: share.to_json() for name, share in self.optimal_parameters.items()},
                "noise_median": self.noise_median, "noise_p95": self.noise_p95,
                "overhead_median": self.overhead_median, "chosen": dict(self.chosen),
                "turns_on_input": self.turns_on_input.to_json() if self.turns_on_input else None,
                "right_where_decided": self.right_where_decided.to_json() if self.right_where_decided else None,
                "right_where_settled": self.right_where_settled.to_json() if self.right_where_settled else None,
                "optimal_where_chosen": {name: share.to_json() for name, share in self.optimal_where_chosen.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], version: int = FORMAT) -> Summary | None:
        """The summary, or None for one of no points (format 1 wrote those as ``{"points": 0}``)."""
        if version == 1:
            return _summary_of_format_1(data)
        if data is None:
            return None
        return cls(*_figures(data),
                   best_single=Gain.from_json(data["best_single"]) if data.get("best_single") else None,
                   baseline=Gain.from_json(data["baseline"]) if data.get("baseline") else None,
                   optimal_parameters={str(k): Share.from_json(v) for k, v in data["optimal_parameters"].items()},
                   noise_median=_float_or_none(data.get("noise_median")),
                   noise_p95=_float_or_none(data.get("noise_p95")),
                   overhead_median=_float_or_none(data.get("overhead_median")),
                   chosen={str(k): int(v) for k, v in data["chosen"].items()},
                   turns_on_input=_share_or_none(data.get("turns_on_input")),
                   right_where_decided=_share_or_none(data.get("right_where_decided")),
                   right_where_settled=_share_or_none(data.get("right_where_settled")),
                   optimal_where_chosen={str(k): Share.from_json(v)
                                         for k, v in (data.get("optimal_where_chosen") or {}).items()})


_FIGURES = ("tolerance", "right_share", "mean_penalty_when_wrong", "expected_penalty", "worst_penalty",
            "ratio_median", "ratio_p95", "ratio_max")


def _figures(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """``points`` and the figures every summary has, in the order of :class:`Summary`'s fields."""
    return (int(data["points"]), *(float(data[name]) for name in _FIGURES))


def _share_or_none(data: Any) -> Share | None:
    return Share.from_json(data) if data is not None else None


def _float_or_none(value: Any) -> float | None:
    return float(value) if value is not None else None


def _summary_of_format_1(data: Mapping[str, Any]) -> Summary | None:
    """A flat summary of format 1.  Its per-implementation figures are keys
    ``optimal_parameters_<name>`` beside ``optimal_parameters_<name>_points``
    and ``chosen_<name>``; a share is told from a count by its ``_points``
    companion, so an implementation whose name ends in ``_points`` is read
    right too."""
    if not data or not data.get("points"):
        return None
    prefix = "optimal_parameters_"
    optimal = {key.removeprefix(prefix): Share(float(value), int(data[key + "_points"]))
               for key, value in data.items() if key.startswith(prefix) and key + "_points" in data}
    chosen = {key.removeprefix("chosen_"): int(value) for key, value in data.items() if key.startswith("chosen_")}
    best_single = (Gain(str(data["best_single"]), float(data["gain_vs_best_single"]), int(data["points"]))
                   if "best_single" in data else None)
    baseline = (Gain(str(data["baseline"]), float(data["gain_vs_baseline"]), int(data["baseline_points"]))
                if "baseline" in data else None)
    return Summary(*_figures(data), best_single=best_single, baseline=baseline, optimal_parameters=optimal,
                   noise_median=_float_or_none(data.get("noise_median")),
                   noise_p95=_float_or_none(data.get("noise_p95")),
                   overhead_median=_float_or_none(data.get("overhead_median")), chosen=chosen)


@dataclass(frozen=True)
class InterfaceResult:
    """One interface's part of an evaluation."""

    summary: Summary | None  # over every judged point; None when none could be judged
    by_ranks: dict[int, Summary | None]  # per rank count, when there were several
    points: list[JudgedPoint]
    #: a replay's points where the replayed choice was not timed (never in a measured evaluation)
    unmeasured: int | None = None

    def blocks(self) -> dict[int | None, Summary | None]:
        """The summaries to show: one per rank count when there were several,
        else the one over all points (rank count None)."""
        return dict(self.by_ranks) if self.by_ranks else {None: self.summary}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "summary": self.summary.to_json() if self.summary else None,
            "by_ranks": {str(size): s.to_json() if s else None for size, s in self.by_ranks.items()},
            "points": [p.to_json() for p in self.points]}
        if self.unmeasured is not None:
            data["unmeasured"] = self.unmeasured
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], version: int = FORMAT) -> InterfaceResult:
        unmeasured = data.get("unmeasured")
        return cls(Summary.from_json(data["summary"], version),
                   {int(size): Summary.from_json(s, version) for size, s in data["by_ranks"].items()},
                   [JudgedPoint.from_json(p) for p in data["points"]],
                   int(unmeasured) if unmeasured is not None else None)


@dataclass(frozen=True)
class Settings:
    """How an evaluation was taken."""

    seed: int
    points: int  # held-out points per interface and rank count
    params: str  # "chosen": each implementation at the module's parameters; "exhaustive": at every value too
    tolerance: float
    baseline: str | None  # the implementation named to compare with; None: each interface's reference
    ranks: list[int]

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "points": self.points, "params": self.params, "tolerance": self.tolerance,
                "baseline": self.baseline, "ranks": list(self.ranks)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Settings:
        if data["params"] not in ("chosen", "exhaustive"):
            raise ValueError(f"params is 'chosen' or 'exhaustive', not {data['params']!r}")
        baseline = data.get("baseline")
        return cls(int(data["seed"]), int(data["points"]), str(data["params"]), float(data["tolerance"]),
                   str(baseline) if baseline is not None else None, [int(r) for r in data["ranks"]])


@dataclass(frozen=True)
class Replayed(Scalars):
    """Where a replay's choices and timings came from: other models judged
    against a stored evaluation's timings."""

    models: str  # the models file whose choices were judged
    evaluation: str  # the evaluation whose timings judged them


@dataclass(frozen=True)
class Probed:
    """One of the evaluated build's fitting samples timed again by the
    oracle, on the same arguments: how far the host's cost there moved
    between the profile and the evaluation."""

    interface: str
    implementation: str
    P: int
    parameters: dict[str, int]
    variables: dict[str, float]
    then: float  # seconds, as the profile measured them
    now: float  # seconds, as the evaluation did

    @property
    def ratio(self) -> float:
        """now / then: above 1 where the host runs the call slower than when the build was profiled."""
        return self.now / self.then if self.then > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {"interface": self.interface, "implementation": self.implementation, "P": self.P,
                "parameters": dict(self.parameters), "variables": dict(self.variables), "then": self.then,
                "now": self.now}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Probed:
        return cls(str(data["interface"]), str(data["implementation"]), int(data["P"]),
                   {str(k): int(v) for k, v in data["parameters"].items()},
                   {str(k): float(v) for k, v in data["variables"].items()}, float(data["then"]), float(data["now"]))


@dataclass(frozen=True)
class EvaluationDocument:
    """A whole evaluation (or a replay of one), as ``evaluation.json`` holds it."""

    library: str
    settings: Settings
    interfaces: dict[str, InterfaceResult]
    created: str = ""  # none in some evaluations of format 1
    machine: dict[str, Any] = field(default_factory=dict)  # none in evaluations older than the machine entry
    replayed: Replayed | None = None
    #: the digests of the implementations' source files that were timed
    #: (hlc.model.fingerprint.implementation_digests); none in older evaluations
    sources: dict[str, str] = field(default_factory=dict)
    #: the build's fitting samples the oracle timed again (none in replays and older evaluations)
    probes: tuple[Probed, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": FORMAT, "library": self.library, "created": self.created,
                                "settings": self.settings.to_json(), "machine": dict(self.machine),
                                "interfaces": {name: part.to_json() for name, part in self.interfaces.items()}}
        if self.replayed is not None:
            data["replayed"] = self.replayed.to_json()
        if self.sources:
            data["sources"] = dict(self.sources)
        if self.probes:
            data["probes"] = [probe.to_json() for probe in self.probes]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvaluationDocument:
        """The document of a JSON object of format 1 or 2 (its format already checked)."""
        version = data.get("format", FORMAT)
        settings = Settings.from_json(data if version == 1 else data["settings"])
        replayed = data.get("replayed")
        return cls(str(data["library"]), settings,
                   {str(name): InterfaceResult.from_json(part, version) for name, part in data["interfaces"].items()},
                   str(data.get("created") or ""), dict(data.get("machine") or {}),
                   Replayed.from_json(replayed) if replayed else None,
                   {str(k): str(v) for k, v in (data.get("sources") or {}).items()},
                   tuple(Probed.from_json(probe) for probe in data.get("probes") or ()))

    def save(self, path: Path | str) -> None:
        save_document(path, self.to_json())


def load(path: Path | str) -> EvaluationDocument:
    """The evaluation in ``path``; an :class:`ArtefactError` naming the file
    if it is missing, damaged, not an evaluation, or of an unknown format."""
    document = load_document(path, KIND, VERSIONS)
    if "interfaces" not in document or not ("params" in document or "settings" in document):
        # Models files share the format numbers: tell them apart by what they hold.
        what = " (it is a models file)" if "implementations" in document else ""
        raise ArtefactError(f"{path}: not an evaluation file of hlc{what}; `hlc evaluate BUILD` writes one")
    return parse_fields(path, KIND, lambda: EvaluationDocument.from_json(document))
