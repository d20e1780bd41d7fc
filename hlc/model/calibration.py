"""Samples → the models artefact: fit and verify every implementation.

Term values are computed here from each sample's variables and parameters,
not read from the samples: the samples record what was measured, the
description says what the model is, so changing a model's terms needs only
``hlc fit``, not a new profile.

Implementations are fitted in dependency order, so that a hybrid term calling
another implementation's model (thesis ch. 8) sees that model calibrated:
each model's fit, its searches and its bags are jobs that run side by side
in worker processes (hlc.model.workers) where the library is large enough,
a model's fit as soon as the models its terms call are done.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from hlc.artefacts.models import (
    Discovered,
    FitSettings,
    ImplementationModel,
    Models,
    TimeModel,
    is_product,
    load_if_exists,
)
from hlc.artefacts.samples import Sample, Samples, point_text
from hlc.calibrate.host import TOLERANCE as HOST_TOLERANCE
from hlc.language import ast
from hlc.language.expressions import EvaluationError, calls, evaluate, integer_bounds, unparse
from hlc.language.families import family_knots
from hlc.language.parse import parse_file
from hlc.model.deviation import RISK, fit_deviation
from hlc.model.discover import MOST_STEPS, SHORTLIST, SIZE_SPAN, FamilyCandidates, discover, family_factors
from hlc.model.fingerprint import fingerprint
from hlc.model.fit import CONSTANT, Fit, FitError, RankWarning, aliased_text, fit, mean_relative_error
from hlc.model.predict import ModelUnavailable, Predictor, term_columns
from hlc.model.render import c_source, python_source
from hlc.model.terms import model_terms
from hlc.model.workers import Job, Shared, run_jobs, worker_count

# Verification MRE above which a model is reported as inaccurate (thesis: 10%).
VERIFICATION_LIMIT = 1.10
#: A model with discovered terms is checked at this many points at most (_probes).
PROBES = 2000
#: The settings of an implementation's parameters probed at one site at most:
#: a parameter range longer than its share of them (all for one parameter,
#: the square root each for two) is probed at that many values spread
#: evenly over it, both ends included, rather than at each.  The thinning to
#: PROBES keeps a few settings a site either way, and a chunk size in
#: 256 .. 65536 at 260 sites made 17 million settings, 13 s of a 17 s fit.
PROBE_VALUES = 256
#: The model kept is the mean of its search on every sample and of BAGS
#: more, each on BAG_SHARE of the points drawn at random (subagging,
#: Breiman 1996; Bühlmann and Yu 2002): a search that adds terms one at a
#: time turns on a few samples where the costs change, and builds of the
#: same host found different terms from samples alike, each choosing wrong
#: where its own terms missed (:func:`_bagged`).
BAGS = 5
BAG_SHARE = 0.8
#: A bag's search cross-validates this many candidates at each step, and
#: starts from as many first terms (hlc.model.discover.SHORTLIST, which the
#: search on every sample keeps).  The bags make the mean model robust by
#: the points they leave out, not by how widely each searches: refitted
#: with 1, 2, 3, 4 and 8, seven stored sort builds of four processors
#: (tests/data and a Zen 4 build), replayed against their two or three
#: exhaustive evaluations each, chose right at 96.8, 96.8, 96.8, 96.8 and
#: 96.7% on average (expected penalty 0.60, 0.50, 0.56, 0.58, 0.64%;
#: optimal digit width 93.0-93.4%), and the final fit of a Zen 4 build's
#: samples took 2.1-2.3 s with 2 where it took 2.8-4.1 s with 8.
BAG_SHORTLIST = 2
#: ... where the samples hold at least this many points (fewer leave the bags too few to search).
BAG_POINTS = 10
#: A search whose model strays further than this factor from the median of
#: the searches' predictions somewhere is left out of the mean (_agreeing).
BAG_SPREAD = 3.0
#: Between the measured sites, a model is also checked on a lattice over the
#: calibrated domain (:func:`_lattice`): every value of a short integer
#: variable, and a size-like one every LATTICE_STEP octaves.  The evaluation
#: and the user call anywhere in it: a counting sort's model, fitted on 24
#: samples, predicted -1.8 us at 13,193 keys of 12 bits, between the sites
#: (widths 10 and 14 there), and was passed over where it was twice as fast
#: as the sort chosen.
LATTICE_STEP = 0.25
#: A lattice of more points than this is thinned, each variable alike.
LATTICE_POINTS = 4000
#: Samples taken while the host meter read a slow spell are left out when
#: they ran slower, by their median, than this share above what the other
#: samples' model predicts for them.  On a Zen 4 host whose spells were
#: 1.5-1.7 times its usual pace they ran 1.28-1.46 times their prediction;
#: on an Intel host whose meter read 1.2-1.4 the one-rank sorts' ran
#: 1.01-1.05 times it, and leaving them out only took samples from the fit.
SLOWED = 0.1
#: The host's usual pace is the median of the readings within its
#: tolerance of this quantile of them: of the pace the host keeps when no
#: spell is on.  Not the median of all readings: a host can run slow most
#: of the time, and on a Zen 4 host whose readings lay at 1.01-1.03 (first
#: quarter) and 1.5-1.7 (the rest) that median marked none of the stencil's
#: samples as disturbed, and the models' verification MREs were 1.20-1.24.
FAST_QUANTILE = 0.1
#: Fitting a model whose terms are searched for (hlc.model.discover) costs
#: about this many times a fit of known terms, per sample and term.
SEARCH_COST = 10.0
#: A library's fits run side by side in worker processes from this cost on
#: (_fit_cost, summed over its models): below, the passing of samples and
#: models to the workers costs more than it saves.  An adaptive sort build's
#: rounds refit its models' coefficients at a cost of 12,000-13,000, in
#: 0.32-0.34 s in one process and 0.19-0.21 s beside a worker (the check
#: that each model predicts a positive time everywhere is most of it); the
#: runtime library's, at 2,300, took 19 ms alone and 17 ms beside one.
FIT_SIDE_BY_SIDE = 2_000.0
#: Samples taken in spells are kept, scaled back, when fewer than this many
#: others per written term and family would be left to fit and discover from.
STEADY_PER_TERM = 3
#: A parameterized implementation's sample taken in a spell is kept, scaled
#: back, where no steady sample of its rank count lies within this many
#: octaves of it in every variable and parameter (:func:`_alone`).
NEAR_STEADY = 0.5


def _environment(sample: Sample) -> dict[str, Any]:
    return sample.environment


def _callees(library: ast.Library) -> dict[str, set[str]]:
    """Each implementation's name → the implementations of the library whose models its terms call."""
    names = {i.name for interface in library.interfaces for i in interface.implementations}
    found = {}
    for interface in library.interfaces:
        for implementation in interface.implementations:
            expressions = [let.value for let in implementation.lets]
            for model in implementation.models:
                expressions += list(model.terms) if model.fitted else [model.body]
            found[implementation.name] = {c.function for e in expressions for c in calls(e) if c.function in names}
    return found


def _order(library: ast.Library,
           callees: Mapping[str, set[str]] | None = None) -> list[tuple[ast.Interface, ast.Implementation]]:
    """Implementations, each after those whose models its terms call
    (``callees``: :func:`_callees`, found when not given)."""
    pairs = {i.name: (interface, i) for interface in library.interfaces for i in interface.implementations}
    callees = _callees(library) if callees is None else callees
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        for callee in sorted(callees[name]):
            visit(callee)
        ordered.append(name)

    for name in pairs:
        visit(name)
    return [pairs[name] for name in ordered]


def fit_workers_wanted(library: ast.Library) -> int:
    """The worker processes that fitting ``library`` can keep busy: one
    fewer than its widest wave, at most as many as may run."""
    return min(max((len(wave) for wave in _waves(library)), default=1) - 1, worker_count())


def _waves(library: ast.Library,
           callees: Mapping[str, set[str]] | None = None) -> list[list[tuple[ast.Interface, ast.Implementation]]]:
    """The implementations in dependency order (``_order``), in waves: each
    after the waves that hold the models its terms call.  The models of one
    wave can be fitted at once, beside one another: the widest says how
    many workers a fit can keep busy (:func:`fit_workers_wanted`)."""
    callees = _callees(library) if callees is None else callees
    wave_of: dict[str, int] = {}
    waves: list[list[tuple[ast.Interface, ast.Implementation]]] = []
    for interface, implementation in _order(library, callees):
        wave = 1 + max((wave_of[c] for c in callees[implementation.name]), default=-1)
        wave_of[implementation.name] = wave
        if wave == len(waves):
            waves.append([])
        waves[wave].append((interface, implementation))
    return waves


@dataclass(frozen=True)
class HostTolerance:
    """How far above 1 the host meter may read during a sample before the
    sample is disturbed, for each rank count profiled (``by_ranks``; else
    ``default``): the meter's own tolerance (``meter``) above the usual
    pace of that rank count's readings.  A sample's reading is the slowest
    rank's, and with many ranks one of them is slower than its own best
    throughout, not in a spell: on a 16-core virtual machine the readings
    of nine-rank samples lay at 1.4-2.4 (median 1.88) where the one-rank
    ones' lay at 1.01-1.8 (median 1.08).  Measured from the one-rank pace,
    every nine-rank sample was disturbed."""

    default: float = HOST_TOLERANCE
    by_ranks: Mapping[int, float] = field(default_factory=dict)
    meter: float = HOST_TOLERANCE

    def of(self, sample: Sample) -> float:
        return self.at(sample.P)

    def at(self, ranks: int) -> float:
        return self.by_ranks.get(ranks, self.default)

    def usual(self, sample: Sample) -> float:
        """The usual reading at the sample's rank count (1: the meter's best)."""
        return (1 + self.of(sample)) / (1 + self.meter)


def is_disturbed(sample: Sample, tolerance: HostTolerance) -> bool:
    """Whether the host ran slower than its tolerance during the sample's
    timings, after the profiler's waits and retakes (the sample's ``host``),
    or the timings never settled (``noisy``: after all retakes, no median
    that another timing confirms, or a timing far below it)."""
    return (sample.host is not None and sample.host > 1 + tolerance.of(sample)) or bool(sample.noisy)


