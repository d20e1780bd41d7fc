"""The stencil on a 3 × 3 process grid, natively and on a slow network.

Thesis §4.4 compares the stencil's layouts on a machine of many processors:
square blocks swap halos with four neighbours, strips with two, so when a
message's start-up dominates (a local-area network) strips gain on blocks.
Thesis §5.2 gives the blocks on the edges of the process grid extra rows and
columns, to fill the time their missing neighbour's halo swap would take,
and chooses how many with the root of a model difference.  Both need
P = 9 ranks or more: only there does the process grid have an interior
block.  This script runs the whole experiment, for each platform (native,
and ``HLC_PLATFORM=lan``):

1. builds ``libraries/runtime.hl`` and ``libraries/stencil.hl`` calibrated at
   1 and P ranks, with hlc's default (adaptive) calibration;
2. reads the share of the (width, height) plane the dispatcher gives each
   layout at P ranks, at each calibrated iteration count, and draws the
   region map at the largest; and strips against blocks alone: where the
   models predict strips faster, and by how much (on a slow network the
   whole grid on every rank may win the map, and hide the comparison);
3. runs ``trials`` under ``mpiexec -n P``: at random points of the upper part
   of the calibrated domain (grids of at least ``--least`` rows and columns,
   so that an edge block has room for extra cells), it times the three
   layouts and the blocks at extra rows and columns around the chosen ones
   (a sweep of each with the other held at its choice), round after round in
   a shuffled order.  These survey rounds name the fastest blocks and the
   fastest layout; then the choice and those rivals are timed again side by
   side, and the choice is right when, by the median over these confirming
   rounds of the paired ratios, it is within 3% of its rival.

Before the builds and after the trials it times the ranks against each
other: every rank sweeps the same block, in rounds that start together.
Thesis §5.2's extra cells balance ranks of one speed; where some ranks run
slower than others (cores shared with other work), which extras are fastest
depends on where the slow ranks fall, and this says whether they do.  It
also times every core it may use alone (the same sweeps, pinned to one core
at a time) before the builds and after the trials: a virtual machine's cores
may be hardware threads that other guests share.  Where some cores are
slower for good, ``--cores fastest`` runs everything on the P fastest
(``--cores 0,2,5`` names them; the default, ``all``, lets the ranks run
anywhere); the second timing says whether the cores kept their speeds.

It prints the ranks' speeds, per platform the builds' times, the layouts'
shares and the trials, and last whether the chosen extra rows and columns
were measured-optimal within 3% in at least 95% of the trials.  Everything goes to ``--out``
(``summary.json``, the builds, ``trials-<platform>.jsonl``, the maps).

    scripts/stencil-grid.sh [--procs 9] [--trials 20] [--platforms native,lan] [--budget SECONDS]
                            [--runtime-budget SECONDS] [--runtime-grid] [--cores fastest|all|LIST] [--speeds]

``--speeds`` times the ranks against each other and does nothing else.

On a machine where a nine-rank profile spends little of its time measuring,
the default budgets leave the builds too few samples: give the stencil 90 s
or more, and build the runtime from its grid, which shares its budget among
the primitives (an adaptive runtime build once left the halo transfer two
samples at nine ranks, and every root then fell to the top of its range).

The timings mean something only with a core for every rank: run it on a
machine with at least P cores (it warns otherwise).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: A choice within this fraction of the fastest is right (hlc evaluate's default).
TOLERANCE = 0.03
#: The share of trials whose extra rows and columns must be right.
REQUIRED = 0.95
#: The extra rows (columns) each sweep times, besides the chosen value and its neighbours:
#: from the bottom to the top of the parameters' range in stencil.hl (0 .. 64).
LADDER = (0, 1, 2, 4, 8, 16, 32, 64)
#: A timed block repeats the call until it lasts this long (one call of a small grid is short).
SHORTEST_BLOCK = 0.01
#: The rounds that time the chosen candidates against the fastest of the survey, side by side.
CONFIRM_ROUNDS = 8
#: The iteration counts at which the layouts' shares are read.
SHARE_ITERATIONS = (1, 4, 16, 64)
LAYOUTS = ("uniprocessor", "strips", "blocks")
#: The block every rank sweeps when the ranks are timed against each other:
#: a block of a 514 × 514 grid on a 3 × 3 process grid, halo included.
SPEED_BLOCK = (173, 173)
#: Rounds of that timing, and the least length of one (it repeats the sweeps).
SPEED_ROUNDS = 20
SPEED_ROUND_SECONDS = 0.01
#: Rounds of timing each core alone (before the builds and after the trials).
CORE_ROUNDS = 7


# ---- building and reading the builds -----------------------------------------------


def build(description: str, out: Path, procs: int, platform: str, budget: float | None,
          grid: bool = False) -> dict[str, Any]:
    """Build one library on a platform; its wall time and measuring share."""
    command = [sys.executable, "-m", "hlc", "build", str(ROOT / "libraries" / description),
               "--procs", f"1,{procs}", "--out", str(out)]
    if budget is not None:
        command += ["--budget", f"{budget:g}"]
    if grid:
        command.append("--grid")
    started = time.monotonic()
    subprocess.run(command, check=True, env={**os.environ, "HLC_PLATFORM": platform})
    wall = time.monotonic() - started
    breakdown = json.loads((out / "breakdown.json").read_text(encoding="utf-8"))
    measuring = breakdown["seconds"].get("measuring", 0.0) / breakdown["wall"]
    return {"seconds": round(wall, 1), "measuring": round(measuring, 3)}


def shares(folder: Path, procs: int, maps: Path) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """The share of the (width, height) plane each layout gets at ``procs`` ranks,
    and strips against blocks alone there (``head_to_head``), per iteration
    count; the region map at the largest is drawn into ``maps``."""
    from hlc.reports import analysis, plots
    from hlc.reports.data import read_build

    data = read_build(folder)
    if data.module is None:
        raise SystemExit(f"{folder}: the built module does not load: {'; '.join(data.notes)}")
    info = next(i for i in data.interfaces if i.name == "relax")
    found, duels = {}, {}
    for iterations in SHARE_ITERATIONS:
        region = analysis.region_map(data.module, info, "width", "height", {"iters": iterations}, procs)
        found[str(iterations)] = {name: round(share, 3) for name, share in region.shares.items() if name}
        duels[str(iterations)] = head_to_head(data.module, info, region)
        if iterations == SHARE_ITERATIONS[-1]:
            plots.map_figure(region, plots.colours(info.names), maps)
    return found, duels


def head_to_head(module: Any, info: Any, region: Any) -> dict[str, float]:
    """Strips against blocks alone, as thesis §4.4 compares them, over the
    cells of ``region``'s plane: the share where the models predict strips
    faster, and the median of the strips' predicted time over the blocks'.
    The region map cannot say this where computing the whole grid on every
    rank wins almost everywhere (on a slow network, at these sizes)."""
    from hlc.reports import analysis

    choose = analysis.chooser(module, info.name)
    ratios = []
    for y_value in region.y.values:
        for x_value in region.x.values:
            values = {**region.fixed, region.x.name: float(x_value), region.y.name: float(y_value)}
            predicted = choose(**analysis.with_ranks(values, region.ranks)).predicted
            strips, blocks = predicted.get("strips", math.inf), predicted.get("blocks", math.inf)
            if math.isfinite(strips) and math.isfinite(blocks) and blocks > 0:
                ratios.append(strips / blocks)
    if not ratios:
        return {"strips_faster": math.nan, "strips_over_blocks": math.nan}
    return {"strips_faster": round(sum(r < 1 for r in ratios) / len(ratios), 3),
            "strips_over_blocks": round(statistics.median(ratios), 3)}


# ---- the trials, under mpiexec ---------------------------------------------------------


def effective(extra: int, interior: int, parts: int) -> int:
    """The extra cells an edge block really gets (relax._cuts: none below three
    parts, and at most what leaves every part a cell)."""
    return max(0, min(extra, (interior - parts) // 2)) if parts >= 3 else 0


def sweep(chosen: int, interior: int, parts: int) -> list[int]:
    """The distinct extra values a sweep times: the ladder, the choice and its
    neighbours within the parameter's range (a value the dispatcher may not
    choose is no rival)."""
    values = set(LADDER) | {chosen - 1, chosen, chosen + 1}
    return sorted({effective(v, interior, parts) for v in values if LADDER[0] <= v <= LADDER[-1]})


def draw_point(rng: random.Random, least: int, largest: int, fewest: int, most: int) -> tuple[int, int, int]:
    """A grid size and iteration count, each uniform in the logarithm."""
    def log_uniform(low: int, high: int) -> int:
        return int(round(2 ** rng.uniform(math.log2(low), math.log2(high))))
    return log_uniform(least, largest), log_uniform(least, largest), log_uniform(fewest, most)


def trials(folder: Path, count: int, rounds: int, seed: int, least: int, out: Path) -> None:
    """Time the layouts and the blocks' extra cells at ``count`` random points
    (every rank runs this; rank 0 writes one line per trial to ``out``)."""
    import numpy as np

    from hlc.artefacts.models import load as load_models
    from hlc.dispatch.bundle import description_of
    from hlc.runtime import world

    team = world()
    sys.path.insert(0, str(folder.parent))
    module = importlib.import_module(folder.name)
    models = load_models(folder / "models.json")
    relax = _load(description_of(models, folder).parent / "stencil" / "relax.py")
    prows = relax.block_rows(team.size)
    pcols = team.size // prows
    domain = _domain(folder)
    rng = random.Random(seed)
    with open(out, "w", encoding="utf-8") if team.rank == 0 else open(os.devnull, "w") as lines:
        for trial in range(count):
            height, width, iterations = draw_point(rng, least, int(domain["height"][1]),
                                                   max(int(domain["iters"][0]), 1), int(domain["iters"][1]))
            grid = np.random.default_rng([seed, trial]).random((height, width))
            choice = module.choose_relax_at(height=height, width=width, iters=iterations)
            wanted = choice.settings.get("blocks", {"extra_rows": 0, "extra_cols": 0})
            rows = effective(int(wanted["extra_rows"]), height - 2, prows)
            cols = effective(int(wanted["extra_cols"]), width - 2, pcols)
            candidates = {"uniprocessor": functools.partial(relax.relax_uniprocessor, grid, iterations),
                          "strips": functools.partial(relax.relax_strips, grid, iterations)}
            settings = [(r, cols) for r in sweep(rows, height - 2, prows)]
            settings += [(rows, c) for c in sweep(cols, width - 2, pcols)] + [(0, 0)]
            for r, c in settings:
                candidates[f"blocks({r},{c})"] = functools.partial(relax.relax_blocks, grid, iterations,
                                                                   extra_rows=r, extra_cols=c)
            chosen_blocks = f"blocks({rows},{cols})"
            dispatched = chosen_blocks if choice.implementation == "blocks" else choice.implementation
            timings, rivals = _time(team, candidates, rounds, random.Random(f"{seed}/{trial}"),
                                    [chosen_blocks, dispatched])
            line = _judge(timings, rivals, chosen_blocks, dispatched, rounds)
            lines.write(json.dumps({"trial": trial, "height": height, "width": width, "iters": iterations,
                                    "chosen": choice.implementation, "extra_rows": rows, "extra_cols": cols,
                                    **line, "seconds": {k: statistics.median(v.values())
                                                        for k, v in timings.items()}}) + "\n")
            lines.flush()


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("stencil_relax_trials", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _domain(folder: Path) -> dict[str, tuple[float, float]]:
    """The calibrated range of each variable of relax, from the build's samples."""
    from hlc.reports.data import read_build

    info = next(i for i in read_build(folder).interfaces if i.name == "relax")
    return info.domain


