"""Finding where a machine's costs change slope or step, from the samples.

A description names the algorithm's terms (``n``, ``n * iter``); the machine
adds costs the author cannot know: a per-key cost that rises once the keys
outgrow a cache, a digit width beyond which the scatter's write streams
thrash.  This module finds them, in the spirit of MARS (Friedman 1991):

* **Factors** are the shapes such costs take: a *step* ``(v >= k)`` of an
  integer variable or parameter at one of its values, and a *step* or a
  *hinge* ``max(0, log2(x) - k)`` of a size-like variable (positive, over
  several octaves) at knots every half octave, and steps too where the
  samples lie closer (a boundary bisected).
* **Candidates** are products of a term already in the model (a written term,
  the constant, or a factor product found before: the hierarchy rule) with
  one new factor.  So a step in the per-key cost is ``n * (log2(n) >= 18)``,
  and an interaction enters only with its main effect.
* **Screening** drops candidates that cannot help: constant on the samples,
  a duplicate of another, or explained by the terms already in (what is left
  after projecting them out is below a small share of the column).  Seed
  001's point: a few informative columns beat many.
* **Forward selection** ranks the candidates by how much of the residual
  each explains (one projection each), cross-validates the best few, and
  adds the one that lowers the cross-validated relative error most, while
  it lowers it by at least ``MIN_GAIN``; where a parameter's settings were
  timed side by side, one that cuts the held-out penalty of choosing
  among them by 40% (``CHOICE_GAIN``) is taken too.  **Backward pruning** then
  removes every discovered term whose removal does not raise that error or
  that penalty.

Cross-validation uses the fitting samples only (deterministic folds), so
the verification samples stay untouched for the verdict; the thesis's
relevance test then runs on the final set (:func:`hlc.model.fit.fit`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from hlc.artefacts.models import Discovered, Factor

#: Knots of a size-like variable lie every KNOT_STEP in log2 of it.
KNOT_STEP = 0.5
#: ... and, for steps only, in each gap between sampled values narrower than
#: this many octaves and than half the median gap: where an adaptive
#: profile bisected a boundary, the samples can place a jump closer than
#: the half-octave grid can.  NumPy's
#: sort ran 1.1-1.2 us on 256 keys and 2.4 us on 279 on a Zen 4 host; with
#: knots only every half octave, between 181 and 256 keys, the model missed
#: both sides, predicted 1.95 us on 100 keys (measured 0.8 us) and the
#: 16-bit sort was chosen there at twice numpy's time.  Steps, not hinges:
#: a slope's knot moved by a few hundredths of an octave changes little,
#: and near-equal candidates crowd the ones each forward step
#: cross-validates (with a knot of both kinds in every gap, a two-rank
#: all-reduce model found none of its five terms).
GAP_WIDTH = 0.25
#: A size-like variable: positive, its largest value at least this many times its smallest.
SIZE_SPAN = 16.0
#: An integer variable whose values span at most this many units gets a step
#: at each value (bits, digit widths, ranks); a wider one is size-like.
MOST_STEPS = 64
#: A knot of a size-like variable needs this many distinct values of it on each side.
SIDE_VALUES = 2
#: ... and a step of an integer variable this many: a kernel may differ at
#: one value (one bit per digit), and the samples at that value tell it.
STEP_SIDE_VALUES = 1
#: A step at either end of a size-like variable's values singles out one
#: value (_edge_steps), held by this many samples or more.
EDGE_SAMPLES = 2
#: Folds of the cross-validation.
FOLDS = 5
#: A term is added only when it lowers the cross-validated error (in log of
#: the MRE) by at least this share.
MIN_GAIN = 0.02
#: ... and its gain exceeds this many standard errors of the gain, sample by sample.
SIGNIFICANCE = 2.0
#: A gain of this share of the error is taken whatever its spread.
LARGE_GAIN = 0.15
#: Two cross-validated errors (or two candidates' scores) closer than this
#: share are equal: they differ by the rounding of the machine's BLAS alone.
#: Two knots between the same sampled values give the same column, and the
#: search took one of them on one processor's kernels and the other on
#: another's: a NumPy sort model stepped at 8 copies with AVX2 kernels and at
#: 12 with AVX-512 ones, and chose a sort 1.6 times slower at 3 of 200 points.
#: Equals keep the first, in the search's own order.
TIES = 1e-9
#: Candidates cross-validated at each forward step (the best by residual explained).
#: More find better terms (the sort's replayed choices gain with 8 over 6), but
#: each one cross-validated is another chance for noise to pass the tests
#: above: with 10, smooth synthetic costs got a knot in 2 of 20 seeded runs.
SHORTLIST = 8
#: Where no one term is clearly better than the written ones, pairs of the
#: best this many and the best this many beside each are tried: a cost with
#: two changes (an all-reduce of two ranks that steps up at 2,048 elements
#: and bends above 2^14.75) can need both before either shows.  A two-rank
#: CombineVector model found no term in 2 of 13 builds, verified at 1.152
#: and 1.130; with a pair, at 1.087 and 1.073.
PAIRS = 6
#: A candidate whose part outside the model's span is below this share of its norm is explained already.
EXPLAINED = 1e-6
#: Relative singular values of a Gram matrix below this are rounding (1e-6 of the design's).
GRAM_TOLERANCE = 1e-12
#: Fewer fitting samples than this show noise, not a machine's costs: nothing is discovered.
MIN_SAMPLES = 40
#: ... and a description's families this many: the author says a step exists.
FAMILY_SAMPLES = 20
#: A model with families may take this many of their members whatever its
#: written terms' count: five samples a term would leave a counting sort
#: with five written terms and 26 samples none, and its table outgrowing
#: a cache, at 2 to 5 times its prediction there, unseen.
FAMILY_TERMS = 2
#: Points timed at two settings or more that a start's choices are judged on, at least.
CHOICE_POINTS = 20
#: Where a parameter's settings were timed side by side, a term that no error
#: test lets in is taken when its held-out choices among them
#: (:func:`held_out_penalty`) lose at most 1 - CHOICE_GAIN of the penalty the
#: model's lost, and CHOICE_FLOOR less in all, while its error is not clearly
#: worse.  A radix sort's digit widths differ most where its samples are
#: fewest and noisiest (a million keys and more, a pass's scatter at 2**10
#: write streams 1.5 to 2 times its cost at 2**8): a term there lowers the
#: error over every sample by 3%, not clearly, and the mean penalty of the
#: held-out choices from 1.9% to 0.7%.  On a Zen 4 build's samples
#: (tests/data/sort-zen4/samples-3.jsonl) the wide digits' cost above 2**19
#: keys cut it from 3.1% to 1.8%, and its choices' expected penalty over
#: two exhaustive evaluations from 6.2% to 2.1%; asked to halve it, the
#: search left the term out.  Of thirteen builds of that host, replayed
#: against four evaluations, three chose better with 0.4 than with 0.5 and
#: none worse; at 0.3, two of those chose worse.
CHOICE_GAIN = 0.4
CHOICE_FLOOR = 0.005
#: Factors a discovered term may multiply onto its written term.
MAX_DEGREE = 2


def factor_values(factor: Factor, variables: Mapping[str, np.ndarray]) -> np.ndarray:
    """The factor's value at each sample."""
    x = np.asarray(variables[factor.variable], dtype=float)
    if factor.log:
        x = np.log2(np.maximum(x, 1e-300))
    if factor.kind == "step":
        return (x >= factor.knot).astype(float)
    if factor.kind == "tent":
        return np.maximum(0.0, 1.0 - np.abs(x - factor.knot) / factor.width)
    return np.maximum(0.0, x - factor.knot)