def fitted_seconds(entry: TimeModel, sample: Sample, tolerance: HostTolerance) -> float | None:
    """The sample's seconds as the fit of ``entry`` took them: a fitting
    sample of a point whose settings the fit leveled (:func:`_leveled`)
    divided by its point's factor, and taken as a steady one; else, as
    ``_steady`` took them, None where it was left out, taken in a slow
    spell; divided by the recorded ``slowdown`` where it was kept scaled
    back (where both, the fitting samples were scaled and the verification
    ones left out, and where the fit kept only some, ``scaled_alone``,
    those); else as measured."""
    if entry.leveled and not sample.verify and point_key(sample) in entry.leveled:
        return sample.seconds / entry.leveled[point_key(sample)]
    if not (entry.slowdown or entry.disturbed_samples) or not is_disturbed(sample, tolerance):
        return sample.seconds
    if entry.scaled_alone:
        alone = entry.slowdown and not sample.verify and sample_key(sample) in entry.scaled_alone
        return sample.seconds / entry.slowdown if alone else None
    if entry.slowdown and not (sample.verify and entry.disturbed_samples):
        return sample.seconds / entry.slowdown
    return None


@dataclass(frozen=True)
class Steadiness:
    """The samples a model is fitted and verified on, and what was done with
    those taken while the host meter read a slow spell (``disturbed``)."""

    fitting: list[Sample]
    verification: list[Sample]
    left_out: int = 0  # disturbed samples left out
    kept: int = 0  # disturbed samples kept
    why: str = ""  # why they were kept
    scaled: int = 0  # disturbed samples whose fitting ones are kept, their times divided by ``slowdown``
    slowdown: float = 1.0  # how much slower the disturbed samples ran than the others' model predicts
    alone: tuple[str, ...] = ()  # where only some are kept scaled: those (sample_key)


def _steady(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
            fitting: list[Sample], verification: list[Sample], tolerance: HostTolerance,
            relative: bool, slowdown: float | None = None) -> Steadiness:
    """The fitting and verification samples without those taken while the
    host ran slow or never settled, when those ran slower than the others
    (``SLOWED``).  Such a sample is off the model by the spell's factor
    (1.2-4x on two ranks sharing two busy cores), and a few of them pull a
    relative-error fit and its verification alike.  But the meter times a
    yardstick, not the task: a spell it reads need not slow a task, and
    then the samples are good ones.  Where most samples were taken in
    spells, or the others are too few to find the costs from
    (``STEADY_PER_TERM``), leaving them out loses the domain: the fitting
    ones are kept, their times divided by how much slower they ran, and
    the verdict is the others'.  Only where the others are too few to tell
    how much slower (or tell more than the meter read, :func:`_read`) are
    all kept as they are.  On 21 sort builds of a Zen 4
    host slow three quarters of the time, replayed against its exhaustive
    evaluations, the one-rank choices were right at 92.0% and 91.8%, the
    two-rank ones at 89.7%: kept as they were, 87.3%, 88.7% and 88.8%;
    left out, 88.3%, 88.6% and 86.4%.  Scaled back wherever a spell hit,
    the samples of quieter hosts lost up to 4.5 points: a spell slows
    different calls by different factors.  Where the others are left out,
    those with no steady sample near are kept, scaled back (:func:`_alone`)."""
    disturbed = [s for s in fitting + verification if is_disturbed(s, tolerance)]
    steady = [s for s in fitting if not is_disturbed(s, tolerance)]
    if not disturbed:
        return Steadiness(fitting, verification)
    few = model.fitted and len(steady) < STEADY_PER_TERM * (written_terms(model) + len(model.families))
    if slowdown is None:
        slowdown = math.inf if few and len(steady) <= written_terms(model) else \
            _slowdown(predictor, implementation, model, steady, disturbed, relative)
    if slowdown > _read(disturbed, tolerance) * (1 + tolerance.meter):
        slowdown = math.inf  # more than the meter read: the others' model is off there, not the spell
    if few and not math.isfinite(slowdown):
        return Steadiness(fitting, verification, kept=len(disturbed), why="too few others were left to fit")
    if slowdown <= 1 + SLOWED:
        return Steadiness(fitting, verification, kept=len(disturbed),
                          why=f"they ran {slowdown:.2f} times as long as the others' model predicts")
    calm = [s for s in verification if not is_disturbed(s, tolerance)]

    def scaled(samples: list[Sample]) -> list[Sample]:
        return [replace(s, seconds=s.seconds / slowdown) if is_disturbed(s, tolerance) else s for s in samples]

    if (few or 2 * len(disturbed) > len(fitting + verification)) and math.isfinite(slowdown):
        why = "too few others were left to fit" if few else "most were and the others cover too little"
        if calm or not verification:
            return Steadiness(scaled(fitting), calm, left_out=len(verification) - len(calm), scaled=len(disturbed),
                              slowdown=slowdown, why=why)
        return Steadiness(scaled(fitting), scaled(verification), scaled=len(disturbed), slowdown=slowdown,
                          why=why + " (the verification ones too: no other was left to verify with)")
    alone = _alone([s for s in fitting if is_disturbed(s, tolerance)], steady) if math.isfinite(slowdown) else []
    if alone:
        return Steadiness(steady + scaled(alone), calm, left_out=len(disturbed) - len(alone), scaled=len(alone),
                          slowdown=slowdown, why="no steady sample lies near them",
                          alone=tuple(map(sample_key, alone)))
    return Steadiness(steady, calm, left_out=len(disturbed))


def sample_key(sample: Sample) -> str:
    """A fitting sample's name among its implementation's: its rank count,
    point and setting (``2:17:bpd=8``)."""
    setting = ",".join(f"{name}={value}" for name, value in sorted(sample.parameters.items()))
    return f"{sample.P}:{sample.index}:{setting}"


def point_key(sample: Sample) -> str:
    """A fitting sample's point among its implementation's: its rank count
    and point (``2:17``), which the settings timed side by side there share."""
    return f"{sample.P}:{sample.index}"


def _leveled(predictor: Predictor, implementation: ast.Implementation, entry: TimeModel,
             fitting: list[Sample], tolerance: HostTolerance) -> dict[str, float]:
    """The points of a parameterized implementation whose settings were
    timed side by side while the host meter read a slow spell, each with
    the factor its samples are divided by: the median, over them, of their
    times over what ``entry`` predicts, where that shift exceeds how far
    the steady samples lie from the model (the median of their misses),
    else 1.  A spell slows the settings of one point alike, as they are
    timed in turns, and different points by different factors: the
    settings' ratios, by which the parameter is chosen, hold, and the
    point's level is the spell's.  One slowdown for every sample of a
    spell left the radix sort of a busy Zen 4 host far off at the largest
    sizes, each point taken in a spell of its own, and its digit widths
    there wrong by up to 2.4 times.  A shift within the steady samples'
    misses is as likely a cost the model misses, and such a point keeps
    its level.  Either way the refit takes these samples as steady ones."""
    if not implementation.parameters or entry.status != "fitted":
        return {}
    judge = Predictor(predictor.library, {**predictor.calibration, implementation.name: entry}, predictor.used)

    # log of each sample's time over its prediction, NaN where it predicts nothing
    predicted = judge.evaluate_each(implementation.name, [_environment(s) for s in fitting])
    usable = (predicted > 0) & np.isfinite(predicted)
    miss = np.full(len(fitting), np.nan)
    miss[usable] = np.log(np.array([s.seconds for s in fitting])[usable] / predicted[usable])
    disturbed = np.array([is_disturbed(s, tolerance) for s in fitting], dtype=bool)
    steady = miss[~disturbed & usable]
    usual = float(np.median(np.abs(steady))) if steady.size else 0.0
    points: dict[str, list[int]] = {}
    for position, sample in enumerate(fitting):
        points.setdefault(point_key(sample), []).append(position)
    factors = {}
    for key, taken in points.items():
        settings = {tuple(sorted(fitting[i].parameters.items())) for i in taken}
        if len(settings) < 2 or not disturbed[taken].any():
            continue
        shift = miss[taken][usable[taken]]
        if shift.size:
            middle = float(np.median(shift))
            factors[key] = math.exp(middle) if abs(middle) > usual else 1.0
    return factors


def _alone(disturbed: list[Sample], steady: list[Sample]) -> list[Sample]:
    """The ``disturbed`` samples of a parameterized implementation with no
    ``steady`` one of their rank count within NEAR_STEADY octaves in every
    variable and parameter: settings that the profile measured near their
    point only in spells.  A parameter is chosen among the settings timed
    side by side at each point, and the spells come and go with the memory
    traffic of other tenants, falling on the large sizes most, where a
    profile spends its seconds on few points: on a Zen 4 host whose meter
    read a spell at half the samples, one build took its nine radix sorts
    of two to three million keys all in spells, and most of the wide
    digits' at a quarter to two million keys.  Left out, they took with
    them the only measure of what wide digits cost there, and the fit chose
    passes of 12 to 16 bits where passes of 8 or 9 ran 1.5 to 2 times
    faster.  An implementation without parameters is measured once per
    point, so that none of its samples has a steady one that near: its
    samples of spells are left out, as :func:`_steady` says."""
    if not disturbed or not disturbed[0].parameters:
        return []

    def places(samples: list[Sample]) -> np.ndarray:
        return np.array([[math.log2(max(float(value), 1.0)) for _, value in
                          sorted({**{k: v for k, v in s.variables.items() if k not in ("P", "logP")},
                                  **s.parameters}.items())] for s in samples])

    alone = []
    for ranks in {s.P for s in disturbed}:
        theirs = [s for s in disturbed if ranks == s.P]
        near = places([s for s in steady if ranks == s.P])
        if near.size == 0:
            alone += theirs
            continue
        distances = np.abs(places(theirs)[:, None, :] - near[None, :, :]).max(axis=2)
        alone += [s for s, row in zip(theirs, distances, strict=True) if row.min() > NEAR_STEADY]
    return alone


