"""The 3 × 3 stencil experiment's script: which extra cells it times, and how it judges them."""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("stencil_grid_script", ROOT / "scripts" / "stencil_grid.py")
grid = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(grid)
_relax_spec = importlib.util.spec_from_file_location("stencil_grid_relax", ROOT / "libraries" / "stencil" / "relax.py")
relax = importlib.util.module_from_spec(_relax_spec)
_relax_spec.loader.exec_module(relax)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 600), st.integers(1, 12), st.integers(0, 80))
def test_the_effective_extra_is_what_the_layout_gives_the_edge_blocks(interior, parts, extra):
    # Two requests with the same effective value cut the grid alike, and the
    # effective value itself cuts it as the request does.
    assert relax._cuts(interior, parts, extra) == relax._cuts(interior, parts, grid.effective(extra, interior, parts))
    if parts < 3:
        assert grid.effective(extra, interior, parts) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(7, 600), st.integers(0, 80))
def test_a_sweep_holds_the_choice_its_neighbours_and_each_value_once(interior, chosen):
    values = grid.sweep(chosen, interior, 3)
    assert values == sorted(set(values)) and values[0] == 0
    for wanted in (chosen - 1, chosen, chosen + 1, 64):
        if 0 <= wanted <= 64:  # the parameter's range
            assert grid.effective(wanted, interior, 3) in values
    assert values[-1] <= 64
    assert all(grid.effective(v, interior, 3) == v for v in values)  # no value the layout would cut down


def test_points_are_drawn_within_the_bounds():
    rng = random.Random(3)
    for _ in range(500):
        height, width, iterations = grid.draw_point(rng, 64, 512, 1, 64)
        assert 64 <= height <= 512 and 64 <= width <= 512 and 1 <= iterations <= 64


def _timings(seconds: dict[str, float], rounds: int = 5, noise: float = 0.01,
             seed: int = 0) -> dict[str, dict[int, float]]:
    """Round-by-round timings with a host slowdown shared by a round's candidates."""
    rng = np.random.default_rng(seed)
    slow = 1 + rng.uniform(0, 0.5, rounds)
    return {name: dict(enumerate(value * slow * (1 + rng.uniform(-noise, noise, rounds))))
            for name, value in seconds.items()}


SURVEY = 5


def _judged(seconds: dict[str, float], chosen_blocks: str, dispatched: str, noise: float = 0.002,
            seed: int = 0) -> dict:
    """The verdict as a trial reaches it: rivals named by the survey rounds,
    then judged on the confirming rounds."""
    timings = _timings(seconds, SURVEY + grid.CONFIRM_ROUNDS, noise, seed)
    survey = {name: {r: t for r, t in values.items() if r < SURVEY} for name, values in timings.items()}
    rivals = {"blocks": grid.fastest(survey, [name for name in seconds if name.startswith("blocks(")]),
              "all": grid.fastest(survey, list(seconds))}
    return grid._judge(timings, rivals, chosen_blocks, dispatched, SURVEY)


def test_a_choice_within_the_tolerance_is_right_and_one_beyond_is_wrong():
    base = {"uniprocessor": 3.0, "strips": 1.5, "blocks(0,0)": 1.2, "blocks(4,0)": 1.0, "blocks(8,0)": 1.01}
    judged = _judged(base, "blocks(8,0)", "blocks(8,0)")
    assert judged["extras_right"] and judged["layout_right"] and judged["best_blocks"] == "blocks(4,0)"
    assert judged["extras_gain"] > 0.15 and judged["fastest"] == "blocks(4,0)"
    judged = _judged(base, "blocks(0,0)", "strips")
    assert not judged["extras_right"] and judged["extras_penalty"] > 0.15
    assert not judged["layout_right"] and judged["layout_penalty"] > 0.4