@dataclass(frozen=True)
class FamilyCandidates:
    """A term of the description with one or two families
    (``n * hinges(log2(n))``, ``n * steps(digit) * hinges(log2(n))``): its
    base term's text and values, and per family its factor at each knot and
    its expression's values.  Its members, the base times a factor of each
    family, are offered whether or not automatic discovery runs."""

    base: str  # the text of the base term, "1" for none
    base_values: np.ndarray
    factors: tuple[tuple[Factor, ...], ...]  # per family, its factors
    values: tuple[np.ndarray, ...]  # per family, its expression on the samples

    @property
    def members(self) -> list[tuple[Factor, ...]]:
        return list(itertools.product(*self.factors))


def family_factors(kind: str, variable: str, values: np.ndarray, knots: Sequence[float] | None) -> list[Factor]:
    """A family's factors: at the written knots, or where the samples tell
    values apart (as :func:`factors_of` places them, in the expression's own
    units).  A family of hinges at written knots offers, beside a hinge at
    each, a tent at each knot between two others (:func:`tents`): the author
    named the values at which the cost may differ."""
    shape = "step" if kind == "steps" else "hinge"
    if knots:
        hinges = [Factor(shape, variable, float(k), False) for k in knots]
        return hinges + (tents(variable, knots) if shape == "hinge" else [])
    distinct = np.unique(np.asarray(values, dtype=float))
    if distinct.size < 2 * STEP_SIDE_VALUES:
        return []
    if np.all(distinct == np.round(distinct)) and distinct[-1] - distinct[0] <= MOST_STEPS:
        chosen = distinct[STEP_SIDE_VALUES:distinct.size - STEP_SIDE_VALUES + 1]
    elif distinct.size < 2 * SIDE_VALUES:
        return []
    else:
        chosen = np.array(_size_knots(distinct))
    return [Factor(shape, variable, float(k), False) for k in chosen]


def tents(variable: str, knots: Sequence[float]) -> list[Factor]:
    """A tent at each of the ``knots`` between two others, reaching to the
    nearer of them.  A hinge changes a slope for good; a cost that differs
    near one value only (a scatter slower at 6-bit digits than at 5 or 8)
    takes two or three hinges, each of which alone fits worse than none and
    is never chosen first, but one tent."""
    ordered = sorted(float(k) for k in knots)
    return [Factor("tent", variable, ordered[i], False, min(ordered[i] - ordered[i - 1], ordered[i + 1] - ordered[i]))
            for i in range(1, len(ordered) - 1)]


@dataclass
class Discovery:
    """What :func:`discover` found, and how the cross-validated error went."""

    terms: list[Discovered] = field(default_factory=list)
    columns: dict[str, np.ndarray] = field(default_factory=dict)  # text → values on the fitting samples
    error_before: float = math.nan  # cross-validated MRE of the written terms alone
    error_after: float = math.nan  # with the discovered terms
    candidates: int = 0  # offered after screening, at the first step


def factors_of(variables: Mapping[str, np.ndarray], integers: Sequence[str] = ()) -> list[Factor]:
    """Every factor the samples can tell: steps of the integer variables of
    a narrow range (named in ``integers``, or found integral) at each value
    with STEP_SIDE_VALUES values on each side, and steps and hinges of the
    size-like variables at knots every KNOT_STEP octaves, as well supported,
    and steps in the narrow gaps a bisection leaves (_narrow_gap_knots)."""
    found: list[Factor] = []
    for name, values in variables.items():
        x = np.asarray(values, dtype=float)
        distinct = np.unique(x)
        if distinct.size < 2 * STEP_SIDE_VALUES:
            continue
        integral = name in integers or bool(np.all(distinct == np.round(distinct)))
        if integral and distinct[-1] - distinct[0] <= MOST_STEPS:  # a digit width, a key width, ranks
            for knot in distinct[STEP_SIDE_VALUES:distinct.size - STEP_SIDE_VALUES + 1]:
                found.append(Factor("step", name, float(knot), False))
        elif distinct.size >= 2 * SIDE_VALUES and np.all(x > 0) and distinct[-1] >= SIZE_SPAN * distinct[0]:
            logs = np.unique(np.log2(distinct))
            knots = _size_knots(logs)
            for knot in knots:
                found.append(Factor("step", name, knot, True, whole=integral))
                found.append(Factor("hinge", name, knot, True, whole=integral))
            for knot in _narrow_gap_knots(logs):
                if knot not in knots:
                    found.append(Factor("step", name, knot, True, whole=integral))
            found += _edge_steps(name, x, distinct, integral)
    return found


def _edge_steps(name: str, values: np.ndarray, distinct: np.ndarray, whole: bool) -> list[Factor]:
    """Steps of a size-like variable between its least value and the next,
    and between its largest and the one below, where the samples hold that
    value EDGE_SAMPLES times or more.  A library's smallest call may take
    another path (an all-reduce of one double took 1.8 µs and of two 2.7 µs
    under MPICH, on two ranks); a knot needs SIDE_VALUES values on each
    side, so no other step can single it out.  A step, not a hinge: one
    value has no slope."""
    found = []
    for edge, low, high in ((distinct[0], distinct[0], distinct[1]), (distinct[-1], distinct[-2], distinct[-1])):
        if np.count_nonzero(values == edge) >= EDGE_SAMPLES:
            found.append(Factor("step", name, _round_knot(math.log2(low), math.log2(high)), True, whole=whole))
    return found


