"""Adaptive profiling: the grid of a survey, its space-filling start, and a
profile that measures where the decisions are uncertain."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import pytest

import hlc
import hlc.adaptive as adaptive_profile
from hlc.adaptive import (
    Grid,
    Judge,
    Site,
    bisection_order,
    block_timings,
    covering,
    measured_keys,
    next_round,
    own_points,
    profile_adaptively,
    read_sites,
    retakes,
    uncertain_share,
    unsure_optima,
    untimed_rivals,
    within_seconds,
)
from hlc.artefacts.models import TimeModel
from hlc.artefacts.samples import Sample
from hlc.model.calibration import Samples, calibrate

DESCRIPTIONS = Path(__file__).resolve().parent / "descriptions"


def site(index: int, P: int = 1, **point: int) -> Site:
    return Site("f", P, index, point, {"n": 1}, {"a": [{}]}, {"a": [{}]})


def square_grid(size: int, P: int = 1) -> list[Site]:
    """size × size sites, the second loop multiplying (its values 1, 2, 4, ...)."""
    return [site(i * size + j, P, i=i, n=2**j) for i, j in itertools.product(range(size), range(size))]


def test_the_grid_places_sites_by_the_rank_of_their_values():
    grid = Grid(square_grid(5))
    assert grid.ranks[("f", 1, 7)] == (1, 2)  # i = 1, n = 4: the third value of n
    assert grid.places[("f", 1, 24)] == (1.0, 1.0)
    taken = {("f", 1, 0)}
    assert grid.covered(("f", 1, 6), taken)  # one step along both loops
    assert not grid.covered(("f", 1, 2), taken)  # two steps along n


def test_a_point_between_the_grids_is_placed_at_its_nearest_site():
    grid = Grid(square_grid(5))
    assert grid.nearest("f", 1, {"i": 2, "n": 5}) == ("f", 1, 12)  # n = 5 lies nearest 4, the third value
    assert grid.nearest("f", 1, {"i": 9, "n": 100}) == ("f", 1, 24)  # beyond the ranges: their ends
    assert grid.nearest("f", 1, {"i": 2}) is None  # a loop missing
    assert grid.nearest("f", 2, {"i": 2, "n": 5}) is None  # no such group


def test_farthest_first_starts_at_the_corners_and_is_deterministic():
    grid = Grid(square_grid(9))
    first = grid.farthest_first(set(), 4)
    corners = {(0, 0), (0, 8), (8, 0), (8, 8)}
    assert {grid.ranks[s.key] for s in first} == corners
    assert [s.key for s in grid.farthest_first(set(), 4)] == [s.key for s in first]
    # then the centre: the point farthest from the corners
    assert grid.ranks[grid.farthest_first({s.key for s in first}, 1)[0].key] == (4, 4)


def test_a_frugal_start_leaves_the_largest_arguments_for_later():
    """Sizes 2^j along the second loop: the plain start takes the corners, the
    frugal one the corners of the cheaper part first."""
    sites = [Site("f", 1, i * 9 + j, {"i": i, "n": 2**j}, {"n": 2**j}, {"a": [{}]}, {"a": [{}]}, 8 * 4**j)
             for i, j in itertools.product(range(9), range(9))]
    grid = Grid(sites)
    plain = [grid.ranks[s.key][1] for s in grid.farthest_first(set(), 4)]
    frugal = [grid.ranks[s.key][1] for s in grid.farthest_first(set(), 4, frugal=True)]
    assert max(plain) == 8 and max(frugal) < 8
    assert sorted(s.key for s in grid.farthest_first(set(), 4, frugal=True)) == \
        sorted(s.key for s in grid.farthest_first(set(), 4, frugal=True))


def test_each_rank_count_gets_its_own_start():
    grid = Grid(square_grid(4, P=1) + square_grid(4, P=2))
    assert {s.P for s in grid.farthest_first(set(), 2)} == {1, 2}


def test_a_site_times_only_the_candidates_that_may_win_there():
    """After the start, a candidate predicted more than WORTH times slower than
    the fastest alternative is not timed, unless its band reaches that far or
    it brackets its implementation's predicted best setting; an implementation
    without a model yet is timed at every setting."""
    predictions = {("radix", 1): 8.0, ("radix", 2): 4.0, ("radix", 3): 2.5, ("radix", 4): 1.0, ("radix", 5): 1.5,
                   ("radix", 6): 3.0, ("slow", None): 10.0, ("wide", None): 10.0}
    halves = {("wide", None): 9.0}
    judge = Judge.__new__(Judge)
    judge.timings = {}  # every block as the default repeat's
    judge.records = None  # no samples: every knot taken as the fit placed it
    judge.grid = None
    judge.entries = {name: TimeModel("fitted", mre=1.0) for name in ("radix", "slow", "wide")}
    judge.implementations = dict.fromkeys(("radix", "slow", "wide", "new"))
    judge.worth = {}
    judge.predicted = lambda name, environment: (predictions[name, environment.get("bpd")],
                                                 halves.get((name, environment.get("bpd")), 0.0))
    radix = [{"bpd": b} for b in range(1, 7)]
    place = Site("f", 1, 0, {"n": 1}, {"n": 1.0}, {"radix": radix, "slow": [{}], "wide": [{}], "new": [{}]}, {})
    assert judge.worth_timing(place) == {"radix": [{"bpd": 3}, {"bpd": 4}, {"bpd": 5}], "wide": [{}], "new": [{}]}
    assert judge.worth_timing(place, math.inf) == place.settings


def test_settings_that_cannot_win_are_still_timed_once_in_each_neighbourhood():
    """Covering: where no site within one step has timed an implementation
    at a setting within SETTING_REACH places, a round times it there, at
    settings that cover the list with the fewest; elsewhere the plan stays."""
    reach = adaptive_profile.SETTING_REACH
    radix = [{"bpd": b} for b in range(1, 11)]
    sites = [Site("f", 1, i, {"i": i}, {"i": i}, {"fast": [{}], "radix": radix}, {}) for i in range(8)]
    grid = Grid(sites)
    plan = {site.key: {"fast": [{}]} for site in sites}
    timed = {"fast": {site.key: {0} for site in sites}, "radix": {sites[7].key: set(range(10))}}
    batch = sites[:7]
    extended, added = covering(grid, batch, plan, timed)
    with_radix = [site.index for site in batch if "radix" in extended[site.key]]
    # 0 is far from 7, which timed radix; 1 neighbours 0, 3 neighbours 2, 5 neighbours 4, 6 neighbours 7
    assert with_radix == [0, 2, 4]
    # both ends of the ten settings, and each other within `reach` places of one taken: positions 0, 5 and 9
    assert extended[sites[0].key]["radix"] == [radix[i] for i in (0, 2 * reach + 1, 9)] and added == 9
    assert extended[sites[1].key] == {"fast": [{}]}
    # a site that times a setting already covers the settings near it
    near = {sites[0].key: {"fast": [{}], "radix": [radix[4]]}}
    assert covering(grid, sites[:1], near, timed)[0][sites[0].key]["radix"] == [radix[i] for i in (0, 4, 9)]
    # with a cost, what covering adds stays within the seconds given: the first site's settings only
    capped, count = covering(grid, batch, plan, timed, lambda site, candidates: 1.0, 1.5)
    assert [site.index for site in batch if "radix" in capped[site.key]] == [0] and count == 3
    # a site whose every candidate is timed adds nothing, and covers its neighbours
    everything = {site.key: None for site in batch}
    assert covering(grid, batch, everything, timed) == (everything, 0)
    # a point between the grid's, bisecting a boundary, lies next to measured ones: its plan stays
    between = Site("f", 1, 8, {"i": 3}, {"i": 3.5}, sites[0].settings, {}, refined=True)
    assert covering(grid, [between], {between.key: {"fast": [{}]}}, {}) == ({between.key: {"fast": [{}]}}, 0)


def test_a_measured_point_is_taken_again_when_a_rival_never_timed_there_turns_uncertain():
    """Untimed rivals: a site measured at the candidates an early round thought
    could win, whose decision the later models find uncertain between an
    alternative timed there and one that was not, is measured again at the
    one that was not; a clear decision, a decision between timed rivals and
    a site not measured yet are left alone."""
    gaps = {0: 0.1, 1: 0.1, 2: 5.0, 3: 0.1}  # how far the second alternative lies behind the first
    judge = Judge.__new__(Judge)
    judge.timings = {}  # every block as the default repeat's
    judge.records = None  # no samples: every knot taken as the fit placed it
    judge.grid = None
    judge.entries = {name: TimeModel("fitted", mre=1.0) for name in ("a", "b")}
    judge.implementations = {"a": None, "b": None}
    judge.worth, judge.ranked = {}, {}
    judge.predicted = lambda name, environment: (1.0 if name == "a" else 1.0 + gaps[environment["i"]], 0.5)
    sites = [Site("f", 1, i, {"i": i}, {"i": i}, {"a": [{}], "b": [{}]}, {"a": [{}], "b": [{}]}) for i in range(4)]
    grid = Grid(sites)
    timed = {"a": {site.key: {0} for site in sites[:3]}, "b": {sites[1].key: {0}}}
    taken = {site.key for site in sites[:3]}
    assert untimed_rivals(grid, taken, judge, timed, math.inf) == {sites[0].key: {"b": [{}]}}


def test_a_measured_point_is_taken_again_where_a_parameter_s_optimum_is_uncertain():
    """Unsure optima: at a site measured without the parameterized
    implementation (far slower than the fastest there), whose predicted best
    setting and another lie within each other's bands, those two settings
    are timed; a clear optimum, settings timed already and a site not
    measured yet are left alone; the closest call comes first."""
    gaps = {0: 0.1, 1: 0.1, 2: 5.0, 3: 0.1, 4: 0.3}  # how far p=2 lies behind p=1
    judge = Judge.__new__(Judge)
    judge.timings = {}  # every block as the default repeat's
    judge.records = None
    judge.grid = None
    judge.entries = {name: TimeModel("fitted", mre=1.0) for name in ("a", "b")}
    judge.implementations = {"a": None, "b": None}
    judge.worth, judge.ranked = {}, {}

    def predicted(name, environment):
        if name == "a":
            return 1.0, 0.1
        return (10.0 if environment["p"] == 1 else 10.0 + gaps[environment["i"]]
                if environment["p"] == 2 else 30.0), 0.25

    judge.predicted = predicted
    settings = [{"p": 1}, {"p": 2}, {"p": 3}]
    sites = [Site("f", 1, i, {"i": i}, {"i": i}, {"a": [{}], "b": settings}, {"a": [{}], "b": settings})
             for i in range(5)]
    grid = Grid(sites)
    timed = {"a": {site.key: {0} for site in sites}, "b": {sites[1].key: {0, 1}}}
    taken = {site.key for site in sites if site.index != 3}
    chosen = unsure_optima(grid, taken, judge, timed, math.inf)
    assert list(chosen) == [sites[0].key, sites[4].key]
    assert chosen[sites[0].key] == {"b": [{"p": 1}, {"p": 2}]}
    assert untimed_rivals(grid, taken, judge, timed, math.inf) == {}  # a wins everywhere: no rival


def test_a_searched_parameter_s_measured_tie_is_measured_again():
    """Measured ties: where the two best settings of a searched parameter,
    as measured at a point, lie within TIE of each other and one was
    measured there once, the two are measured there again, the closest
    tie first; a clear winner, a tie measured twice already, verification
    samples and an implementation without parameters are left alone."""
    from types import SimpleNamespace

    from hlc.adaptive import TIE, measured_ties

    judge = Judge.__new__(Judge)
    judge.timings = {}  # every block as the default repeat's
    judge.cost = lambda site, candidates=None: 1.0
    settings = [{"p": 1}, {"p": 2}, {"p": 3}]
    sites = [Site("f", 1, i, {"i": i}, {"i": i}, {"a": [{}], "b": settings}, {"a": [{}], "b": settings})
             for i in range(5)]
    grid = Grid(sites)

    def sample(index, name, parameters, seconds, verify=False):
        return Sample("f", name, verify, 1, index, parameters, {"i": index}, seconds)

    close = (TIE - 1) / 2
    samples = [
        sample(0, "b", {"p": 1}, 1.0), sample(0, "b", {"p": 2}, 1.0 + close), sample(0, "b", {"p": 3}, 3.0),
        sample(1, "b", {"p": 1}, 1.0), sample(1, "b", {"p": 2}, 2.0),  # a clear winner
        sample(2, "b", {"p": 3}, 1.0), sample(2, "b", {"p": 3}, 1.02),  # measured twice, both of the tie
        sample(2, "b", {"p": 2}, 1.01), sample(2, "b", {"p": 2}, 1.03),
        sample(3, "b", {"p": 2}, 1.0), sample(3, "b", {"p": 1}, 1.0 + close / 4),  # the closest tie
        sample(4, "b", {"p": 1}, 1.0, verify=True), sample(4, "b", {"p": 2}, 1.0, verify=True),
        sample(4, "a", {}, 1.0),
    ]
    chosen = measured_ties(grid, SimpleNamespace(samples=samples), judge, math.inf)
    assert list(chosen) == [sites[3].key, sites[0].key]
    assert chosen[sites[3].key] == {"b": [{"p": 2}, {"p": 1}]}
    assert chosen[sites[0].key] == {"b": [{"p": 1}, {"p": 2}]}
    assert list(measured_ties(grid, SimpleNamespace(samples=samples), judge, 1.5)) == [sites[3].key]


def test_once_every_point_is_measured_the_uncertain_decisions_are_measured_again():
    """Retakes: the points whose two best alternatives overlap, most uncertain
    first, at the candidates that may win there, up to MOST_TAKES in all."""
    gaps = {0: 0.1, 1: 1.0, 2: 5.0, 3: 0.2}  # how far the second alternative lies behind the first
    judge = Judge.__new__(Judge)
    judge.timings = {}  # every block as the default repeat's
    judge.records = None  # no samples: every knot taken as the fit placed it
    judge.grid = None
    judge.entries = {name: TimeModel("fitted", mre=1.0) for name in ("a", "b")}
    judge.implementations = {"a": None, "b": None}
    judge.worth, judge.ranked = {}, {}
    judge.predicted = lambda name, environment: (
        1.0 if name == "a" else 1.0 + gaps[environment["i"]], 0.5)
    sites = [Site("f", 1, i, {"i": i}, {"i": i}, {"a": [{}], "b": [{}]}, {"a": [{}], "b": [{}]})
             for i in range(4)]
    grid = Grid(sites)
    takes = {site.key: 1 for site in sites} | {sites[3].key: adaptive_profile.MOST_TAKES}
    chosen = retakes(grid, takes, judge, math.inf)
    # the clear decision (2) is not retaken, nor the point measured enough (3); the closest comes first
    assert list(chosen) == [sites[0].key, sites[1].key]
    assert chosen[sites[0].key] == {"a": [{}], "b": [{}]}
    assert list(retakes(grid, takes, judge, 0.0)) == [sites[0].key]  # the first always fits


@pytest.fixture(scope="module")
def adaptive(tmp_path_factory):
    """An adaptive profile of a library whose two implementations cross."""
    folder = tmp_path_factory.mktemp("crossing")
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    lines: list[str] = []
    samples = folder / "samples.jsonl"
    # Its whole grid costs a second: the rules that choose among its points
    # are what these tests see, not the round that takes them all at once.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(adaptive_profile, "WHOLE_GRID_FIRST", False)
        result, rounds = profile_adaptively(library, samples, folder, ranks=[1], budget=60.0,
                                            report=lines.append)
    return library, samples, result, rounds, lines


def test_an_adaptive_profile_surveys_the_grid_and_measures_part_of_it(adaptive):
    library, samples, result, rounds, lines = adaptive
    records = Samples.read(samples)
    sites = [site for site in read_sites(records) if not site.refined]
    assert len(sites) == 57 and all(set(s.variables) >= {"n", "P", "logP"} for s in sites)
    measured = measured_keys(records)
    assert 8 <= len(measured & {site.key for site in sites}) <= len(sites)
    assert len(rounds) >= 2 and rounds[0].sites == 8 and rounds[0].uncertain == 0
    # the uncertain decisions and the gaps come before the points that only fill the nest
    assert rounds[1].uncertain + rounds[1].gaps > 0
    assert lines[-1].startswith("verification: ")
    verified = [r for r in records.samples if r.verify]
    assert {r.implementation for r in verified} == {"dot", "loop"}
    assert not result.coverage


def test_a_round_past_its_limit_stops_and_the_next_is_planned(tmp_path, monkeypatch):
    """A round that overruns its plan (ROUND_OVERRUN) is stopped, and the
    profile goes on with the next round, planned from what it measured:
    only the budget ends the fitting rounds.  With no time allowed for
    it, every round after the start stops before its first point, until
    the budget is spent."""
    monkeypatch.setattr(adaptive_profile, "ROUND_OVERRUN", 1e-9)
    # What the verification leaves stays unused (its return to the fitting
    # rounds has a test of its own): the verification's line is then the last.
    monkeypatch.setattr(adaptive_profile, "LEAST_ROUND", math.inf)
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    lines: list[str] = []
    samples = tmp_path / "samples.jsonl"
    result, rounds = profile_adaptively(library, samples, tmp_path, ranks=[1], budget=6.0, report=lines.append)
    stopped = [line for line in lines if "(stopped at 1e-09 times the" in line]
    # all but the start and the last, which the budget stopped
    assert len(stopped) >= 2 and len(stopped) >= len(rounds) - 2
    assert not any("measured nothing" in line for line in lines)
    assert len(measured_keys(Samples.read(samples))) == rounds[0].sites  # the start's points alone
    assert lines[-1].startswith("verification: ")
    # the budget ended the rounds: spent before a round, or all but what a round's planning takes, or during the last
    assert "the fitting share of the budget is spent" in lines \
        or any("less than a round's fit and planning took" in line for line in lines) \
        or result.coverage == f"the budget ran out: {rounds[0].sites} of 57 grid points measured"


def test_a_budget_that_affords_the_whole_grid_takes_it_in_the_first_round_after_the_start(tmp_path):
    """The crossing library's grid costs a second: once the start's models
    predict that, the next round takes every point not measured yet, at every
    candidate; the rounds after it measure uncertain decisions again."""
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    lines: list[str] = []
    samples = tmp_path / "samples.jsonl"
    result, rounds = profile_adaptively(library, samples, tmp_path, ranks=[1], budget=30.0, report=lines.append)
    assert lines[1].startswith(f"round 2: {57 - rounds[0].sites} points, every grid point not measured yet, "
                               f"at every candidate (affordable)")
    records = Samples.read(samples)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    assert {site.key for site in grid.sites} <= measured_keys(records)
    refined = {site.index for site in read_sites(records) if site.refined}
    assert not any(s.index in refined for s in records.samples)  # no boundary was bisected between the grid's
    timed = {(s.index, s.implementation) for s in records.samples if not s.verify}
    assert all((site.index, name) in timed for site in grid.sites for name in site.settings)


def test_an_adaptive_profile_stops_when_the_grid_is_measured_or_the_budget_spent(adaptive):
    library, samples, _, _, lines = adaptive
    records = Samples.read(samples)
    if any("every point of the grid is measured" in line for line in lines):
        grid = {site.key for site in read_sites(records) if not site.refined}
        assert measured_keys(records) >= grid
    else:
        assert any("budget is spent" in line for line in lines)


def test_a_round_fills_the_nest_only_when_no_decision_is_uncertain(adaptive):
    """With the profile's models, a round ranks every uncertain site before a site that only fills the nest."""
    library, samples, _, _, _ = adaptive
    judge = Judge(library, calibrate(library, Samples.read(samples)))
    records = Samples.read(samples)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    first = {("f", 1, 0)} & set(grid.by_key) or {grid.sites[0].key}
    chosen, by_rule = next_round(grid, first, judge, 1e9)  # room for everything
    assert len(chosen) == len(grid.sites) - 1
    spread = chosen[len(chosen) - by_rule["spread"]:]
    assert all(judge.uncertainty(site, 4.0) == 0 for site in spread)
    assert sum(1 for site in chosen if judge.uncertainty(site, 4.0) > 0) >= by_rule["uncertain"]  # gaps may be too
    assert by_rule["uncertain"] + by_rule["gaps"] + by_rule["spread"] == len(chosen)


