"""The numbers behind the report's figures, computed with the built module.

Predictions and decisions come from the module itself (``predict``,
``choose_<interface>_at``), not from a re-evaluation of the models, so the
report shows exactly what the dispatcher decides.  Nothing here draws: the
plots module turns these results into figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from hlc.artefacts.evaluation import EvaluationDocument
from hlc.evaluation.verdicts import turns_on_the_input
from hlc.language.expressions import evaluate
from hlc.reports.data import ImplementationInfo, InterfaceInfo, ParameterInfo

LOG_SPAN = 30.0  # a variable whose calibrated range spans more than this factor gets a log axis
SAMPLE_LIMIT = 3000  # samples per implementation drawn in the measured-vs-predicted plots
PARAMETER_VALUES = 400  # parameter values per curve at most


class ReportError(Exception):
    """Something the report cannot draw; its message becomes a note."""


# ---- axes and fixed values ----------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """One variable's values on a grid: cell centres and the edges between them."""

    name: str
    values: np.ndarray
    edges: np.ndarray
    log: bool
    integer: bool


def is_log(low: float, high: float) -> bool:
    return low > 0 and high / low > LOG_SPAN


def axis(info: InterfaceInfo, variable: str, cells: int) -> Axis:
    """``cells`` values over the calibrated domain of ``variable`` (each integer
    once when there are fewer integers than cells)."""
    if variable not in info.domain:
        raise ReportError(f"{variable} has no calibrated range (no model or sample records it)")
    low, high = (float(v) for v in info.domain[variable])
    integer = variable in info.integers
    log = is_log(low, high)
    if integer and high - low + 1 <= cells:
        values = np.arange(low, high + 1)
    elif log:
        values = np.geomspace(low, high, cells)
    else:
        values = np.linspace(low, high, cells)
    if integer:
        values = np.unique(np.round(values))
    return Axis(variable, values, _edges(values, log), log, integer)


def _edges(values: np.ndarray, log: bool) -> np.ndarray:
    if len(values) == 1:
        value = values[0]
        return np.array([value * 0.8, value * 1.25]) if log else np.array([value - 0.5, value + 0.5])
    scaled = np.log(values) if log else values.astype(float)
    middles = (scaled[:-1] + scaled[1:]) / 2
    edges = np.concatenate([[2 * scaled[0] - middles[0]], middles, [2 * scaled[-1] - middles[-1]]])
    return np.exp(edges) if log else edges


def middle(info: InterfaceInfo, variable: str) -> float:
    """The geometric middle of a variable's domain (arithmetic if it reaches 0),
    rounded for an integer variable: where the other variables of a map are held."""
    low, high = info.domain.get(variable, (1.0, 1.0))
    value = math.sqrt(low * high) if low > 0 else (low + high) / 2
    return float(round(value)) if variable in info.integers else float(value)


def fixed_values(info: InterfaceInfo, fixed: Mapping[str, float]) -> dict[str, float]:
    """Every variable of the interface: the given value, else its middle."""
    return {v: float(fixed[v]) if v in fixed else middle(info, v) for v in info.variables}


def along(info: InterfaceInfo, variable: str, fraction: float) -> float:
    """The value a fraction of the way along a variable's domain (log scale where the axis is)."""
    low, high = (float(v) for v in info.domain[variable])
    if is_log(low, high):
        value = math.exp(math.log(low) + fraction * (math.log(high) - math.log(low)))
    else:
        value = low + fraction * (high - low)
    return float(round(value)) if variable in info.integers else value


def with_ranks(variables: Mapping[str, float], ranks: int) -> dict[str, float]:
    return {**variables, "P": float(ranks), "logP": math.log2(ranks)}


def chooser(module: ModuleType, interface: str) -> Any:
    function = getattr(module, f"choose_{interface}_at", None)
    if function is None:
        raise ReportError(f"the module has no choose_{interface}_at")
    return function


# ---- measured against predicted -------------------------------------------------


@dataclass
class FitPoints:
    """One implementation's samples with the module's predictions (subsampled)."""

    measured: np.ndarray
    predicted: np.ndarray
    verify: np.ndarray  # bool
    variables: dict[str, np.ndarray]
    total: int  # samples before subsampling
    unusable: int  # samples whose prediction is not a positive finite number