def _time(team: Any, candidates: dict[str, Any], rounds: int, rng: random.Random,
          chosen: list[str]) -> tuple[dict[str, dict[int, float]], dict[str, str]]:
    """Seconds per call of each candidate in each round (the slowest rank's).

    First ``rounds`` survey rounds time every candidate, in a new shuffled
    order each round; they name the rivals: the fastest blocks and the fastest
    of everything.  Then CONFIRM_ROUNDS rounds time only the chosen candidates
    and those rivals, side by side, and the verdict comes from these alone.
    The fastest of many noisy candidates is mostly one timed at a lucky
    moment: judged on the rounds that picked it, it would look faster than it
    is, and a right choice would be judged wrong.  Each candidate is called
    once untimed first, and a timed block repeats a short call until it
    lasts SHORTEST_BLOCK."""
    import numpy as np

    names = list(candidates)
    first = []
    for name in names:
        team.barrier()
        started = time.perf_counter()
        candidates[name]()
        first.append(time.perf_counter() - started)
    first = team.reduce(np.array(first), "max")
    calls = {name: max(1, math.ceil(SHORTEST_BLOCK / max(seconds, 1e-9)))
             for name, seconds in zip(names, first, strict=True)}
    found: dict[str, dict[int, float]] = {name: {} for name in names}

    def time_rounds(timed: list[str], count: int, offset: int) -> None:
        for round_ in range(offset, offset + count):
            order = timed[:]
            rng.shuffle(order)
            elapsed = []
            for name in order:
                team.barrier()
                started = time.perf_counter()
                for _ in range(calls[name]):
                    candidates[name]()
                elapsed.append((time.perf_counter() - started) / calls[name])
            for name, seconds in zip(order, team.reduce(np.array(elapsed), "max"), strict=True):
                found[name][round_] = float(seconds)

    time_rounds(names, rounds, 0)
    # The reduced timings are the same on every rank, and so are the rivals.
    rivals = {"blocks": fastest(found, [name for name in names if name.startswith("blocks(")]),
              "all": fastest(found, names)}
    time_rounds(sorted(set(chosen) | set(rivals.values())), CONFIRM_ROUNDS, rounds)
    return found, rivals