def test_a_round_takes_the_uncertain_decisions_most_uncertain_per_root_of_their_seconds_first(adaptive):
    """A cheap point is settled in a fraction of an expensive one's seconds,
    and a wrong choice there costs a caller a fraction of the time: a round
    short of room ranks the uncertain points by their uncertainty over the
    square root of their predicted seconds (COST_POWER)."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    judge = Judge(library, calibrate(library, records), records=records, grid=grid)
    taken = {grid.sites[0].key}
    dear, cheap = grid.sites[1], grid.sites[-1]
    scores = {dear.key: 1.0, cheap.key: 0.6}
    judge.uncertainty = lambda site, widening=1.0: scores.get(site.key, 0.0)
    judge.cost = lambda site, candidates=None: 16.0 if site.key == dear.key else 1.0
    chosen, by_rule = next_round(grid, taken, judge, 4.0)
    assert chosen[0] == cheap and by_rule["uncertain"] == 1  # 0.6 a root second against 1.0 / 4
    assert dear not in chosen  # sixteen seconds: more than the round has room for once the cheap one is in
    scores[cheap.key] = 0.2  # ahead per second (0.2 against 1/16), behind per root of it (against 1/4)
    chosen, _ = next_round(grid, taken, judge, 4.0)
    assert chosen[0] == dear and cheap not in chosen


def test_a_round_takes_the_most_uncertain_decisions_whatever_they_cost_in_turn(adaptive):
    """Per root second alone, a dear decision waits behind every cheaper one
    (a 15 s sort build left the largest sorts to extrapolation): a round
    takes from that ranking and from the uncertainty alone in turn."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    judge = Judge(library, calibrate(library, records), records=records, grid=grid)
    taken = {grid.sites[0].key}
    dear, *cheap = grid.sites[1], grid.sites[-1], grid.sites[-2], grid.sites[-3]
    scores = {dear.key: 1.0, **{site.key: 0.6 for site in cheap}}
    judge.uncertainty = lambda site, widening=1.0: scores.get(site.key, 0.0)
    judge.cost = lambda site, candidates=None: 16.0 if site.key == dear.key else 1.0
    chosen, _ = next_round(grid, taken, judge, 34.0)  # 17 s for the uncertain: one cheap and the dear one
    assert chosen[0] in cheap and chosen[1] == dear  # per root second alone, three cheap ones, then no room