def _size_knots(logs: np.ndarray) -> list[float]:
    """Knots in log2 of a size-like variable: the grid every KNOT_STEP, each
    moved to (near) the middle of the gap between the sampled values around
    it.  The samples cannot tell where in a gap a cost changes; the middle
    is at most half a gap from where it does."""
    knots: list[float] = []
    first = math.ceil(logs[SIDE_VALUES - 1] / KNOT_STEP) * KNOT_STEP
    for grid in np.arange(first, logs[-SIDE_VALUES] + 1e-9, KNOT_STEP):
        above = int(np.searchsorted(logs, grid, side="left"))  # logs[above - 1] < grid <= logs[above]
        if above < SIDE_VALUES or logs.size - above < SIDE_VALUES:
            continue
        knot = _round_knot(logs[above - 1], logs[above])
        if not knots or knot != knots[-1]:
            knots.append(knot)
    return knots


def _narrow_gap_knots(logs: np.ndarray) -> list[float]:
    """Knots in the gaps between the sorted sampled ``logs`` narrower than
    GAP_WIDTH and than half their median gap, SIDE_VALUES values on each
    side, each near the gap's middle: where the samples lie closer than
    elsewhere, as a bisection leaves them.  Sizes sampled closely
    everywhere (a fine grid, random sizes) get none: a step in every gap
    would be a step at every sample."""
    gaps = np.diff(logs)
    if gaps.size == 0:
        return []
    narrow = min(GAP_WIDTH, float(np.median(gaps)) / 2)
    return sorted({_round_knot(logs[below], logs[below + 1])
                   for below in range(SIDE_VALUES - 1, logs.size - SIDE_VALUES) if gaps[below] < narrow})


def _round_knot(low: float, high: float) -> float:
    """The knot for a gap (low, high]: the multiple of a quarter octave (else
    of 1/64) nearest its middle, so that the knots read as 2^18.25, not
    2^18.2371."""
    middle = (low + high) / 2
    for unit in (0.25, 1 / 64):
        knot = round(middle / unit) * unit
        for candidate in sorted({knot, knot - unit, knot + unit}, key=lambda k: abs(k - middle)):
            if low < candidate <= high:
                return float(candidate)
    return float(middle)


def _whitened_design(columns: Sequence[np.ndarray], weights: np.ndarray) -> np.ndarray:
    return np.column_stack(columns) / weights[:, None]


def _unit_columns(design: np.ndarray) -> np.ndarray:
    """The design with each nonzero column scaled to unit norm: its span is
    the same, and its conditioning no longer holds the terms' units."""
    return design / _column_norms(design)


def _column_norms(design: np.ndarray) -> np.ndarray:
    """Each column's norm, 1 for a zero column (:func:`_unit_columns` divides by them)."""
    scale = np.linalg.norm(design, axis=0)
    scale[scale == 0] = 1.0
    return scale


def _folds(count: int) -> list[slice]:
    """Deterministic folds that interleave the samples (taken in nest order):
    every FOLDS-th, a strided view of the design rather than a copy."""
    folds = min(FOLDS, count)
    return [slice(k, None, folds) for k in range(folds)]


def held_out_predictions(columns: Sequence[np.ndarray], times: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each sample's prediction by a fit to the other folds' samples
    (weighted as the fit is).

    Each fold's fit solves its normal equations, the whole design's Gram
    matrix less the fold's, by SVD with the fit's tolerance (so dependent
    columns are harmless): one pass over the samples for all folds.  The
    columns are scaled to unit norm first, which the solution does not
    depend on and the conditioning does."""
    return HeldOutBase(columns, times, weights).predictions()


class HeldOutBase:
    """A model's columns ready for candidates of one more term to join: the
    whitened design scaled as :func:`held_out_predictions` scales it, and
    each fold's Gram matrix and moment without that fold.  A search weighs
    eight candidates beside the same terms at each step; each one's fit
    then costs its own column's products and the solve, not the whole
    design's again (the sort library's fit spent half its time there)."""

    def __init__(self, columns: Sequence[np.ndarray], times: np.ndarray, weights: np.ndarray):
        self.design = _unit_columns(_whitened_design(columns, weights))
        self.target = times / weights
        self.weights = weights
        self.folds = _folds(times.size)
        self.parts = [self.design[held] for held in self.folds]
        gram, moment = self.design.T @ self.design, self.design.T @ self.target
        self.grams = np.stack([gram - part.T @ part for part in self.parts])
        self.moments = np.stack([moment - part.T @ self.target[held]
                                 for part, held in zip(self.parts, self.folds, strict=True)])

    def predictions(self) -> np.ndarray:
        """Each sample's held-out prediction by the base's columns alone (:func:`held_out_predictions`)."""
        betas = _solve_small(self.grams, self.moments)
        predicted = np.empty_like(self.target)
        for held, part, beta in zip(self.folds, self.parts, betas, strict=True):
            predicted[held] = (part @ beta) * self.weights[held]
        return predicted

    def predictions_with(self, extra: np.ndarray) -> np.ndarray:
        """Each sample's held-out prediction (:func:`held_out_predictions`) by
        the base's columns and one more, for each row of ``extra`` (one
        column a row): a row of predictions each."""
        added = _unit_columns((extra / self.weights).T).T
        count, size = added.shape[0], self.design.shape[1]
        crossed, squares, moved = added @ self.design, np.einsum("ij,ij->i", added, added), added @ self.target
        grams = np.empty((count, len(self.folds), size + 1, size + 1))
        moments = np.empty((count, len(self.folds), size + 1))
        grams[:, :, :size, :size] = self.grams
        moments[:, :, :size] = self.moments
        for fold, (held, part) in enumerate(zip(self.folds, self.parts, strict=True)):
            left_out = added[:, held]
            cross = crossed - left_out @ part
            grams[:, fold, :size, size] = cross
            grams[:, fold, size, :size] = cross
            grams[:, fold, size, size] = squares - np.einsum("ij,ij->i", left_out, left_out)
            moments[:, fold, size] = moved - left_out @ self.target[held]
        betas = _solve_small(grams, moments)
        predicted = np.empty((count, self.target.size))
        for fold, (held, part) in enumerate(zip(self.folds, self.parts, strict=True)):
            beta = betas[:, fold]
            predicted[:, held] = (beta[:, :size] @ part.T + beta[:, size:] * added[:, held]) * self.weights[held]
        return predicted


def held_out_errors(columns: Sequence[np.ndarray], times: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """log(1 + |relative error|) of each sample's held-out prediction (:func:`held_out_predictions`)."""
    return log_errors(times, held_out_predictions(columns, times, weights))