def fastest(timings: dict[str, dict[int, float]], names: list[str]) -> str:
    """The candidate of ``names`` with the least median time over the survey rounds."""
    return min(names, key=lambda name: statistics.median(timings[name].values()))


def ratio(timings: dict[str, dict[int, float]], a: str, b: str, rounds: range | None = None) -> float:
    """t_a / t_b: the median over the rounds that timed both (of ``rounds``, when
    given) of their ratio in that round."""
    shared = timings[a].keys() & timings[b].keys()
    if rounds is not None:
        shared &= set(rounds)
    return statistics.median(timings[a][r] / timings[b][r] for r in shared)


def _judge(timings: dict[str, dict[int, float]], rivals: dict[str, str], chosen_blocks: str, dispatched: str,
           survey: int) -> dict[str, Any]:
    """The extra cells against the fastest blocks, and the layout against the
    fastest of everything, each by the median paired ratio over the
    confirming rounds (those after the ``survey`` rounds that named the rivals)."""
    confirming = range(survey, survey + CONFIRM_ROUNDS)
    extras_penalty = max(ratio(timings, chosen_blocks, rivals["blocks"], confirming) - 1, 0.0)
    layout_penalty = max(ratio(timings, dispatched, rivals["all"], confirming) - 1, 0.0)
    return {"best_blocks": rivals["blocks"], "extras_penalty": round(extras_penalty, 4),
            "extras_right": extras_penalty <= TOLERANCE,
            "extras_gain": round(ratio(timings, "blocks(0,0)", rivals["blocks"], range(survey)) - 1, 4)
            if "blocks(0,0)" in timings else None,
            "fastest": rivals["all"], "layout_penalty": round(layout_penalty, 4),
            "layout_right": layout_penalty <= TOLERANCE}