def test_a_build_that_compiles_first_profiles_for_what_keeps_it_within_a_minute():
    """Without --budget, a build profiles for BUDGET seconds; one whose
    compile came first for what leaves the whole build within
    BUILD_SECONDS, and never less than LEAST_BUDGET."""
    assert adaptive_profile.default_budget(0.3) == adaptive_profile.BUDGET  # from the compile cache
    ten = adaptive_profile.BUILD_SECONDS - adaptive_profile.AFTER_PROFILE - 10.5
    assert adaptive_profile.LEAST_BUDGET < ten < adaptive_profile.BUDGET
    assert adaptive_profile.default_budget(10.5) == pytest.approx(ten)  # a first sort build on two cores
    assert adaptive_profile.default_budget(40.0) == adaptive_profile.LEAST_BUDGET  # a slow compile
    assert 10.5 + ten + adaptive_profile.AFTER_PROFILE <= 60


def test_no_site_is_taken_that_would_outlast_the_budget_left(adaptive):
    """A point, once started, runs to its end: a round near the end of the
    budget takes no site predicted to take longer than the budget left, not
    even as its first (which a round's own share does not hold back), and
    retakes and rivals keep to it too."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    judge = Judge(library, calibrate(library, records))
    grid = Grid([site for site in read_sites(records) if not site.refined])
    costs = sorted(judge.cost(site) for site in grid.sites)
    most = costs[len(costs) // 2]  # half the sites cost more than this
    first = {grid.sites[0].key}
    uncapped, _ = next_round(grid, first, judge, 0.0)
    assert len(uncapped) == 1  # no room: the first site still, whatever it costs
    chosen, _ = next_round(grid, first, judge, 1e9, most=most)
    assert chosen and all(judge.cost(site) <= most for site in chosen)
    assert len(chosen) == sum(1 for site in grid.sites if site.key not in first and judge.cost(site) <= most)
    assert next_round(grid, first, judge, 1e9, most=costs[0] / 2)[0] == []
    ranked = [(site, judge.worth_timing(site)) for site in grid.sites]
    assert all(judge.cost(grid.by_key[key], candidates) <= most
               for key, candidates in within_seconds(ranked, judge, 1e9, most).items())
    assert within_seconds(ranked, judge, 0.0, costs[0] / 2) == {}


def test_uncertain_points_lie_at_the_crossover(adaptive):
    """The decision is uncertain where the two predictions meet, clear far from it."""
    library, samples, _, _, _ = adaptive
    judge = Judge(library, calibrate(library, Samples.read(samples)))
    sites = sorted((site for site in read_sites(Samples.read(samples)) if not site.refined),
                   key=lambda s: s.variables["n"])
    winners = [judge.alternatives(s)[0].implementation for s in sites]
    assert winners[0] == "loop" and winners[-1] == "dot"
    crossover = next(i for i, w in enumerate(winners) if w == "dot")
    scores = [judge.uncertainty(s) for s in sites]
    if max(scores) > 0:  # precise models may leave no grid point uncertain
        assert scores.index(max(scores)) in range(crossover - 6, crossover + 6)
    assert scores[0] == 0 and scores[-1] == 0

    def separation(site: Site) -> float:
        """How many uncertainties apart the two fastest predictions lie."""
        first, second = judge.alternatives(site)[:2]
        return (second.seconds - first.seconds) / (first.uncertainty + second.uncertainty)

    closest = min(range(len(sites)), key=lambda i: separation(sites[i]))
    assert closest in range(crossover - 2, crossover + 2)


def test_a_fitting_sample_far_off_its_model_widens_the_bands_around_it(adaptive):
    """A model's mean error hides where it goes wrong: a fitting sample three
    times its prediction makes the decisions within one step of it
    uncertain, and leaves those farther away as they were."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    models = calibrate(library, records)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    plain = Judge(library, models, records=records, grid=grid)
    # As the fit took them: a sample of a slow spell was left out, or kept divided by the spell's slowdown.
    measured = [s for s in records.samples if not s.verify and s.implementation == "dot"
                and (s.interface, s.P, s.index) in grid.by_key and plain.as_fitted(s) is not None]

    def ratio(sample) -> float:
        return plain.as_fitted(sample) / plain.predicted("dot", sample.environment)[0]

    # The one its model fits best, so that tripled it is about three times off
    # (on a busy host some samples lie well below their prediction already).
    off = min(measured, key=lambda s: abs(math.log(ratio(s))))
    miss = 3 * ratio(off) - 1  # what tripling it makes of its miss
    where = (off.interface, off.P, off.index)
    tripled = dataclasses.replace(records, samples=tuple(
        dataclasses.replace(s, seconds=3 * s.seconds) if s is off else s for s in records.samples))
    widened = Judge(library, models, records=tripled, grid=grid)
    blind = Judge(library, models, records=tripled)  # no grid: no place to widen

    def dot(judge: Judge, key: tuple) -> float:
        """The dot alternative's uncertainty at a site, over its prediction."""
        found = next(a for a in judge.alternatives(grid.by_key[key]) if a.implementation == "dot")
        return found.uncertainty / found.seconds

    near = grid.neighbours(where)
    # about 3× off: some two predictions' worth either way, where the model thought less (on a
    # busy host, a neighbourhood whose samples scatter may already hold one prediction's worth)
    assert miss > 1.5
    assert all(dot(widened, key) >= max(miss * (1 - 1e-9), dot(plain, key)) for key in near)
    assert all(dot(blind, key) <= dot(plain, key) for key in near)
    far = [site.key for site in grid.sites if site.key not in near][:10]
    assert far and all(dot(widened, key) == pytest.approx(dot(plain, key)) for key in far)