def test_a_round_that_slows_everything_does_not_change_the_verdict():
    # The paired ratios cancel what a round shares: even when the rounds'
    # slowdowns are far larger than the candidates' differences.
    base = {"uniprocessor": 3.0, "strips": 1.0, "blocks(0,0)": 1.02}
    for seed in range(20):
        judged = _judged(base, "blocks(0,0)", "strips", noise=0.001, seed=seed)
        assert judged["layout_right"] and judged["extras_right"] and judged["fastest"] == "strips"


def test_many_equal_candidates_do_not_make_a_right_choice_look_wrong():
    # Twenty blocks settings equally fast, each timing 5% off at random: the
    # fastest of the survey is a lucky one, and on the rounds that picked it
    # it looks several percent faster than the rest.  Judged on fresh rounds,
    # the choice is within the tolerance of it.
    base = {"uniprocessor": 3.0, "strips": 2.0, **{f"blocks({x},0)": 1.0 for x in range(20)}}
    right, lucky = 0, []
    for seed in range(40):
        timings = _timings(base, SURVEY + grid.CONFIRM_ROUNDS, 0.05, seed)
        survey = range(SURVEY)
        best = grid.fastest({n: {r: timings[n][r] for r in survey} for n in timings},
                            [n for n in base if n.startswith("blocks(")])
        lucky.append(grid.ratio(timings, "blocks(7,0)", best, survey) - 1 if best != "blocks(7,0)" else 0.0)
        right += _judged(base, "blocks(7,0)", "blocks(7,0)", noise=0.05, seed=seed)["extras_right"]
    assert right >= 38
    assert float(np.median(lucky)) > 0.01  # what judging on the survey itself would have charged


def test_the_fastest_is_the_least_median():
    timings = {"a": {0: 1.0, 1: 5.0, 2: 1.0}, "b": {0: 2.0, 1: 2.0, 2: 2.0}}
    assert grid.fastest(timings, ["a", "b"]) == "a" and grid.fastest(timings, ["b"]) == "b"


def test_rounds_timed_again_count_only_where_both_were_timed():
    timings = {"a": {0: 1.0, 1: 1.0, 2: 1.0, 5: 2.0}, "b": {0: 2.0, 1: 2.0, 2: 2.0}}
    assert grid.ratio(timings, "a", "b") == 0.5
    assert grid.ratio(timings, "a", "b", range(1, 3)) == 0.5


STORED = ROOT / "tests" / "data" / "stencil-grid"


def _decider(stencil, runtime):
    """The Python decider of relax over these stencil and runtime models."""
    import hlc
    from hlc.dispatch.reference import Decider
    from hlc.model.predict import Predictor

    library = hlc.parse_file(ROOT / "libraries" / "stencil.hl")
    used = {"runtime": Predictor(library.used["runtime"], runtime.times())}
    return Decider(library, Predictor(library, stencil.times(), used)), \
        next(i for i in library.interfaces if i.name == "relax")


def _stored_decider():
    from hlc.artefacts.models import load

    return _decider(load(STORED / "stencil_models.json"), load(STORED / "runtime_models.json"))


def test_the_stored_nine_rank_trials_hold_the_choices_the_description_makes():
    # The trials of a 16-core run: each recorded extra rows and columns are
    # what the description's root rule chooses from the models that run
    # calibrated, cut down as the layout cuts them; none at one iteration.
    import json
    import math

    decider, relax_interface = _stored_decider()
    trials = [json.loads(line) for line in (STORED / "trials-native.jsonl").read_text().splitlines()]
    assert len(trials) == 20 and any(t["iters"] == 1 for t in trials) and any(t["extra_rows"] for t in trials)
    for trial in trials:
        choice = decider.decide(relax_interface, {"height": trial["height"], "width": trial["width"],
                                                  "iters": trial["iters"], "P": 9, "logP": math.log2(9)})
        settings = choice.settings["blocks"]
        assert (grid.effective(settings["extra_rows"], trial["height"] - 2, 3),
                grid.effective(settings["extra_cols"], trial["width"] - 2, 3)) == \
            (trial["extra_rows"], trial["extra_cols"])
        if trial["iters"] == 1:
            assert settings == {"extra_rows": 0, "extra_cols": 0}