def _read(disturbed: list[Sample], tolerance: HostTolerance) -> float:
    """The most the host meter read slow at the ``disturbed`` samples: how
    much slower they can credibly have run.  A task in a spell slows about
    as the yardstick beside it does; a larger factor comes from the model
    the others fit, which a few of them fit closely and which may miss
    the disturbed ones' points by far more (a counting sort of 92,681 keys
    at a meter reading of 1.73, put at 3.94 times its pace by a fit of six
    terms to eight samples, was divided by that, and its fit dropped the
    cost per key).  Unbounded where a sample never settled without a
    spell the meter read.  A reading counts from its rank count's usual
    pace."""
    readings = [s.host / tolerance.usual(s) if s.host is not None and s.host > 1 + tolerance.of(s) else math.inf
                for s in disturbed]
    return max(readings, default=math.inf)


def _slowdown(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
              steady: list[Sample], disturbed: list[Sample], relative: bool) -> float:
    """How much slower the ``disturbed`` samples ran than the ``steady``
    ones: the median of their times over the predictions of the written
    terms fitted to the steady samples (a factored model's own
    predictions), each divided by the steady samples' median of that ratio
    at its rank count.  Where the steady samples are of one rank count and
    the disturbed ones of another, the ratio would be the model's miss
    across rank counts, not the spell's: disturbed samples at a rank count
    without steady ones say nothing of it."""
    def ratios(samples: list[Sample], predict: Callable[[list[Sample]], np.ndarray]) -> np.ndarray:
        predicted = predict(samples)
        times = np.array([s.seconds for s in samples], dtype=float)
        usable = predicted > 0
        return times[usable] / predicted[usable]

    if model.fitted:
        columns, times = _columns(predictor, implementation, list(model.terms), steady)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RankWarning)
                result = fit(columns, times, relative=relative, constant=model.constant, prune=False)
        except FitError:
            return math.inf

        def predict(samples: list[Sample]) -> np.ndarray:
            return result.predict(_columns(predictor, implementation, list(model.terms), samples)[0])
    else:
        def predict(samples: list[Sample]) -> np.ndarray:
            return np.array([predictor.evaluate(implementation.name, _environment(s)) for s in samples])
    relative_to_own = []
    for ranks in sorted({s.P for s in disturbed}):
        own = ratios([s for s in steady if ranks == s.P], predict)
        theirs = ratios([s for s in disturbed if ranks == s.P], predict)
        if own.size and theirs.size:
            relative_to_own.append(theirs / np.median(own))
    if not relative_to_own:
        return math.inf
    return float(np.median(np.concatenate(relative_to_own)))


def _by_ranks(result: Fit, columns: dict[str, np.ndarray], times: np.ndarray,
              samples: list[Sample]) -> dict[str, float] | None:
    """Verification MRE per rank count, when the samples span several: two
    ranks on a shared machine are much noisier than one."""
    ranks = np.array([s.variables.get("P", 1) for s in samples])
    sizes = sorted(set(ranks.tolist()))
    if len(sizes) < 2:
        return None
    return {str(size): result.mre_on({k: v[ranks == size] for k, v in columns.items()}, times[ranks == size])
            for size in sizes}


def by_ranks_text(errors: Mapping[str, float]) -> str:
    """``P=1 1.032, P=2 1.083``: a model's verification MRE per rank count."""
    return ", ".join(f"P={size} {error:.3f}" for size, error in errors.items())


def _domain(samples: list[Sample]) -> dict[str, list[float]]:
    """The calibrated range of each variable: dispatch warns outside it."""
    domain: dict[str, list[float]] = {}
    for sample in samples:
        for name, value in sample.variables.items():
            low, high = domain.get(name, [value, value])
            domain[name] = [min(low, value), max(high, value)]
    return domain


def _columns(predictor: Predictor, implementation: ast.Implementation, terms: list[ast.Expression],
             samples: list[Sample]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    columns = term_columns(predictor, implementation, terms, [_environment(s) for s in samples])
    return columns, np.array([s.seconds for s in samples], dtype=float)


def _families(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
              samples: list[Sample]) -> list[FamilyCandidates]:
    """The model's families, valued on the samples."""
    families = []
    for term in model.families:
        expressions = [family.expression for family in term.families] + ([term.base] if term.base is not None else [])
        values, _ = _columns(predictor, implementation, expressions, samples)
        base = unparse(term.base) if term.base is not None else CONSTANT
        base_values = values[base] if term.base is not None else np.ones(len(samples))
        factors, variables = [], []
        for family in term.families:
            variable = unparse(family.expression)
            knots = family_knots(family, predictor.constants) or None
            factors.append(tuple(family_factors(family.kind, variable, values[variable], knots)))
            variables.append(values[variable])
        families.append(FamilyCandidates(base, base_values, tuple(factors), tuple(variables)))
    return families


def _discovered(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
                columns: dict[str, np.ndarray], times: np.ndarray, samples: list[Sample],
                relative: bool, automatic: bool, shortlist: int | None = None) -> tuple[Discovered, ...]:
    """The terms discovery adds to the written ones (hlc.model.discover):
    members of the model's families, and with
    ``automatic`` steps and hinges of the interface's variables, the
    implementation's parameters and its integer-valued helpers (a radix
    sort's digit width, which its parameter only bounds)."""
    names = [name for name in samples[0].variables if name not in ("P", "logP")] if samples else []
    names += [p.name for p in implementation.parameters]
    variables = {name: np.array([_environment(s)[name] for s in samples], dtype=float) for name in names}
    helpers = [predictor.helpers(implementation, {**predictor.constants, **_environment(s)}) for s in samples]
    for let in implementation.lets:
        values = np.array([float(h[let.name]) for h in helpers])
        if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
            variables[let.name] = values
    written = ({CONSTANT: np.ones_like(times)} if model.constant else {}) | columns
    # each sample's point and setting: the choices a parameterized model's terms are judged by
    choices = [((s.P, tuple(sorted(s.variables.items()))), tuple(sorted(s.parameters.items()))) for s in samples]
    found = discover(written, times, variables, integers=[p.name for p in implementation.parameters],
                     relative=relative, families=_families(predictor, implementation, model, samples),
                     automatic=automatic, shortlist=shortlist, choices=choices if implementation.parameters else None)
    return tuple(found.terms)


@dataclass
class _Search:
    """The terms a search kept on some samples, and their fit."""

    discovered: tuple[Discovered, ...]
    terms: list[ast.Expression]
    result: Fit
    columns: dict[str, np.ndarray]
    times: np.ndarray
    notes: list[str]  # the fit's warnings and what the positivity check left out


@dataclass
class _Fitted:
    """An implementation's model as :func:`_fit_job` fitted it, with the
    search that gave its terms and the samples that search saw (None for a
    model with no terms to fit).  ``pending``: in a build's final fit, the
    judged model whose search on every sample is still to run."""

    entry: TimeModel
    kept: _Search | None = None
    samples: list[Sample] | None = None
    pending: _Pending | None = None
    steady: np.ndarray | None = None  # per sample, whether the host ran steady while it was taken


@dataclass
class _Pending:
    """A judged model (:func:`_judge`) whose search on every sample runs as
    a job of its own, with what its model records besides."""

    judged: _Judged
    leveled: dict[str, float]
    leveled_text: str | None
    domain: dict[str, list[float]]

    def done(self, model: ast.CostModel, kept: _Search | None, relative: bool) -> _Fitted:
        """The model kept once the search on every sample gave ``kept``
        (None: the search failed, and the judged model is kept)."""
        fitted = self.judged.kept(model, kept, relative)
        entry = fitted.entry
        if self.leveled:
            entry = replace(entry, leveled=self.leveled, warnings=(*entry.warnings, self.leveled_text))
        fitted.entry = replace(entry, domain=self.domain)
        return fitted


def _search_and_fit(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
                    samples: list[Sample], relative: bool, confidence: float, discovering: bool,
                    discovered: tuple[Discovered, ...] | None, shortlist: int | None,
                    sites: list[dict[str, float]]) -> _Search:
    """Search the terms on ``samples`` (unless ``discovered`` gives them),
    fit them, and leave out those that predict no positive time somewhere."""
    columns, times = _columns(predictor, implementation, list(model.terms), samples)
    if discovered is None:
        discovered = (_discovered(predictor, implementation, model, columns, times, samples, relative,
                                  discovering, shortlist) if discovering or model.families else ())
    terms = model_terms(model, discovered)
    columns, times = _columns(predictor, implementation, terms, samples)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RankWarning)
        result = fit(columns, times, relative=relative, confidence=confidence, constant=model.constant)
    discovered, result, left_out = _positive_everywhere(predictor, implementation, model, discovered, result,
                                                        samples, sites, relative, confidence)
    if left_out:
        terms = model_terms(model, discovered)
        columns, times = _columns(predictor, implementation, terms, samples)
    notes = [aliased_text(term, others) for term, others in result.aliases.items()] + [str(w.message) for w in caught]
    return _Search(discovered, terms, result, columns, times, notes + left_out)


def _point_of(sample: Sample) -> tuple[bool, int, int]:
    """The point a sample was taken at, among all of an implementation's
    (a verification point's index counts the draws, a fitting one's the nest)."""
    return sample.verify, sample.P, sample.index


def _bag_points(samples: list[Sample], bag: int) -> list[Sample]:
    """The samples of BAG_SHARE of the points of ``samples``, drawn at random for bag number ``bag``."""
    points = sorted({_point_of(s) for s in samples})
    drawn = np.random.default_rng(bag).choice(len(points), size=round(BAG_SHARE * len(points)), replace=False)
    chosen = {points[i] for i in drawn}
    return [s for s in samples if _point_of(s) in chosen]