# ---- the ranks' speeds ---------------------------------------------------------------


def _sweeper() -> Callable[[int], float]:
    """The seconds per red and black half-sweep of a SPEED_BLOCK block, over
    ``calls`` of them: the yardstick that times ranks and cores alike."""
    import numpy as np

    relax = _load(ROOT / "libraries" / "stencil" / "relax.py")
    block = np.random.default_rng(0).random(SPEED_BLOCK)

    def sweeps(calls: int) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            relax.half_sweep(block, relax.RED)
            relax.half_sweep(block, relax.BLACK)
        return (time.perf_counter() - started) / calls

    return sweeps


def round_calls(first: float) -> int:
    """How many sweeps, each as long as ``first``, fill SPEED_ROUND_SECONDS."""
    return max(1, math.ceil(SPEED_ROUND_SECONDS / max(first, 1e-9)))


def time_ranks(rounds: int, out: Path) -> None:
    """Every rank times a red and a black half-sweep of the same SPEED_BLOCK
    block, ``rounds`` times, each round starting together after a barrier and
    repeating the sweeps until it lasts SPEED_ROUND_SECONDS; rank 0 writes the
    seconds per sweep pair, one list per rank, to ``out`` (runs under mpiexec)."""
    import numpy as np

    from hlc.runtime import world

    team = world()
    sweeps = _sweeper()
    first = float(team.reduce(np.array([sweeps(1)]), "max")[0])  # every rank repeats as often
    calls = round_calls(first)
    seconds = []
    for _ in range(rounds):
        team.barrier()
        seconds.append(sweeps(calls))
    every = team.allgather(np.array(seconds))
    if team.rank == 0:
        out.write_text(json.dumps({"block": list(SPEED_BLOCK), "calls": calls, "seconds": every.tolist()}) + "\n",
                       encoding="utf-8")