def fit_points(module: ModuleType, info: InterfaceInfo, implementation: str, limit: int = SAMPLE_LIMIT) -> FitPoints:
    samples = [s for s in info.samples if s.implementation == implementation]
    if not samples:
        raise ReportError("no samples")
    total = len(samples)
    if total > limit:  # every verification sample, and a random subset of the fitting ones (fixed seed)
        verification = [s for s in samples if s.verify]
        fitting = [s for s in samples if not s.verify]
        keep = max(limit - len(verification), 0)
        chosen = np.random.default_rng(0).choice(len(fitting), size=min(keep, len(fitting)), replace=False)
        samples = verification + [fitting[i] for i in sorted(chosen)]
    predicted = np.array([_predict(module, implementation, s.environment) for s in samples])
    measured = np.array([float(s.seconds) for s in samples])
    usable = np.isfinite(predicted) & (predicted > 0) & np.isfinite(measured) & (measured > 0)
    if not usable.any():
        raise ReportError("the model predicts no positive finite time at any sample")
    names = [v for v in (*info.variables, "P") if all(v in s.variables for s in samples)]
    variables = {v: np.array([float(s.variables[v]) for s in samples])[usable] for v in names}
    return FitPoints(measured[usable], predicted[usable], np.array([s.verify for s in samples])[usable],
                     variables, total, int((~usable).sum()))


def _predict(module: ModuleType, implementation: str, values: Mapping[str, float]) -> float:
    try:
        value = float(module.predict(implementation, **values))
    except (TypeError, ValueError, ArithmeticError):
        return math.nan
    return value


# ---- region maps and strips ---------------------------------------------------------


@dataclass
class Overlay:
    """Evaluation points on a map: where the dispatcher was right and wrong."""

    x: np.ndarray
    y: np.ndarray
    right: np.ndarray  # bool
    #: bool: no alternative was within the tolerance on both inputs timed there
    #: (hlc.evaluation.verdicts.turns_on_the_input); False where one input was timed
    turns: np.ndarray | None = None


@dataclass
class RegionMap:
    """The implementation the dispatcher chooses in each cell of a grid over two variables."""

    interface: str
    x: Axis
    y: Axis
    ranks: int
    fixed: dict[str, float]  # the other variables
    chosen: np.ndarray  # (len(y), len(x)) indices into names; -1 where none applies
    names: list[str]
    shares: dict[str, float]  # fraction of the profiled cells, of the implementations that apply somewhere
    overlay: Overlay | None = None
    profiled: np.ndarray | None = None  # (len(y), len(x)): whether inputs can lie in the cell; None: all


def region_map(module: ModuleType, info: InterfaceInfo, x: str, y: str, fixed: Mapping[str, float], ranks: int,
               cells: tuple[int, int] = (120, 80)) -> RegionMap:
    choose = chooser(module, info.name)
    x_axis, y_axis = axis(info, x, cells[0]), axis(info, y, cells[1])
    index = {name: i for i, name in enumerate(info.names)}
    others = {k: v for k, v in fixed.items() if k not in (x, y)}
    chosen = np.full((len(y_axis.values), len(x_axis.values)), -1, dtype=int)
    applying: set[str] = set()
    for row, y_value in enumerate(y_axis.values):
        for column, x_value in enumerate(x_axis.values):
            choice = choose(**with_ranks({**others, x: float(x_value), y: float(y_value)}, ranks))
            chosen[row, column] = index.get(choice.implementation, -1)
            applying.update(name for name, seconds in choice.predicted.items() if math.isfinite(seconds))
    profiled = _profiled_cells(info, x_axis, y_axis, ranks)
    counted = chosen[profiled] if profiled is not None and profiled.any() else chosen
    return RegionMap(info.name, x_axis, y_axis, ranks, others, chosen, info.names,
                     _shares(counted, info.names, applying), profiled=profiled)


def _profiled_cells(info: InterfaceInfo, x: Axis, y: Axis, ranks: int) -> np.ndarray | None:
    """Which cells of a map lie where inputs can be, when one of its two
    variables follows the other in every sample (a matrix's cells, its rows
    squared): the band along that curve, the values between the profiled
    ones interpolated on the axes' scales.  The rest of such a map is no
    input at all.  None (every cell) where the two vary independently, or
    with too few samples at ``ranks`` to tell."""
    pairs = np.unique(np.array([(float(s.variables[x.name]), float(s.variables[y.name])) for s in info.samples
                                if ranks == s.P and x.name in s.variables and y.name in s.variables]), axis=0)
    if len(pairs) < 3:
        return None
    if len(np.unique(pairs[:, 0])) == len(pairs):  # y follows x
        return _band(pairs, x, y)
    if len(np.unique(pairs[:, 1])) == len(pairs):  # x follows y
        return _band(pairs[:, ::-1], y, x).T
    return None