def _bagged(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
            fitted: _Fitted, bags: list[_Search | None], relative: bool, confidence: float,
            sites: list[dict[str, float]]) -> TimeModel:
    """The model of ``fitted`` with the mean of its search and of the
    searches of its ``bags`` (those that agree: :func:`_agreeing`) for its
    terms: terms found by any, each weighted by the mean of its
    coefficients (none where a search did not keep it).  Still a sum of
    terms; its covariance the mean of theirs.

    On 13 default sort builds of a busy Zen 4 host, replayed against five
    exhaustive evaluations, the one-rank choices with five bags were right
    0.4 points more often (SE 0.4), their expected penalty 1.13% -> 0.81%
    (SE 0.17), lower in 9 builds and higher in 4, and the worst choice's
    penalty 61% -> 46% (the mean over builds): the builds whose search had
    kept a term that missed wide digits at 2^17 keys, or the table of a
    counting sort of 2^21 counters, chose as the others did (with three
    bags, alike: 0.6 points, 0.76%).  The stored builds of three other
    processors (tests/data) chose as well or better: a Zen 5's 98.5% ->
    99.0% right, its worst penalty 12.9% -> 9.1%."""
    full, samples = fitted.kept, fitted.samples
    assert full is not None and samples is not None
    searches = _agreeing(predictor, implementation, [full, *(bag for bag in bags if bag is not None)], sites)
    if searches == [full]:
        return fitted.entry
    discovered = tuple(dict.fromkeys(term for search in searches for term in search.discovered))
    terms = model_terms(model, discovered)
    columns, times = _columns(predictor, implementation, terms, samples)
    texts = _texts_of(model, discovered)
    coefficients = {}
    for text in texts:
        weight = sum(search.result.coefficients.get(text, 0.0) for search in searches) / len(searches)
        if weight != 0.0:
            coefficients[text] = weight
    covariance = {a: {b: sum(search.result.covariance.get(a, {}).get(b, 0.0) for search in searches)
                      / len(searches) for b in coefficients} for a in coefficients}
    quantile = full.result.quantile
    predicted = sum((weight * (columns[text] if text != CONSTANT else np.ones_like(times))
                     for text, weight in coefficients.items()), np.zeros_like(times))
    result = Fit(terms=tuple(texts), coefficients=coefficients,
                 half_widths={text: float(quantile * math.sqrt(max(covariance[text][text], 0.0)))
                              for text in coefficients},
                 dropped=[text for text in texts if text not in coefficients], relative=relative,
                 confidence=confidence, samples=int(times.size), residuals=times - predicted, predicted=predicted,
                 times=times, weights=times / times.mean() if relative else np.ones_like(times),
                 covariance=covariance, quantile=quantile, aliases=dict(full.result.aliases))
    mean = _Search(discovered, terms, result, columns, times, full.notes)
    return replace(fitted.entry, **_kept_fields(mean, relative, fitted.steady), bags=len(searches) - 1)


def _agreeing(predictor: Predictor, implementation: ast.Implementation, searches: list[_Search],
              sites: list[dict[str, float]]) -> list[_Search]:
    """The ``searches`` whose models predict a positive time everywhere the
    dispatcher may be asked (_probes, _lattice: the first search, on every
    sample, was fitted so; the others are not checked as they are fitted),
    within a factor BAG_SPREAD of the median of those models' predictions
    (the first alone where none is).  A search on
    part of the points may take a term that the points left out would
    have refused, and extrapolate it far: of six counting sort models, two
    put a cost per counter on a step at 2^20 keys, and predicted 71 and 82
    ms where the others said 1.8 to 2.1 (and the sort took 2.8).  The mean
    of the six chose radix sorts at 3 times the counting sort's time."""
    probes = _probes_everywhere(predictor, implementation, sites)
    if not probes:
        return searches[:1]
    predicted = []
    for search in searches:
        try:
            predicted.append(search.result.predict(term_columns(predictor, implementation, search.terms, probes)))
        except (EvaluationError, ModelUnavailable, ArithmeticError, ValueError):
            return searches[:1]
    positive = [i for i, row in enumerate(predicted) if bool(np.all(row > 0))]
    if not positive:
        return searches[:1]
    logs = np.log(np.array([predicted[i] for i in positive]))
    median = np.median(logs, axis=0)
    kept = [searches[i] for i, row in zip(positive, logs, strict=True)
            if float(np.max(np.abs(row - median))) <= math.log(BAG_SPREAD)]
    return kept or searches[:1]


@dataclass
class _Judged:
    """An implementation's model as far as the fitting samples give it: the
    search on them, judged on the verification samples, with what the
    model kept records of the samples.  :meth:`kept` makes the model of a
    search on every sample, once that has run (a job of its own,
    :func:`_search_job`)."""

    steadiness: Steadiness
    counts: dict[str, int]
    pooled: bool
    judged: _Search
    held_mre: float | None
    by_ranks: dict[str, float]
    tolerance: HostTolerance = field(default_factory=HostTolerance)

    @property
    def everything(self) -> list[Sample]:
        """The samples a search on every sample sees."""
        return self.steadiness.fitting + self.steadiness.verification

    @property
    def searched_again(self) -> bool:
        """Whether a search on every sample would see more than the judged one did."""
        return bool(self.steadiness.verification)

    def kept(self, model: ast.CostModel, kept: _Search | None, relative: bool) -> _Fitted:
        """The model of search ``kept`` on every sample, or of the judged
        search where ``kept`` is None."""
        steadiness, held_mre = self.steadiness, self.held_mre
        fitting, verification = steadiness.fitting, steadiness.verification
        search, samples = (self.judged, fitting) if kept is None else (kept, self.everything)
        notes = list(search.notes)
        if steadiness.kept:
            notes.append(f"{steadiness.kept} of {len(fitting + verification)} samples were taken while the host "
                         f"meter read a slow spell or never settled: kept, as {steadiness.why}")
        if steadiness.alone:
            notes.append(f"{steadiness.scaled} of the {steadiness.scaled + steadiness.left_out} samples taken while "
                         f"the host meter read a slow spell or never settled had no steady one within "
                         f"{NEAR_STEADY:g} octaves: kept, their times divided by {steadiness.slowdown:.2f} (how "
                         f"much longer the spells' samples ran than the others' model predicts); the others left out")
        elif steadiness.scaled:
            notes.append(f"{steadiness.scaled} of {len(fitting + verification) + steadiness.left_out} samples were "
                         f"taken while the host meter read a slow spell or never settled, and ran "
                         f"{steadiness.slowdown:.2f} times as long as the others' model predicts: kept, as "
                         f"{steadiness.why}, their times divided by that")
        if verification:
            if held_mre is not None and held_mre > VERIFICATION_LIMIT:
                notes.append(_inaccurate_text(held_mre, steadiness))
        elif self.pooled:
            notes.append(f"too few fitting samples for {written_terms(model)} terms: fitted on the "
                         f"verification samples too ({len(fitting)} in all), and not verified")
        else:
            notes.append("no verification samples")
        alone = set(steadiness.alone)  # measured only in spells: the only samples where they lie
        steady = np.array([not is_disturbed(s, self.tolerance) or sample_key(s) in alone for s in samples],
                          dtype=bool)
        entry = TimeModel("fitted", **self.counts, **_kept_fields(search, relative, steady), warnings=tuple(notes),
                          verification_mre=held_mre, verification_mre_by_ranks=self.by_ranks,
                          slowdown=steadiness.slowdown if steadiness.scaled else None,
                          scaled_alone=steadiness.alone, on_every_sample=kept is not None)
        return _Fitted(entry, search, samples, steady=steady)


def _steadied(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
              fitting: list[Sample], verification: list[Sample], tolerance: HostTolerance, relative: bool,
              slowdown: float | None = None) -> tuple[Steadiness, bool]:
    """The samples a model is judged on (:func:`_steady`), and whether they
    were pooled: where the steady fitting samples are too few for its
    terms, they are fitted with the verification ones, unverified, which
    is better than no model."""
    steadiness = _steady(predictor, implementation, model, fitting, verification, tolerance, relative, slowdown)
    fitting, verification = steadiness.fitting, steadiness.verification
    pooled = model.fitted and _too_few(model, fitting) and not _too_few(model, fitting + verification)
    if pooled:
        steadiness = replace(steadiness, fitting=fitting + verification, verification=[])
    return steadiness, pooled


def _judge(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
           fitting: list[Sample], verification: list[Sample], relative: bool,
           confidence: float, tolerance: HostTolerance = HostTolerance(), discovering: bool = True,
           discovered: tuple[Discovered, ...] | None = None, shortlist: int | None = None,
           sites: list[dict[str, float]] | None = None, slowdown: float | None = None) -> _Judged | _Fitted:
    """The implementation's terms searched and fitted on the fitting
    samples and judged on the verification samples (the verification
    MRE); a model with no terms to fit is done here (a :class:`_Fitted`)."""
    steadiness, pooled = _steadied(predictor, implementation, model, fitting, verification, tolerance, relative,
                                   slowdown)
    fitting, verification, disturbed = steadiness.fitting, steadiness.verification, steadiness.left_out
    counts = {"samples": len(fitting), "verification_samples": len(verification),
              "noisy_samples": sum(1 for s in fitting + verification if s.noisy),
              "disturbed_samples": disturbed}
    if not model.fitted:
        everything = fitting + verification
        error = None
        if everything:
            predicted = [predictor.evaluate(implementation.name, _environment(s)) for s in everything]
            error = mean_relative_error(np.array([s.seconds for s in everything]), np.array(predicted))
        notes = (_inaccurate_text(error, steadiness, "the formula (or a model it calls)"),) \
            if error is not None and error > VERIFICATION_LIMIT else ()
        return _Fitted(TimeModel("factored", verification_mre=error, warnings=notes, **counts))
    judged = _search_and_fit(predictor, implementation, model, fitting, relative, confidence, discovering,
                             discovered, shortlist, sites or [])
    held_mre, by_ranks = None, {}
    if verification:
        held_columns, held_times = _columns(predictor, implementation, judged.terms, verification)
        held_mre = judged.result.mre_on(held_columns, held_times)
        by_ranks = _by_ranks(judged.result, held_columns, held_times, verification) or {}
    return _Judged(steadiness, counts, pooled, judged, held_mre, by_ranks, tolerance)


def _kept_fields(kept: _Search, relative: bool, steady: np.ndarray | None = None) -> dict[str, Any]:
    """The fields of a fitted model that its terms and their fit give; the
    typical deviation from the samples the host ran ``steady`` for
    (:func:`_deviation_rows`)."""
    result, columns, times = kept.result, kept.columns, kept.times
    fitted = {name: columns[name] if name in columns else np.ones_like(times)
              for name, weight in result.coefficients.items() if weight and (name in columns or name == CONSTANT)}
    rows = _deviation_rows(steady, len(times), len(fitted))
    deviations = fit_deviation({name: column[rows] for name, column in fitted.items()}, times[rows],
                               np.asarray(result.residuals)[rows], relative=relative)
    return dict(discovered=tuple(kept.discovered), terms=tuple(result.terms), kept=tuple(result.kept),
                coefficients=dict(result.coefficients), half_widths=dict(result.half_widths),
                covariance=result.covariance, quantile=result.quantile, dropped=tuple(result.dropped),
                aliases=dict(result.aliases), r2=result.r2, mre=result.mre,
                residuals=tuple(float(r) for r in result.residuals), deviations=deviations,
                risk=RISK if deviations else None)