def rank_speeds(seconds: list[list[float]]) -> dict[str, Any]:
    """What the rounds of ``time_ranks`` say: each rank's median time over the
    fastest rank's (``relative``, in rank order), and the median over the rounds
    of the slowest rank's time over the fastest's in that round (``spread``)."""
    medians = [statistics.median(rank) for rank in seconds]
    fastest = min(medians)
    rounds = zip(*seconds, strict=True)
    return {"relative": [round(m / fastest, 3) for m in medians],
            "spread": round(statistics.median(max(r) / min(r) for r in rounds), 3)}


def measure_ranks(procs: int, out: Path) -> dict[str, Any]:
    """Run ``time_ranks`` on ``procs`` ranks; its rounds and what they say."""
    from hlc.calibrate.run import mpiexec

    subprocess.run([mpiexec(), "-n", str(procs), sys.executable, __file__, "--speeds-of", str(SPEED_ROUNDS),
                    "--json", str(out)], check=True)
    seconds = json.loads(out.read_text(encoding="utf-8"))["seconds"]
    return {**rank_speeds(seconds), "seconds": seconds}


def speeds_line(when: str, speeds: dict[str, Any]) -> str:
    relative = speeds["relative"]
    return (f"ranks' speeds {when}: the same {SPEED_BLOCK[0]} x {SPEED_BLOCK[1]} block's sweeps took "
            f"{min(relative):.2f} to {max(relative):.2f} times the fastest rank's time (medians of "
            f"{SPEED_ROUNDS} rounds: " + " ".join(f"{r:.2f}" for r in relative)
            + f"); in one round the slowest rank took {speeds['spread']:.2f} times the fastest's (median)")


# ---- the cores the ranks run on ------------------------------------------------------


def time_cores(cores: list[int], rounds: int = CORE_ROUNDS) -> dict[int, float]:
    """Each core's median time for a red and a black half-sweep of the
    SPEED_BLOCK block, this process pinned to one core at a time, the cores
    taken in turn round after round (so a spell of the host falls on all of
    them alike).  A virtual machine's cores need not run at one speed: their
    hardware threads may be shared with other guests."""
    sweeps = _sweeper()
    allowed = os.sched_getaffinity(0)
    seconds: dict[int, list[float]] = {core: [] for core in cores}
    try:
        for _ in range(rounds):
            for core in cores:
                os.sched_setaffinity(0, {core})
                first = sweeps(1)  # the block into this core's caches
                seconds[core].append(sweeps(round_calls(first)))
    finally:
        os.sched_setaffinity(0, allowed)
    return {core: statistics.median(times) for core, times in seconds.items()}