def _band(pairs: np.ndarray, x: Axis, y: Axis) -> np.ndarray:
    """The cells of a map over ``x`` and ``y`` (rows y, columns x) that the
    curve through ``pairs`` (one y for each x, sorted by x) passes through."""
    def scaled(values: np.ndarray, log: bool) -> np.ndarray:
        return np.log(np.maximum(values, 1e-300)) if log else values

    at_x, at_y = scaled(pairs[:, 0], x.log), scaled(pairs[:, 1], y.log)
    x_edges, y_edges = scaled(x.edges, x.log), scaled(y.edges, y.log)
    covered = np.zeros((len(y.values), len(x.values)), dtype=bool)
    for column in range(len(x.values)):
        ends = np.clip(x_edges[column:column + 2], at_x[0], at_x[-1])
        inside = at_y[(at_x > ends[0]) & (at_x < ends[1])]
        through = np.concatenate([np.interp(ends, at_x, at_y), inside])
        covered[:, column] = (y_edges[1:] >= through.min()) & (y_edges[:-1] <= through.max())
    return covered


def _shares(chosen: np.ndarray, names: list[str], applying: set[str]) -> dict[str, float]:
    """The share of cells each implementation gets, for those that apply in
    some cell (a legend of implementations that cannot run at these ranks
    would only hide the ones that do); "" for the cells where none applies."""
    shares = {name: float((chosen == i).mean()) for i, name in enumerate(names)
              if name in applying or (chosen == i).any()}
    shares[""] = float((chosen < 0).mean())
    return shares


def overlay(evaluation: EvaluationDocument | None, interface: str, x: str, y: str | None,
            ranks: int) -> Overlay | None:
    """The evaluation's points at this rank count that give both variables."""
    part = evaluation.interfaces.get(interface) if evaluation is not None else None
    if part is None:
        return None
    xs, ys, right, turns = [], [], [], []
    for point in part.points:
        variables = point.variables
        if ranks != point.P or x not in variables:
            continue
        if y is not None and y not in variables:
            continue
        xs.append(float(variables[x]))
        ys.append(float(variables[y]) if y is not None else 0.5)  # a strip: its middle
        right.append(point.right)
        turns.append(bool(turns_on_the_input(point, evaluation.settings.tolerance)))
    if not xs:
        return None
    return Overlay(np.array(xs), np.array(ys), np.array(right, dtype=bool), np.array(turns, dtype=bool))


@dataclass
class Strip:
    """One variable: each implementation's predicted time, and the dispatcher's choice."""

    interface: str
    x: Axis
    ranks: int
    predicted: dict[str, np.ndarray]  # inf where the implementation does not apply
    chosen: np.ndarray  # indices into names; -1 where none applies
    names: list[str]
    shares: dict[str, float]
    overlay: Overlay | None = None


def strip(module: ModuleType, info: InterfaceInfo, variable: str, ranks: int, cells: int = 240) -> Strip:
    choose = chooser(module, info.name)
    x_axis = axis(info, variable, cells)
    index = {name: i for i, name in enumerate(info.names)}
    predicted = {name: np.full(len(x_axis.values), math.inf) for name in info.names}
    chosen = np.full(len(x_axis.values), -1, dtype=int)
    for column, value in enumerate(x_axis.values):
        choice = choose(**with_ranks({variable: float(value)}, ranks))
        chosen[column] = index.get(choice.implementation, -1)
        for name, seconds in choice.predicted.items():
            if name in predicted:
                predicted[name][column] = seconds
    applying = {name for name, seconds in predicted.items() if np.isfinite(seconds).any()}
    return Strip(info.name, x_axis, ranks, predicted, chosen, info.names, _shares(chosen, info.names, applying))


# ---- the model against a parameter ----------------------------------------------------


@dataclass
class Curve:
    label: str  # the point, e.g. "n=1024"
    predicted: np.ndarray
    chosen: int | None  # the value the dispatcher sets there; None where the implementation does not apply


@dataclass
class Sweep:
    implementation: str
    parameter: str
    values: np.ndarray
    ranks: int
    held: dict[str, float]  # variables held at every point
    curves: list[Curve] = field(default_factory=list)


