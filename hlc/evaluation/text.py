"""The figures of an evaluation in words: what ``hlc evaluate`` prints and the report's table shows."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from hlc.artefacts.evaluation import EvaluationDocument, InterfaceResult, Probed, Settings, Summary


class Figures:
    """What an evaluation and a replay show of their judged ``document``."""

    document: EvaluationDocument

    @property
    def library(self) -> str:
        return self.document.library

    @property
    def settings(self) -> Settings:
        return self.document.settings

    @property
    def interfaces(self) -> dict[str, InterfaceResult]:
        return self.document.interfaces


def summary_rows(summary: Summary) -> list[tuple[str, str]]:
    """The figures of one summary as (measure, value)."""
    rows = [("right choices", f"{summary.right_share:7.1%}"),
            ("penalty t_chosen/t_best - 1", f"mean when wrong {summary.mean_penalty_when_wrong:.1%}, "
             f"expected {summary.expected_penalty:.2%}, worst {summary.worst_penalty:.1%}"),
            ("t_chosen / t_best", f"median {summary.ratio_median:.3f}, "
             f"95th percentile {summary.ratio_p95:.3f}, max {summary.ratio_max:.3f}")]
    if summary.best_single is not None:
        rows.append(("gain over the best single", f"{summary.best_single.gain:.2f}x "
                     f"({summary.best_single.implementation}, always; geometric mean of t_single / t_dispatched)"))
    if summary.baseline is not None:
        rows.append(("gain over the baseline", f"{summary.baseline.gain:.2f}x "
                     f"({summary.baseline.implementation}, at the {summary.baseline.points} points where it "
                     f"applies)"))
    for name, optimal in summary.optimal_parameters.items():
        chosen = summary.optimal_where_chosen.get(name)
        where = f"; {chosen.share:.1%} of the {chosen.points} where it was chosen" if chosen is not None else ""
        rows.append((f"optimal parameters of {name:<8}", f"{optimal.share:7.1%} "
                     f"(of {optimal.points} points; within {summary.tolerance:.0%} of its best value{where})"))
    if summary.noise_median is not None:
        rows.append(("noise floor", f"median {summary.noise_median:.1%}, "
                     f"95th percentile {summary.noise_p95:.1%} (the reference timed twice, |t2/t1 - 1|)"))
    if summary.turns_on_input is not None:
        rows.append(("turns on the input", f"{summary.turns_on_input.share:7.1%} (of {summary.turns_on_input.points} "
                     f"points timed on a second input of the same variables: no alternative within "
                     f"{summary.tolerance:.0%} of the fastest on both)"))
    if summary.right_where_decided is not None:
        rows.append(("right where variables decide", f"{summary.right_where_decided.share:7.1%} "
                     f"(of the other {summary.right_where_decided.points})"))
    if summary.right_where_settled is not None:
        rows.append(("right where timings settled", f"{summary.right_where_settled.share:7.1%} "
                     f"(of {summary.right_where_settled.points}; at the other "
                     f"{summary.points - summary.right_where_settled.points} the chosen or the fastest "
                     f"alternative's timings never agreed)"))
    if summary.overhead_median is not None:
        rows.append(("dispatched call vs chosen", f"median {summary.overhead_median:+.1%} "
                     f"(the decision's cost and noise)"))
    rows.append(("chosen", ", ".join(f"{name} {count}" for name, count in summary.chosen.items())))
    return rows


def format_summary(title: str, summary: Summary | None, settings: Settings) -> list[str]:
    """The lines ``hlc evaluate`` prints for one summary."""
    if summary is None:
        return [f"{title}: no point could be judged"]
    lines = [f"{title}: {summary.points} held-out points (seed {settings.seed}, parameters {settings.params}); "
             f"a choice is right within {summary.tolerance:.0%} of the fastest measured alternative"]
    return lines + [f"  {measure:<30}{value}" for measure, value in summary_rows(summary)]


def probe_row(probes: Sequence[Probed]) -> tuple[str, str] | None:
    """How far the costs moved since the profile, from the build's samples
    the oracle timed again: the median of now / then, and the one that
    moved most (as (measure, value); None without probes)."""
    if not probes:
        return None
    ratios = [probe.ratio for probe in probes]
    most = max(probes, key=lambda probe: max(probe.ratio, 1 / probe.ratio if probe.ratio > 0 else math.inf))
    where = ", ".join(f"{name} = {int(value) if float(value).is_integer() else f'{value:g}'}"
                      for name, value in most.variables.items() if name not in ("P", "logP"))
    settings = "".join(f" {name}={value}" for name, value in most.parameters.items())
    return ("costs since the profile", f"x{statistics.median(ratios):.2f} median over {len(probes)} of the build's "
            f"samples timed again; most x{most.ratio:.2f} ({most.implementation}{settings} at {where})")


def format_document(document: EvaluationDocument) -> list[str]:
    """The lines of every interface's summaries (one per rank count when
    there were several), each block followed by a blank line."""
    lines = []
    for name, part in document.interfaces.items():
        for ranks, summary in part.blocks().items():
            lines += format_summary(name + (f", P = {ranks}" if ranks is not None else ""), summary,
                                    document.settings)
            row = probe_row([probe for probe in document.probes
                             if probe.interface == name and ranks in (None, probe.P)])
            if row is not None and summary is not None:
                lines.append(f"  {row[0]:<30}{row[1]}")
            lines.append("")
        if part.unmeasured:
            lines.append(f"  not judged: {part.unmeasured} points where the replayed choice was not "
                         f"timed by the evaluation")
            lines.append("")
    return lines
