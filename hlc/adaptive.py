"""Adaptive profiling: measure where the models are unsure, not everywhere.

The loop nest of a description is the domain and the grid of candidate
points; an adaptive profile measures a part of it, chosen in rounds:

1. a survey: the profiling program builds the arguments at every fitting
   point and writes their variables, their size in bytes and each
   implementation's candidate settings, timing nothing (``--survey``);
2. a space-filling start, 8 points per interface and rank count: the points
   that lie farthest from each other, each loop's values counted by rank,
   so that a log-scale loop is spread as evenly as an additive one, with
   the distance of a point whose arguments are larger than most shrunk by
   the square root of how much (no model predicts costs yet, and a start
   at the largest sizes alone could spend a small budget);
3. then, round after round, fit the samples so far (searching the terms
   again whenever the points have doubled, else refitting the
   coefficients of the terms found last); once the budget left affords
   every candidate at every grid point not measured yet, as the models
   predict them at the pace the rounds showed, take them all in one round
   (``WHOLE_GRID_FIRST``); until then add
   * the points measured before whose decision is uncertain between
     alternatives one of which was never timed there (the models of that
     round thought it could not win), at those alternatives only;
   * the points measured before where a searched parameter's optimum is
     uncertain, its predicted best setting and another within each other's
     bands, at those of the two never timed there (``unsure_optima``, up
     to OPTIMUM_SHARE of the round): an implementation far slower than
     the fastest is timed nowhere else, and its parameter is chosen from
     its model there all the same;
   * the points measured before where a searched parameter's two best
     settings, as measured there, lie within TIE of each other and one
     was measured once, at those two again (``measured_ties``, up to
     TIE_SHARE of the round): a block of timings is one moment, and a
     choice between two close settings should not rest on one moment each
     where a setting's cost moves by the second;
   * the points whose decision is uncertain: the fastest predicted
     alternative (implementations, and a parameterized implementation at
     each setting the dispatcher chooses among) lies within another's
     uncertainty, the confidence band of the predicted mean widened to the
     model's own error on its samples and to what its discovered terms may
     add or take away where the samples leave their knots loose
     (hlc.model.knots), and around a sample the model missed by half or
     more, to that miss (``Judge.misfit``) (thesis Fig. 4-8: the wrong
     choices lie at the region boundaries), the most uncertain per
     predicted second first;
   * the points halfway between neighbouring measured points whose
     fastest measured alternatives differ (hlc.boundaries): the grid point
     nearest halfway where some between them are not measured yet, else
     points between the grid's, surveyed when first wanted, so that a
     boundary the grid brackets is found to the integer, not interpolated
     across, until every grid point is measured (``BISECT_UNTIL_COVERED``);
   * the points farthest from any measured one, halving the largest gaps
     (seed 003's geometric bisection, on the whole nest instead of one
     variable), so that a region the models got wrong without knowing it is
     still found;
   * once every point has a measured neighbour, for each model that
     misses its own samples by more than the timings vary and has few
     samples for its terms, random points of the nest, timed for it alone
     (``own_points``), with the room the uncertain decisions leave: a
     cheap implementation that wins in few places is fitted on few points
     otherwise, and misses costs that step between them;
   * while the round has room, the points whose decision would be
     uncertain were the models twice, then four times as far off as they
     say: a larger budget buys the decisions next most likely wrong;
   * and then the points farthest from every measured one, filling the
     nest: a budget that allows the whole grid gets it;

   each round spending about a fifth of what is left of the fitting budget
   (three quarters of the whole), as the models predict it and as the
   rounds before took longer than predicted (``PACE_BOUNDS``), timing at
   each point only the candidates that may win there (``WORTH``), and the
   settings of each implementation that no point within one step has
   timed near (``covering``): every model is then measured over its whole
   domain, not only where it wins, and predicts there without
   extrapolating; and with them, in random order, a fifth of the
   verification points still wanted (``VERIFYING``), so that the
   verification samples are taken throughout, as the fitting samples are,
   each implementation no more of them than it has fitting points
   (``VERIFY_PER_FIT``);
4. once every point is measured, rounds with budget left measure the
   points whose decision is uncertain again, up to ``MOST_TAKES`` times;
5. stop when there is nothing left to take or the fitting budget is spent;
   then take the verification samples still wanted with the rest, and
   give what they leave of it to one more round (more only if that one
   leaves time); no point is taken that is predicted to outlast the
   budget, since a point, once started, is not cut short.

Everything is deterministic for a seed: the survey, the designs, the fits
and the choices depend on the samples file alone, which is also what a
resumed profile continues from.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hlc.artefacts.models import NOT_CALIBRATED, Models, load_each
from hlc.artefacts.samples import Follower, Sample, Samples
from hlc.boundaries import STAKE, boundaries, by_proposal, measured_candidates
from hlc.calibrate.breakdown import Breakdown
from hlc.calibrate.generate import pyx_sources
from hlc.calibrate.harness import OWN_INDEX
from hlc.calibrate.run import ProfileResult, Progress, Server, failures_in, prepare
from hlc.calibrate.timing import MINIMUM_TIMING
from hlc.compile import Background, is_cached
from hlc.language import ast
from hlc.language.expressions import unparse
from hlc.model.calibration import (
    HostTolerance,
    calibrate,
    fit_workers_wanted,
    fitted_seconds,
    host_tolerance,
    written_terms,
)
from hlc.model.knots import LooseKnot, knot_ambiguity, loose_knots
from hlc.model.predict import Covariance, Predictor, array_columns, band, sum_of_terms, term_values
from hlc.model.terms import model_terms
from hlc.model.workers import start_workers, wait_for_workers

#: Seconds of profiling an adaptive build spends when no --budget is given;
#: the compile of the description's sources (once, then from the cache) is
#: not profiling ...
BUDGET = 45.0
#: ... but a build that compiles first profiles for what leaves the whole
#: build within BUILD_SECONDS (estimating AFTER_PROFILE for the final fit
#: and the dispatch module), LEAST_BUDGET at least.  The compile of the
#: sort library's kernels keeps both cores of a two-core host busy for
#: 7-11 s, and first builds with 45 s of profiling took 58-62 s, past the
#: minute a user is told.  A first build whose 44 s of compiling (on an
#: older compile step) left it 30 s chose right at 77.5% of 200 points on
#: a busy host, the next one with 45 s at 95.5%: the floor.  The final fit
#: of a sort build, the mean of six searches per model
#: (hlc.model.calibration._bagged), took 2.9-3.4 s on a two-core Zen 4
#: host (1,600-1,800 samples), closing the profile's programs 0.2 s and the
#: dispatch module 1.0 s: 4.1-4.6 s after the profile.
BUILD_SECONDS = 55.0
AFTER_PROFILE = 4.5
LEAST_BUDGET = 30.0
#: Share of the budget kept for the verification samples still wanted after
#: the fitting rounds; what they leave of it goes to more fitting rounds, if
#: at least LEAST_ROUND seconds.  A tenth gave eight 30 s sort builds (seeds
#: 0-7, each beside one with a quarter) more fitting time and worse choices:
#: right at 3.6 and 2.1 points fewer one-rank points (seeds 1 and 2 of a
#: Zen 4 host's evaluations), at 1.9 more two-rank ones.
VERIFICATION_SHARE = 0.25
#: Each round also takes this share of the verification points still wanted,
#: in random order among its fitting points, as a round spends about this
#: share of the time left (ROUND_SHARE).  Taken in one block at the end, the
#: verification samples would all fall in the host's state of those seconds:
#: a sort build whose last six seconds ran slow (timings spread 5% against
#: 3% before) reported verification MREs of 1.10 to 1.15, where its fitting
#: samples showed nothing of the kind.
VERIFYING = 0.2
#: An implementation gets at most this many verification samples per fitting
#: point it was timed at (and at most the description's ``verify``): where
#: a short budget or a busy host leaves few fitting points, the time goes to
#: fitting the models rather than to judging them.
VERIFY_PER_FIT = 1.0
LEAST_ROUND = 1.0
#: An implementation too little sampled for a model is measured at this
#: many samples beyond its written terms before the next fit.
UNMODELLED_MARGIN = 2
#: Points per interface and rank count of the space-filling start: enough
#: for first models, whose predictions of cost and uncertainty lead the rest.
START_POINTS = 8
#: Each round spends at most this share of the budget that is left, and
#: at least this multiple of the seconds its fit and planning took: rounds
#: that grow short as the budget runs out would spend it on planning.  Each
#: round costs its fit, its plan and, at two ranks, the ranks' settling
#: (SETTLE); at four times, a default sort build made 7-9 rounds and
#: measured 54.2% of its time (median of eight), at eight times 5-8 rounds
#: and 57.4%, choosing as well (eight pairs, replayed against six
#: evaluations: worst choice 12 points better, SE 4), and as well at a
#: 15 s budget, whose fits are quick.  A fifth of what is left raised to
#: three tenths gained 1.5 points of measuring, but four of eight 15 s
#: builds chose badly against two.
ROUND_SHARE = 0.2
LEAST_ROUND_SHARE = 8.0
#: A round is planned in predicted seconds of timed calls; the seconds it
#: takes are more, by the checks, warm-ups, inputs and the host's retakes
#: and waits.  The ratio the last rounds showed (their geometric mean with
#: the one before), within these bounds, turns the round's share of the
#: budget into predicted seconds: on a busy host a round planned at a fifth
#: of what was left took all of it, and the profile re-planned once.
PACE_BOUNDS = (1.0, 8.0)
#: A round stops at this multiple of the seconds it was planned to take (its
#: share of the budget left), and the next is planned from what it measured.
#: A round is planned by the models of the round before, which may miss the
#: costs of points far from their samples many times over: the second round
#: of a 30 s sort build, planned at 4 s from models fitted to 16 points,
#: timed the two-rank radix sort of 3M keys a rank at one to three bits per
#: digit for 21 s, and left the build 78 of its 288 points.
ROUND_OVERRUN = 2.0
#: A round with room left takes the decisions uncertain at these multiples of the models' uncertainty.
WIDENINGS = (2.0, 4.0)
#: The fitter searches the terms again when the measured points have grown by this factor ...
REDISCOVER = 2.0
#: ... and at least this many times the seconds that search is expected to
#: take (the last one's, grown with the points) are left of the rounds'
#: budget: a search only guides the rounds after it, and the final fit
#: searches every sample anyway.  In two sort builds the last search came
#: two seconds before the end of the profile, took 0.8 and 1.0 s, and
#: planned a round of under a second; a refit of the terms found before
#: takes a fifth of it.
SEARCH_WORTH = 4.0
#: A round's search cross-validates this many candidates a step, fewer than the
#: final fit's (hlc.model.discover.SHORTLIST): its models only say where to
#: measure next, and its seconds are not spent measuring.
ROUND_SHORTLIST = 6
#: After the start, a site's candidate is timed only where it may lie within
#: this factor of the fastest predicted alternative there (its band's lower
#: edge), or next to its own predicted best setting: the settings that cannot
#: win are where a grid spends most of its time, and they decide nothing.
#: Unless the budget left would time every candidate at every point not yet
#: measured: then a round times them all, as the grid does.
WORTH = 2.0
#: Once every point is measured, rounds with budget left measure again the
#: points whose decision is uncertain, each up to this many times in all: a
#: boundary measured thrice is fitted with a third of one measurement's noise.
MOST_TAKES = 3
#: A round takes its uncertain decisions from two rankings in turn: by
#: their uncertainty over this power of the seconds measuring them is
#: predicted to take, and by their uncertainty alone.  A cheap point is
#: settled in a fraction of an expensive one's time, but a wrong choice
#: there costs a caller a fraction of the time too: ranked by uncertainty
#: per second (the power 1), the largest sorts came last and were left to
#: the models' extrapolation from smaller ones, which put three passes of
#: 10 bits ahead of four of 8 at 2.6 million keys, 1.5 times as slow.  On a
#: Zen 4 host, five default sort builds (seeds 0-4) with each power, each
#: replayed against two exhaustive evaluations of another build: at the
#: square root, right 96.8% against 96.5% of the points, the expected
#: penalty 0.40% against 0.76%.  Per root second alone, a 15 s sort build
#: (two or three rounds) still timed the radix sort over 300,000 keys at a
#: handful of points and chose its digits there by extrapolation (up to 2.2
#: times as slow as the best); by uncertainty alone, the stencil's default
#: builds spent their rounds on its dearest grids.  Taking from both in
#: turn keeps the dear decisions in every round and the cheap ones too (the
#: figures: docs/report.md, "Uncertain decisions by uncertainty alone").
COST_POWER = 0.5
#: The share of a round that the midpoints of measured boundaries may fill, with the uncertain decisions.
BISECTING_SHARE = 0.75
#: A round takes every grid point not measured yet, at every candidate,
#: once the budget left affords them all (as the models predict them, at
#: the pace the rounds showed): the grid's information first, then the
#: boundaries, retakes and models' own points with what is left.
WHOLE_GRID_FIRST = True
#: Boundaries are bisected only until every point of the grid is measured.
#: Bisecting on with a larger budget piles samples on the boundaries until
#: they outweigh the grid's in the fit: a 120 s sort build measured 465
#: midpoints (2,406 fitting samples, against 1,594 at the grid's 288
#: points) and chose right at 93.5% and 90.5% of one rank's points
#: (seeds 1, 2) and 89.5% of two ranks', the whole grid at 94.0%, 93.5%
#: and 96.0%; its own samples without the midpoints it measured after the
#: grid was covered, at 95.5%, 93.5% and 94.0%.
BISECT_UNTIL_COVERED = True
#: Covering: each neighbourhood of sites times an implementation at
#: settings this many places apart at most in its list of settings ...
SETTING_REACH = 2
#: ... adding at most this share of the round's predicted seconds to it.
COVERING_SHARE = 0.5
#: A sample (fitting, or verification) this far off its model's prediction
#: (as a share of it) widens the bands around it (Judge.misfit); nearer
#: ones are the noise and the smoothing every fit has, and widening for
#: them would make half the decisions uncertain after the first rounds.
MISFIT = 0.5
#: Timings of one candidate's block beyond the interface's ``repeat`` (k),
#: each as long as a call or the clock's minimum: a cold one or a retake now
#: and then.
EXTRA_TIMINGS = 1
#: ... so a block of an interface without a profile (or a ``repeat``) takes this many.
DEFAULT_BLOCK = ast.DEFAULT_REPEAT + EXTRA_TIMINGS
#: A model that misses its own fitting samples by more than this (its fit
#: MRE) is less accurate than the timings: two inputs drawn at one point
#: of a sort's nest, timed side by side, differ by 1-2.5% (the second input
#: of hlc evaluate).  It gets points of its own (``own_points``) ...
ACCURATE = 1.03
#: ... while it has fewer fitting samples than this many per written term:
#: counting sort's model, fitted on 90, 180, 360 and 657 random points of
#: a sort's nest, missed 120 others by 1.042-1.058, 1.043, 1.038-1.040 and
#: 1.035; a sort build of 45 s gave it 80 to 90, the points of the nest
#: that apply to it.
DENSE = 50
#: ... taking at most this share of a round's predicted seconds.
OWN_SHARE = 0.25
#: Measured points where a searched parameter's optimum is uncertain, at its
#: settings never timed there (``unsure_optima``), take at most this share
#: of a round's predicted seconds.
OPTIMUM_SHARE = 0.2


#: A searched parameter's two best settings as measured at a point, within
#: this factor of each other, one of them measured there once: both are
#: measured there again in a later round (``measured_ties``).  A block of
#: timings is one moment, and on a shared host some settings' costs move
#: by the second: a radix sort of 741,455 keys in three 10-bit passes took
#: 4.0-6.0 ms a few hundred milliseconds apart in one process, in four 8-bit
#: passes 3.9-4.3 ms.  A profile that timed the wide digits in a fast
#: moment chose them where an evaluation minutes later found them 30-48%
#: slower.  Sixteen sort builds with the rule, each beside one without
#: (alternating, a two-core Zen 4 host), replayed against six exhaustive
#: evaluations of that host: expected penalty 0.35% against 0.54% (paired
#: difference -0.19 points, SE 0.09), worst choice 29% against 44% too
#: slow, right choices 97.7% against 97.6% ...
TIE = 1.15
#: ... taking at most this share of a round's predicted seconds.
TIE_SHARE = 0.15


@dataclass(frozen=True)
class Site:
    """One fitting point of the grid at one rank count, as the survey saw it."""

    interface: str
    P: int
    index: int
    point: dict[str, int]
    variables: dict[str, float]
    settings: dict[str, list[dict[str, int]]]  # what profiling it would time
    choices: dict[str, list[dict[str, int]]]  # what the dispatcher chooses among there
    bytes: int = 0  # the arguments' size: the clue to its cost before any model
    refined: bool = False  # a point between the grid's, bisecting towards a boundary

    @property
    def key(self) -> tuple[str, int, int]:
        return self.interface, self.P, self.index


def read_sites(records: Samples) -> list[Site]:
    """The survey's sites in a samples file, each once, in file order."""
    sites: dict[tuple, Site] = {}
    for r in records.surveys:
        site = Site(r.interface, r.P, r.index, r.point, r.variables, r.settings, r.choices, r.bytes, r.refined)
        sites.setdefault(site.key, site)
    return list(sites.values())


