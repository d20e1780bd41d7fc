"""``hlc evaluate``: how good are a built library's choices, measured against an oracle.

The build's own profiling program runs in its evaluation mode (the oracle,
``hlc.evaluation.oracle``): held-out random points, every alternative timed
side by side with the dispatched call, under ``mpiexec`` for several ranks.
Its lines are judged and summarized (:mod:`hlc.evaluation.verdicts`).

The raw lines stay in ``BUILD/evaluation.jsonl`` (resumable); the figures and
the judged points go to ``BUILD/evaluation.json``
(:mod:`hlc.artefacts.evaluation`), which ``hlc report`` reads and
``hlc evaluate --replay`` judges other models against.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hlc.artefacts.evaluation import EvaluationDocument, InterfaceResult, Probed, Settings, Summary
from hlc.artefacts.models import load as load_models
from hlc.artefacts.samples import Samples
from hlc.calibrate.run import Failure, ProfileError, Progress, failures_in, profile_defaults, run_program
from hlc.dispatch.bundle import description_of
from hlc.evaluation.oracle import TOLERANCE
from hlc.evaluation.text import Figures, format_document
from hlc.evaluation.verdicts import judge, summaries
from hlc.language.parse import parse_file
from hlc.model.fingerprint import implementation_digests, machine


@dataclass
class Evaluation(Figures):
    """The figures of one evaluation, per interface (and per rank count when several)."""

    path: Path  # evaluation.json
    document: EvaluationDocument
    failures: list[Failure] = field(default_factory=list)

    def summary(self, interface: str | None = None) -> Summary | None:
        """The figures of one interface (default: the first)."""
        return self.interfaces[interface or next(iter(self.interfaces))].summary

    def table(self) -> str:
        """The figures as text, as ``hlc evaluate`` prints them."""
        lines = format_document(self.document)
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
    library = parse_file(description_of(load_models(models_file), folder))
    if baseline is not None and not any(baseline == i.name for f in library.interfaces for i in f.implementations):
        raise ValueError(f"baseline {baseline!r} is not an implementation of {library.name}")
    program = folder / f"profile_{library.name}.py"
    if not program.exists():
        raise FileNotFoundError(f"{program} is missing; build the library again")
    ranks, timeout = profile_defaults(library, list(procs) if procs else [1], timeout)
    raw = folder / "evaluation.jsonl"
    wanted = {"seed": seed, "points": points, "params": params, "tolerance": tolerance}
    _start(raw, wanted, resume)
    options = ["--evaluate", str(folder.resolve()), "--points", str(points), "--params", params,
               "--tolerance", repr(tolerance)]
    for size in ranks:
        try:
            run_program(program, raw, size, seed, None, timeout, progress, options)
        except ProfileError as error:
            raise ProfileError(f"{error}\n(if {folder} was built by an older hlc, build it again)") from None
    settings = Settings(seed, points, params, tolerance, baseline, list(ranks))
    found = Samples.read(raw)
    records = [r for r in found.evaluations if r.P in ranks]
    probes = tuple(Probed(r.interface, r.implementation, r.P, r.parameters, r.variables, r.then, r.now)
                   for r in found.probes if r.P in ranks)
    interfaces = {}
    for interface in library.interfaces:
        judged = [p for p in (judge(r, tolerance) for r in records if r.interface == interface.name) if p]
        if not judged:
            continue
        reference = interface.reference_implementation.name
        named = baseline if baseline in {i.name for i in interface.implementations} else reference
        summary, by_ranks = summaries(judged, ranks, tolerance, named, reference)
        interfaces[interface.name] = InterfaceResult(summary, by_ranks, judged)
    document = EvaluationDocument(library.name, settings, interfaces, time.strftime("%Y-%m-%d %H:%M:%S"),
                                  machine(), sources=implementation_digests(library), probes=probes)
    path = folder / "evaluation.json"
    document.save(path)
    if out is not None:
        document.save(out)
    return Evaluation(path, document, failures_in(raw))


def _start(raw: Path, wanted: dict[str, Any], resume: bool) -> None:
    """A fresh raw file, or the one being resumed when its settings match."""
    if not resume:
        raw.unlink(missing_ok=True)
        return
    headers = Samples.read(raw).headers
    if not headers:
        return
    found = {"seed": headers[0].seed, "points": headers[0].points, "params": headers[0].params,
             "tolerance": headers[0].tolerance}
    if found["tolerance"] is None:  # written before the oracle settled near ties: any tolerance resumes it
        found["tolerance"] = wanted["tolerance"]
    if found != wanted:
        raise ProfileError(f"{raw} was made with {found}, not {wanted}; run without --resume to start again")