def test_rank_speeds_are_each_ranks_median_over_the_fastest_and_the_rounds_spread():
    seconds = [[1.0, 1.0, 5.0], [2.0, 2.2, 2.0], [1.5, 1.0, 1.5]]  # three ranks, three rounds
    speeds = grid.rank_speeds(seconds)
    assert speeds["relative"] == [1.0, 2.0, 1.5]
    # per round, slowest over fastest: 2.0, 2.2, 5 / 1.5
    assert speeds["spread"] == 2.2


def test_the_ranks_are_timed_against_each_other_under_mpiexec(tmp_path):
    import json
    import subprocess

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "stencil_grid.py"), "--speeds", "--procs", "2",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ranks' speeds before the builds" in done.stdout
    speeds = json.loads((tmp_path / "summary.json").read_text())["speeds"]["before"]
    assert len(speeds["seconds"]) == 2 and all(len(rank) == grid.SPEED_ROUNDS for rank in speeds["seconds"])
    assert min(speeds["relative"]) == 1.0 and speeds["spread"] >= 1.0
    assert not (tmp_path / "native").exists()  # nothing built


LAN = ROOT / "tests" / "data" / "stencil-grid-lan"


def test_nine_rank_lan_samples_refit_choose_the_layout_measured_fastest():
    # A 16-core machine's LAN run: every nine-rank sample's host meter read
    # 1.4-2.4, its slowest rank's pace, not a spell.  Fitted from these
    # samples, the models must choose computing the whole grid on every rank
    # where the trials measured it fastest (all 20 points, by 2-10 times).
    import json
    import math

    from hlc.model.calibration import fit_samples

    runtime = fit_samples(LAN / "runtime_samples.jsonl", description=ROOT / "libraries" / "runtime.hl")
    models = fit_samples(LAN / "samples.jsonl", description=ROOT / "libraries" / "stencil.hl")
    for name in ("strips", "blocks"):
        assert models.time(name).verification_mre < 1.1, (name, models.time(name).warnings)
    decider, relax_interface = _decider(models, runtime)
    trials = [json.loads(line) for line in (LAN / "trials.jsonl").read_text().splitlines()]
    assert len(trials) == 20 and all(t["fastest"] == "uniprocessor" for t in trials)
    chosen = [decider.decide(relax_interface, {"height": t["height"], "width": t["width"], "iters": t["iters"],
                                               "P": 9, "logP": math.log2(9)}).implementation for t in trials]
    assert chosen.count("uniprocessor") >= 19, chosen


def test_strips_against_blocks_alone_where_the_whole_grid_wins_everywhere():
    # On a slow network computing the whole grid on every rank wins the map,
    # yet strips against blocks alone is still what thesis §4.4 asks for.
    from types import SimpleNamespace

    from hlc.reports.analysis import Axis

    def choose_relax_at(height: float, width: float, iters: float, P: float, logP: float) -> SimpleNamespace:
        strips = 0.5 if height < 100 else 2.0  # strips faster on the lower half of the plane
        return SimpleNamespace(implementation="uniprocessor",
                               predicted={"uniprocessor": 0.1, "strips": strips, "blocks": 1.0})

    module = SimpleNamespace(choose_relax_at=choose_relax_at)
    axis = SimpleNamespace(values=np.array([50.0, 80.0, 120.0, 200.0]))
    region = SimpleNamespace(x=Axis("width", axis.values, axis.values, True, True),
                             y=Axis("height", axis.values, axis.values, True, True), fixed={"iters": 64.0}, ranks=9)
    duel = grid.head_to_head(module, SimpleNamespace(name="relax"), region)
    assert duel == {"strips_faster": 0.5, "strips_over_blocks": 1.25}
    summary = {"native": {"head_to_head": {"64": {"strips_faster": 0.2, "strips_over_blocks": 1.1}},
                          "strips_against_blocks": 0.99},
               "lan": {"head_to_head": {"64": duel}, "strips_against_blocks": 0.66}}
    assert "strips do not gain on the slow network" in grid.strips_gain(summary)
    summary["lan"]["head_to_head"]["64"] = {"strips_faster": 1.0, "strips_over_blocks": 0.6}
    line = grid.strips_gain(summary)
    assert "strips gain on the slow network" in line and "0.66 times on the LAN" in line