def relative_to_fastest(timed: dict[int, float]) -> dict[int, float]:
    """Each core's time over the fastest core's."""
    fastest = min(timed.values())
    return {core: round(seconds / fastest, 3) for core, seconds in timed.items()}


def choose_cores(wanted: str, procs: int) -> dict[str, Any]:
    """The cores this experiment (its builds, their profiling ranks and the
    trials) runs on, and the affinity set to them: every core this process
    may use (``all``), the ``procs`` fastest of them timed one at a time
    (``fastest``), or a list (``0,2,5``).  Every core is timed alone first
    (``relative``: each one's time over the fastest's), whichever is asked:
    thesis §5.2's extra cells balance ranks of one speed, and this says
    whether the machine's cores run at one."""
    allowed = sorted(os.sched_getaffinity(0))
    timed = time_cores(allowed)
    relative = relative_to_fastest(timed)
    if wanted == "all":
        return {"cores": allowed, "relative": relative}
    if wanted == "fastest":
        ranked = sorted(allowed, key=lambda core: timed[core])
        chosen = sorted(ranked[:procs])
    else:
        chosen = sorted({int(core) for core in wanted.split(",")})
        if not set(chosen) <= set(allowed):
            raise SystemExit(f"--cores {wanted}: this process may run on cores {allowed} only")
    os.sched_setaffinity(0, set(chosen))  # mpiexec and every rank inherit it
    return {"cores": chosen, "relative": relative}


def cores_line(cores: dict[str, Any], when: str = "before the builds") -> str:
    """Each core's time alone over the fastest's, and the cores the ranks run on."""
    relative = cores["relative"]
    each = " ".join(f"{core}:{value:.2f}" for core, value in relative.items())
    line = (f"cores {when}, each timed alone: {min(relative.values()):.2f} to {max(relative.values()):.2f} times "
            f"the fastest's time for the same sweeps ({each})")
    outside = [value for core, value in relative.items() if core not in cores["cores"]]
    if not outside:
        return line + "; the ranks may run on any of them"
    inside = [relative[core] for core in cores["cores"]]
    return (line + f"; the ranks run on {','.join(str(core) for core in cores['cores'])} "
            f"({min(inside):.2f} to {max(inside):.2f}), leaving {len(outside)} at {min(outside):.2f} to "
            f"{max(outside):.2f}")


# ---- the experiment -----------------------------------------------------------------


def run_trials(folder: Path, procs: int, platform: str, options: argparse.Namespace, out: Path) -> list[dict]:
    from hlc.calibrate.run import mpiexec

    command = [mpiexec(), "-n", str(procs), sys.executable, __file__, "--trials-of", str(folder),
               "--trials", str(options.trials), "--rounds", str(options.rounds), "--seed", str(options.seed),
               "--least", str(options.least), "--json", str(out)]
    subprocess.run(command, check=True, env={**os.environ, "HLC_PLATFORM": platform})
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def report(platform: str, builds: dict, found: dict, duels: dict, judged: list[dict]) -> list[str]:
    lines = [f"{platform}: runtime built in {builds['runtime']['seconds']:.0f} s, stencil in "
             f"{builds['stencil']['seconds']:.0f} s ({builds['stencil']['measuring']:.0%} measuring)"]
    for iterations, share in found.items():
        duel = duels[iterations]
        lines.append(f"  shares of the plane at {iterations} iterations: "
                     + ", ".join(f"{name} {share.get(name, 0):.0%}" for name in LAYOUTS)
                     + f"; strips against blocks alone: strips faster on {duel['strips_faster']:.0%}, "
                       f"{duel['strips_over_blocks']:.2f} times the blocks' time (median)")
    if judged:
        right = sum(t["extras_right"] for t in judged)
        layout = sum(t["layout_right"] for t in judged)
        fastest = {name: sum(t["fastest"].split("(")[0] == name for t in judged) for name in LAYOUTS}
        nonzero = sum(t["extra_rows"] > 0 or t["extra_cols"] > 0 for t in judged)
        gains = [t["extras_gain"] for t in judged if t["extras_gain"] is not None]
        where = [t for t in judged if t["chosen"] == "blocks"]
        lines.append(f"  trials ({builds['trials']['seconds']:.0f} s): extra rows and columns within "
                     f"{TOLERANCE:.0%} of the best in {right} of {len(judged)}, in "
                     f"{sum(t['extras_right'] for t in where)} of the {len(where)} where blocks were chosen "
                     f"(nonzero in {nonzero}; the best extras gain a median "
                     f"{statistics.median(gains):.1%} over none, at most {max(gains):.1%}); layout right in "
                     f"{layout} of {len(judged)}; fastest: "
                     + ", ".join(f"{name} {count}" for name, count in fastest.items()))
        lines.append(f"  strips take {strips_against_blocks(judged):.2f} times the blocks' time "
                     f"(median over the trials)")
    return lines