def log_errors(times: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """log(1 + |relative error|) of each prediction of ``times``."""
    return np.log1p(np.abs((times - predicted) / times))


def held_out_penalty(predicted: np.ndarray, times: np.ndarray, choices: Sequence[tuple[Hashable, Hashable]]) -> float:
    """The mean penalty of choosing by the held-out ``predicted`` times among
    the settings measured at each point: ``choices`` gives each sample's
    point and setting; at a point with two settings or more, the setting
    of least mean prediction is chosen, and its median time over the
    fastest setting's, less one, is its penalty.  NaN where fewer than
    CHOICE_POINTS points have two settings: a few points timed at two
    settings by chance say nothing of how a parameter is chosen."""
    return ChoiceSets(times, choices).penalty(predicted)


class ChoiceSets:
    """The settings timed at each point (:func:`held_out_penalty`), grouped
    once: a search judges the choices of hundreds of models on the same
    samples, and only their predictions differ."""

    def __init__(self, times: np.ndarray, choices: Sequence[tuple[Hashable, Hashable]]):
        settings: dict[Hashable, dict[Hashable, list[int]]] = {}
        for index, (point, setting) in enumerate(choices):
            settings.setdefault(point, {}).setdefault(setting, []).append(index)
        timed = [groups for groups in settings.values() if len(groups) >= 2]
        self.enough = len(timed) >= CHOICE_POINTS
        rows, group, point_of, measured, fastest = [], [], [], [], []
        for point, groups in enumerate(timed):
            medians = [float(np.median(times[members])) for members in groups.values()]
            fastest.append(min(medians))
            for members, median in zip(groups.values(), medians, strict=True):
                rows += members
                group += [len(measured)] * len(members)
                point_of.append(point)
                measured.append(median)
        self.rows = np.array(rows, dtype=np.intp)
        self.group = np.array(group, dtype=np.intp)
        self.counts = np.bincount(self.group, minlength=len(measured)).astype(float)
        self.point_of = np.array(point_of, dtype=np.intp)
        self.measured = np.array(measured)
        self.fastest = np.array(fastest)

    def penalty(self, predicted: np.ndarray) -> float:
        """The mean penalty of the settings the ``predicted`` times choose
        (the first of equal predictions); NaN without enough points."""
        if not self.enough:
            return math.nan
        means = np.bincount(self.group, weights=predicted[self.rows], minlength=self.measured.size) / self.counts
        order = np.lexsort((np.arange(means.size), means, self.point_of))
        chosen = order[np.r_[True, self.point_of[order][1:] != self.point_of[order][:-1]]]
        return float(np.mean(self.measured[chosen] / self.fastest[self.point_of[chosen]] - 1))


def _solve_small(gram: np.ndarray, moment: np.ndarray) -> np.ndarray:
    """The minimum-norm solutions of gram · β = moment, for a stack of
    Gram matrices and moments (one decomposition call for all folds);
    directions whose singular value is below GRAM_TOLERANCE of the largest
    (the design's below its square root) are left out, as rounding would
    make them."""
    u, singular, vt = np.linalg.svd(gram, hermitian=True)
    largest = singular[..., :1] if singular.shape[-1] else np.zeros(singular.shape[:-1] + (1,))
    keep = singular > GRAM_TOLERANCE * largest
    inverse = np.where(keep, 1.0 / np.where(keep, singular, 1.0), 0.0)
    projected = (np.swapaxes(u, -1, -2) @ moment[..., None])[..., 0]
    return (np.swapaxes(vt, -1, -2) @ (inverse * projected)[..., None])[..., 0]


def cross_validated_error(columns: Sequence[np.ndarray], times: np.ndarray, weights: np.ndarray) -> float:
    """log of the cross-validated MRE (the mean of :func:`held_out_errors`)."""
    return float(np.mean(held_out_errors(columns, times, weights)))


def _clearly_better(new: np.ndarray, old: np.ndarray) -> bool:
    """Whether the held-out errors ``new`` beat ``old`` by more than chance:
    by LARGE_GAIN of the old error, or by MIN_GAIN and SIGNIFICANCE standard
    errors of the mean difference, sample by sample.  A term that fits the
    noise of some folds lowers the mean a little and not consistently; a
    cost that steps at one size lowers it a lot, at the few samples near
    the step."""
    difference = old - new
    gain = float(np.mean(difference))
    if gain > LARGE_GAIN * float(np.mean(old)):
        return True
    spread = float(np.std(difference, ddof=1)) / math.sqrt(difference.size) if difference.size > 1 else 0.0
    return gain > SIGNIFICANCE * spread and gain > MIN_GAIN * float(np.mean(old))


def discover(written: Mapping[str, np.ndarray], times: np.ndarray, variables: Mapping[str, np.ndarray], *,
             integers: Sequence[str] = (), relative: bool = True, most: int | None = None,
             families: Sequence[FamilyCandidates] = (), automatic: bool = True,
             shortlist: int | None = None, choices: Sequence[tuple[Hashable, Hashable]] | None = None) -> Discovery:
    """Terms to add to the ``written`` terms (text → values, the constant as
    "1" when the model has one) so that they predict ``times`` better, found
    from the ``variables`` (name → values) of the same samples, and among the
    members of the ``families`` the description writes.  Without
    ``automatic``, only family members are candidates.  ``shortlist``: the
    candidates cross-validated at each step (default SHORTLIST; fewer search faster).

    The search runs from the best first term, then again from each of the
    next ``shortlist`` - 1 (a greedy first choice can be a hinge between two
    steps that later terms cannot undo); another start's result replaces the
    one kept so far when it is clearly better (:func:`_clearly_better`), or,
    given each sample's point and parameter setting (``choices``) and no
    more terms, when it chooses better among the settings timed at the same
    points (``_Search.preferred``).  The families' tents join once that
    search is done (:func:`_polished`).  Last, the forward steps run again
    from the terms kept: exchange, knot refinement and the choice among the
    starts move terms after the forward steps have stopped, and a candidate
    may then pass the test that lets a term in.  On a Zen 4 build's radix
    sort samples (tests/data/sort-zen4/samples-2.jsonl) the counters' cost
    rising with the keys (``bins * iter * max(0, log2(n) - 12)``) ranked
    first there, 2.2% off the held-out error at t = 2.07, and was left
    out; taken, the build's replayed one-rank choices went from 93.5% to
    95.75% right on average over four exhaustive evaluations."""
    shortlist = shortlist or SHORTLIST
    times = np.asarray(times, dtype=float)
    found_by = variables if automatic else {}
    offers_tents = any(f.kind == "tent" for family in families for factors in family.factors for f in factors)
    plain = [replace(family, factors=tuple(tuple(f for f in factors if f.kind != "tent")
                                           for factors in family.factors)) for family in families] \
        if offers_tents else families
    search = _Search(written, times, found_by, integers, relative, most, plain, shortlist, choices)
    result = Discovery(error_before=search.error_of([]))
    if not written or not (search.factors or search.members) or search.limit == 0:
        return result
    firsts = search.ranked([])
    result.candidates = search.offered([])
    found, errors = _searched(search, firsts)
    if offers_tents:
        search, found, errors = _polished(_Search(written, times, found_by, integers, relative, most, families,
                                                  shortlist, choices), search, found, errors)
    more = search.forward(list(found))  # the terms kept satisfy the rule that stops the forward steps
    if more != found:
        found, errors = more, search.errors_of(more)
    result.terms = found
    result.columns = {term.text: search.column(term) for term in found}
    result.error_after = float(np.mean(errors))
    return result


def _polished(wider: _Search, search: _Search, found: list[Discovered],
              errors: np.ndarray) -> tuple[_Search, list[Discovered], np.ndarray]:
    """The terms ``found`` by ``search``, improved by a search over the
    ``wider`` candidates (the families' tents too) that starts from them:
    kept only where its held-out error is lower.  A search from scratch
    over the wider candidates can end worse than one over fewer (a greedy
    choice that the tents attract early) and costs as much again; one pass
    from the result adds a tent where the samples show one, and exchanges a
    term for one where that fits better.  The search that made the terms kept."""
    polished = wider.run(list(found))
    polished_errors = wider.errors_of(polished)
    if _lower(float(np.mean(polished_errors)), float(np.mean(errors))):
        return wider, polished, polished_errors
    return search, found, errors


def _searched(search: _Search, firsts: Sequence[Discovered]) -> tuple[list[Discovered], np.ndarray]:
    """The terms of the best of the searches from each of the ``firsts``
    (the ranked candidates for a first term), and their held-out errors."""
    found = search.run([])
    if not found and search.limit >= 2:
        found = search.run(search.best_pair(firsts[:PAIRS]))
    errors = search.errors_of(found)
    for first in firsts[1:search.shortlist]:
        other = search.run([first])
        other_errors = search.errors_of(other)
        if search.preferred(other, other_errors, found, errors):
            found, errors = other, other_errors
    return found, errors


class _Search:
    """Forward selection, exchange, knot refinement and pruning over one
    model's candidates; a model is the written terms plus a list of
    discovered terms."""

    def __init__(self, written: Mapping[str, np.ndarray], times: np.ndarray, variables: Mapping[str, np.ndarray],
                 integers: Sequence[str], relative: bool, most: int | None,
                 families: Sequence[FamilyCandidates] = (), shortlist: int = SHORTLIST,
                 choices: Sequence[tuple[Hashable, Hashable]] | None = None):
        self.shortlist = shortlist
        self.choice_sets = ChoiceSets(times, choices) if choices else None
        self.written = {name: np.asarray(values, dtype=float) for name, values in written.items()}
        self.times = times
        self.weights = times / times.mean() if relative else np.ones_like(times)
        self.variables = variables
        # Automatic factors, offered to every term, need MIN_SAMPLES; a
        # family's, offered to its base only, are the author's and need
        # FAMILY_SAMPLES.
        enough = times.size >= MIN_SAMPLES
        self.factors = {factor: factor_values(factor, variables)
                        for factor in (factors_of(variables, integers) if enough else [])}
        self.values = dict(self.factors)
        # the factors' values one a row: a term's offers are its column times each row
        self._factor_rows = np.array(list(self.factors.values())).reshape(len(self.factors), times.size)
        self.bases = dict(self.written)
        self.members: list[Discovered] = []
        for family in families:
            self.bases.setdefault(family.base, np.asarray(family.base_values, dtype=float))
            for factors, values in zip(family.factors, family.values, strict=True):
                for factor in factors:
                    self.values.setdefault(factor, factor_values(factor, {factor.variable: values}))
            self.members += [Discovered(family.base, member) for member in family.members]
        count = len(self.written)
        some = times.size >= (MIN_SAMPLES if not self.members else FAMILY_SAMPLES)
        limit = max(0, min(3 * count + 6, times.size // 5 - count))
        if self.members:  # the author says these steps exist: a few samples may show where
            limit = max(limit, FAMILY_TERMS)
        self.limit = most if most is not None else limit * some
        self._columns: dict[Discovered, np.ndarray] = {}
        self._marks: dict[Discovered, bytes | None] = {}
        # Each step offers the members and each held term's products again:
        # their terms, fingerprints and weighted columns are made once
        # (hashing a term is the search's most frequent operation otherwise,
        # and stacking the columns its largest copy).
        self._offers: dict[Discovered | None, tuple[list[Discovered], np.ndarray, np.ndarray, np.ndarray]] = {}
        self._mark_ids: dict[bytes, int] = {}
        # The starts, exchanges and refinements come back to the same models
        # again and again: each one's held-out errors and ranked candidates
        # are computed once.
        self._errors: dict[tuple[Discovered, ...], np.ndarray] = {}
        self._predictions: dict[tuple[Discovered, ...], np.ndarray] = {}
        self._penalties: dict[tuple[Discovered, ...], float] = {}
        self._ranked: dict[tuple[Discovered, ...], tuple[list[Discovered], int]] = {}
        self._meetings: dict[Discovered | None, dict[str | Discovered | None, np.ndarray]] = {}
        self._written_marks = [_fingerprint(column) for column in self.written.values()]

    def column(self, term: Discovered) -> np.ndarray:
        if term not in self._columns:
            column = self.bases[term.base]
            for factor in term.factors:
                column = column * self.values[factor]
            self._columns[term] = column
        return self._columns[term]

    def _mark(self, term: Discovered) -> bytes | None:
        """The term's column's fingerprint (None: the column is constant),
        computed once: the same candidates come up at every step."""
        self._mark_all([term])
        return self._marks[term]

    def _mark_all(self, terms: Sequence[Discovered], columns: np.ndarray | None = None) -> None:
        """The fingerprints of the terms' columns not taken yet (None for a
        constant column, else the bytes :func:`_fingerprint` makes), in one
        pass over a matrix of the columns (``columns``: the terms', one a
        row, when at hand): a term offers a few hundred candidates, and
        their fingerprints one by one took a fifth of a search."""
        missing = [k for k, term in enumerate(terms) if term not in self._marks]
        if not missing:
            return
        columns = columns[missing] if columns is not None else np.array([self.column(terms[k]) for k in missing])
        missing = [terms[k] for k in missing]
        constant = np.ptp(columns, axis=1) == 0
        scale = np.max(np.abs(columns), axis=1)
        normalized = np.round(columns / np.where(scale > 0, scale, 1.0)[:, None], 9)
        for term, flat, row in zip(missing, constant, normalized, strict=True):
            self._marks[term] = None if flat else row.tobytes()

    def offers(self, parent: Discovered | None) -> tuple[list[Discovered], np.ndarray, np.ndarray, np.ndarray]:
        """The candidates a held term offers, their fingerprints (as
        ``_mark_id`` numbers them), their columns divided by the weights,
        one a row, and those rows' squared norms: the term times a factor of
        another variable (None: the family members)."""
        found = self._offers.get(parent)
        if found is None:
            if parent is None or len(parent.factors) >= MAX_DEGREE:
                terms = self.members if parent is None else []
                columns = np.array([self.column(term) for term in terms]).reshape(len(terms), self.times.size)
            else:  # the parent's column times each factor's, as column() multiplies them
                held = {f.variable for f in parent.factors}
                picked = [k for k, factor in enumerate(self.factors) if factor.variable not in held]
                factors = list(self.factors)
                terms = [Discovered(parent.base, (*parent.factors, factors[k])) for k in picked]
                columns = self.column(parent) * self._factor_rows[picked]
                for term, column in zip(terms, columns, strict=True):
                    self._columns.setdefault(term, column)
            rows = columns / self.weights
            self._mark_all(terms, columns)
            marks = np.array([self._mark_id(self._marks[term]) for term in terms], dtype=np.intp)
            found = self._offers[parent] = (terms, marks, rows, np.einsum("ij,ij->i", rows, rows))
        return found

    def _mark_id(self, mark: bytes | None) -> int:
        """A small integer for each distinct fingerprint, -1 for a constant column."""
        return -1 if mark is None else self._mark_ids.setdefault(mark, len(self._mark_ids))

    def columns(self, found: Sequence[Discovered]) -> list[np.ndarray]:
        return [*self.written.values(), *(self.column(term) for term in found)]

    def errors_of(self, found: Sequence[Discovered]) -> np.ndarray:
        """log(1 + |relative error|) of each sample's held-out prediction (:func:`held_out_errors`)."""
        key = tuple(found)
        errors = self._errors.get(key)
        if errors is None:
            predicted = self.predictions_of(found)
            errors = self._errors[key] = log_errors(self.times, predicted)
        return errors

    def predictions_of(self, found: Sequence[Discovered]) -> np.ndarray:
        """Each sample's held-out prediction (:func:`held_out_predictions`),
        which both the error and the choices' penalty are judged by."""
        key = tuple(found)
        predicted = self._predictions.get(key)
        if predicted is None:
            predicted = self._predictions[key] = held_out_predictions(self.columns(found), self.times, self.weights)
        return predicted

    def weigh(self, others: Sequence[Discovered], candidates: Sequence[Discovered], at: int) -> None:
        """The held-out predictions of the terms ``others`` with each of the
        ``candidates`` put in at position ``at``, those not known yet, in one
        pass over the samples (:class:`HeldOutBase`)."""
        missing: dict[tuple[Discovered, ...], Discovered] = {}
        for candidate in candidates:
            key = (*others[:at], candidate, *others[at:])
            if candidate not in others and key not in self._predictions:
                missing.setdefault(key, candidate)
        if len(missing) < 2 or not self.written:
            return
        base = HeldOutBase(self.columns(others), self.times, self.weights)
        predicted = base.predictions_with(np.array([self.column(term) for term in missing.values()]))
        for key, row in zip(missing, predicted, strict=True):
            self._predictions[key] = row

    def penalty_of(self, found: Sequence[Discovered]) -> float:
        """The mean penalty of the choices the terms' held-out predictions make
        among the settings measured at each point (:func:`held_out_penalty`);
        NaN without ``choices``."""
        key = tuple(found)
        if key not in self._penalties:
            self._penalties[key] = math.nan if self.choice_sets is None else \
                self.choice_sets.penalty(self.predictions_of(found))
        return self._penalties[key]

    def preferred(self, other: Sequence[Discovered], other_errors: np.ndarray, found: Sequence[Discovered],
                  errors: np.ndarray) -> bool:
        """Whether the terms ``other`` of another start replace those ``found``
        so far.  Given the samples' points and settings (``choices``), terms
        no more than those found are judged by how they choose a parameter
        among the settings timed at the same points, and replace them when
        they choose better and their error is not clearly worse; else, and
        with more terms, by the error alone: when clearly better
        (:func:`_clearly_better`).  A parameter is chosen where its settings
        differ by what the samples of few points show (a radix sort's wide
        digit at a million keys and more), which the mean error over every
        sample hardly weighs: on 16 sort builds of a Zen 4 host, refitted and
        replayed against two exhaustive evaluations, the one-rank choices were
        right at 0.9 and 0.5 points more (expected penalty 1.98% -> 1.49% and
        1.90% -> 1.58%), the worst build's at 87.0% -> 94.5%, and those of both
        stored corpora as often or more (tests/data)."""
        if len(other) <= len(found):
            penalty, other_penalty = self.penalty_of(found), self.penalty_of(other)
            if math.isfinite(penalty) and math.isfinite(other_penalty):
                return _lower(other_penalty, penalty) and not _clearly_better(errors, other_errors)
        return _clearly_better(other_errors, errors)

    def error_of(self, found: Sequence[Discovered]) -> float:
        return float(np.mean(self.errors_of(found))) if self.written else math.nan

    def ranked(self, found: Sequence[Discovered]) -> list[Discovered]:
        """The best candidates for one more term (as many as a step
        weighs: the shortlist, PAIRS), by the share of the weighted residual
        each explains, most first: each term of the model (its written base
        and the factors it holds) times a factor of another variable;
        screened: not constant, not a duplicate of a column in or offered,
        not explained by the model's columns."""
        key = tuple(found)
        if key not in self._ranked:
            self._ranked[key] = self._screened_ranking(found)
        return self._ranked[key][0]

    def offered(self, found: Sequence[Discovered]) -> int:
        """How many candidates passed the screening beside the terms ``found`` (:meth:`ranked`)."""
        self.ranked(found)
        return self._ranked[tuple(found)][1]

    def _screened_ranking(self, found: Sequence[Discovered]) -> tuple[list[Discovered], int]:
        columns = self.columns(found)
        held = [Discovered(name, ()) for name in self.written] + list(found)
        offers = [self.offers(parent) for parent in [None, *held]]
        seen = np.zeros(len(self._mark_ids), dtype=bool)
        for mark in [self._mark(term) for term in found] + self._written_marks:
            if mark in self._mark_ids:
                seen[self._mark_ids[mark]] = True
        offered: list[Discovered] = []
        blocks = []
        for parent, (terms, marks, _, norms) in zip([None, *held], offers, strict=True):
            # each fingerprint's first offer, if not in the model
            usable = np.flatnonzero(marks >= 0)
            usable = usable[~seen[marks[usable]]]
            _, first = np.unique(marks[usable], return_index=True)
            picked = usable[np.sort(first)]
            seen[marks[picked]] = True
            offered += [terms[i] for i in picked]
            if picked.size:
                blocks.append((*self._products(parent, [*self.written, *found]), norms, picked))
        return _rank(offered, blocks, columns, self.times, self.weights, max(self.shortlist, PAIRS))

    def _products(self, parent: Discovered | None, keys: Sequence[str | Discovered]) -> tuple[np.ndarray, np.ndarray]:
        """The products of the parent's offers (whitened, one a row) with the
        model's whitened columns (``keys``: the written terms' names and the
        terms found; one column each) and with the whitened times.  The
        model grows by a term at a time, and a ranking needs its products
        with every offer: each is computed once."""
        _, _, rows, _ = self.offers(parent)
        known = self._meetings.setdefault(parent, {})
        missing = [key for key in keys if key not in known]
        if missing:
            columns = [self.written[key] if isinstance(key, str) else self.column(key) for key in missing]
            for key, product in zip(missing, (rows @ (np.column_stack(columns) / self.weights[:, None])).T,
                                    strict=True):
                known[key] = product
        if None not in known:
            known[None] = rows @ (self.times / self.weights)
        return np.column_stack([known[key] for key in keys]), known[None]

    def best_pair(self, firsts: Sequence[Discovered]) -> list[Discovered]:
        """Two terms that together beat the written ones where no one term
        did (PAIRS): the best of each of ``firsts`` with each of the PAIRS
        candidates that rank best beside it, taken only when it lowers the
        held-out error by LARGE_GAIN at least.  Thirty-six pairs are
        thirty-six chances for the noise: on smooth synthetic costs the best
        pair passed the test a single term must pass in 3 of 20 seeded runs,
        lowering the error by 8-13%; the all-reduce's pairs lowered it by 23%."""
        base = self.errors_of([])
        best: tuple[np.ndarray, list[Discovered]] | None = None
        for first in firsts:
            seconds = self.ranked([first])[:PAIRS]
            self.weigh([first], seconds, 1)
            for second in seconds:
                trial = self.errors_of([first, second])
                if best is None or _lower(float(np.mean(trial)), float(np.mean(best[0]))):
                    best = (trial, [first, second])
        if best is None or float(np.mean(base - best[0])) <= LARGE_GAIN * float(np.mean(base)):
            return []
        return best[1]

    def run(self, start: list[Discovered]) -> list[Discovered]:
        found = self.forward(list(start))
        found = self.exchange(found)
        found = self.refine(found)
        found = self.prune(found)
        return self.refine(found)

    def forward(self, found: list[Discovered]) -> list[Discovered]:
        """Add the best of the ``shortlist`` candidates that explain the most
        residual while it is clearly better (:func:`_clearly_better`); when
        none is, the one among them that chooses best, if it chooses clearly
        better (:meth:`chooses_better`)."""
        errors = self.errors_of(found)
        while len(found) < self.limit:
            best = None
            shortlist = self.ranked(found)[:self.shortlist]
            self.weigh(found, shortlist, len(found))
            for term in shortlist:
                trial = self.errors_of([*found, term])
                if best is None or _lower(float(np.mean(trial)), float(np.mean(best[0]))):
                    best = (trial, term)
            if best is None:
                break
            if _clearly_better(best[0], errors):
                added = best[1]
            else:
                choosing = [term for term in shortlist if self.chooses_better([*found, term], found)]
                if not choosing:
                    break
                added = min(choosing, key=lambda term: self.penalty_of([*found, term]))
            found.append(added)
            errors = self.errors_of(found)
        return found

    def chooses_better(self, new: Sequence[Discovered], old: Sequence[Discovered]) -> bool:
        """Whether the terms ``new`` choose among the settings timed side by
        side clearly better than ``old`` (CHOICE_GAIN, CHOICE_FLOOR) and their
        error is not clearly worse.  False without ``choices``, or where too
        few points were timed at two settings to tell (:func:`held_out_penalty`)."""
        if self.choice_sets is None:
            return False
        before, after = self.penalty_of(old), self.penalty_of(new)
        if not (math.isfinite(before) and math.isfinite(after)):
            return False
        return (after < (1 - CHOICE_GAIN) * before and before - after > CHOICE_FLOOR
                and not _clearly_better(self.errors_of(old), self.errors_of(new)))

    def exchange(self, found: list[Discovered]) -> list[Discovered]:
        """Take each discovered term out in turn and put in the candidate that
        the others make best, when that lowers the cross-validated error (two
        rounds: one change can enable another)."""
        error = self.error_of(found)
        for k in [k for _ in range(2) for k in range(len(found))]:
            others = found[:k] + found[k + 1:]
            found, error = self.replaced(found, k, self.ranked(others)[:self.shortlist], error)
        return found

    def replaced(self, found: list[Discovered], k: int, candidates: Sequence[Discovered], error: float,
                 first: bool = False) -> tuple[list[Discovered], float]:
        """``found`` with its k-th term replaced by each of ``candidates`` in
        turn where that lowers the cross-validated ``error`` (with ``first``,
        by the first that does): the terms and their error."""
        self.weigh(found[:k] + found[k + 1:], candidates, k)
        for candidate in candidates:
            if candidate in found:
                continue
            trial = found[:k] + [candidate] + found[k + 1:]
            trial_error = self.error_of(trial)
            if _lower(trial_error, error):
                error, found = trial_error, trial
                if first:
                    break
        return found, error

    def refine(self, found: list[Discovered]) -> list[Discovered]:
        """Move each discovered factor to a neighbouring knot or the other
        kind while that lowers the cross-validated error."""
        error = self.error_of(found)
        improved, rounds = True, 0
        while improved and rounds < 4 * max(len(found), 1):
            improved, rounds = False, rounds + 1
            for k, term in enumerate(found):
                moves = [Discovered(term.base, term.factors[:i] + (other,) + term.factors[i + 1:])
                         for i, factor in enumerate(term.factors) for other in _neighbours(factor, self.values)]
                found, moved_error = self.replaced(found, k, moves, error, first=True)
                improved, error = improved or _lower(moved_error, error), moved_error
        return found

    def prune(self, found: list[Discovered]) -> list[Discovered]:
        """Remove, one at a time, each discovered term the others do not
        clearly need (the tests that let terms in), last found first, keeping
        the hierarchy (a term stays while a term built on it does)."""
        errors = self.errors_of(found)
        changed = True
        while changed and found:
            changed = False
            for k in range(len(found) - 1, -1, -1):
                if any(other.base == found[k].base and set(found[k].factors) < set(other.factors)
                       for other in found):
                    continue
                trial = found[:k] + found[k + 1:]
                trial_errors = self.errors_of(trial)
                if not _clearly_better(errors, trial_errors) and not self.chooses_better(found, trial):
                    errors, found, changed = trial_errors, trial, True
                    break
        return found


def _lower(new: float, old: float) -> bool:
    """Whether ``new`` is lower than ``old`` by more than rounding (TIES)."""
    return new < old - TIES * abs(old)


def _fingerprint(column: np.ndarray) -> bytes:
    """Equal for columns equal up to a positive scale (a duplicate offers nothing)."""
    scale = np.max(np.abs(column))
    return np.round(column / scale, 9).tobytes() if scale > 0 else b"zero"


def _rank(candidates: list[Discovered], blocks: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
          columns: Sequence[np.ndarray], times: np.ndarray, weights: np.ndarray,
          most: int) -> tuple[list[Discovered], int]:
    """The ``most`` candidates that explain the largest share of the weighted
    residual, most first, and how many the model's terms do not explain
    already (the others are left out).
    ``blocks``: per term that offers candidates, its offers' (whitened, one
    a row) products with the model's whitened ``columns`` and with the
    whitened times, their squared norms, and the rows of the candidates, in
    their order.  Products rather than the offers themselves: a ranking
    then costs a few operations per offer and term, not per sample too."""
    if not candidates or not blocks:
        return [], 0
    target = times / weights
    design = _whitened_design(columns, weights)
    scale = _column_norms(design)
    vectors, singular, turns = _spanning(design / scale)
    # The model's span has the orthonormal basis Q = D·T (D the whitened
    # design), so an offer b meets it as bᵀD·T, its part outside the span has
    # the squared norm |b|² - |Qᵀb|², and the residual (orthogonal to Q) meets
    # that part as it meets b: bᵀt - (Qᵀb)·(Qᵀt), t the whitened times.
    through = turns.T / singular / scale[:, None]
    along = vectors.T @ target
    totals, norms, met = [], [], []
    for products, meeting, total, picked in blocks:
        inside = products[picked] @ through
        totals.append(total[picked])
        norms.append(total[picked] - np.einsum("ij,ij->i", inside, inside))
        met.append(meeting[picked] - inside @ along)
    total, norm, meeting = np.concatenate(totals), np.concatenate(norms), np.concatenate(met)
    usable = norm > EXPLAINED * total
    scores = np.where(usable, meeting ** 2 / np.where(usable, norm, 1.0), -1.0)
    # Scores equal but for rounding keep the candidates' order (TIES).
    top = float(np.max(scores))
    if top > 0:
        scores = np.round(scores / (top * TIES)) * (top * TIES)
    count = int(np.count_nonzero(usable))
    if count > most:  # the same first ``most`` as a stable sort of all of them
        kept = np.flatnonzero(scores >= np.partition(scores, scores.size - most)[scores.size - most])
        order = kept[np.argsort(-scores[kept], kind="stable")][:most]
    else:
        order = np.argsort(-scores, kind="stable")
    return [candidates[i] for i in order if usable[i]], count


def _span(design: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the span of the design's columns, without the
    directions that rounding alone makes (as :func:`_solve_small` leaves
    them out).  A QR basis of dependent columns (``1`` and ``logP`` where
    one rank count was profiled) holds a direction made of rounding, which
    differs from one processor's BLAS kernels to another's, and the
    residual it leaves ranked the candidates differently on each."""
    return _spanning(_unit_columns(design))[0]


def _spanning(design: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The design's singular vectors and values (U, S, Vᵀ), but for the
    directions that rounding alone makes (:func:`_span`)."""
    vectors, singular, turns = np.linalg.svd(design, full_matrices=False)
    kept = singular > math.sqrt(GRAM_TOLERANCE) * singular[0] if singular.size else np.zeros(0, dtype=bool)
    return vectors[:, kept], singular[kept], turns[kept]


def _neighbours(factor: Factor, factors: Mapping[Factor, np.ndarray]) -> list[Factor]:
    """The factors of the same variable at the nearest knots (and the other
    kind at the same knot): where a greedy choice may have landed one off."""
    same = [f for f in factors if f.variable == factor.variable and f.log == factor.log]
    knots = sorted({f.knot for f in same})
    at = knots.index(factor.knot) if factor.knot in knots else -1
    near = {knots[i] for i in (at - 1, at + 1) if 0 <= i < len(knots)} | {factor.knot}
    return [f for f in same if f.knot in near and f != factor]
