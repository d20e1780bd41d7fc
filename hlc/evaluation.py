"""``hlc evaluate``: how good are a built library's choices, measured against an oracle.

The thesis judged its libraries by how often the choice was right and what
a wrong choice cost (Tables 4-1 to 4-4).  This module runs the build's own
profiling program in its evaluation mode (hlc.calibrate.oracle) — held-out
random points, every alternative timed side by side with the dispatched
call, under ``mpiexec`` for several ranks — and turns its lines into those
figures:

* the share of right choices: the chosen implementation (at its chosen
  parameters) within the tie tolerance of the fastest measured alternative;
* the penalty t_chosen / t_best − 1: mean when wrong, expected (over all
  calls), worst; the distribution of t_chosen / t_best;
* the gain of the dispatched call over the best single implementation (the
  one a user would pick without the library) and over a named baseline;
* with ``params="exhaustive"``, the share of points where each parameterized
  implementation's chosen parameters are within the tolerance of its best;
* the noise floor (the reference implementation timed twice) and the
  dispatch overhead (the dispatched call against its chosen implementation).

Two candidates are compared round by round: t_a / t_b is the median, over
the rounds in which both were timed, of the ratio of their timings in that
round.  Timings of one round are moments apart, so a host that runs slower
for seconds at a time slows both alike and the ratio keeps only what
differs between the candidates; the ratio of their medians would also keep
which rounds happened to fall on a slow spell.

The raw lines stay in ``BUILD/evaluation.jsonl`` (resumable); the figures and
the judged points go to ``BUILD/evaluation.json``, which ``hlc report`` reads.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hlc.calibrate.harness import read_samples
from hlc.calibrate.oracle import AGAIN, DISPATCHED, label, ratio
from hlc.calibrate.run import Failure, ProfileError, Progress, failures_in, profile_defaults, run_program
from hlc.dispatch.bundle import description_of
from hlc.language.parse import parse_file
from hlc.model.fingerprint import machine

FORMAT = 1
TOLERANCE = 0.03


@dataclass
class Evaluation:
    """The figures of one evaluation, per interface (and per rank count when several)."""

    library: str
    path: Path  # evaluation.json
    settings: dict[str, Any]
    interfaces: dict[str, dict[str, Any]]  # name → {"summary", "by_ranks", "points"}
    failures: list[Failure] = field(default_factory=list)

    def summary(self, interface: str | None = None) -> dict[str, Any]:
        """The figures of one interface (default: the first)."""
        return self.interfaces[interface or next(iter(self.interfaces))]["summary"]

    def table(self) -> str:
        """The figures as text, as ``hlc evaluate`` prints them."""
        lines = []
        for name, entry in self.interfaces.items():
            blocks = entry["by_ranks"] or {"": entry["summary"]}
            for ranks, summary in blocks.items():
                lines += format_summary(name + (f", P = {ranks}" if ranks else ""), summary, self.settings)
                lines.append("")
        for failure in self.failures:
            lines.append(f"excluded during evaluation: {failure.interface}.{failure.implementation} "
                         f"(P = {failure.P}): {failure.cause}")
        return "\n".join(lines).rstrip()


def evaluate(build: str | Path, *, points: int = 200, procs: Sequence[int] | None = None, seed: int = 0,
             params: str = "chosen", tolerance: float = TOLERANCE, baseline: str | None = None,
             out: str | Path | None = None, resume: bool = False, timeout: float | None = None,
             progress: Progress | None = None) -> Evaluation:
    """Measure the choices of the library built in ``build`` at ``points``
    held-out points per interface and rank count."""
    folder = Path(build)
    models_file = folder / "models.json"
    if not models_file.exists():
        raise FileNotFoundError(f"{build} is not a built library (no models.json); run `hlc build` first")
    if params not in ("chosen", "exhaustive"):
        raise ValueError(f"params must be 'chosen' or 'exhaustive', not {params!r}")
    if points < 1:
        raise ValueError(f"points must be at least 1, not {points}")
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must lie in [0, 1), not {tolerance}")
    models = json.loads(models_file.read_text(encoding="utf-8"))
    library = parse_file(description_of(models, folder))
    if baseline is not None and not any(baseline == i.name for f in library.interfaces for i in f.implementations):
        raise ValueError(f"baseline {baseline!r} is not an implementation of {library.name}")
    program = folder / f"profile_{library.name}.py"
    if not program.exists():
        raise FileNotFoundError(f"{program} is missing; build the library again")
    ranks, timeout = profile_defaults(library, list(procs) if procs else [1], timeout)
    raw = folder / "evaluation.jsonl"
    wanted = {"seed": seed, "points": points, "params": params}
    _start(raw, wanted, resume)
    options = ["--evaluate", str(folder.resolve()), "--points", str(points), "--params", params]
    for size in ranks:
        try:
            run_program(program, raw, size, seed, None, timeout, progress, options)
        except ProfileError as error:
            raise ProfileError(f"{error}\n(if {folder} was built by an older hlc, build it again)") from None
    settings = {**wanted, "tolerance": tolerance, "baseline": baseline, "ranks": ranks}
    records = [r for r in read_samples(raw) if r.get("kind") == "evaluation" and r["P"] in ranks]
    interfaces = {}
    for interface in library.interfaces:
        judged = [p for p in (judge(r, tolerance) for r in records if r["interface"] == interface.name) if p]
        if not judged:
            continue
        reference = interface.reference_implementation.name
        named = baseline if baseline in {i.name for i in interface.implementations} else reference
        by_ranks = {str(size): summarize([p for p in judged if p["P"] == size], tolerance, named, reference)
                    for size in ranks} if len(ranks) > 1 else {}
        interfaces[interface.name] = {"summary": summarize(judged, tolerance, named, reference),
                                      "by_ranks": by_ranks, "points": judged}
    document = {"format": FORMAT, "library": library.name, "created": time.strftime("%Y-%m-%d %H:%M:%S"),
                **settings, "machine": machine(), "interfaces": interfaces}
    path = folder / "evaluation.json"
    text = json.dumps(document, indent=1) + "\n"
    path.write_text(text, encoding="utf-8")
    if out is not None:
        Path(out).write_text(text, encoding="utf-8")
    return Evaluation(library.name, path, settings, interfaces, failures_in(raw))


def _start(raw: Path, wanted: dict[str, Any], resume: bool) -> None:
    """A fresh raw file, or the one being resumed when its settings match."""
    if not resume:
        raw.unlink(missing_ok=True)
        return
    header = next((r for r in read_samples(raw) if r.get("kind") == "header"), None)
    if header is None:
        return
    found = {"seed": header.get("seed"), "points": header.get("points"), "params": header.get("params")}
    if found != wanted:
        raise ProfileError(f"{raw} was made with {found}, not {wanted}; run without --resume to start again")


def judge(record: dict[str, Any], tolerance: float) -> dict[str, Any] | None:
    """One evaluation line as a judged point: which alternative beat the chosen
    one by most, and by how much.  None when it cannot be judged (no
    implementation applied, or the chosen one was not measured)."""
    chosen = record.get("chosen")
    measured = {c["label"]: c for c in record["candidates"]}
    alternatives = {k: v for k, v in measured.items() if k not in (DISPATCHED, AGAIN)}
    if chosen is None or not alternatives:
        return None
    chosen_label = label(chosen["implementation"], chosen["parameters"])
    if chosen_label not in alternatives:
        return None
    best_label, penalty = oracle_verdict(alternatives, chosen_label)
    dispatched, again = measured.get(DISPATCHED), measured.get(AGAIN)
    return {
        "P": record["P"], "index": record["index"], "point": record["point"], "variables": record["variables"],
        "chosen": {"implementation": chosen["implementation"], "parameters": chosen["parameters"]},
        "candidates": list(alternatives.values()),
        "chosen_label": chosen_label, "best_label": best_label, "penalty": penalty, "right": penalty <= tolerance,
        "dispatched": dispatched, "again": again,
    }


def oracle_verdict(alternatives: dict[str, dict[str, Any]], chosen_label: str) -> tuple[str, float]:
    """The alternative that beats the chosen one by most (the chosen one
    itself when none does), and the penalty t_chosen / t_best - 1."""
    slower = {name: 1.0 if name == chosen_label else ratio(alternatives[chosen_label], candidate)
              for name, candidate in alternatives.items()}
    best_label = max(slower, key=slower.__getitem__)
    return best_label, slower[best_label] - 1


def geometric_mean(values: Sequence[float]) -> float | None:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(q * len(ordered))) - 1)]


def summarize(points: list[dict[str, Any]], tolerance: float, baseline: str, reference: str) -> dict[str, Any]:
    """The figures over judged points (flat: names → numbers or names)."""
    if not points:
        return {"points": 0}
    penalties = [p["penalty"] for p in points]
    wrong = [x for x in penalties if x > tolerance]
    ratios = [1 + x for x in penalties]
    summary: dict[str, Any] = {
        "points": len(points), "tolerance": tolerance,
        "right_share": 1 - len(wrong) / len(points),
        "mean_penalty_when_wrong": statistics.fmean(wrong) if wrong else 0.0,
        "expected_penalty": statistics.fmean(penalties), "worst_penalty": max(penalties),
        "ratio_median": statistics.median(ratios), "ratio_p95": _quantile(ratios, 0.95), "ratio_max": max(ratios),
    }
    dispatched = [p for p in points if p["dispatched"]]

    def call(p: dict[str, Any]) -> dict[str, Any]:
        return p["dispatched"] or _candidate(p, p["chosen_label"])

    # The best single implementation: always the same one (at the parameters the
    # module gives it), the choice a user would make without the library.
    singles = {}
    for implementation in {c["implementation"] for p in points for c in p["candidates"]}:
        firsts = [_first(p, implementation) for p in points]
        if all(c is not None for c in firsts):
            singles[implementation] = geometric_mean([ratio(c, call(p)) for c, p in zip(firsts, points, strict=True)])
    if singles:
        best = min(singles, key=singles.__getitem__)
        summary.update(best_single=best, gain_vs_best_single=singles[best])
    pairs = [(_first(p, baseline), call(p)) for p in points]
    pairs = [(b, c) for b, c in pairs if b is not None]
    if pairs:
        summary.update(baseline=baseline, baseline_points=len(pairs),
                       gain_vs_baseline=geometric_mean([ratio(b, c) for b, c in pairs]))
    for implementation in sorted({c["implementation"] for p in points for c in p["candidates"] if c["parameters"]}):
        shares = [_parameters_optimal(p, implementation, tolerance) for p in points]
        shares = [s for s in shares if s is not None]
        if shares:
            summary[f"optimal_parameters_{implementation}"] = sum(shares) / len(shares)
            summary[f"optimal_parameters_{implementation}_points"] = len(shares)
    noise = [abs(ratio(p["again"], _first(p, reference)) - 1) for p in points
             if p["again"] and _first(p, reference) is not None]
    if noise:
        summary.update(noise_median=statistics.median(noise), noise_p95=_quantile(noise, 0.95))
    if dispatched:
        summary["overhead_median"] = statistics.median(ratio(p["dispatched"], _candidate(p, p["chosen_label"])) - 1
                                                       for p in dispatched)
    for implementation in sorted({p["chosen"]["implementation"] for p in points}):
        summary[f"chosen_{implementation}"] = sum(p["chosen"]["implementation"] == implementation for p in points)
    return summary


def _candidate(point: dict[str, Any], candidate: str) -> dict[str, Any]:
    return next(c for c in point["candidates"] if c["label"] == candidate)


def _first(point: dict[str, Any], implementation: str) -> dict[str, Any] | None:
    """The implementation at the parameters the module gives it here (the first
    candidate of that implementation, as the oracle times it first)."""
    return next((c for c in point["candidates"] if c["implementation"] == implementation), None)


def _parameters_optimal(point: dict[str, Any], implementation: str, tolerance: float) -> bool | None:
    """Whether the module's parameters for the implementation are within the
    tolerance of every other value measured (None: only one value was measured)."""
    measured = [c for c in point["candidates"] if c["implementation"] == implementation]
    if len(measured) < 2:
        return None
    return all(ratio(measured[0], other) <= 1 + tolerance for other in measured[1:])


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The figures of one summary as (measure, value) in words: what
    ``hlc evaluate`` prints and the report's table shows."""
    tolerance = summary["tolerance"]
    rows = [("right choices", f"{summary['right_share']:7.1%}"),
            ("penalty t_chosen/t_best - 1", f"mean when wrong {summary['mean_penalty_when_wrong']:.1%}, "
             f"expected {summary['expected_penalty']:.2%}, worst {summary['worst_penalty']:.1%}"),
            ("t_chosen / t_best", f"median {summary['ratio_median']:.3f}, "
             f"95th percentile {summary['ratio_p95']:.3f}, max {summary['ratio_max']:.3f}")]
    if "best_single" in summary:
        rows.append(("gain over the best single", f"{summary['gain_vs_best_single']:.2f}x "
                     f"({summary['best_single']}, always; geometric mean of t_single / t_dispatched)"))
    if "baseline" in summary:
        rows.append(("gain over the baseline", f"{summary['gain_vs_baseline']:.2f}x "
                     f"({summary['baseline']}, at the {summary['baseline_points']} points where it applies)"))
    for key, value in summary.items():
        if key.startswith("optimal_parameters_") and not key.endswith("_points"):
            name = key.removeprefix("optimal_parameters_")
            rows.append((f"optimal parameters of {name:<8}", f"{value:7.1%} "
                         f"(of {summary[key + '_points']} points; within {tolerance:.0%} of its best value)"))
    if "noise_median" in summary:
        rows.append(("noise floor", f"median {summary['noise_median']:.1%}, "
                     f"95th percentile {summary['noise_p95']:.1%} (the reference timed twice, |t2/t1 - 1|)"))
    if "overhead_median" in summary:
        rows.append(("dispatched call vs chosen", f"median {summary['overhead_median']:+.1%} "
                     f"(the decision's cost and noise)"))
    chosen = [f"{k.removeprefix('chosen_')} {v}" for k, v in summary.items() if k.startswith("chosen_")]
    rows.append(("chosen", ", ".join(chosen)))
    return rows


def format_summary(title: str, summary: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The lines ``hlc evaluate`` prints for one summary."""
    count = summary["points"]
    if not count:
        return [f"{title}: no point could be judged"]
    lines = [f"{title}: {count} held-out points (seed {settings['seed']}, parameters {settings['params']}); "
             f"a choice is right within {summary['tolerance']:.0%} of the fastest measured alternative"]
    return lines + [f"  {measure:<30}{value}" for measure, value in summary_rows(summary)]