def test_every_core_is_timed_alone_and_the_fastest_are_the_ones_the_ranks_run_on_when_asked(monkeypatch):
    pinned = []
    speeds = {0: 2.0, 1: 1.0, 2: 1.1, 3: 1.6}
    monkeypatch.setattr(grid.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(grid.os, "sched_setaffinity", lambda pid, cores: pinned.append(set(cores)))
    monkeypatch.setattr(grid, "time_cores", lambda cores: {core: speeds[core] for core in cores})
    chosen = grid.choose_cores("fastest", 2)
    assert chosen == {"cores": [1, 2], "relative": speeds}
    assert pinned == [{1, 2}]  # what mpiexec and the ranks inherit
    line = grid.cores_line(chosen)
    assert "1.00 to 2.00 times the fastest's time for the same sweeps (0:2.00 1:1.00 2:1.10 3:1.60)" in line
    assert line.endswith("the ranks run on 1,2 (1.00 to 1.10), leaving 2 at 1.60 to 2.00")
    everywhere = grid.choose_cores("all", 2)
    assert everywhere == {"cores": [0, 1, 2, 3], "relative": speeds} and len(pinned) == 1  # nothing pinned
    assert grid.cores_line(everywhere).endswith("the ranks may run on any of them")
    assert grid.choose_cores("3,0", 2)["cores"] == [0, 3]
    with pytest.raises(SystemExit, match="cores \\[0, 1, 2, 3\\] only"):
        grid.choose_cores("5", 1)


def test_a_core_is_timed_pinned_and_the_affinity_given_back():
    allowed = os.sched_getaffinity(0)
    core = min(allowed)
    timed = grid.time_cores([core], rounds=1)
    assert list(timed) == [core] and 0 < timed[core] < 1
    assert os.sched_getaffinity(0) == allowed


def test_refitted_nine_rank_models_see_the_ranks_share_the_machine():
    # Computing the whole grid on every rank has no communication, but nine
    # ranks sweep their copies at once and share the memory system: the
    # description's terms in logP let the fit see it.  Refitted from the
    # 16-core run's native samples, the whole-grid models verify within 10%
    # at nine ranks (measured 1.072 and 1.089; 1.43 and 1.49 without those terms), and
    # the layout they choose at the 20 trial points is within 3% of the
    # fastest measured in 16 (14 without them, which took the whole grid
    # for cheap where it was not; 17 with the models fitted on the fitting
    # samples alone: on a 85 x 373 grid for 24 sweeps, the kept ones choose
    # blocks, 4.9% off the fastest).
    import json
    import math

    from hlc.artefacts.models import load
    from hlc.model.calibration import fit_samples

    models = fit_samples(STORED / "samples.jsonl", description=ROOT / "libraries" / "stencil.hl",
                         models_of={"runtime": STORED / "runtime_models.json"})
    for name in ("uniprocessor", "whole"):
        assert models.time(name).verification_mre_by_ranks["9"] <= 1.10, (name, models.time(name).warnings)
    decider, relax_interface = _decider(models, load(STORED / "runtime_models.json"))
    right = 0
    for line in (STORED / "trials-native.jsonl").read_text().splitlines():
        trial = json.loads(line)
        layout = decider.decide(relax_interface, {"height": trial["height"], "width": trial["width"],
                                                  "iters": trial["iters"], "P": 9,
                                                  "logP": math.log2(9)}).implementation
        seconds = trial["seconds"]
        right += min(s for name, s in seconds.items() if name.split("(")[0] == layout) <= 1.03 * min(seconds.values())
    assert right >= 16