def test_the_planner_sees_the_samples_of_slow_spells_as_the_fit_took_them(adaptive):
    """Left out where the fit left them out, divided by the spell's slowdown
    where it kept them scaled back: a sample the fit scaled by 2 is no miss
    of its model, however far its raw time lies from the prediction."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    models = calibrate(library, records)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    plain = Judge(library, models, records=records, grid=grid)
    fitting = [s for s in records.samples if not s.verify and s.implementation == "dot"
               and (s.interface, s.P, s.index) in grid.by_key and plain.as_fitted(s) is not None]
    off = min(fitting, key=lambda s: abs(math.log(s.seconds / plain.predicted("dot", s.environment)[0])))
    # Every other sample calm, so that only this one is read as a slow spell's; twice as long.
    slowed = dataclasses.replace(off, seconds=2 * off.seconds, host=100.0, noisy=False)
    verifying = dataclasses.replace(slowed, verify=True)
    calm = dataclasses.replace(records, samples=tuple(dataclasses.replace(s, host=1.0, noisy=False)
                                                      for s in records.samples))
    pairs = zip(records.samples, calm.samples, strict=True)
    spelled = dataclasses.replace(calm, samples=tuple(slowed if original is off else s for original, s in pairs))
    entry = models.time("dot")

    def judge(taken: Samples = spelled, **changed) -> Judge:
        implementations = dict(models.implementations)
        implementations["dot"] = dataclasses.replace(implementations["dot"],
                                                     time=dataclasses.replace(entry, **changed))
        return Judge(library, dataclasses.replace(models, implementations=implementations), records=taken,
                     grid=grid)

    scaled, left_out = judge(slowdown=2.0, disturbed_samples=0), judge(slowdown=None, disturbed_samples=1)
    both, kept = judge(slowdown=2.0, disturbed_samples=1), judge(slowdown=None, disturbed_samples=0)
    assert scaled.as_fitted(slowed) == pytest.approx(off.seconds) and left_out.as_fitted(slowed) is None
    assert both.as_fitted(slowed) == pytest.approx(off.seconds) and both.as_fitted(verifying) is None
    assert kept.as_fitted(slowed) == slowed.seconds and scaled.as_fitted(verifying) == pytest.approx(off.seconds)
    where = grid.by_key[(off.interface, off.P, off.index)]
    settings = dict(off.parameters)
    unslowed = judge(calm, slowdown=None, disturbed_samples=0)
    assert scaled.misfit("dot", settings, where) == left_out.misfit("dot", settings, where) \
        == unslowed.misfit("dot", settings, where)
    assert kept.misfit("dot", settings, where) >= 0.9  # taken at its raw time: twice its prediction


def test_an_implementation_with_too_few_samples_for_a_model_is_measured_first(adaptive):
    """An implementation left unfitted for want of fitting samples has no
    prediction, and no uncertainty points to where it applies: the next
    round measures it first, at the sites farthest from the measured ones,
    until it has its terms' worth of samples and a margin."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    fitting_dot = [s for s in records.samples if s.implementation == "dot" and not s.verify]
    few = dataclasses.replace(records, samples=tuple(
        s for s in records.samples if s.implementation != "dot" or s in fitting_dot[:2]))
    models = calibrate(library, few)
    assert models.time("dot").status == "unfitted"
    short = Judge(library, models, records=few, grid=grid)
    # 1 + n: 2 terms, and 2 samples of them; the margin more wanted
    assert short.unmodelled() == {"dot": adaptive_profile.UNMODELLED_MARGIN}
    taken = {grid.sites[0].key}
    chosen, by_rule = next_round(grid, taken, short, 1e9)
    # the first sites are the farthest from the measured one, until dot has enough
    wanted = adaptive_profile.UNMODELLED_MARGIN
    assert chosen[:wanted] == grid.farthest_first(taken, wanted, frugal=True)
    assert by_rule["uncertain"] >= wanted
    chosen, by_rule = next_round(grid, taken, short, 0.0)  # no room: none for dot, the first gap only
    assert len(chosen) == 1 and by_rule["uncertain"] == 0
    full = Judge(library, calibrate(library, records), records=records, grid=grid)
    assert full.unmodelled() == {}
    assert Judge(library, models).unmodelled() == {}  # no samples to count: nothing is taken for unmodelled