def _deviation_rows(steady: np.ndarray | None, count: int, terms: int) -> np.ndarray:
    """The samples a model's typical deviation is fitted on: those the host
    ran steady for (and those of settings measured only in spells, the only
    ones there), where they number STEADY_PER_TERM per term at least; else
    all.  A sample of a slow spell, kept with its time divided by the
    spell's mean factor, still lies off the model by how much its own spell
    differed from that mean: the host's scatter, which any alternative
    timed then would have shown too, not the implementation's.  Fitted on
    such samples, the sample sort's two-rank model on a busy Zen 4 host
    (94 of its 142 samples taken in spells) planned for 34% more than it
    predicted, the radix sort's for 10% more, and at 25 of 200 two-rank
    points where the sample sort ran faster, by up to 56%, the decision
    chose the radix sort.  Refitted so, 13 builds of that host chose right
    at 90.9% of those points instead of 86.9% (better in 10, worse in
    none; expected penalty 1.65% -> 1.13%), their one-rank choices as
    before or better at four evaluations."""
    if steady is None or len(steady) != count or int(steady.sum()) < STEADY_PER_TERM * max(terms, 1):
        return np.arange(count)
    return np.flatnonzero(steady)


def leveled_samples(leveled: Mapping[str, float], fitting: list[Sample]) -> list[Sample]:
    """The ``fitting`` samples of the ``leveled`` points (:func:`_leveled`)
    divided by their point's factor: at their model's level, they are no
    longer the spell's, and are taken as steady ones."""
    return [replace(s, seconds=s.seconds / leveled[point_key(s)], host=None, noisy=False)
            if point_key(s) in leveled else s for s in fitting]


def fitted_samples(predictor: Predictor, implementation: ast.Implementation, entry: TimeModel,
                   fitting: list[Sample], verification: list[Sample], tolerance: HostTolerance,
                   relative: bool = True) -> tuple[list[Sample], list[Sample]]:
    """The fitting and verification samples the fit of ``entry`` used, as
    it took them: those of its leveled points at their model's level, then
    without or scaled back those taken while the host ran slow (``_steady``)."""
    model = implementation.model("time")
    steadiness = _steady(predictor, implementation, model, leveled_samples(entry.leveled, fitting), verification,
                         tolerance, relative, entry.slowdown if entry.leveled else None)
    return steadiness.fitting, steadiness.verification


def _leveled_text(leveled: Mapping[str, float], fitting: list[Sample]) -> str:
    """What :func:`_leveled` did, in words."""
    moved = sorted(factor for factor in leveled.values() if factor != 1.0)
    taken = sum(1 for s in fitting if point_key(s) in leveled)
    text = (f"at {len(leveled)} points whose settings were timed side by side while the host meter read a slow "
            f"spell, their {taken} samples were fitted for their ratios")
    if not moved:
        return text + ", each point at its level"
    spread = f"{moved[0]:.2f}" if len(moved) == 1 else f"{moved[0]:.2f} to {moved[-1]:.2f}"
    return (text + f"; {len(moved)} points, off the others' model by more than the steady samples are, at its "
            f"level there (their times divided by {spread})")


def _inaccurate_text(error: float, steadiness: Steadiness, what: str = "the terms") -> str:
    """Why a verification MRE may exceed VERIFICATION_LIMIT.  Where most of
    the samples were taken in the host's slow spells, the spells are as
    likely a cause as the terms: on a busy host the same calls timed in two
    processes lay 10-20% apart, and most models of a sort build verified
    above the limit whatever their terms."""
    text = f"verification MRE {error:.3f} exceeds {VERIFICATION_LIMIT}: {what} may miss a cost"
    # where all are scaled, the count holds the left-out verification ones too
    spells = steadiness.scaled + steadiness.left_out if steadiness.alone else \
        steadiness.scaled or steadiness.left_out + steadiness.kept
    total = len(steadiness.fitting) + len(steadiness.verification) + steadiness.left_out
    if total and 2 * spells > total:
        text += f", or the host's slow spells may, in which {spells} of the {total} samples were taken"
    return text


def sites_of(samples: Samples, interface: str) -> list[dict[str, float]]:
    """The points of an interface that its samples reached, any
    implementation's, once each: where the dispatcher is known to be asked."""
    seen: dict[tuple, dict[str, float]] = {}
    for sample in samples.samples:
        if sample.interface == interface:
            seen.setdefault(tuple(sorted(sample.variables.items())), dict(sample.variables))
    return list(seen.values())


def _probes(predictor: Predictor, implementation: ast.Implementation,
            sites: list[dict[str, float]]) -> list[dict[str, Any]]:
    """Where the dispatcher may ask the model: each site where the
    implementation applies, at each value of its parameters in their ranges
    (of a long one, its share of PROBE_VALUES; none when a parameter has no
    range), thinned evenly to PROBES.  Only the probes kept are made: a
    site of a model with two parameters stands for 256 settings, and a
    lattice of 4,000 sites made a million, to keep 2,000 (the stencil's
    blocks, 5 s of its fit)."""
    if any(parameter.range is None for parameter in implementation.parameters):
        return []
    each = max(2, round(PROBE_VALUES ** (1 / max(len(implementation.parameters), 1))))
    settings = [_SiteSettings(predictor, implementation, site, each) for site in sites
                if _applies(predictor, implementation, site)]
    total = sum(len(site) for site in settings)
    wanted = range(total) if total <= PROBES else np.linspace(0, total - 1, PROBES).round().astype(int).tolist()
    probes, passed, position = [], 0, 0  # passed: the probes of the sites before settings[position]
    for index in wanted:
        while index >= passed + len(settings[position]):
            passed += len(settings[position])
            position += 1
        probes.append(settings[position][index - passed])
    return probes


class _SiteSettings:
    """The settings of an implementation's parameters probed at one site
    (:func:`_probes`): each value of the first parameter with each of the
    next, and so on.  A parameter's range names no other parameter (the
    checker refuses it), so the values of each are found once, and a
    setting is made only when asked for."""

    def __init__(self, predictor: Predictor, implementation: ast.Implementation, site: dict[str, float],
                 each: int):
        self.site = site
        self.names = [parameter.name for parameter in implementation.parameters]
        self.values: list[list[int]] = []
        environment = {**predictor.constants, **site}
        for parameter in implementation.parameters:
            try:
                low, high = integer_bounds(parameter.range, environment)
            except (EvaluationError, ArithmeticError, ValueError):
                self.values = [[]]
                return
            self.values.append(_probed_values(low, high, each))

    def __len__(self) -> int:
        return math.prod(len(values) for values in self.values)

    def __getitem__(self, index: int) -> dict[str, Any]:
        """The ``index``-th setting, the last parameter's value changing fastest."""
        chosen = []
        for values in reversed(self.values):
            index, digit = divmod(index, len(values))
            chosen.append(values[digit])
        return {**self.site, **dict(zip(self.names, reversed(chosen), strict=True))}


def _probes_everywhere(predictor: Predictor, implementation: ast.Implementation,
                       sites: list[dict[str, float]]) -> list[dict[str, Any]]:
    """Where the dispatcher may ask the model: the sites the samples reached
    and a lattice over the domain they span (each thinned to PROBES).  The
    searches of one model in one process probe the same places: found once
    (kept with the library and the sites they were found for, so that no
    other object takes their identities while they are kept)."""
    key = (id(predictor.library), implementation.name, id(sites))
    kept = _PROBED.get(key)
    if kept is not None and kept[0] is predictor.library and kept[1] is sites:
        return kept[2]
    probes = _probes(predictor, implementation, sites) + _probes(predictor, implementation, _lattice(sites))
    while len(_PROBED) >= PROBED_KEPT:
        del _PROBED[next(iter(_PROBED))]
    _PROBED[key] = (predictor.library, sites, probes)
    return probes


#: How many implementations' probes a process keeps (:func:`_probes_everywhere`).
PROBED_KEPT = 16
_PROBED: dict[tuple[int, str, int], tuple[ast.Library, list[dict[str, float]], list[dict[str, Any]]]] = {}


def _lattice(sites: list[dict[str, float]]) -> list[dict[str, float]]:
    """Points spread over the domain the ``sites`` span, for each rank count
    apart: the product of each variable's lattice values (:func:`_axis`),
    thinned alike to LATTICE_POINTS in all."""
    groups: dict[tuple[float, float], list[dict[str, float]]] = {}
    for site in sites:
        groups.setdefault((site.get("P", 1.0), site.get("logP", 0.0)), []).append(site)
    points: list[dict[str, float]] = []
    for (ranks, log_ranks), members in groups.items():
        names = [name for name in members[0] if name not in ("P", "logP") and all(name in m for m in members)]
        axes = [_axis(np.array([m[name] for m in members], dtype=float)) for name in names]
        total = math.prod(len(axis) for axis in axes)
        if total > LATTICE_POINTS and axes:
            keep = (LATTICE_POINTS / total) ** (1 / len(axes))
            axes = [axis[np.unique(np.linspace(0, len(axis) - 1, max(2, math.floor(len(axis) * keep))).round()
                                   .astype(int))] if len(axis) > 2 else axis for axis in axes]
        for values in itertools.product(*axes):
            point = {name: float(value) for name, value in zip(names, values, strict=True)}
            points.append({**point, **{k: v for k, v in (("P", ranks), ("logP", log_ranks)) if k in members[0]}})
    return points