def measured_keys(records: Samples) -> set[tuple[str, int, int]]:
    """The fitting points a samples file holds (interface, P, index)."""
    return {(r.interface, r.P, r.index) for r in records.points if not r.verify}


Candidates = dict[str, list[dict[str, int]]]  # implementation → the settings to time


def takes_of(records: Samples) -> dict[tuple[str, int, int], int]:
    """How many times each fitting point (interface, P, index) was measured."""
    takes: dict[tuple[str, int, int], int] = defaultdict(int)
    for r in records.points:
        if not r.verify:
            takes[r.interface, r.P, r.index] += 1
    return takes


def timed_settings(records: Samples, grid: Grid) -> dict[str, dict[tuple, set[int]]]:
    """Per implementation, the grid's sites at which it was timed, and there
    the positions of the settings timed in the site's list of them."""
    timed: dict[str, dict[tuple, set[int]]] = defaultdict(lambda: defaultdict(set))
    for sample in records.samples:
        key = (sample.interface, sample.P, sample.index)
        if sample.verify or key not in grid.by_key:
            continue
        settings = grid.by_key[key].settings.get(sample.implementation, [])
        if sample.parameters in settings:
            timed[sample.implementation][key].add(settings.index(sample.parameters))
    return timed


class Grid:
    """The sites of a survey as a grid: each site's place in the nest of its
    interface and rank count, per loop variable the rank of its value among
    the values that variable takes.  Ranks, not values, so that a loop over
    2^k sizes is spread as evenly as one over k."""

    def __init__(self, sites: Sequence[Site]):
        self.sites = list(sites)
        self.order = {site.key: position for position, site in enumerate(self.sites)}
        self.by_key = {site.key: site for site in self.sites}
        self.groups: dict[tuple[str, int], list[tuple]] = defaultdict(list)
        for site in self.sites:
            self.groups[site.interface, site.P].append(site.key)
        self._neighbours: dict[tuple, list[tuple]] = {}
        self.ranks: dict[tuple, tuple[int, ...]] = {}  # steps along each loop
        self.places: dict[tuple, tuple[float, ...]] = {}  # the same, scaled to 0 .. 1
        self.loops: dict[tuple[str, int], dict[str, list[int]]] = {}  # per group, each loop's values
        self.at_ranks: dict[tuple, tuple] = {}  # (interface, P, ranks) → the site there
        for group, keys in self.groups.items():
            members = [self.by_key[key] for key in keys]
            names = sorted({name for site in members for name in site.point})
            positions = {}
            self.loops[group] = {}
            for name in names:
                values = sorted({site.point[name] for site in members if name in site.point})
                self.loops[group][name] = values
                positions[name] = ({v: i for i, v in enumerate(values)}, max(len(values) - 1, 1))
            for site in members:
                steps = tuple(positions[name][0].get(site.point.get(name), 0) for name in names)
                self.ranks[site.key] = steps
                self.at_ranks.setdefault((*group, steps), site.key)
                self.places[site.key] = tuple(step / positions[name][1] for step, name in zip(steps, names,
                                                                                              strict=True))

    def group(self, key: tuple) -> list[tuple]:
        return self.groups[key[0], key[1]]

    def nearest(self, interface: str, P: int, point: Mapping[str, int]) -> tuple | None:
        """The site whose loop values are nearest a point's, loop by loop (a
        verification point lies anywhere in the loops' ranges); None where
        the grid has no such site."""
        loops = self.loops.get((interface, P))
        if loops is None or any(name not in point for name in loops):
            return None
        steps = tuple(min(range(len(values)), key=lambda i, v=values, x=point[name]: (abs(v[i] - x), i))
                      for name, values in loops.items())
        return self.at_ranks.get((interface, P, steps))

    def covered(self, key: tuple, taken: set[tuple]) -> bool:
        """Whether a taken site lies within one step of ``key`` along every loop."""
        return any(other in taken for other in self.neighbours(key))

    def neighbours(self, key: tuple) -> list[tuple]:
        """The sites within one step of ``key`` along every loop, itself included."""
        if key not in self._neighbours:
            mine = self.ranks[key]
            self._neighbours[key] = [other for other in self.group(key)
                                     if max((abs(a - b) for a, b in zip(mine, self.ranks[other], strict=True)),
                                            default=0) <= 1]
        return self._neighbours[key]

    def farthest_first(self, taken: set[tuple], count: int, frugal: bool = False) -> list[Site]:
        """Greedy maximin: up to ``count`` untaken sites, each the farthest from
        every site taken so far (a group with none taken starts at its first
        site in nest order); ties go to the earlier site, so the choice is
        deterministic.  ``frugal``: a site's distance is divided by the square
        root of its size over its group's median (when above it), so that the
        sites whose arguments are largest, and whose calls likely cost most,
        come later."""
        weight = {key: 1.0 for key in self.places}
        if frugal:
            for keys in self.groups.values():
                sizes = sorted(self.by_key[key].bytes for key in keys)
                median = max(sizes[len(sizes) // 2], 1)
                for key in keys:
                    weight[key] = 1 / math.sqrt(max(self.by_key[key].bytes / median, 1.0))
        distance: dict[tuple, float] = {}
        for key, place in self.places.items():
            if key not in taken:
                distance[key] = min((math.dist(place, self.places[o]) for o in self.group(key) if o in taken),
                                    default=math.inf)
        chosen: list[Site] = []
        while len(chosen) < count and distance:
            key = max(distance, key=lambda k: (distance[k] * weight[k], -self.order[k]))
            chosen.append(self.by_key[key])
            del distance[key]
            for other in self.group(key):
                if other in distance:
                    distance[other] = min(distance[other], math.dist(self.places[other], self.places[key]))
        return chosen


@dataclass(frozen=True)
class Alternative:
    """One choice the dispatcher could make at a site, as predicted."""

    implementation: str
    settings: dict[str, int]
    seconds: float
    uncertainty: float  # half-width, seconds


def overlap(first: Alternative, other: Alternative, widening: float = 1.0) -> float:
    """How far ``other``'s band reaches into ``first``'s, ``first`` predicted
    the faster: 0 when the two lie apart by more than their uncertainties
    together (``widening`` times them), up to 1 when they are predicted equal."""
    reach = widening * (first.uncertainty + other.uncertainty)
    return max(0.0, 1.0 - (other.seconds - first.seconds) / reach) if reach > 0 else 0.0


class Judge:
    """Predictions, with their uncertainty, of every alternative at a site.

    A fitted model's prediction and band both come from its terms' values
    at the site, which depend on the terms and the site alone: ``values``,
    a cache shared by the rounds, keeps them for as long as the terms stay
    (a round that refits only the coefficients reuses every one)."""

    def __init__(self, library: ast.Library, models: Models,
                 used_models: Mapping[str, Models] | None = None,
                 values: dict[tuple, dict[str, float]] | None = None, records: Samples | None = None,
                 grid: Grid | None = None):
        self.library = library
        # the timings of a candidate's block, by interface, as a round's plan costs them
        self.timings = {interface.name: block_timings(library, interface.name) for interface in library.interfaces}
        self.records = records  # the samples the models were fitted to: where their knots are loose
        self.grid = grid  # where the samples lie: their misses widen their neighbours' bands
        self._misfits: dict[tuple[str, tuple, tuple], float] | None = None  # (name, settings, site) → miss
        self.tolerance: HostTolerance | None = None  # the host meter's, over the samples (as_fitted)
        self._unmodelled: dict[str, int] | None = None
        self.loose: dict[str, list[LooseKnot]] = {}
        self.ambiguities: dict[tuple, float] = {}
        self.entries = models.times()
        self.predictor = Predictor.of_models(library, models, used_models or {})
        self.implementations = {i.name: i for interface in library.interfaces for i in interface.implementations}
        self.predictions: dict[tuple, tuple[float, float] | None] = {}  # (name, environment) → (seconds, band)
        self.values = values if values is not None else {}
        self.terms: dict[str, list[tuple[str, ast.Expression]] | None] = {}
        self.covariances: dict[str, Covariance] = {}  # by implementation: its band's matrix
        self.ranked: dict[tuple, list[Alternative]] = {}  # site → its alternatives, fastest first
        self.worth: dict[tuple, Candidates] = {}  # (site, factor) → the candidates worth timing
        self.valued: set[tuple[str, tuple[str, ...]]] = set()  # (name, texts) valued at every site (all_sites)

    def predicted(self, name: str, environment: dict[str, Any]) -> tuple[float, float] | None:
        """The predicted seconds of an implementation and the half-width of
        its band at one environment; None where the model cannot say.  Kept,
        since a round asks for the same ones to score and to cost a site."""
        key = (name, tuple(sorted(environment.items())))
        if key not in self.predictions:
            entry = self.entries.get(name, NOT_CALIBRATED)
            try:
                fitted = self.fitted(name, key[1], environment)
                if fitted is not None:
                    seconds, half = fitted
                else:  # a factored model: its expression, and no band
                    seconds = self.predictor.evaluate(name, environment)
                    half = band(self.predictor, self.implementations[name], entry, environment) or 0.0
                self.predictions[key] = (max(seconds, 0.0), half) if math.isfinite(seconds) else None
            except (ArithmeticError, LookupError, ValueError):
                self.predictions[key] = None
        return self.predictions[key]

    def fitted(self, name: str, place: tuple, environment: dict[str, Any]) -> tuple[float, float] | None:
        """A fitted model's prediction and band from its terms' values (kept
        in ``values``); None for a model that is not fitted or has no band."""
        entry = self.entries.get(name, NOT_CALIBRATED)
        if name not in self.terms:
            model = self.implementations[name].model("time")
            usable = model is not None and model.fitted and entry.has_band
            self.terms[name] = [(unparse(term), term) for term in model_terms(model, entry.discovered)] \
                if usable else None
        terms = self.terms[name]
        if terms is None:
            return None
        texts = tuple(text for text, _ in terms)
        key = (name, texts, place)
        if key not in self.values and (name, texts) not in self.valued:
            self.all_sites(name, terms, texts)
        if key not in self.values:
            self.values[key] = term_values(self.predictor, self.implementations[name], [t for _, t in terms],
                                           environment, texts)
        values = self.values[key]
        if name not in self.covariances:
            self.covariances[name] = Covariance.of(entry)
        return sum_of_terms(entry, values), self.covariances[name].band(values)

    def all_sites(self, name: str, terms: list[tuple[str, ast.Expression]], texts: tuple[str, ...]) -> None:
        """The terms' values at every site of the grid, at each setting the
        site may ask the implementation at (its choices and what profiling
        would time), into ``values``: valued once over arrays
        (hlc.model.predict.array_columns), the numbers term_values gives
        each point, where every term can be so; else ``fitted`` values the
        sites one by one as it is asked.  A round asks for most of them."""
        self.valued.add((name, texts))
        if self.grid is None:
            return
        groups: dict[tuple[str, ...], dict[tuple, dict[str, Any]]] = {}
        for site in self.grid.sites:
            for settings in [*site.choices.get(name, ()), *site.settings.get(name, ())]:
                environment = {**site.variables, **settings}
                place = tuple(sorted(environment.items()))
                if (name, texts, place) not in self.values:
                    groups.setdefault(tuple(sorted(environment)), {}).setdefault(place, environment)
        expressions = [term for _, term in terms]
        for environments in groups.values():
            columns = array_columns(self.predictor, self.implementations[name], expressions, texts,
                                    list(environments.values()))
            if columns is None or len(columns) < len(set(texts)):
                continue
            for position, place in enumerate(environments):
                self.values[name, texts, place] = {text: float(columns[text][position]) for text in texts}

    def widened(self, name: str, environment: dict[str, Any]) -> tuple[float, float] | None:
        """The predicted seconds and uncertainty of a fitted implementation:
        its band, widened to the model's own error on its samples; None where
        it has no fitted model or the model cannot say."""
        entry = self.entries.get(name, NOT_CALIBRATED)
        if entry.status != "fitted" or name not in self.implementations:
            return None
        predicted = self.predicted(name, environment)
        if predicted is None:
            return None
        seconds, half = predicted
        error = entry.mre if entry.mre is not None else 1.0
        return seconds, max(half, max(error - 1.0, 0.0) * seconds, self.ambiguity(name, environment))

    def misfit(self, name: str, settings: dict[str, int], site: Site) -> float:
        """The model's largest relative miss (measured over predicted, or its
        inverse, less one) on its samples at the same settings within one
        step of the site, the site included, where it is MISFIT or more; 0
        where none is, and at a midpoint off the grid.  A verification
        sample, or a model's own random point, counts at the grid's site
        nearest it.  A model's mean error
        hides where it goes wrong: a counting sort whose table outgrew a
        cache ran 2.3 times its prediction at one of its 26 fitting points,
        its fitting MRE 1.1, and was chosen there and around it."""
        if self.grid is None or self.records is None or site.key not in self.grid.ranks:
            return 0.0  # a midpoint between the grid's is taken for its boundary, not for a misfit
        if self._misfits is None:
            self._misfits = {}
            for sample in self.records.samples:
                key = (sample.interface, sample.P, sample.index)
                if sample.verify or sample.index >= OWN_INDEX:  # a random point: at the grid's site nearest it
                    key = self.grid.nearest(sample.interface, sample.P, sample.point or {})
                seconds = self.as_fitted(sample)
                if key not in self.grid.by_key or seconds is None or seconds <= 0:
                    continue
                predicted = self.predicted(sample.implementation, sample.environment)
                if predicted is None or predicted[0] <= 0:
                    continue
                ratio = seconds / predicted[0]
                miss = max(ratio, 1 / ratio) - 1.0
                if miss < MISFIT:
                    continue
                where = (sample.implementation, tuple(sorted(sample.parameters.items())), key)
                self._misfits[where] = max(self._misfits.get(where, 0.0), miss)
        mine = (name, tuple(sorted(settings.items())))
        return max((self._misfits.get((*mine, key), 0.0) for key in self.grid.neighbours(site.key)), default=0.0)

    def as_fitted(self, sample: Sample) -> float | None:
        """The sample's seconds as its model's fit took them
        (hlc.model.calibration.fitted_seconds).  Judged by its raw time, a
        sample the fit scaled back by 1.5 would be a miss of half its
        prediction, and widen every band around it."""
        if self.tolerance is None:
            self.tolerance = host_tolerance(self.records) if self.records is not None else HostTolerance()
        return fitted_seconds(self.entries.get(sample.implementation, NOT_CALIBRATED), sample, self.tolerance)

    def ambiguity(self, name: str, environment: dict[str, Any]) -> float:
        """Seconds the model's discovered terms may add or take away at an
        environment where the samples leave their knots loose
        (hlc.model.knots): a prediction there is a guess, however narrow
        its band, and measuring there is what pins the knot."""
        if self.records is None:
            return 0.0
        if name not in self.loose:
            fitted = [(s, self.as_fitted(s)) for s in self.records.samples
                      if s.implementation == name and not s.verify]
            fitted = [(s, seconds) for s, seconds in fitted if seconds is not None]
            self.loose[name] = loose_knots(self.predictor, self.implementations[name], self.entries[name],
                                           [s.environment for s, _ in fitted], [seconds for _, seconds in fitted])
        if not self.loose[name]:
            return 0.0
        key = (name, tuple(sorted(environment.items())))
        if key not in self.ambiguities:
            self.ambiguities[key] = knot_ambiguity(self.predictor, self.implementations[name], self.loose[name],
                                                   environment)
        return self.ambiguities[key]

    def alternatives(self, site: Site) -> list[Alternative]:
        """Every fitted alternative at the site, fastest predicted first (kept:
        a round scores a site at several widths)."""
        if site.key in self.ranked:
            return self.ranked[site.key]
        found = []
        for name, settings_list in site.choices.items():
            for settings in settings_list:
                predicted = self.widened(name, {**site.variables, **settings})
                if predicted is not None:
                    seconds, half = predicted
                    found.append(Alternative(name, settings, seconds,
                                             max(half, self.misfit(name, settings, site) * seconds)))
        self.ranked[site.key] = sorted(found, key=lambda a: a.seconds)
        return self.ranked[site.key]

    def uncertainty(self, site: Site, widening: float = 1.0) -> float:
        """How uncertain the decision at the site is: 0 when the fastest
        predicted alternative is clear of every other by more than their
        uncertainties together (``widening`` times them), up to 1 when two
        are predicted equal.  Mostly the second fastest decides it; a
        slower one whose prediction is loose (hlc.model.knots) may too."""
        best = self.alternatives(site)
        return max((overlap(best[0], other, widening) for other in best[1:]), default=0.0)

    def unmodelled(self) -> dict[str, int]:
        """The implementations left unfitted for want of fitting samples, with
        how many more they need: as many as their written terms, and
        UNMODELLED_MARGIN more (the fit prunes and verifies).  Nothing
        predicts them, so no uncertainty points to where they apply, and a
        15 s sort build spent its rounds on the fitted implementations'
        boundaries and left the two-rank counting sort, the fastest at most
        two-rank points, at 5 fitting samples for 7 terms."""
        if self.records is None:  # no samples: nothing to count
            return {}
        if self._unmodelled is None:
            counts = Counter(s.implementation for s in self.records.samples if not s.verify)
            self._unmodelled = {}
            for name, entry in self.entries.items():
                model = self.implementations[name].model("time") if name in self.implementations else None
                if entry.status == "unfitted" and model is not None and model.fitted \
                        and counts[name] <= written_terms(model):
                    self._unmodelled[name] = written_terms(model) + UNMODELLED_MARGIN - counts[name]
        return self._unmodelled

    def worth_timing(self, site: Site, factor: float = WORTH) -> Candidates:
        """The candidates worth timing at a site, of those profiling would
        time there: each that may be within ``factor`` of the fastest
        predicted alternative (of the most it may take, where its knots are
        loose: hlc.model.knots), and the settings next to each such
        implementation's predicted best (the optimum of a searched parameter
        is then bracketed); every setting of an implementation its model
        cannot predict yet.  Kept, since a round costs a site before it
        sends it."""
        if (site.key, factor) in self.worth:
            return self.worth[site.key, factor]
        predicted: dict[str, list[tuple[dict[str, int], float, float]]] = {}
        unknown: set[str] = set()
        fastest = math.inf  # the fastest prediction; where its knots are loose, the most it may take
        for name, settings_list in site.settings.items():
            for settings in settings_list:
                environment = {**site.variables, **settings}
                found = self.widened(name, environment)
                if found is None:
                    unknown.add(name)
                    break
                found = (found[0], max(found[1], self.misfit(name, settings, site) * found[0]))
                predicted.setdefault(name, []).append((settings, *found))
                fastest = min(fastest, found[0] + self.ambiguity(name, environment))
        kept: Candidates = {}
        for name, settings_list in site.settings.items():
            if name in unknown:
                kept[name] = list(settings_list)
                continue
            found = predicted[name]
            best = min(range(len(found)), key=lambda i: found[i][1])
            near = {i for i, (_, seconds, half) in enumerate(found) if seconds - half <= factor * fastest}
            if near:
                near |= {i for i in (best - 1, best + 1) if 0 <= i < len(found)}
                kept[name] = [found[i][0] for i in sorted(near)]
        self.worth[site.key, factor] = kept
        return kept

    def timings_of(self, interface: str) -> int:
        """The timings a candidate's block at a point of ``interface`` takes (:func:`block_timings`)."""
        return self.timings.get(interface, DEFAULT_BLOCK)

    def cost(self, site: Site, candidates: Candidates | None = None) -> float:
        """Predicted seconds profiling the site takes: per candidate (by
        default, those worth timing there), its checking call and its
        block's timings."""
        total = 0.0
        timings = self.timings_of(site.interface)
        for name, settings_list in (self.worth_timing(site) if candidates is None else candidates).items():
            entry = self.entries.get(name, NOT_CALIBRATED)
            for settings in settings_list:
                seconds = 1e-3
                if entry.status == "fitted" and name in self.implementations:
                    predicted = self.predicted(name, {**site.variables, **settings})
                    seconds = predicted[0] if predicted is not None else seconds
                total += seconds + timings * max(seconds, MINIMUM_TIMING)
        return total


def uncertain_share(grid: Grid, judge: Judge) -> float:
    """The share of the nest's points (every site of the grid, measured or
    not) whose decision the models leave uncertain: two alternatives' bands
    overlap there (``Judge.uncertainty``), or an alternative that may be
    chosen there has no model yet.  An implementation excluded for failing,
    or whose model calls another's and has no band of its own, has nothing
    to be uncertain about."""
    if not grid.sites:
        return 0.0
    uncertain = 0
    for site in grid.sites:
        unknown = any(judge.entries.get(name, NOT_CALIBRATED).status in ("unfitted", NOT_CALIBRATED.status)
                      or (judge.entries[name].status == "fitted"
                          and judge.widened(name, {**site.variables, **settings}) is None)
                      for name, settings_list in site.choices.items() for settings in settings_list)
        uncertain += unknown or judge.uncertainty(site) > 0
    return uncertain / len(grid.sites)


def next_round(grid: Grid, taken: set[tuple], judge: Judge, seconds: float,
               bisecting: Sequence[Site] = (), most: float = math.inf,
               stakes: Mapping[tuple, tuple[bool, float]] | None = None) -> tuple[list[Site], dict[str, int]]:
    """The sites of the next round, within about ``seconds`` of predicted
    profiling: half of it for uncertain decisions (in turn the most
    uncertain per square root of its predicted seconds, COST_POWER, and the
    most uncertain whatever it costs: a cheap one is settled in a fraction
    of an expensive one's time, and a wrong choice there costs a fraction
    of the time, but the dearest are where a model extrapolates most),
    up to three quarters with the midpoints of the boundaries the
    measurements show (``bisecting``, in their order: hlc.boundaries; given
    each one's ``stakes``, whether its winners are different
    implementations and how much a wrong choice there costs, the boundaries
    between implementations first, then the cheapest per stake:
    :func:`bisection_order`),
    then the widest gaps (farthest first, sites with no measured neighbour
    within one step), then more uncertain decisions, then, while the round
    has room, the decisions that would be uncertain were the models twice,
    then four times as far off as they say (WIDENINGS), then the sites
    farthest from every measured one: a round, and a budget, are spent on
    the decisions next most likely wrong, then on filling the nest, rather
    than on a round of its own for each few.  Returns the sites and how
    many each rule chose.  A site predicted to take more than ``most``
    seconds (what is left of the budget) is not taken, even as a round's
    first: it would overrun the budget, which a site cannot stop."""
    open_sites = [site for site in grid.sites if site.key not in taken]
    chosen: list[Site] = []
    keys: set[tuple] = set()
    spent = 0.0

    def take(site: Site, limit: float) -> bool:
        nonlocal spent
        cost = judge.cost(site)
        if (chosen and spent + cost > limit) or cost > most:  # too costly for this round; a cheaper one may fit
            return False
        chosen.append(site)
        keys.add(site.key)
        spent += cost
        return True

    def uncertain(widening: float) -> list[Site]:
        scored = [(score, site) for site in open_sites
                  if site.key not in keys and (score := judge.uncertainty(site, widening)) > 0]
        per_root = sorted(scored, key=lambda pair: -pair[0] / max(judge.cost(pair[1]), MINIMUM_TIMING) ** COST_POWER)
        alone = sorted(scored, key=lambda pair: -pair[0])
        # the two rankings in turn, each site at its first place in either
        return list({site.key: site for pair in zip(per_root, alone, strict=True) for _, site in pair}.values())

    # An implementation too little sampled for a model: the sites where it
    # applies that lie farthest from the measured ones, the largest
    # arguments last (frugal), each that fits in the round, until it has enough.
    unmodelled = judge.unmodelled()
    spread_out = grid.farthest_first(taken, len(open_sites), frugal=True) if unmodelled else []
    for name, wanted in sorted(unmodelled.items()):
        for site in spread_out:
            if wanted <= 0:
                break
            if name in site.settings and site.key not in keys and spent + judge.cost(site) <= seconds / 2:
                take(site, seconds / 2)
                wanted -= len(site.settings[name])
    strict = uncertain(1.0)
    for site in strict:
        take(site, seconds / 2)
    before = len(chosen)
    for site in bisection_order(bisecting, judge, stakes) if stakes else bisecting:
        if site.key not in keys and site.key not in taken:
            take(site, BISECTING_SHARE * seconds)
    bisected = len(chosen) - before
    first = len(chosen)
    for site in grid.farthest_first(taken | keys, len(open_sites)):
        if site.key not in keys and not grid.covered(site.key, taken | keys):
            take(site, seconds)
    in_gaps = len(chosen) - first
    for site in strict:
        if site.key not in keys:
            take(site, seconds)
    for widening in WIDENINGS:
        for site in uncertain(widening):
            take(site, seconds)
    uncertain_or_gaps = len(chosen)
    for site in grid.farthest_first(taken | keys, len(open_sites)):
        if site.key not in keys:
            take(site, seconds)
    return chosen, {"uncertain": uncertain_or_gaps - in_gaps - bisected, "gaps": in_gaps,
                    "spread": len(chosen) - uncertain_or_gaps, "boundaries": bisected}


def bisection_order(bisecting: Sequence[Site], judge: Judge,
                    stakes: Mapping[tuple, tuple[bool, float]]) -> list[Site]:
    """The midpoints of the boundaries, those between implementations first,
    then by their predicted seconds per stake, least first (equals in the
    order given).  Each boundary's interval holds about as many of the
    points a decision is asked at, and the midpoint of a boundary between
    small arguments costs milliseconds where one of millions of keys costs
    seconds.  By stake alone, a two-core sort build's last rounds
    bisected boundaries among many keys and left numpy.sort against the
    narrow sort between 362 and 724 keys open at every digit width, where
    all five of its wrong choices at two evaluations' 400 points lay.
    Cheapest first, three builds measured 512 keys at four to seven
    widths.  Their choices there stayed as they were: numpy.sort takes one
    of two times above 256 keys, depending on the keys (1.43 or 1.70 us
    for 449 keys of 12 bits, four inputs), so one input's timing can find
    either choice wrong."""

    def order(site: Site) -> tuple[bool, float]:
        implementations, stake = stakes.get(site.key, (False, STAKE))
        return not implementations, judge.cost(site) / max(stake, STAKE)

    return sorted(bisecting, key=order)


def own_points(library: ast.Library, judge: Judge, records: Samples, seconds: float,
               room: float = math.inf) -> tuple[dict[int, dict[str, dict[str, int]]], dict[str, int], dict[int, float]]:
    """Random points of the nest timed for one implementation alone, for
    each model less accurate than the timings (its fit MRE above ACCURATE)
    with fewer fitting samples than DENSE per written term: the
    cross-validated error of such a model falls as its samples grow, and a
    cheap implementation that wins in few places has only the nest's
    points, where the decisions put it.  The round's OWN_SHARE of
    ``seconds`` is shared out in proportion to each model's excess error
    (log of its MRE over ACCURATE), and within a model evenly over the
    rank counts its samples were taken at, each point costing as its
    median sample did; a model at most doubles its samples in a round.
    They take no more than ``room``: what the round's uncertain decisions
    leave of it, once every point of the grid has a measured neighbour
    (the caller's).  Taking their share first, two sort builds of 15 s
    chose right at 94.0-96.5% of 200 points where two without them chose
    at 96.5-97.5%: a short budget's rounds are the decisions'; and in the
    second round, before the gaps were closed, a sort build gave 50 points
    to the radix sort's model, fitted to 16 points, which the gaps would
    have measured.
    (Served cheapest first instead, counting sort took 100 to 120 points
    in a 45 s sort build, the two-rank models few, and the grid points
    measured fell from 260-280 of 288 to 180-200: the two-rank models'
    verification MREs rose to 1.11-1.17.)

    Returns, per rank count, interface → implementation → how many of its
    own points in all (hlc.calibrate.harness.Profiler.own_points: those
    taken before count), how many each implementation gets in this round,
    and their predicted seconds per rank count."""
    fitting: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    taken: Counter[tuple[str, str, int]] = Counter()
    for sample in records.samples:
        if not sample.verify:
            fitting[sample.interface, sample.implementation, sample.P].append(sample.seconds)
            taken[sample.interface, sample.implementation, sample.P] += sample.index >= OWN_INDEX
    excess = less_accurate_than_the_timings(library, judge)
    wanted: dict[int, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    counts: dict[str, int] = {}
    cost: dict[int, float] = defaultdict(float)
    total = sum(excess.values())
    share = min(OWN_SHARE * seconds, room)
    for (interface, name), error in sorted(excess.items()):
        groups = sorted((P, times) for (i, n, P), times in fitting.items() if (i, n) == (interface, name))
        for P, times in groups:
            median = sorted(times)[len(times) // 2]
            each = median + judge.timings_of(interface) * max(median, MINIMUM_TIMING)
            new = min(int(share * error / total / len(groups) / each), len(times))
            if new > 0:
                wanted[P][interface][name] = taken[interface, name, P] + new
                counts[name] = counts.get(name, 0) + new
                cost[P] += new * each
    return {P: dict(by_interface) for P, by_interface in wanted.items()}, counts, dict(cost)


def block_timings(library: ast.Library, interface: str) -> int:
    """The timings a candidate's block at a point of ``interface`` takes,
    as a plan costs it: the ``repeat`` its profile asks, and EXTRA_TIMINGS."""
    found = library.interface(interface)
    if found is None or found.profile is None:
        return DEFAULT_BLOCK
    return found.profile.repeat + EXTRA_TIMINGS


def less_accurate_than_the_timings(library: ast.Library, judge: Judge) -> dict[tuple[str, str], float]:
    """The models that miss their own fitting samples by more than the
    timings vary (fit MRE above ACCURATE) while they have fewer than DENSE
    fitting samples per written term, by (interface, implementation): the
    log of each one's MRE over ACCURATE.  More samples would make them more
    accurate, whatever the decisions (:func:`own_points`)."""
    excess: dict[tuple[str, str], float] = {}
    for interface in library.interfaces:
        for implementation in interface.implementations:
            entry = judge.entries.get(implementation.name, NOT_CALIBRATED)
            model = implementation.model("time")
            if entry.status != "fitted" or entry.mre is None or model is None or not model.fitted:
                continue
            if entry.mre > ACCURATE and entry.samples < DENSE * written_terms(model):
                excess[interface.name, implementation.name] = math.log(entry.mre / ACCURATE)
    return excess


def covering(grid: Grid, batch: Sequence[Site], plan: Mapping[tuple, Candidates | None],
             timed: Mapping[str, Mapping[tuple, set[int]]], cost: Callable[[Site, Candidates], float] | None = None,
             seconds: float = math.inf) -> tuple[dict[tuple, Candidates | None], int]:
    """The plan of a round with, at each of its grid sites, the settings of
    each implementation that nothing timed near: no site within one step
    (the round's earlier sites included) timed a setting within
    SETTING_REACH places of it in the site's list of settings, or the
    setting itself for the first and the last of the list.  ``timed``:
    per implementation, the positions of the settings timed at each site.

    An implementation, or a setting, that cannot win in a region is
    otherwise never timed there, and its model, fitted elsewhere,
    extrapolates into it: a radix sort of 2^21 keys one bit per digit was
    predicted 30% fast, its slowdown at that size fitted on wide digits
    only.  Each neighbourhood times it once, at settings SETTING_REACH apart
    at most, so every model is measured over its whole domain.  With
    ``cost`` (the predicted seconds of timing candidates at a site), what
    it adds stays within about ``seconds``, the batch's sites first in
    order: a round's own choices come first.  Returns the plan and how
    many candidates it added."""
    covered = {name: {key: set(positions) for key, positions in sites.items()} for name, sites in timed.items()}
    extended: dict[tuple, Candidates | None] = {}
    added = 0
    spent = 0.0
    for site in batch:
        candidates = plan[site.key]
        if site.key not in grid.ranks:  # a point between the grid's, bisecting a boundary: next to measured ones
            extended[site.key] = candidates
            continue
        chosen = {name: list(settings) for name, settings in (site.settings if candidates is None
                                                               else candidates).items()}
        for name, settings_list in site.settings.items():
            mine = covered.setdefault(name, {})
            near = {p for other in grid.neighbours(site.key) for p in mine.get(other, ())}
            positions = {i for i, settings in enumerate(settings_list) if settings in chosen.get(name, ())}
            new: set[int] = set()
            last = len(settings_list) - 1
            for i in range(len(settings_list)):
                reach = 0 if i in (0, last) else SETTING_REACH  # the ends, where a model extrapolates furthest
                if all(abs(i - p) > reach for p in near | positions | new):
                    new.add(i if reach == 0 else min(i + reach, last))  # covering the most not yet covered
            if new and cost is not None:
                extra = cost(site, {name: [settings_list[i] for i in sorted(new)]})
                if spent + extra > seconds:  # left for a later round, when the budget may allow it
                    new = set()
                spent += extra if new else 0.0
            added += len(new)
            positions |= new
            if positions:
                chosen[name] = [settings_list[i] for i in sorted(positions)]
                mine.setdefault(site.key, set()).update(positions)
        extended[site.key] = None if candidates is None else chosen
    return extended, added


def untimed_rivals(grid: Grid, taken: set[tuple], judge: Judge, timed: Mapping[str, Mapping[tuple, set[int]]],
                   seconds: float, most: float = math.inf) -> dict[tuple, Candidates]:
    """Measured sites whose decision is uncertain between alternatives of
    which one or both were never timed there, with those alternatives, most
    uncertain first, within about ``seconds``.  A site is measured once, at
    the candidates the models of that round thought might win; models fitted
    later may find a candidate left out then to be a rival of the fastest,
    and the decision there then rests on a prediction alone.  ``timed``: as
    for :func:`covering`."""
    scored = []
    for site in grid.sites:
        if site.key not in taken or (uncertainty := judge.uncertainty(site)) <= 0:
            continue
        missing: Candidates = {}
        for alternative in judge.alternatives(site)[:2]:
            settings_list = site.settings.get(alternative.implementation, [])
            if alternative.settings in settings_list and settings_list.index(alternative.settings) \
                    not in timed.get(alternative.implementation, {}).get(site.key, ()):
                missing.setdefault(alternative.implementation, []).append(alternative.settings)
        if missing:
            scored.append((uncertainty, site, missing))
    scored.sort(key=lambda entry: (-entry[0], grid.order[entry[1].key]))
    return within_seconds([(site, missing) for _, site, missing in scored], judge, seconds, most)


def unsure_optima(grid: Grid, taken: set[tuple], judge: Judge, timed: Mapping[str, Mapping[tuple, set[int]]],
                  seconds: float, most: float = math.inf) -> dict[tuple, Candidates]:
    """Measured sites where a searched parameter's optimum is uncertain, with
    the settings of that implementation that decide it and were never timed
    there, most uncertain first, within about ``seconds``.  A site is timed
    at the candidates that may win it: an implementation far slower than
    the fastest there is timed at no setting, and its model's optimum over
    its parameter rests on points where it was within reach.  Where the
    predicted best setting and another lie within each other's bands, the
    module's choice of the parameter is a guess that a call which asks for
    that implementation (or a rank count, a machine, where it wins) pays
    for: the two are timed there.  ``timed``: as for :func:`covering`."""
    scored = []
    for site in grid.sites:
        if site.key not in taken:
            continue
        by_implementation: dict[str, list[Alternative]] = defaultdict(list)
        for alternative in judge.alternatives(site):  # fastest first
            by_implementation[alternative.implementation].append(alternative)
        for name, predicted in by_implementation.items():
            if len(predicted) < 2:
                continue
            first = predicted[0]
            score, rival = max(((overlap(first, other), other.settings) for other in predicted[1:]),
                               key=lambda entry: entry[0])
            if score <= 0:
                continue
            best = first.settings
            done = timed.get(name, {}).get(site.key, set())
            missing = [settings for settings in (best, rival) if settings in site.settings.get(name, [])
                       and site.settings[name].index(settings) not in done]
            if missing:
                scored.append((score, site, {name: missing}))
    scored.sort(key=lambda entry: (-entry[0], grid.order[entry[1].key]))
    return within_seconds([(site, missing) for _, site, missing in scored], judge, seconds, most)


def measured_ties(grid: Grid, records: Samples, judge: Judge, seconds: float,
                  most: float = math.inf) -> dict[tuple, Candidates]:
    """Measured sites where a searched parameter's two best settings, as
    measured there, lie within TIE of each other and one of them was
    measured there once: the two, to be measured again, the closest ties
    first, within about ``seconds``."""
    times: dict[tuple, dict[str, dict[tuple, list[float]]]] = defaultdict(lambda: defaultdict(dict))
    for sample in records.samples:
        key = (sample.interface, sample.P, sample.index)
        if sample.verify or not sample.parameters or key not in grid.by_key:
            continue
        times[key][sample.implementation].setdefault(tuple(sorted(sample.parameters.items())), []).append(
            sample.seconds)
    scored = []
    for key, by_implementation in times.items():
        for name, by_settings in by_implementation.items():
            if len(by_settings) < 2:
                continue
            (best, first), (rival, second) = sorted(by_settings.items(), key=lambda e: statistics.median(e[1]))[:2]
            ratio = statistics.median(second) / statistics.median(first)
            if ratio <= TIE and min(len(first), len(second)) < 2:
                scored.append((ratio, key, {name: [dict(best), dict(rival)]}))
    scored.sort(key=lambda entry: (entry[0], grid.order[entry[1]]))
    return within_seconds([(grid.by_key[key], candidates) for _, key, candidates in scored], judge, seconds, most)


def merge_candidates(into: Candidates, more: Candidates) -> None:
    """Add ``more``'s settings to ``into``'s, implementation by implementation, each once."""
    for name, settings_list in more.items():
        merged = into.setdefault(name, [])
        merged.extend(settings for settings in settings_list if settings not in merged)


def within_seconds(ranked: Sequence[tuple[Site, Candidates]], judge: Judge, seconds: float,
                   most: float = math.inf) -> dict[tuple, Candidates]:
    """The ``ranked`` sites with their candidates, in order, each that still
    fits in about ``seconds`` of predicted profiling (the first always does,
    unless it would take more than ``most``, as in :func:`next_round`)."""
    chosen: dict[tuple, Candidates] = {}
    spent = 0.0
    for site, candidates in ranked:
        cost = judge.cost(site, candidates)
        if (chosen and spent + cost > seconds) or cost > most:
            continue
        chosen[site.key] = candidates
        spent += cost
    return chosen


def retakes(grid: Grid, takes: Mapping[tuple, int], judge: Judge, seconds: float,
            most: float = math.inf) -> dict[tuple, Candidates]:
    """Once every point is measured: the points whose decision is uncertain
    (at the widest of WIDENINGS), measured again at the candidates that may
    win there, most uncertain and least measured first, each up to
    MOST_TAKES times in all, within about ``seconds``.  The grid's budget
    then buys repeated measurements at the region boundaries, where the
    noise of one measurement turns a decision, not elsewhere."""
    scored = [(judge.uncertainty(site), judge.uncertainty(site, WIDENINGS[-1]), site) for site in grid.sites
              if 0 < takes.get(site.key, 0) < MOST_TAKES]
    scored = [entry for entry in scored if entry[1] > 0]
    scored.sort(key=lambda e: (-e[0], takes[e[2].key], -e[1], grid.order[e[2].key]))
    return within_seconds([(site, judge.worth_timing(site)) for _, _, site in scored], judge, seconds, most)


@dataclass
class Round:
    """What one round of an adaptive profile did."""

    sites: int
    uncertain: int
    gaps: int
    seconds: float
    spread: int = 0  # taken to fill the nest, with room left in the round
    retaken: int = 0  # measured before, measured again: their decisions are uncertain
    boundaries: int = 0  # between the grid's points, bisecting towards a boundary
    covering: int = 0  # settings timed where no site near had timed them (covering)
    rivals: int = 0  # measured points taken again, at uncertain rivals never timed there (untimed_rivals)
    own: int = 0  # random points timed for one model alone, less accurate than the timings (own_points)
    optima: int = 0  # measured points taken again where a searched parameter's optimum is uncertain (unsure_optima)
    ties: int = 0  # of those, where its two best settings measured there tie (measured_ties)


def default_budget(before: float) -> float:
    """The profiling seconds of a build given no budget, ``before`` seconds
    after it started (its command's own start and its compile, if any):
    BUDGET, or what leaves the whole build within BUILD_SECONDS, whichever
    is less, and LEAST_BUDGET at least."""
    return min(BUDGET, max(LEAST_BUDGET, BUILD_SECONDS - AFTER_PROFILE - before))


def profile_adaptively(library: ast.Library, samples: Path, build: Path, *, ranks: Sequence[int],
                       budget: float | None, seed: int = 0, timeout: float = 60.0, progress: Progress | None = None,
                       models_of: Mapping[str, Path] | None = None,
                       report: Callable[[str], None] | None = None,
                       meanwhile: Background | None = None,
                       build_started: float | None = None,
                       uncertain: float | None = None, host_waits: bool = False) -> tuple[ProfileResult, list[Round]]:
    """Profile ``library`` into ``samples`` adaptively (module doc), within
    ``budget`` seconds of profiling (None: :func:`default_budget` of the
    seconds since ``build_started``, a ``time.monotonic`` reading, else
    BUDGET); resumes from what ``samples`` holds.  ``meanwhile``: a compile
    that runs beside the profile's own, then between the rounds: it is
    paused while the serving programs start, survey and time.
    ``uncertain``: the fitting rounds stop once the models leave at most
    this share of the nest's decisions uncertain (:func:`uncertain_share`),
    every point has a measured neighbour and no model is less accurate than
    the timings while sparsely sampled (:func:`less_accurate_than_the_timings`:
    a library whose models others call may have no decision of its own to
    settle), whatever budget is left.  ``host_waits``: the programs wait for
    the host's usual pace before each block (hlc.calibrate.run.profile)."""
    if uncertain is not None and not 0.0 <= uncertain <= 1.0:
        raise ValueError(f"uncertain: a share of the decisions, from 0 to 1, not {uncertain!r}")
    spent = Breakdown()
    compile_started = time.monotonic()
    if not all(is_cached(source) for source in pyx_sources(library)):
        # a compile, when nothing is timed: the fit's workers start beside it
        start_workers(fit_workers_wanted(library), preload=["hlc.model.calibration"])
    program = prepare(library, build, spent)
    # The budget is for profiling: compiling the description's sources (once,
    # then from the cache) is not part of it.
    started = time.monotonic()
    if budget is None:
        budget = BUDGET if build_started is None else default_budget(started - build_started)
        if budget < BUDGET and report is not None:
            report(f"profiling for {budget:.1f} s: the {started - build_started:.1f} s before it "
                   f"leave that much of a {BUILD_SECONDS:g} s build")
    result = ProfileResult(samples=samples, program=program, ranks=list(ranks), breakdown=spent)
    servers = {size: Server(program, samples, size, seed, timeout, progress, spent, host_waits)
               for size in ranks}
    try:
        rounds = _profile(library, samples, result, servers, ranks=ranks, budget=budget, started=started,
                          models_of=models_of, say=report or (lambda line: None), uncertain=uncertain,
                          quiet=meanwhile.paused if meanwhile is not None else contextlib.nullcontext)
    finally:
        for server in servers.values():
            server.close()
    result.failures = failures_in(samples)
    spent.wall = time.monotonic() - compile_started
    return result, rounds


def _profile(library: ast.Library, samples: Path, result: ProfileResult, servers: Mapping[int, Server],
             *, ranks: Sequence[int], budget: float, started: float, models_of: Mapping[str, Path] | None,
             say: Callable[[str], None],
             quiet: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
             uncertain: float | None = None) -> list[Round]:
    """The survey, the rounds and the verification (module doc), each rank
    count's points taken by its own serving program, each command in a
    ``quiet()`` block, and the programs' start too (their clock's calibration)."""
    spent = result.breakdown
    follower = Follower(samples)  # read after every round and survey: only what they added is parsed
    records = follower.read()
    unsurveyed = [size for size in ranks if size not in {r.P for r in records.surveys}]
    with quiet():
        for size in unsurveyed:  # each starts while the others start and survey (nothing is timed until all have)
            servers[size].start()
        for size in unsurveyed:
            servers[size].run({"survey": True})
    if unsurveyed:  # read again for what the surveys added
        records = follower.read()
    grid = Grid([site for site in read_sites(records) if site.P in ranks and not site.refined])
    sites = grid.sites
    taken = measured_keys(records)
    rounds: list[Round] = []
    used_models = load_each(models_of or {})
    searched: tuple[int, Models] | None = None  # fitting points, and the models, of the last search
    search_seconds = 0.0  # what the last search took
    values: dict[tuple, dict[str, float]] = {}  # the terms' values at the sites, for every round's Judge
    overhead = 0.0  # the least a round measures: a multiple of what fitting and planning the last one took
    thought = 0.0  # seconds the last round's fit and planning took
    pace = PACE_BOUNDS[0]  # seconds a round takes per second of timed calls it was predicted to take
    paced = False  # whether a round has shown its pace yet
    previous: tuple[list[Site], dict, float, bool] | None = None  # the last round: sites, plan, seconds, cut short

    def observe_pace(judge: Judge) -> None:
        """The pace of the last round, its plan costed by the models fitted
        to what it measured (the start has no earlier ones)."""
        nonlocal pace, paced
        if previous is None:
            return
        batch, plan, took, cut = previous
        predicted = sum(judge.cost(site, site.settings if plan[site.key] is None else plan[site.key])
                        for site in batch)
        if predicted <= 0:
            return
        observed = min(max(took / predicted, PACE_BOUNDS[0]), PACE_BOUNDS[1])
        if cut:  # stopped short of its plan: the pace is that at least
            pace = max(pace, observed)
        elif paced:
            pace = math.sqrt(pace * observed)
        else:
            pace = observed
        paced = True

    def fitting_rounds(until: float, portion: float = ROUND_SHARE) -> bool:
        """Rounds until ``until`` seconds into the budget, each planned with
        ``portion`` of what is left; whether that cut them short."""
        nonlocal records, taken, searched, search_seconds, overhead, previous, thought
        while True:
            left = until - (time.monotonic() - started)
            unsure = None  # the share of the decisions uncertain, as the round's plan saw them
            if not taken:
                batch = grid.farthest_first(taken, START_POINTS * len(grid.groups), frugal=True)
                by_rule = {"uncertain": 0, "gaps": len(batch), "spread": 0}
                plan: dict[tuple, Candidates | None] = {site.key: None for site in batch}  # None: every candidate
                own, own_counts, own_cost = {}, {}, {}
                judge = None
                limit = math.inf  # the seconds the round may take (ROUND_OVERRUN): the start has no plan
            else:
                if left <= 0:
                    say("the fitting share of the budget is spent")
                    return True
                if left < thought:  # its fit and planning would take what is left, and it would time nothing
                    say(f"{left:.1f} s left, less than a round's fit and planning took ({thought:.1f} s)")
                    return True
                thinking = time.monotonic()
                with spent.spending("fit"):
                    if searched is None:  # workers for the next fits, large enough to share
                        start_workers(fit_workers_wanted(library), preload=["hlc.model.calibration"])
                    # The terms are searched again once the points have doubled, while
                    # enough is left for the rounds it guides (SEARCH_WORTH); in
                    # between, a round refits the coefficients of the terms found last.
                    search = searched is None or (len(taken) >= REDISCOVER * searched[0] and left >= SEARCH_WORTH
                                                  * search_seconds * len(taken) / max(searched[0], 1))
                    fitting_started = time.monotonic()
                    models = calibrate(library, records, models_of=models_of,
                                       terms_of=None if search else searched[1], shortlist=ROUND_SHORTLIST,
                                       every_sample=False)
                    if searched is None:  # ready before the next round is timed
                        wait_for_workers()
                    if search:
                        searched = (len(taken), models)
                        search_seconds = time.monotonic() - fitting_started
                # Outside the planning account: surveying new midpoints is the
                # program's work, which it accounts for itself (inputs).  Once
                # every grid point is measured, no more (BISECT_UNTIL_COVERED).
                bisecting: list[Site] = []
                stakes: dict[tuple, tuple[bool, float]] = {}
                if not BISECT_UNTIL_COVERED or not grid.by_key.keys() <= taken:
                    records, bisecting, stakes = midpoints(records)
                with spent.spending("planning"):
                    judge = Judge(library, models, used_models, values, records, grid)
                    observe_pace(judge)
                    unsure = uncertain_share(grid, judge)
                    covered = all(grid.covered(site.key, taken) for site in grid.sites)
                    if uncertain is not None and unsure <= uncertain and covered \
                            and not less_accurate_than_the_timings(library, judge):
                        say(f"{unsure:.1%} of the decisions uncertain, at most the {uncertain:.1%} asked, every "
                            f"point of the grid with a measured neighbour and every model as accurate as the "
                            f"timings or densely sampled: the fitting rounds stop with {left:.1f} s of their "
                            f"budget left")
                        return False
                    # A budget that affords every candidate at every grid point not
                    # measured yet, as the models predict them at the pace the rounds
                    # showed, takes them all now, in one round: the grid's information
                    # first, then the boundaries, retakes and models' own points with
                    # what is left.  Chasing boundaries first, a stencil build of 60 s
                    # reached the last of its 784 grid points in its eleventh round,
                    # which the grid took in 17 s, and chose right less often.
                    rest = [site for site in sites if site.key not in taken]
                    if WHOLE_GRID_FIRST and rest and affordable(judge, rest, left / pace):
                        batch, plan = rest, {site.key: site.settings for site in rest}
                        by_rule = {"uncertain": 0, "gaps": 0, "spread": 0, "rest": len(rest), "own": 0}
                        own, own_counts, own_cost = {}, {}, {}
                        limit = ROUND_OVERRUN * left
                    else:
                        timed = timed_settings(records, grid)
                        planned = min(max(portion * left, overhead), left)
                        limit = ROUND_OVERRUN * planned
                        seconds = planned / pace
                        most = left / pace  # no site may take more than the budget left
                        rivals = untimed_rivals(grid, taken, judge, timed, seconds / 2, most)
                        seconds -= sum(judge.cost(grid.by_key[key], candidates) for key, candidates in rivals.items())
                        optima = unsure_optima(grid, taken, judge, timed, OPTIMUM_SHARE * seconds, most)
                        ties = measured_ties(grid, records, judge, TIE_SHARE * seconds, most)
                        for key, candidates in ties.items():
                            merge_candidates(optima.setdefault(key, {}), candidates)
                        rivalling = len(rivals)
                        for key, candidates in optima.items():
                            seconds -= judge.cost(grid.by_key[key], candidates)
                            merge_candidates(rivals.setdefault(key, {}), candidates)
                        # Models' own points once every grid point has a measured neighbour
                        # (before, the gaps are where the models learn), with what the
                        # uncertain decisions leave of the round.
                        room = 0.0
                        if covered:
                            room = max(seconds - sum(judge.cost(site) for site in grid.sites
                                                     if site.key not in taken and judge.uncertainty(site) > 0), 0.0)
                        own, own_counts, own_cost = own_points(library, judge, records, seconds, room)
                        seconds -= sum(own_cost.values())
                        batch, by_rule = next_round(grid, taken, judge, max(seconds, 0.0), bisecting, most, stakes)
                        plan = {site.key: judge.worth_timing(site) for site in batch}
                        if affordable(judge, rest, left):  # narrowing would only save time there is room for
                            plan = {site.key: site.settings for site in batch}
                        else:
                            plan, by_rule["covering"] = covering(grid, batch, plan, timed, judge.cost,
                                                                 COVERING_SHARE * seconds)
                        if rivals:  # measured before: only the rivals, and the settings, never timed there
                            batch = [grid.by_key[key] for key in rivals] + batch
                            plan.update(rivals)
                            by_rule["rivals"] = rivalling
                            by_rule["optima"] = len(optima)
                            by_rule["ties"] = len(ties)
                        if not batch:  # every point is measured: the uncertain decisions again, in one
                            # round with all that is left (a refit between retakes changes little)
                            plan = retakes(grid, takes_of(records), judge, left, most)
                            batch = [grid.by_key[key] for key in plan]
                            by_rule = {"uncertain": 0, "gaps": 0, "spread": 0, "retaken": len(plan)}
                        by_rule["own"] = sum(own_counts.values())
                thought = time.monotonic() - thinking
                overhead = LEAST_ROUND_SHARE * thought
            if not batch and not own:
                say(f"every point of the grid is measured, and every uncertain decision {MOST_TAKES} times")
                return False
            round_started, held = time.monotonic(), len(records.samples)
            # Each rank count gets the share of what is left that its points are predicted to take.
            costs = {size: sum(judge.cost(site, plan[site.key]) if judge else 1.0
                               for site in batch if size == site.P) + own_cost.get(size, 0.0) for size in ranks}
            cut = overran = False
            for position, size in enumerate(ranks):
                chosen: dict[str, list[int]] = defaultdict(list)
                narrowed: dict[str, dict[str, Candidates]] = defaultdict(dict)
                refined: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
                for site in batch:
                    if size == site.P:
                        chosen[site.interface].append(site.index)
                        if plan[site.key] is not None:
                            narrowed[site.interface][str(site.index)] = plan[site.key]
                        if site.refined:
                            refined[site.interface][str(site.index)] = site.point
                if not chosen and taken and not own.get(size):
                    continue
                later = sum(costs[other] for other in ranks[position:])
                share = costs[size] / later if later > 0 else 1.0
                budget_left = max(until - (time.monotonic() - started), 0.0)
                round_left = max(limit - (time.monotonic() - round_started), 0.0)
                deadline = time.time() + share * min(budget_left, round_left)
                with quiet():
                    coverage = servers[size].run({"select": chosen, "settings": narrowed, "refined": refined,
                                                  "own": own.get(size, {}), "verifying": VERIFYING,
                                                  "verify_per_fit": VERIFY_PER_FIT, "deadline": deadline})
                if coverage is not None and round_left < budget_left:
                    overran = True  # the round's own limit: the next round is planned with what it measured
                elif coverage is not None:
                    result.coverage = coverage
                    cut = True
            records = follower.read()
            before, taken = taken, measured_keys(records)
            previous = (batch, plan, time.monotonic() - round_started, cut or overran)
            retaken = by_rule.get("retaken", 0)
            rounds.append(Round(len(batch), by_rule["uncertain"], by_rule["gaps"],
                                time.monotonic() - round_started, by_rule["spread"], retaken,
                                by_rule.get("boundaries", 0), by_rule.get("covering", 0),
                                by_rule.get("rivals", 0), by_rule.get("own", 0), by_rule.get("optima", 0),
                                by_rule.get("ties", 0)))
            if by_rule.get("rest"):
                what = f"{len(batch)} points, every grid point not measured yet, at every candidate (affordable)"
            elif retaken and len(records.samples) == held:  # the round's time ran out before its first sample
                what = f"{retaken} points planned again, none taken in the time left"
            elif retaken:
                what = f"{retaken} points again, their decisions uncertain"
            else:
                spread = f", {by_rule['spread']} spread" if by_rule["spread"] else ""
                bisected = f", {by_rule['boundaries']} bisecting boundaries" if by_rule.get("boundaries") else ""
                covered = (f"; {by_rule['covering']} settings timed where none near had been"
                           if by_rule.get("covering") else "")
                covered += (f"; {by_rule['rivals']} measured points again, at rivals never timed there"
                            if by_rule.get("rivals") else "")
                covered += (f"; {by_rule['optima']} where a parameter's optimum is uncertain, at its settings "
                            f"never timed there" if by_rule.get("optima") else "")
                covered += (f" (of which {by_rule['ties']} where its two best settings measured there tie, "
                            f"both again)" if by_rule.get("ties") else "")
                covered += (f"; {by_rule['own']} random points for models less accurate than the timings ("
                            + ", ".join(f"{name} {count}" for name, count in sorted(own_counts.items())) + ")"
                            if by_rule.get("own") else "")
                what = (f"{len(batch)} points ({by_rule['uncertain']} uncertain{bisected}, "
                        f"{by_rule['gaps']} in gaps{spread}){covered}")
            stopped = f" (stopped at {ROUND_OVERRUN:g} times the {limit / ROUND_OVERRUN:.1f} s planned)" \
                if overran else ""
            planned_with = "" if unsure is None else f"; {unsure:.1%} of the decisions uncertain before it"
            say(f"round {len(rounds)}: {what}, {time.monotonic() - round_started:.1f} s{stopped}; "
                f"{len(taken & grid.by_key.keys())} of {len(sites)} grid points measured{planned_with}")
            if cut:
                return True
            # nothing measured: the same round again would be no better
            if taken == before and not (retaken or overran or by_rule.get("rivals") or by_rule.get("optima")):
                say("a round measured nothing: stopping")
                return False

    def refined_sites(surveyed: Sequence[Site]) -> dict[tuple, Site]:
        """The refined sites among ``surveyed``, by (interface, P, point)."""
        return {(site.interface, site.P, tuple(site.point.items())): site for site in surveyed if site.refined}

    def midpoints(records: Samples) -> tuple[Samples, list[Site], dict[tuple, tuple[bool, float]]]:
        """The sites halfway across the boundaries the measurements show
        (hlc.boundaries), in its order; the new ones are surveyed first, each
        under the next free index of its interface.  Returns the samples
        file's records too, read again when a survey added to them, and each
        midpoint's stakes (:func:`bisection_order`)."""
        surveyed = [site for site in read_sites(records) if site.P in ranks]
        known = {site.key: site.point for site in sites}
        known.update({site.key: site.point for site in surveyed if site.refined and site.key in taken})
        variables = {site.key: site.variables for site in surveyed}
        bisected = boundaries(library, known, by_proposal(library, variables, measured_candidates(records.samples)))
        # A midpoint is a grid point not measured yet (key), or one between the grid's.
        found = [(b.interface, b.P, tuple(b.point.items())) if b.key is None else b.key for b in bisected]
        refined = refined_sites(surveyed)
        following: dict[str, int] = defaultdict(int)
        for site in surveyed:
            following[site.interface] = max(following[site.interface], site.index + 1)
        new: dict[int, dict[str, dict[str, dict]]] = defaultdict(lambda: defaultdict(dict))
        for interface, size, point in dict.fromkeys(where for where, b in zip(found, bisected, strict=True)
                                                    if b.key is None and where not in refined):
            new[size][interface][str(following[interface])] = dict(point)
            following[interface] += 1
        for size, points in new.items():
            with quiet():
                servers[size].run({"survey": True, "refined": points})
        if new:
            records = follower.read()
            refined = refined_sites([site for site in read_sites(records) if site.P in ranks])
        at = {**refined, **grid.by_key}
        sites_found = [at[where] for where in dict.fromkeys(found) if where in at and at[where].key not in taken]
        stakes: dict[tuple, tuple[bool, float]] = {}
        for where, boundary in zip(found, bisected, strict=True):  # each midpoint's first: its largest stake
            if where in at:
                stakes.setdefault(at[where].key, (boundary.implementations, boundary.stake))
        return records, sites_found, stakes

    def affordable(judge: Judge, rest: list[Site], left: float) -> bool:
        """Whether every candidate at the points ``rest`` (those not yet measured) fits in ``left`` seconds."""
        return sum(judge.cost(site, site.settings) for site in rest) <= left

    cut = fitting_rounds((1 - VERIFICATION_SHARE) * budget)
    # The verification samples, with what is left of the budget (a share of it at least).
    verification_started = time.monotonic()
    left = max(budget - (verification_started - started), VERIFICATION_SHARE * budget)
    for position, size in enumerate(ranks):
        deadline = time.time() + max(left - (time.monotonic() - verification_started), 0.0) / (len(ranks) - position)
        with quiet():
            coverage = servers[size].run({"verification_only": True, "verify_per_fit": VERIFY_PER_FIT,
                                          "deadline": deadline})
        if coverage is not None:
            result.coverage = "verification"
    say(f"verification: {time.monotonic() - verification_started:.1f} s")
    # What the verification left goes back to the fitting points: the fits use
    # them, and the verification samples stay as they were taken.  It is
    # planned as one round: the few seconds left bought four rounds of a
    # point or a few each, with a fit and a plan before each of them.
    if cut and result.coverage != "verification" and budget - (time.monotonic() - started) >= LEAST_ROUND:
        result.coverage = None
        say(f"the verification left {budget - (time.monotonic() - started):.1f} s: more rounds")
        fitting_rounds(budget, portion=1.0)
    result.coverage = None if result.coverage is None else (
        f"the budget ran out: {len(taken & grid.by_key.keys())} of {len(sites)} grid points measured")
    return rounds