def test_the_share_of_uncertain_decisions_counts_overlapping_bands_and_models_missing(adaptive):
    """Of the nest's points, those where two alternatives' bands overlap, and
    those where an alternative that may be chosen has no model yet; an
    implementation excluded for failing leaves nothing uncertain."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    models = calibrate(library, records)

    def judged(**entries: TimeModel) -> Judge:
        judge = Judge(library, models)
        judge.entries = {**judge.entries, **entries}
        return judge

    judge = judged()
    overlapping = [site for site in grid.sites if judge.uncertainty(site) > 0]
    assert uncertain_share(grid, judge) == len(overlapping) / len(grid.sites) < 0.5
    # dot without a model: every point where it may be chosen is uncertain
    unfitted = judged(dot=TimeModel("unfitted", cause="too few samples"))
    assert uncertain_share(grid, unfitted) == sum("dot" in site.choices for site in grid.sites) / len(grid.sites) == 1.0
    # dot failed: loop alone is left, and nothing is uncertain
    assert uncertain_share(grid, judged(dot=TimeModel("excluded", cause="raised"))) == 0.0
    assert uncertain_share(Grid([]), judge) == 0.0


def test_a_profile_stops_once_no_more_decisions_are_uncertain_than_asked(tmp_path):
    """With every decision allowed to be uncertain, the fitting rounds stop as
    soon as every point of the grid has a measured neighbour and the models
    are as accurate as the timings or densely sampled, long before the
    budget; the verification samples are taken all the same."""
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    lines: list[str] = []
    samples = tmp_path / "samples.jsonl"
    result, rounds = profile_adaptively(library, samples, tmp_path, ranks=[1], budget=60.0, report=lines.append,
                                        uncertain=1.0)
    [stop] = [line for line in lines if "the fitting rounds stop with" in line]
    assert stop.endswith("s of their budget left") and "at most the 100.0% asked" in stop
    assert "every model as accurate as the timings or densely sampled" in stop
    assert lines.index(stop) == len(rounds)  # right after the last round, which planned it
    assert not any("budget is spent" in line or "every point of the grid is measured" in line for line in lines)
    records = Samples.read(samples)
    grid = Grid([site for site in read_sites(records) if not site.refined])
    taken = measured_keys(records)
    assert all(grid.covered(site.key, taken) for site in grid.sites)
    assert lines[-1].startswith("verification: ") and any(s.verify for s in records.samples)
    assert all("of the decisions uncertain before it" in line for line in lines[1:len(rounds)])
    with pytest.raises(ValueError, match="uncertain"):
        profile_adaptively(library, samples, tmp_path, ranks=[1], budget=1.0, uncertain=1.5)


def test_a_sites_cost_counts_the_timings_its_profile_asks(adaptive, tmp_path):
    """Judge.cost: each candidate's checking call and its block of the
    profile's ``repeat`` timings and EXTRA_TIMINGS more, each at least the
    clock's minimum; five timings a sample make a block dearer than three."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    models = calibrate(library, records)
    text = (DESCRIPTIONS / "crossing.hl").read_text().replace("repeat 3", "repeat 5")
    (tmp_path / "crossing.hl").write_text(text)
    (tmp_path / "squares").symlink_to(DESCRIPTIONS / "squares")
    five = hlc.parse_file(tmp_path / "crossing.hl")
    assert block_timings(library, "square_sum") == 3 + adaptive_profile.EXTRA_TIMINGS
    assert block_timings(five, "square_sum") == 5 + adaptive_profile.EXTRA_TIMINGS
    assert block_timings(library, "no such interface") == 3 + adaptive_profile.EXTRA_TIMINGS  # the default repeat
    somewhere = read_sites(records)[0]
    judges = {3: Judge(library, models), 5: Judge(five, models)}
    calls = [judges[3].predicted(name, {**somewhere.variables, **settings})[0]
             for name, settings_list in judges[3].worth_timing(somewhere).items() for settings in settings_list]
    for repeat, judge in judges.items():
        timings = repeat + adaptive_profile.EXTRA_TIMINGS
        assert judge.cost(somewhere) == pytest.approx(
            sum(call + timings * max(call, adaptive_profile.MINIMUM_TIMING) for call in calls))