def strips_against_blocks(judged: list[dict]) -> float:
    """The median over trials of the strips' time over the blocks' (at their chosen extra cells)."""
    return statistics.median(t["seconds"]["strips"] / t["seconds"][f"blocks({t['extra_rows']},{t['extra_cols']})"]
                             for t in judged)


def strips_gain(summary: dict[str, Any]) -> str:
    """Whether strips gain on blocks from the native platform to the LAN, by the
    models (strips against blocks alone over the plane) and by the trials'
    measured times."""
    iterations = str(SHARE_ITERATIONS[-1])
    duel = {p: summary[p]["head_to_head"][iterations] for p in ("native", "lan")}

    def part(platform: str) -> str:
        return (f"{duel[platform]['strips_faster']:.0%} of the plane ({duel[platform]['strips_over_blocks']:.2f} "
                f"times the blocks' time, median)")

    gain = duel["lan"]["strips_over_blocks"] < duel["native"]["strips_over_blocks"]
    line = (f"strips against blocks at {iterations} iterations, by the models: strips faster on {part('native')} "
            f"natively, on {part('lan')} on the LAN: strips {'gain' if gain else 'do not gain'} on the slow network")
    measured = {p: summary[p].get("strips_against_blocks") for p in ("native", "lan")}
    if None not in measured.values():
        line += (f"; measured, strips take {measured['native']:.2f} times the blocks' time natively and "
                 f"{measured['lan']:.2f} times on the LAN")
    return line


def machine() -> dict[str, Any]:
    """The processor, its core count and caches: the machine constants a
    description may use, and the processor's name from /proc/cpuinfo."""
    import platform

    from hlc.language.machine import machine_constants

    name = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        name = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                     if line.startswith("model name")), name)
    return {"processor": name, **machine_constants()}