def sweeps(module: ModuleType, info: InterfaceInfo, implementation: ImplementationInfo,
           constants: Mapping[str, Any], fixed: Mapping[str, float], observed: bool = True) -> list[Sweep]:
    """Predicted time against each parameter at three points along the first
    variable, the other parameters at the values the dispatcher sets there:
    with ``observed``, points of the implementation's samples; else (or
    without samples) the other variables held at ``fixed``."""
    choose = chooser(module, info.name)
    domain_ranks = implementation.entry.domain.get("P")
    ranks = int(domain_ranks[0]) if domain_ranks else info.ranks[0]
    points: list[dict[str, float]] = []
    first = info.variables[0] if info.variables else None
    if first is not None and first in info.domain:
        points = _observed_points(info, implementation.name, first, ranks) if observed else []
        if not points:
            for fraction in (0.15, 0.5, 0.85):
                point = {**fixed, first: along(info, first, fraction)}
                if point not in points:
                    points.append(point)
    else:
        points.append(dict(fixed))
    held = {k: v for k, v in points[0].items() if k != first and all(p.get(k) == v for p in points)}
    result = []
    environments = [with_ranks(point, ranks) for point in points]
    settings = [choose(**variables).settings.get(implementation.name) for variables in environments]
    for parameter in implementation.parameters:
        # The first point's values of the parameter, and every point's choice
        # among them: a choice between two plotted values is drawn too.
        values = _parameter_values(parameter, {**constants, **environments[0]})
        picked = [int(setting[parameter.name]) for setting in settings if setting and parameter.name in setting]
        values = np.unique(np.concatenate([values, np.array(picked, dtype=values.dtype)]))
        sweep = Sweep(implementation.name, parameter.name, values, ranks, held)
        for point, variables, setting in zip(points, environments, settings, strict=True):
            others = {p.name: (setting or {}).get(p.name, _low(p, {**constants, **variables}))
                      for p in implementation.parameters if p.name != parameter.name}
            low, high = _bounds(parameter, {**constants, **variables})  # this point's range of the parameter
            predicted = np.array([_predict(module, implementation.name,
                                           {**variables, **others, parameter.name: int(value)})
                                  if low <= value <= high else math.nan for value in values])
            label = ", ".join(f"{k}={_number(v)}" for k, v in point.items() if k not in held) or "at the fixed point"
            sweep.curves.append(Curve(label, predicted, setting.get(parameter.name) if setting else None))
        result.append(sweep)
    return result


def _observed_points(info: InterfaceInfo, implementation: str, first: str, ranks: int) -> list[dict[str, float]]:
    """The variables of three of the implementation's samples at ``ranks``,
    15%, 50% and 85% of the way along the first variable's domain: points
    where the variables occur together (a matrix's cells are its rows
    squared, and rows with the cells held make no matrix).  Empty without
    such samples."""
    observed = [s.variables for s in info.samples if s.implementation == implementation and ranks == s.P
                and all(v in s.variables for v in info.variables)]
    if not observed:
        return []
    low, high = (float(v) for v in info.domain[first])
    scale = math.log if is_log(low, high) else (lambda value: value)
    points: list[dict[str, float]] = []
    for fraction in (0.15, 0.5, 0.85):
        target = scale(along(info, first, fraction))
        nearest = min(observed, key=lambda variables: abs(scale(max(float(variables[first]), low)) - target))
        point = {v: float(nearest[v]) for v in info.variables}
        if point not in points:
            points.append(point)
    return points


def _bounds(parameter: ParameterInfo, environment: Mapping[str, Any]) -> tuple[int, int]:
    if parameter.range is not None:
        try:
            low = evaluate(parameter.range.low, environment)
            high = evaluate(parameter.range.high, environment)
            return math.ceil(low), math.floor(high)
        except Exception:  # a range that needs what we do not have: fall back to the profiled values
            pass
    if parameter.observed is None:
        raise ReportError(f"the range of {parameter.name} is unknown (no description, no samples)")
    return parameter.observed


def _low(parameter: ParameterInfo, environment: Mapping[str, Any]) -> int:
    return _bounds(parameter, environment)[0]


def _parameter_values(parameter: ParameterInfo, environment: Mapping[str, Any]) -> np.ndarray:
    low, high = _bounds(parameter, environment)
    if high < low:
        raise ReportError(f"the range of {parameter.name} is empty ({low} .. {high})")
    if high - low + 1 <= PARAMETER_VALUES:
        return np.arange(low, high + 1)
    if low > 0:
        return np.unique(np.round(np.geomspace(low, high, PARAMETER_VALUES))).astype(int)
    return np.unique(np.round(np.linspace(low, high, PARAMETER_VALUES))).astype(int)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"