def _axis(values: np.ndarray) -> np.ndarray:
    """A variable's lattice values over the range of ``values``: each
    integer of a short integer range (at most MOST_STEPS), every
    LATTICE_STEP octaves of a size-like one (positive, SIZE_SPAN wide or
    more; whole numbers where the variable's are), else 17 evenly apart."""
    low, high = float(values.min()), float(values.max())
    whole = bool(np.all(values == np.round(values)))
    if whole and high - low <= MOST_STEPS:
        return np.arange(low, high + 1)
    if low > 0 and high >= SIZE_SPAN * low:
        axis = np.append(2.0 ** np.arange(math.log2(low), math.log2(high), LATTICE_STEP), high)
    else:
        axis = np.linspace(low, high, 17)
    return np.unique(np.floor(axis)) if whole else axis


def _probed_values(low: int, high: int, most: int = PROBE_VALUES) -> list[int]:
    """The values of ``low .. high`` a model is probed at: each, or ``most``
    of them spread evenly, both ends included."""
    if high - low < most:
        return list(range(low, high + 1))
    return sorted({low + (high - low) * j // (most - 1) for j in range(most)})


def _below_zero(result: Fit, values: Mapping[str, np.ndarray], count: int) -> int:
    """How many of ``count`` probes a fit predicts no positive time at
    (``values``: each term's value at the probes)."""
    predicted = np.zeros(count)
    for name, weight in result.coefficients.items():
        predicted += weight * (values[name] if name != CONSTANT else 1.0)
    return int(np.sum(~(predicted > 0)))


def _parent(term: Discovered, of: Discovered) -> bool:
    """Whether ``of`` is ``term`` times more factors (the hierarchy rule keeps ``term`` while ``of`` is in)."""
    return of.base == term.base and set(term.factors) < set(of.factors)


def _positive_everywhere(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
                         discovered: tuple[Discovered, ...], result: Fit, fitting: list[Sample],
                         sites: list[dict[str, float]], relative: bool,
                         confidence: float) -> tuple[tuple[Discovered, ...], Fit, list[str]]:
    """The discovered terms, and their fit, with those left out that made
    the model predict no positive time where the dispatcher may ask it: at
    the sites the samples reached and on a lattice over the domain they
    span (:func:`_probes`, :func:`_lattice`).  A step down in a per-key
    cost, found where the samples lay, can sum below zero where they did
    not: a radix sort of 400,000 keys in one pass, predicted at -0.7 ms,
    was chosen, and took 8 times a counting sort's time; its neighbours,
    predicted barely above zero, were chosen as wrongly.  While some probe
    predicts zero or less, the term whose removal leaves the fewest such
    probes goes, and the model is fitted again: a discovered one (the last
    found of equals; a term another one multiplies stays while that one is
    in), or a written one of negative weight (of equals, the one whose fit
    errs least), which the fit then lists as dropped; a removal must leave
    fewer such probes.  A model that predicts no time somewhere is never
    chosen there, however fast the implementation runs: a counting sort's,
    its written term for the values present at -4.6 ns each, predicted
    -1.8 us at 13,193 keys of 12 bits, where it ran twice as fast as the
    radix sort chosen.  Returns the notes that say so."""
    probes = _probes_everywhere(predictor, implementation, sites)
    if not probes:
        return discovered, result, []
    terms = model_terms(model, discovered)
    texts = [unparse(t) for t in terms]
    try:
        values = term_columns(predictor, implementation, terms, probes, texts)
    except (EvaluationError, ModelUnavailable, ArithmeticError, ValueError):
        return discovered, result, []
    below = _below_zero(result, values, len(probes))
    removed: list[str] = []  # written terms left out
    notes = []
    while below:
        options = []  # (probes below zero, written, error), term, discovered terms, fit
        for term in discovered:
            if any(_parent(term, other) for other in discovered if other != term):
                continue
            trial = tuple(other for other in discovered if other != term)
            refit = _refit(predictor, implementation, model, trial, removed, fitting, relative, confidence)
            if refit is not None:  # of equals, the last found (a stable sort keeps the order)
                options.append(((_below_zero(refit, values, len(probes)), False, 0.0), term, trial, refit))
        options.reverse()
        for text, weight in result.coefficients.items():
            if weight < 0 and text not in {term.text for term in discovered}:
                refit = _refit(predictor, implementation, model, discovered, [*removed, text], fitting, relative,
                               confidence)
                if refit is not None:
                    options.append(((_below_zero(refit, values, len(probes)), True, refit.mre), text, discovered,
                                    refit))
        if not options:
            break
        (left, written, _), term, discovered, result = min(options, key=lambda option: option[0])
        if left >= below:
            break
        if written:
            removed.append(term)
            notes.append(f"left out the written term {term}: fitted with a negative weight, it made the model "
                         f"predict no positive time at {below} of {len(probes)} points where it may be asked")
        else:
            notes.append(f"left out the fitter's term {term.text}: with it, the model predicted no positive time "
                         f"at {below} of {len(probes)} points where it may be asked")
        if removed:  # offered, and dropped: the written terms stay in the model's account
            result = replace(result, terms=tuple(_texts_of(model, discovered)),
                             dropped=[*result.dropped, *removed])
        below = left
    return discovered, result, notes


def _refit(predictor: Predictor, implementation: ast.Implementation, model: ast.CostModel,
           discovered: tuple[Discovered, ...], removed: list[str], fitting: list[Sample], relative: bool,
           confidence: float) -> Fit | None:
    """The model's terms with ``discovered``, less the written terms
    ``removed``, fitted to ``fitting``; None where nothing is left to fit."""
    columns, times = _columns(predictor, implementation, model_terms(model, discovered), fitting)
    columns = {name: column for name, column in columns.items() if name not in removed}
    constant = model.constant and CONSTANT not in removed
    if not columns and not constant:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankWarning)
        try:
            return fit(columns, times, relative=relative, confidence=confidence, constant=constant)
        except FitError:
            return None


def _texts_of(model: ast.CostModel, discovered: tuple[Discovered, ...]) -> list[str]:
    """The texts of the terms a fit of the model with ``discovered`` offers, the constant first."""
    texts = [unparse(term) for term in model_terms(model, discovered)]
    return ([CONSTANT] if model.constant else []) + [text for text in texts if text != CONSTANT]


def written_terms(model: ast.CostModel) -> int:
    """How many terms the model writes, its constant included: a fit needs more samples than that."""
    return len(model.terms) + model.constant


def _too_few(model: ast.CostModel, samples: list[Sample]) -> bool:
    """Whether ``samples`` are too few to fit the model's written terms.  A
    short profile may leave an implementation that applies at few of its
    points with fewer fitting samples than that, and as many held out for
    its verification: a rank count's fastest sort went unfitted, and
    unchosen, at 5 fitting samples for 7 terms."""
    return len(samples) <= written_terms(model)


def used_predictors(library: ast.Library, models_of: Mapping[str, Path]) -> dict[str, Predictor]:
    """Predictors of the libraries ``uses`` names, from their models artefacts."""
    predictors = {}
    for name, used in library.used.items():
        models = load_if_exists(models_of.get(name, Path("build") / name / "models.json"))
        predictors[name] = Predictor(used, models.times() if models else {}, used_predictors(used, models_of))
    return predictors


def calibrate(library: ast.Library, samples: Samples, *, relative: bool = True, confidence: float = 0.95,
              models_of: Mapping[str, Path] | None = None, quick: bool = False,
              discovering: bool = True, terms_of: Models | None = None, shortlist: int | None = None,
              every_sample: bool = True) -> Models:
    """Fit and verify every implementation: the models artefact.
    With ``discovering``, the fitter adds the steps and hinges the samples
    show to the written terms (hlc.model.discover).  ``terms_of``: earlier
    models whose discovered terms are kept instead of searched again, for an
    implementation they fitted (a refit of the coefficients only, a fraction
    of a search's time: what an adaptive profile's rounds need).
    ``shortlist``: the candidates the search cross-validates at each step
    (hlc.model.discover.SHORTLIST; fewer for a quicker, narrower search).
    ``every_sample``: keep models searched and fitted again on the
    verification samples too, once those have judged the ones fitted
    without them (:func:`_fit_job`); without, the judged ones, in half the
    time (what an adaptive profile's rounds plan with).

    The fitter's matrices are small (samples × terms): BLAS threads gain
    nothing on them and, on a busy host, wait for each other — a QR of
    1,000 × 12 took 50 ms with two threads on two busy cores, 0.15 ms with
    one.  The fit runs with one."""
    with threadpool_limits(limits=1, user_api="blas"):
        return _calibrate(library, samples, relative=relative, confidence=confidence, models_of=models_of,
                          quick=quick, discovering=discovering, terms_of=terms_of, shortlist=shortlist,
                          every_sample=every_sample)


def _calibrate(library: ast.Library, samples: Samples, *, relative: bool, confidence: float,
               models_of: Mapping[str, Path] | None, quick: bool, discovering: bool,
               terms_of: Models | None, shortlist: int | None = None, every_sample: bool = True) -> Models:
    times: dict[str, TimeModel] = {}  # the predictor's, filled in as the models are fitted
    predictor = Predictor(library, times, used_predictors(library, models_of or {}))
    excluded = {(f.interface, f.implementation): f for f in samples.failures}
    sites = {interface.name: sites_of(samples, interface.name) for interface in library.interfaces}
    # Each job passes its interface's sites on as one object per process,
    # which the probes of its model's searches are kept by (_probes_everywhere).
    shared_sites = {name: Shared(value) for name, value in sites.items()}
    shared = Shared(library)
    tolerance = host_tolerance(samples)
    callees = _callees(library)
    implementations = {i.name: i for interface in library.interfaces for i in interface.implementations}
    interface_of = {i.name: interface.name for interface in library.interfaces for i in interface.implementations}
    interfaces = {interface.name: interface for interface in library.interfaces}
    # The models' fits, their searches and their bags run as jobs side by side
    # (hlc.model.workers.run_jobs), each model's as soon as the models its
    # terms call are done: a two-rank radix model is fitted while the other
    # one-rank models are still searched, not after them all.
    order = _order(library, callees)
    fits: dict[str, _Fitted] = {}
    searches: dict[tuple[str, int | None], _Search | None] = {}
    left: dict[str, int] = {}  # searches of a model not back yet
    searching: dict[str, bool] = {}  # whether the model's terms are searched (not given by terms_of)
    fit_jobs: dict[str, tuple] = {}
    halves: dict[str, dict[str, Any]] = {}  # a split final fit's searches back so far (level)
    started: set[str] = set()

    def start(interface: ast.Interface, implementation: ast.Implementation) -> list[Job]:
        """The fit of a model whose callees are done; an excluded one is done at once."""
        name = implementation.name
        started.add(name)
        failure = excluded.get((interface.name, name))
        if failure is not None:
            times[name] = TimeModel("excluded", cause=failure.cause, ranks=failure.P, point=failure.point)
            return ready()
        fitting = _within(predictor, implementation, samples.of(interface.name, name, verify=False))
        verification = _within(predictor, implementation, samples.of(interface.name, name, verify=True))
        previous = terms_of.time(name) if terms_of else None
        called = {callee: times[callee] for callee in _called(callees, name) if callee in times}
        fit_jobs[name] = (shared, dict(models_of or {}), called, name, fitting, verification, relative, confidence,
                          tolerance, discovering,
                          previous.discovered if previous and previous.status == "fitted" else None,
                          shortlist, shared_sites[interface.name], every_sample)
        cost = _fit_cost(implementation.model("time"), fitting, discovering and searching[name])
        if not (every_sample and implementation.parameters and implementation.model("time").fitted):
            return [Job(_fit_job, fit_jobs[name], cost, then=lambda fitted: fitted_back(name, fitted))]
        halves[name] = {}  # a split final fit (_fit_job): the judged search and the one on every sample
        return [Job(_fit_job, fit_jobs[name], cost, then=lambda judged: half_back(name, "judged", judged)),
                Job(_every_sample_job, fit_jobs[name][:13], cost, then=lambda kept: half_back(name, "kept", kept))]

    def half_back(name: str, half: str, result: Any) -> list[Job]:
        halves[name][half] = result
        if len(halves[name]) < 2:
            return []
        return [Job(level, (name,), 0.0, here=True,
                    then=lambda done: done if isinstance(done, list) else fitted_back(name, done))]

    def level(name: str) -> _Fitted | list[Job]:
        """A split final fit's points leveled by its search on every sample:
        its model, or where any point is leveled, the job that judges it again."""
        judged, kept = halves[name]["judged"], halves.pop(name)["kept"]
        if isinstance(judged, _Fitted):  # nothing to search (or it failed): the model as it is
            return judged
        if isinstance(kept, str):
            return _Fitted(TimeModel("unfitted", cause=kept))
        implementation, model = implementations[name], implementations[name].model("time")
        fitting, verification = fit_jobs[name][4], fit_jobs[name][5]
        try:
            leveled = _leveled(predictor, implementation, judged.kept(model, kept, relative).entry, fitting,
                               tolerance)
        except (FitError, EvaluationError, ModelUnavailable) as error:
            return _Fitted(TimeModel("unfitted", cause=str(error)))
        if not leveled:
            return _Pending(judged, {}, None, _domain(fitting + verification)).done(model, kept, relative)
        # the spells' slowdown, for their other samples, is the one all of them showed
        steadiness = judged.steadiness
        again = (*fit_jobs[name], leveled, steadiness.slowdown if steadiness.scaled else None)
        cost = _fit_cost(model, fitting, discovering and searching[name])
        return [Job(_fit_job, again, cost, then=lambda fitted: fitted_back(name, fitted))]

    def fitted_back(name: str, fitted: _Fitted) -> list[Job]:
        """The final fit's search on every sample, and its bags' (_bagged), as jobs of their own."""
        fits[name] = fitted
        model = implementations[name].model("time")
        later: list[int | None] = [None] if fitted.pending is not None else []
        if every_sample and BAGS and _baggable(fitted, model, searching[name], discovering):
            later += list(range(BAGS))
        if not later:
            return [Job(finish, (name,), 0.0, then=ready, here=True)]
        left[name] = len(later)
        searched = _searched_samples(fitted)
        cost = _fit_cost(model, searched or [], True)
        narrower = _bag_shortlist(shortlist) / (shortlist or SHORTLIST)  # a bag's search
        return [Job(_search_job, (*fit_jobs[name][:4], searched, relative, confidence, discovering,
                                  fit_jobs[name][10], shortlist, shared_sites[interface_of[name]], bag),
                    cost if bag is None else cost * narrower,
                    then=lambda result, bag=bag: searched_back(name, bag, result)) for bag in later]

    def searched_back(name: str, bag: int | None, result: _Search | None) -> list[Job]:
        searches[name, bag] = result
        left[name] -= 1
        return [] if left[name] else [Job(finish, (name,), 0.0, then=ready, here=True)]

    def finish(name: str) -> str:
        """The model of ``name`` from its fit, its search on every sample and its bags."""
        model = implementations[name].model("time")
        if fits[name].pending is not None:
            fits[name] = fits[name].pending.done(model, searches[name, None], relative)
        bags = [searches[name, bag] for bag in range(BAGS) if (name, bag) in searches]
        if bags:
            fits[name].entry = _bagged(predictor, implementations[name], model, fits[name], bags, relative,
                                       confidence, sites[interface_of[name]])
        entry = fits[name].entry
        if entry.status != "unfitted":
            interface = interfaces[interface_of[name]]
            entry = replace(entry, python=python_source(interface, implementations[name], entry),
                            c=c_source(interface, implementations[name], entry))
        times[name] = entry
        return name

    def ready(_: object = None) -> list[Job]:
        """The fits of the models not started whose callees are all done."""
        return [job for interface, implementation in order
                if implementation.name not in started and callees[implementation.name] <= times.keys()
                for job in start(interface, implementation)]

    for name in implementations:
        previous = terms_of.time(name) if terms_of else None
        searching[name] = previous is None or previous.status != "fitted"
    costs = [_fit_cost(implementation.model("time"), samples.of(interface.name, implementation.name, verify=False),
                       discovering and searching[implementation.name]) for interface, implementation in order]
    run_jobs(ready(), workers=_workers_for(costs))
    times = {implementation.name: times[implementation.name] for _, implementation in order}
    return Models(
        # absolute: a built module finds its description (and its sources) from any folder
        library=library.name, description=str(Path(library.filename).resolve()),
        implementations={name: ImplementationModel(interface_of[name], model) for name, model in times.items()},
        settings=FitSettings(relative, confidence, discovering), fingerprint=fingerprint(library, quick=quick),
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), samples_header=samples.header.as_record())