def test_a_model_less_accurate_than_the_timings_gets_random_points_of_its_own(adaptive):
    """own_points: a model whose fit misses its samples by more than
    ACCURATE, with fewer than DENSE samples per written term, gets random
    points of its own, the round's OWN_SHARE (at most the room the
    uncertain decisions leave) shared in proportion to the models' excess
    errors, each at most doubling its samples in a round;
    a model as accurate as the timings, or dense already, gets none.  The
    counts are in all: the points of its own taken before count."""
    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    models = calibrate(library, records)
    judge = Judge(library, models)
    fitting = {name: [s for s in records.samples if s.implementation == name and not s.verify]
               for name in ("dot", "loop")}
    median = {name: sorted(s.seconds for s in found)[len(found) // 2] for name, found in fitting.items()}
    timings = library.interfaces[0].profile.repeat + adaptive_profile.EXTRA_TIMINGS
    each = {name: m + timings * max(m, adaptive_profile.MINIMUM_TIMING) for name, m in median.items()}

    def judged(samples: int = adaptive_profile.DENSE, **mre: float) -> Judge:
        """The models with these MREs, each fitted on ``samples`` (1 + n: two terms, dense from 2 * DENSE)."""
        return _with(judge, {name: dataclasses.replace(entry, mre=mre.get(name, entry.mre), samples=samples)
                             for name, entry in judge.entries.items()})

    accurate = judged(dot=adaptive_profile.ACCURATE, loop=adaptive_profile.ACCURATE)
    assert own_points(library, accurate, records, 1e9) == ({}, {}, {})
    dense = judged(samples=2 * adaptive_profile.DENSE, dot=1.2, loop=1.2)
    assert own_points(library, dense, records, 1e9) == ({}, {}, {})
    # room for everything: each doubles its samples
    wanted, counts, cost = own_points(library, judged(dot=1.2, loop=1.2), records, 1e9)
    assert counts == {name: len(found) for name, found in fitting.items()}
    before = {name: sum(1 for s in found if s.index >= adaptive_profile.OWN_INDEX) for name, found in fitting.items()}
    assert wanted == {1: {"square_sum": {name: before[name] + count for name, count in counts.items()}}}
    assert cost[1] == pytest.approx(sum(counts[name] * each[name] for name in counts))
    # little room: shared by excess error, log(1.2 / 1.03) against log(1.06 / 1.03)
    seconds = 40 * max(each.values()) / adaptive_profile.OWN_SHARE
    _, counts, _ = own_points(library, judged(dot=1.2, loop=1.06), records, seconds)
    share = math.log(1.2 / 1.03) / (math.log(1.2 / 1.03) + math.log(1.06 / 1.03))
    assert counts["dot"] == min(len(fitting["dot"]), int(40 * max(each.values()) * share / each["dot"]))
    assert counts.get("loop", 0) == min(len(fitting["loop"]),
                                        int(40 * max(each.values()) * (1 - share) / each["loop"]))
    # no more than the room the uncertain decisions leave
    assert own_points(library, judged(dot=1.2, loop=1.2), records, 1e9, room=0.0) == ({}, {}, {})
    _, _, cost = own_points(library, judged(dot=1.2, loop=1.2), records, 1e9, room=50 * max(each.values()))
    assert 0 < cost[1] <= 50 * max(each.values())
    # an accurate model gets none, and leaves the share to the other
    _, counts, _ = own_points(library, judged(dot=1.01, loop=1.2), records, 1e9)
    assert set(counts) == {"loop"}
    # the points of its own taken before count: the counts asked for are in all
    own = [dataclasses.replace(s, index=adaptive_profile.OWN_INDEX + k) for k, s in enumerate(fitting["dot"][:3])]
    more = dataclasses.replace(records, samples=records.samples + tuple(own))
    wanted, counts, _ = own_points(library, judged(dot=1.2, loop=1.01), more, 1e9)
    assert wanted[1]["square_sum"]["dot"] == before["dot"] + 3 + counts["dot"]


def _with(judge: Judge, entries: dict) -> Judge:
    """A copy of the judge with other fitted models' entries."""
    copy = Judge.__new__(Judge)
    copy.__dict__.update(judge.__dict__)
    copy.entries = entries
    return copy


def test_a_build_says_what_its_rounds_did(tmp_path, monkeypatch):
    """A first build, whose dispatch module's object is compiled while the
    profile times nothing (the cache is empty)."""
    from hlc.dispatch.build import build

    monkeypatch.setenv("HLC_CACHE", str(tmp_path / "cache"))
    result = build(DESCRIPTIONS / "crossing.hl", out=tmp_path / "crossing", adaptive=True, budget=6.0)
    assert result.rounds[0].startswith("round 1: 8 points")
    assert json.loads((tmp_path / "crossing" / "breakdown.json").read_text())["seconds"]["measuring"] > 0
    assert [p.name for p in (tmp_path / "cache").rglob("*.o")] == ["dispatch_crossing.o"]
    assert not (tmp_path / "crossing" / ".dispatch").exists()
    module = hlc.load(tmp_path / "crossing")
    assert module.square_sum(__import__("numpy").ones(3)) == 3.0


def test_what_the_verification_leaves_goes_back_to_the_fitting_points(tmp_path, monkeypatch):
    # A large share kept for a cheap verification: the fitting rounds are cut
    # short, the verification leaves most of its share, and more rounds use it.
    # Those rounds may take verification points still wanted among their own,
    # so what is asked is that they measure fitting samples, not that the
    # last sample is one.
    monkeypatch.setattr(adaptive_profile, "VERIFICATION_SHARE", 0.9)
    samples = tmp_path / "samples.jsonl"
    fitting_after_verification: list[int] = []
    verified = False
    run = adaptive_profile.Server.run

    def fitting_count() -> int:
        return sum(not r.verify for r in Samples.read(samples).samples) if samples.exists() else 0

    def recorded(self, command):
        nonlocal verified
        before = fitting_count()
        answer = run(self, command)
        if command.get("verification_only"):
            verified = True
        elif verified and "select" in command:
            fitting_after_verification.append(fitting_count() - before)
        return answer

    monkeypatch.setattr(adaptive_profile.Server, "run", recorded)
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    lines: list[str] = []
    profile_adaptively(library, samples, tmp_path, ranks=[1], budget=3.0, report=lines.append)
    verification = next(i for i, line in enumerate(lines) if line.startswith("verification: "))
    assert lines[verification + 1].startswith("the verification left ")
    assert any(line.startswith("round ") for line in lines[verification + 2:])
    assert sum(fitting_after_verification) > 0


def test_the_rounds_take_a_share_of_the_verification_points(tmp_path, monkeypatch):
    """Every fitting round's command asks for VERIFYING of the verification
    points still wanted (the serving program takes them among the round's
    fitting points: tests/calibrate/test_profile.py), so that the
    verification samples are not all taken in the profile's last seconds."""
    commands: list[dict] = []
    run = adaptive_profile.Server.run

    def recorded(self, command):
        commands.append(dict(command))
        return run(self, command)

    monkeypatch.setattr(adaptive_profile.Server, "run", recorded)
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    samples = tmp_path / "samples.jsonl"
    profile_adaptively(library, samples, tmp_path, ranks=[1], budget=3.0, report=lambda line: None)
    rounds = [c for c in commands if "select" in c]
    assert rounds and all(c["verifying"] == adaptive_profile.VERIFYING and not c.get("fitting_only")
                          for c in rounds)
    assert any(r.verify for r in Samples.read(samples).samples)


def test_refined_points_lie_between_neighbours_whose_winners_differ(adaptive):
    """Every point the profile added between the grid's was measured, and
    lies strictly between two points measured before it whose fastest
    alternatives differ, as their samples before it said: bisection, not
    filling.  (Later rounds measure uncertain points again, and on a busy
    host a near tie may then fall the other way.)"""
    from hlc.boundaries import measured_candidates

    library, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    sites = read_sites(records)
    count = {site.key: site.point["count"] for site in sites}
    order = [r.index for r in records.points if not r.verify]
    for site in (s for s in sites if s.refined):
        first = next((k for k, sample in enumerate(records.samples) if not sample.verify
                      and (sample.interface, sample.P, sample.index) == site.key), None)
        assert first is not None, site  # measured
        measured = measured_candidates(records.samples[:first])
        before = {("square_sum", 1, i) for i in order[:order.index(site.index)]}
        below = max((k for k in before if count[k] < count[site.key]), key=count.get)
        above = min((k for k in before if count[k] > count[site.key]), key=count.get)

        def winner(key, measured=measured):
            return min(measured[key], key=measured[key].get)[0]

        assert winner(below) != winner(above)


def test_no_point_between_the_grids_is_added_once_the_grid_is_measured(adaptive):
    """Bisection stops when every grid point is measured: the rounds after
    it time grid points only, so that the midpoints never outnumber the
    grid's samples in the fit (BISECT_UNTIL_COVERED)."""
    _, samples, _, _, _ = adaptive
    records = Samples.read(samples)
    sites = read_sites(records)
    grid = {site.key for site in sites if not site.refined}
    refined = {site.key for site in sites if site.refined}
    fitting = [(s.interface, s.P, s.index) for s in records.samples if not s.verify]
    seen: set[tuple] = set()
    covered_at = None
    for position, key in enumerate(fitting):
        seen.add(key)
        if covered_at is None and seen >= grid:
            covered_at = position
    assert covered_at is not None, "the profile of this small grid measures all of it well within its budget"
    assert not refined & set(fitting[covered_at + 1:])


def test_the_planner_values_the_terms_at_every_site_at_once_to_the_same_predictions(monkeypatch):
    """A round's Judge values each model's terms at every site of the grid
    over arrays (Judge.all_sites); its predictions, bands and choices of
    what to time are those of a Judge that values them site by site: on a
    stored Zen 3 sort build, the uncertainty of every decision and the
    candidates worth timing at every site are the same."""
    library = hlc.parse_file(Path(__file__).resolve().parents[1] / "libraries" / "sort.hl")
    records = Samples.read(Path(__file__).resolve().parent / "data" / "sort-zen3" / "samples.jsonl")
    models = calibrate(library, records)
    grid = Grid(read_sites(records))
    at_once = Judge(library, models, records=records, grid=grid)
    at_once.uncertainty(grid.sites[0])
    valued = len(at_once.values)
    assert valued > 2 * len(grid.sites)  # every site's settings of the implementations asked so far
    monkeypatch.setattr(adaptive_profile, "array_columns", lambda *arguments: None)
    one_by_one = Judge(library, models, records=records, grid=grid)
    for site in grid.sites:
        assert at_once.uncertainty(site) == one_by_one.uncertainty(site)
        assert at_once.alternatives(site) == one_by_one.alternatives(site)
        assert at_once.worth_timing(site) == one_by_one.worth_timing(site)
    assert {key: at_once.values[key] for key in one_by_one.values} == one_by_one.values


def test_boundaries_between_implementations_are_bisected_first_then_the_cheapest_per_stake():
    """A midpoint among a few hundred keys costs milliseconds, one among
    millions seconds: with the same stake, the cheap one first; a boundary
    between settings of one implementation after those between
    implementations; equals in the order given (the stakes')."""
    costly, cheap, cheap_too, setting, unknown = (site(k, n=k) for k in range(5))
    costs = {costly.key: 2.0, cheap.key: 0.01, cheap_too.key: 0.01, setting.key: 0.001, unknown.key: 0.05}

    class Costs:
        def cost(self, where):
            return costs[where.key]

    stakes = {costly.key: (True, 0.6), cheap.key: (True, 0.3), cheap_too.key: (True, 0.3),
              setting.key: (False, 0.5)}
    ordered = bisection_order([costly, setting, cheap, unknown, cheap_too], Costs(), stakes)
    assert ordered == [cheap, cheap_too, costly, setting, unknown]
    assert bisection_order([costly, cheap], Costs(), {costly.key: (True, 60.0), cheap.key: (True, 0.1)}) \
        == [costly, cheap]  # 2 s for a stake 600 times as large


def test_the_terms_are_searched_again_only_where_enough_is_left_for_the_rounds_it_guides(tmp_path, monkeypatch):
    """Once the points have doubled, a round's fit searches the terms again
    while the budget left is SEARCH_WORTH times what that search is
    expected to take; else it refits the coefficients of the terms found."""
    library = hlc.parse_file(DESCRIPTIONS / "crossing.hl")
    real = adaptive_profile.calibrate

    def searches(worth: float) -> list[bool]:
        searched: list[bool] = []

        def calibrate(*arguments, terms_of=None, **options):
            searched.append(terms_of is None)
            return real(*arguments, terms_of=terms_of, **options)

        monkeypatch.setattr(adaptive_profile, "calibrate", calibrate)
        monkeypatch.setattr(adaptive_profile, "SEARCH_WORTH", worth)
        folder = tmp_path / f"worth-{worth}"
        profile_adaptively(library, folder / "samples.jsonl", folder, ranks=[1], budget=6.0)
        return searched

    assert sum(searches(0.0)) >= 2
    always = searches(math.inf)
    assert always[0] and not any(always[1:]) and len(always) >= 2