def save(summary: dict[str, Any], out: Path) -> None:
    """Write what is known so far to ``out``/summary.json (the run may stop before the end)."""
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--procs", type=int, default=9, help="ranks of the process grid (default 9: 3 × 3)")
    options.add_argument("--platforms", default="native,lan", help="HLC_PLATFORM values to run on")
    options.add_argument("--out", type=Path, default=ROOT / "build" / "stencil-grid")
    options.add_argument("--budget", type=float, default=None, help="each build's profiling budget (hlc's default)")
    options.add_argument("--runtime-budget", type=float, default=None, help="the runtime's builds' (default: --budget)")
    options.add_argument("--runtime-grid", action="store_true",
                         help="build the runtime from a random part of its grid rather than adaptively, so that "
                              "every primitive gets its share of the budget")
    options.add_argument("--trials", type=int, default=20)
    options.add_argument("--rounds", type=int, default=5, help="timing rounds per trial")
    options.add_argument("--seed", type=int, default=1)
    options.add_argument("--least", type=int, default=64, help="fewest rows and columns of a trial's grid")
    options.add_argument("--speeds", action="store_true", help="only time the ranks against each other")
    options.add_argument("--cores", default="all",
                         help="the cores to run on: 'all' (every core this process may use; default), 'fastest' "
                              "(the --procs fastest, each timed alone), or a list such as 0,2,5")
    options.add_argument("--trials-of", type=Path, help=argparse.SUPPRESS)  # the workers, under mpiexec
    options.add_argument("--speeds-of", type=int, help=argparse.SUPPRESS)
    options.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    options = options.parse_args()
    if options.trials_of:
        trials(options.trials_of, options.trials, options.rounds, options.seed, options.least, options.json)
        return
    if options.speeds_of:
        time_ranks(options.speeds_of, options.json)
        return
    options.out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"procs": options.procs, "trials": options.trials, "seed": options.seed,
                               "machine": machine()}
    print(f"machine: {summary['machine']['processor']}, {summary['machine']['cores']} cores", flush=True)
    summary["cores"] = choose_cores(options.cores, options.procs)
    lines = [cores_line(summary["cores"])]
    print(lines[0], flush=True)
    if len(os.sched_getaffinity(0)) < options.procs:
        print(f"warning: {len(os.sched_getaffinity(0))} cores for {options.procs} ranks: the timings share cores",
              flush=True)
    summary["speeds"] = {"before": measure_ranks(options.procs, options.out / "speeds-before.json")}
    lines.append(speeds_line("before the builds", summary["speeds"]["before"]))
    print(lines[-1], flush=True)
    if options.speeds:
        save(summary, options.out)
        return
    for platform in options.platforms.split(","):
        base = options.out / platform
        runtime_budget = options.budget if options.runtime_budget is None else options.runtime_budget
        builds = {"runtime": build("runtime.hl", base / "runtime", options.procs, platform, runtime_budget,
                                   options.runtime_grid),
                  "stencil": build("stencil.hl", base / "stencil", options.procs, platform, options.budget)}
        found, duels = shares(base / "stencil", options.procs,
                              options.out / f"stencil-map-{platform}-P{options.procs}.png")
        started = time.monotonic()
        judged = run_trials(base / "stencil", options.procs, platform, options,
                            options.out / f"trials-{platform}.jsonl") if options.trials else []
        builds["trials"] = {"seconds": round(time.monotonic() - started, 1)}
        summary[platform] = {"builds": builds, "shares": found, "head_to_head": duels,
                             "extras_right": sum(t["extras_right"] for t in judged),
                             "layout_right": sum(t["layout_right"] for t in judged),
                             "strips_against_blocks": strips_against_blocks(judged) if judged else None}
        save(summary, options.out)
        reported = report(platform, builds, found, duels, judged)
        lines += reported
        print("\n".join(reported), flush=True)
    summary["speeds"]["after"] = measure_ranks(options.procs, options.out / "speeds-after.json")
    lines.append(speeds_line("after the trials", summary["speeds"]["after"]))
    if len(summary["cores"]["relative"]) > 1:
        summary["cores"]["relative_after"] = relative_to_fastest(time_cores(sorted(summary["cores"]["relative"])))
        lines.append(cores_line({"cores": summary["cores"]["cores"], "relative": summary["cores"]["relative_after"]},
                                "after the trials"))
    save(summary, options.out)
    print()
    print("\n".join(lines))
    if {"native", "lan"} <= summary.keys():
        print(strips_gain(summary))
    platforms = [p for p in options.platforms.split(",") if options.trials]
    if platforms:
        worst = min(summary[p]["extras_right"] for p in platforms)
        verdict = "holds" if worst >= REQUIRED * options.trials else "fails"
        print(f"extra rows and columns measured-optimal within {TOLERANCE:.0%}: "
              + ", ".join(f"{summary[p]['extras_right']} of {options.trials} ({p})" for p in platforms)
              + f"; {REQUIRED:.0%} {verdict}")


if __name__ == "__main__":
    main()