def _called(callees: Mapping[str, set[str]], name: str) -> set[str]:
    """The implementations whose models ``name``'s terms call, directly or
    through others (``callees``: :func:`_callees`)."""
    found: set[str] = set()
    waiting = [name]
    while waiting:
        for callee in callees[waiting.pop()] - found:
            found.add(callee)
            waiting.append(callee)
    return found


def _fit_cost(model: ast.CostModel, fitting: list[Sample], searching: bool) -> float:
    """What fitting a model costs, in proportion: its samples times its
    terms, many times more where its terms are searched for."""
    terms = len(model.terms) + len(model.families) + 1 if model.fitted else 1
    return len(fitting) * terms * (SEARCH_COST if searching else 1.0)


def _workers_for(costs: list[float]) -> int | None:
    """The worker processes the fits of ``costs`` (each model's) may use: none
    where they are too small for the passing of samples and results to pay
    (FIT_SIDE_BY_SIDE)."""
    return None if sum(costs) >= FIT_SIDE_BY_SIDE else 0


def _fit_job(shared: Shared, models_of: dict[str, Path], callees: dict[str, TimeModel], name: str,
             fitting: list[Sample], verification: list[Sample], relative: bool, confidence: float,
             tolerance: HostTolerance, discovering: bool, discovered: tuple[Discovered, ...] | None,
             shortlist: int | None, shared_sites: Shared, every_sample: bool = True,
             leveled: dict[str, float] | None = None, slowdown: float | None = None) -> _Fitted | _Judged:
    """One implementation's fitted model, with its domain: a job that runs
    in this process or in a worker (hlc.model.workers), given the fitted
    models its terms call (``callees``).

    Its terms are searched and fitted on the fitting samples and judged on
    the verification samples (the verification MRE, :func:`_judge`).  With
    ``every_sample``, the model kept is then searched and fitted again the
    same way on both: the judged model's error is the verdict on the
    procedure, and the kept one has more to find the costs from.  The
    verification samples lie at random points between the grid's, where
    the fitting ones leave gaps a knot may fall in: on 26 sort builds of a
    busy Zen 4 host, replayed against four exhaustive evaluations, the
    choices were right 0.8 points more often (SE 0.3), better in 19 builds
    and worse in 6; refitting only the coefficients on every sample gained
    0.3 (SE 0.2).  The caller may bag the search kept (:func:`_bagged`).

    The search on every sample is left to the caller (``pending``), to
    run as a job of its own beside the bags' (:func:`_search_job`): the
    final fit of a sort build, whose radix models are searched six times
    each, took 11.7 s with each model's searches one after the other in
    its job, 8.4 s so (two cores).

    A parameterized model's points taken in the host's spells are leveled
    (:func:`_leveled`), and the model judged again on them: in the rounds
    (without ``every_sample``) by the judged model, here; in the final fit
    by the model kept, so that its searches run side by side: this job
    returns the judged model (a :class:`_Judged`), the search on every
    sample runs beside it (:func:`_every_sample_job`), the caller levels
    the points by that, and where any are, this job runs again with
    ``leveled`` (the factors) and the spells' ``slowdown``.  A sort
    build's final fit took 3.0-3.4 s so, 3.5-4.0 s with the three
    searches that judge, level and judge again one after the other (two
    cores)."""
    library, sites = shared.value, shared_sites.value
    implementation = next(m for i in library.interfaces for m in i.implementations if m.name == name)
    model = implementation.model("time")
    predictor = Predictor(library, callees, used_predictors(library, models_of))
    try:
        if model.fitted and not fitting:
            raise FitError("no fitting samples (was the library profiled?)")
        if not leveled:
            judged = _judge(predictor, implementation, model, fitting, verification, relative, confidence,
                            tolerance, discovering, discovered, shortlist, sites)
            if isinstance(judged, _Fitted):
                judged.entry = replace(judged.entry, domain=_domain(fitting + verification))
                return judged
            if every_sample and implementation.parameters:
                return judged  # the first part of a split final fit
            leveled = _leveled(predictor, implementation, judged.kept(model, None, relative).entry, fitting,
                               tolerance)
            # the spells' slowdown, for their other samples, is the one all of them showed
            slowdown = judged.steadiness.slowdown if judged.steadiness.scaled else None
        if leveled:
            judged = _judge(predictor, implementation, model, leveled_samples(leveled, fitting), verification,
                            relative, confidence, tolerance, discovering, discovered, shortlist, sites, slowdown)
            assert isinstance(judged, _Judged)
        pending = _Pending(judged, leveled, _leveled_text(leveled, fitting) if leveled else None,
                           _domain(fitting + verification))
        if every_sample and judged.searched_again:
            return _Fitted(TimeModel("unfitted", cause="its search on every sample is pending"), pending=pending)
        return pending.done(model, None, relative)
    except (FitError, EvaluationError, ModelUnavailable) as error:
        return _Fitted(TimeModel("unfitted", cause=str(error)))


def _every_sample_job(shared: Shared, models_of: dict[str, Path], callees: dict[str, TimeModel], name: str,
                      fitting: list[Sample], verification: list[Sample], relative: bool, confidence: float,
                      tolerance: HostTolerance, discovering: bool, discovered: tuple[Discovered, ...] | None,
                      shortlist: int | None, shared_sites: Shared) -> _Search | str | None:
    """The search on every sample that a parameterized model's points are
    leveled by, in a split final fit (:func:`_fit_job`): a job beside the
    judged search, on the samples the judge keeps (:func:`_steadied`), all
    of them.  None where the judge keeps no verification sample (the
    judged model is then kept); the error's text where the search fails."""
    library, sites = shared.value, shared_sites.value
    implementation = next(m for i in library.interfaces for m in i.implementations if m.name == name)
    model = implementation.model("time")
    predictor = Predictor(library, callees, used_predictors(library, models_of))
    try:
        steadiness, _ = _steadied(predictor, implementation, model, fitting, verification, tolerance, relative)
        if not steadiness.verification:
            return None
        return _search_and_fit(predictor, implementation, model, steadiness.fitting + steadiness.verification,
                               relative, confidence, discovering, discovered, shortlist, sites)
    except (FitError, EvaluationError, ModelUnavailable) as error:
        return str(error)


def _search_job(shared: Shared, models_of: dict[str, Path], callees: dict[str, TimeModel], name: str,
                samples: list[Sample], relative: bool, confidence: float, discovering: bool,
                discovered: tuple[Discovered, ...] | None, shortlist: int | None,
                shared_sites: Shared, bag: int | None = None) -> _Search | None:
    """A search of an implementation's terms on ``samples``: a job, as
    :func:`_fit_job`; None where they cannot be fitted.  With ``bag``, of
    that bag of their points (_bag_points), searched more narrowly
    (BAG_SHORTLIST), its model not checked for positive times
    (:func:`_agreeing` does); without, of all of them, a
    judged model's search on every sample (:class:`_Pending`)."""
    library, sites = shared.value, shared_sites.value
    implementation = next(m for i in library.interfaces for m in i.implementations if m.name == name)
    predictor = Predictor(library, callees, used_predictors(library, models_of))
    if bag is not None:
        samples, sites = _bag_points(samples, bag), []
        shortlist = _bag_shortlist(shortlist)
    try:
        return _search_and_fit(predictor, implementation, implementation.model("time"), samples, relative,
                               confidence, discovering, discovered, shortlist, sites)
    except (FitError, EvaluationError, ModelUnavailable):
        return None


def _bag_shortlist(shortlist: int | None) -> int:
    """The candidates a bag's search weighs a step, where the model's weighs ``shortlist`` (None: SHORTLIST)."""
    return min(shortlist or SHORTLIST, BAG_SHORTLIST)


def _baggable(fitted: _Fitted, model: ast.CostModel, searched: bool, discovering: bool) -> bool:
    """Whether the model's terms were searched, on samples of enough points to bag (BAG_POINTS)."""
    samples = _searched_samples(fitted)
    return (searched and (discovering or bool(model.families)) and samples is not None
            and len({_point_of(s) for s in samples}) >= BAG_POINTS)


def _searched_samples(fitted: _Fitted) -> list[Sample] | None:
    """The samples the model kept of ``fitted`` is (or, pending, will be) searched on."""
    if fitted.pending is not None:
        return fitted.pending.judged.everything
    return fitted.samples if fitted.entry.status == "fitted" else None


def host_tolerance(samples: Samples) -> HostTolerance:
    """How far above its usual pace the host meter may read during a sample
    before the sample is disturbed, per rank count: the meter's tolerance
    when the samples were taken (files from before the meter had a
    tolerance of their own: its default), above the usual pace: the median
    of the readings within that tolerance of their ``FAST_QUANTILE``.  The
    meter's yardstick is timed afresh in every run, so the usual pace need
    not read 1: where the meter read 1.07-1.15 at most samples, that was
    the host's pace, and the spells were the readings above it, 1.2 to 1.4.
    Each rank count has a pace of its own (HostTolerance says why)."""
    tolerance = samples.header.host_tolerance
    tolerance = HOST_TOLERANCE if tolerance is None else tolerance

    def above_usual(readings: list[float]) -> float:
        if not readings:
            return tolerance
        meter = np.array(readings)
        unhindered = meter[meter <= (1 + tolerance) * np.quantile(meter, FAST_QUANTILE)]
        return (1 + tolerance) * max(1.0, float(np.median(unhindered))) - 1

    by_ranks: dict[int, list[float]] = {}
    for sample in samples.samples:
        if sample.host is not None:
            by_ranks.setdefault(sample.P, []).append(sample.host)
    everything = [reading for readings in by_ranks.values() for reading in readings]
    return HostTolerance(above_usual(everything),
                         {ranks: above_usual(readings) for ranks, readings in by_ranks.items()}, tolerance)


def _within(predictor: Predictor, implementation: ast.Implementation,
            taken: list[Sample]) -> list[Sample]:
    """The samples where the implementation's preconditions hold.  A profile
    takes none elsewhere; samples refitted under a description whose
    preconditions are narrower than the profiled one's hold some, and a model
    is not to be fitted where the dispatcher never asks it."""
    if not implementation.requires:
        return taken
    return [sample for sample in taken if _applies(predictor, implementation, sample.variables)]


def _applies(predictor: Predictor, implementation: ast.Implementation, variables: Mapping[str, Any]) -> bool:
    """Whether the implementation's preconditions hold at these variables."""
    environment = {**predictor.constants, **variables}
    try:
        return all(evaluate(condition, environment) for condition in implementation.requires)
    except (EvaluationError, ArithmeticError, ValueError):
        return False


def fit_samples(samples_path: Path, *, description: Path | None = None, **options: Any) -> Models:
    """``hlc fit``: read the samples, parse their description, calibrate."""
    samples = Samples.load(samples_path)
    library = parse_file(description or samples.header.description)
    if library.name != samples.header.library:
        raise FitError(f"{samples_path} holds samples of library '{samples.header.library}', "
                       f"not of '{library.name}'")
    return calibrate(library, samples, **options)


def missing_implementations(models: Models) -> list[str]:
    """The implementations a build is without, one line each: which, and why.
    The dispatcher never calls an implementation that has no model."""
    lines = []
    for name, entry in models.times().items():
        if entry.usable:
            continue
        cause = (entry.cause or "no cause recorded").strip()
        if entry.status == "excluded":
            at = excluded_at(entry)
            lines.append(f"{name}: excluded while profiling{f' (at {at})' if at else ''}: {cause}")
        else:
            lines.append(f"{name}: {entry.status}: {cause}")
    return lines


def excluded_at(entry: TimeModel) -> str:
    """Where an excluded implementation failed: its rank count and the
    point of the profile's loops ("P=1, m = 16384"); empty where unknown."""
    ranks = f"P={entry.ranks}" if entry.ranks is not None else ""
    return ", ".join(part for part in (ranks, point_text(entry.point)) if part)


def summary(models: Models) -> str:
    """One line per implementation, then each fitted model's coefficients."""
    lines = [f"{'implementation':<16} {'status':<9} {'kept terms':>10} {'R²':>7} {'fit MRE':>8} "
             f"{'verif. MRE':>10} {'samples':>8}"]
    details = []
    for name, entry in models.times().items():
        status = entry.status
        if status == "fitted":
            verification = f"{entry.verification_mre:.3f}" if entry.verification_mre is not None else "—"
            lines.append(f"{name:<16} {status:<9} {len(entry.kept):>10} {entry.r2 or 0.0:>7.4f} "
                         f"{entry.mre or 0.0:>8.3f} {verification:>10} {entry.samples:>8}")
            details.append(f"{name}: " + " + ".join(
                f"{entry.coefficients[t]:.4g}(±{entry.half_widths[t]:.2g})"
                + ("" if t == CONSTANT else f"·{t}" if is_product(t) else f"·({t})") for t in entry.kept))
            if entry.discovered:
                found = len(entry.discovered)
                details.append(f"  discovered {found} term{'s' if found > 1 else ''}: "
                               + "; ".join(entry.terms[-found:]))
            if entry.verification_mre_by_ranks:
                details.append("  verification MRE by rank count: " + by_ranks_text(entry.verification_mre_by_ranks))
            if entry.on_every_sample:
                details.append(f"  fitted on the {entry.samples} fitting and {entry.verification_samples} "
                               f"verification samples, after these judged the model fitted without them")
            if entry.disturbed_samples:
                details.append(f"  left out: {entry.disturbed_samples} samples taken while the host ran slow "
                               f"or never settled")
            details += [f"  warning: {w}" for w in entry.warnings]
        elif status == "factored":
            verification = entry.verification_mre
            lines.append(f"{name:<16} {status:<9} {'—':>10} {'—':>7} {'—':>8} "
                         f"{(f'{verification:.3f}' if verification else '—'):>10} {entry.samples:>8}")
            if entry.warnings:
                details.append(f"{name}: factored")
                details += [f"  warning: {w}" for w in entry.warnings]
        else:
            lines.append(f"{name:<16} {status:<9} {entry.cause}")
    return "\n".join(lines + [""] + details)
