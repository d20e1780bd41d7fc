"""The report's HTML: one self-contained page, readable offline.

Styles are inline, images are PNG files beside the page referred to by
relative paths, and there is no script, so the page opens from a file, a
mail attachment or an archive the same way.  Every text from the artefacts
goes through ``html.escape``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import quote

from hlc.artefacts.evaluation import EvaluationDocument, InterfaceResult
from hlc.evaluation.text import probe_row, summary_rows
from hlc.evaluation.verdicts import turns_on_the_input
from hlc.model.calibration import missing_implementations
from hlc.reports.data import BuildData, ImplementationInfo, InterfaceInfo

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1280px;
       padding: 1rem 2rem 3rem; color: #1b1b1b; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 2px solid #ccc; margin-top: 2.5rem; }
h3 { margin-top: 2rem; } h4 { margin: 1.6rem 0 0.4rem; }
small, .muted { color: #666; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f8fa; border: 1px solid #ddd; padding: 0.6rem; overflow-x: auto; font-size: 0.8rem; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85rem; color: #444; max-width: 60rem; }
.notes { background: #fff8e1; border-left: 4px solid #f0b400; padding: 0.4rem 1rem; }
.warning { color: #a04000; }
.status-fitted, .status-factored { color: #1a7f37; } .status-other { color: #b42318; font-weight: bold; }
nav ul { columns: 2; }
"""


@dataclass
class Image:
    src: str  # file name beside the page
    alt: str
    caption: str
    width: int
    height: int


@dataclass
class ImplementationSection:
    info: ImplementationInfo
    images: list[Image] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class InterfaceSection:
    info: InterfaceInfo
    maps: list[Image] = field(default_factory=list)
    implementations: list[ImplementationSection] = field(default_factory=list)
    evaluation: InterfaceResult | None = None  # this interface's part of evaluation.json
    notes: list[str] = field(default_factory=list)


def number(value: Any) -> str:
    """Numbers as a reader wants them: integers whole, floats to four digits."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(", ", ": "))
    return str(value)


NUMERIC = ' class="number"'


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]], numeric: Iterable[int] = ()) -> str:
    numeric = set(numeric)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td{NUMERIC if i in numeric else ""}>{escape(number(c))}</td>'
                                    for i, c in enumerate(row)) + "</tr>\n" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>\n"


def _facts(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(number(v))}</td></tr>\n" for k, v in pairs)
    return f"<table>\n{rows}</table>\n"


def _notes(notes: list[str], title: str | None = None) -> str:
    if not notes:
        return ""
    heading = f"<p><strong>{escape(title)}</strong></p>" if title else ""
    items = "".join(f"<li>{escape(n)}</li>" for n in notes)
    return f'<div class="notes">{heading}<ul>{items}</ul></div>\n'


def _image(image: Image) -> str:
    return (f'<figure><img src="{escape(quote(image.src))}" alt="{escape(image.alt)}" width="{image.width}" '
            f'height="{image.height}"><figcaption>{escape(image.caption)}</figcaption></figure>\n')


def _anchor(*parts: str) -> str:
    return "-".join("".join(c if c.isalnum() or c in "_-" else "_" for c in p) for p in parts)


def _header(data: BuildData) -> str:
    models = data.models
    fingerprint = models.fingerprint
    library = data.library
    doc = f"<p>{escape(library.doc.strip())}</p>\n" if library is not None and library.doc else ""
    facts = [("build", str(data.folder.resolve())), ("description", str(data.description or models.description)),
             ("built from", models.origin),
             ("created", models.created or None), ("CPU", fingerprint.get("cpu")), ("cores", fingerprint.get("cores")),
             ("platform", fingerprint.get("platform")), ("OS", fingerprint.get("os")),
             ("Python", fingerprint.get("python")),
             ("quick build", fingerprint.quick),
             ("fit settings", models.settings.to_json())]
    quick = ('<p class="warning">A quick build: a reduced loop nest was profiled, so the models are rough.</p>\n'
             if fingerprint.quick else "")
    lost = missing_implementations(models)
    without = ('<div class="warning"><p>Built without these implementations: calls never go to them.</p><ul>'
               + "".join(f"<li>{escape(line)}</li>" for line in lost) + "</ul></div>\n") if lost else ""
    return (f"<h1>Library {escape(models.library)}</h1>\n{doc}"
            f"{_facts((k, v) for k, v in facts if v is not None)}{quick}{without}")


def _overview(section: InterfaceSection) -> str:
    rows = []
    for implementation in section.info.implementations:
        entry = implementation.entry
        fitted = entry.status == "fitted"
        kept = f"{len(entry.kept)} of {len(entry.terms)}" if fitted else None
        counts = [entry.samples, entry.verification_samples, entry.noisy_samples] if entry.usable else [None] * 3
        rows.append([implementation.name, entry.status, kept, entry.r2, entry.mre, entry.verification_mre,
                     *counts, len(entry.warnings) or None])
    return _table(["implementation", "status", "terms kept", "R²", "fit MRE", "verification MRE", "fitting samples",
                   "verification samples", "noisy", "warnings"], rows, numeric=range(2, 10))


def _status(status: str) -> str:
    kind = "fitted" if status == "fitted" else "factored" if status == "factored" else "other"
    return f'<span class="status-{kind}">{escape(status)}</span>'


def _model(section: ImplementationSection, interface: str) -> str:
    implementation, entry = section.info, section.info.entry
    status = entry.status
    parameters = ", ".join(p.name for p in implementation.parameters)
    title = escape(implementation.name) + (f"({escape(parameters)})" if parameters else "")
    doc = f" <small>{escape(implementation.doc)}</small>" if implementation.doc else ""
    out = [f'<h3 id="{_anchor(interface, implementation.name)}">{title}{doc}</h3>\n',
           f"<p>status: {_status(status)}</p>\n"]
    if entry.cause:
        out.append(f"<pre>{escape(entry.cause)}</pre>\n")
    if entry.status == "fitted":
        coefficients, half_widths = entry.coefficients, entry.half_widths
        rows = []
        for term in entry.kept:
            beta, half = coefficients.get(term), half_widths.get(term)
            ratio = abs(beta / half) if beta is not None and half else None
            rows.append([term, beta, f"± {number(half)}" if half is not None else None, ratio])
        out.append(_table(["term kept", "coefficient β", "half-width h (95%)", "|β/h|"], rows, numeric=(1, 2, 3)))
        negative = [term for term in entry.dropped
                    if any(note.startswith(f"left out the written term {term}:") for note in entry.warnings)]
        irrelevant = [term for term in entry.dropped if term not in negative]
        if irrelevant:
            out.append(f"<p>dropped as irrelevant: {escape(', '.join(irrelevant))}</p>\n")
        if negative:
            out.append(f"<p>dropped for a negative weight that made the model predict no positive time "
                       f"somewhere: {escape(', '.join(negative))}</p>\n")
        found = implementation.findings
        if found:
            out.append("<p>found by the fitter in the samples, the largest first:</p><ul>"
                       + "".join(f"<li>{escape(line)}</li>" for line in found) + "</ul>\n")
    facts = [("R²", entry.r2), ("fit MRE", entry.mre),
             ("verification MRE", entry.verification_mre),
             ("fitted on", "the fitting and the verification samples, after these judged the model fitted "
              "without them (its verification MRE)" if entry.on_every_sample else None),
             ("terms and weights", f"the mean of the search on every sample and of {entry.bags} on parts of "
              f"their points (bags)" if entry.bags else None),
             ("verification MRE by rank count", ", ".join(
                 f"P={size} {number(error)}" for size, error in entry.verification_mre_by_ranks.items()) or None),
             ("samples (fitting / verification / noisy)",
              " / ".join(number(n) for n in (entry.samples, entry.verification_samples, entry.noisy_samples))
              if entry.usable else None),
             ("left out: taken while the host ran slow or never settled", entry.disturbed_samples or None),
             ("calibrated domain", ", ".join(f"{k} {number(lo)} .. {number(hi)}"
                                            for k, (lo, hi) in entry.domain.items()) or None)]
    out.append(_facts((k, v) for k, v in facts if v is not None))
    if entry.warnings:
        out.append("<ul>" + "".join(f'<li class="warning">{escape(w)}</li>' for w in entry.warnings) + "</ul>\n")
    if entry.python:
        out.append(f"<pre>{escape(entry.python.rstrip())}</pre>\n")
    out += [_image(image) for image in section.images]
    out.append(_notes(section.notes))
    return "".join(out)


def _failures(info: InterfaceInfo) -> str:
    if not info.failures:
        return ""
    items = "".join(f"<li><strong>{escape(f.implementation)}</strong> at P={escape(number(f.P))}"
                    f"{', point ' + escape(number(f.point)) if f.point else ''}:"
                    f"<pre>{escape(f.cause or 'no cause recorded')}</pre></li>"
                    for f in info.failures)
    return f"<h3>Excluded while profiling</h3>\n<ul>{items}</ul>\n"


def _evaluation(evaluation: EvaluationDocument, part: InterfaceResult | None, name: str) -> str:
    if part is None:
        return "<p class=\"muted\">evaluation.json does not cover this interface.</p>\n"
    settings = evaluation.settings
    setup = [("created", evaluation.created)] if evaluation.created else []  # older evaluations have no date
    setup += [("seed", settings.seed), ("params", settings.params), ("tolerance", settings.tolerance),
              ("baseline", settings.baseline)]
    out = ["<h3>Evaluation against measured times</h3>\n", _facts(setup)]
    if part.summary is not None:
        rows = [("points judged", str(part.summary.points))] + [(measure.strip(), value.strip())
                                                                for measure, value in summary_rows(part.summary)]
        probed = probe_row([probe for probe in evaluation.probes if probe.interface == name])
        if probed is not None:
            rows.append(probed)
        out.append(_table(["measure", "value"], rows))
    points = part.points
    wrong = sorted((p for p in points if not p.right), key=lambda p: -p.penalty)
    out.append(f"<p>{len(points)} points evaluated, {len(wrong)} wrong choice{'' if len(wrong) == 1 else 's'} "
               "(the chosen candidate measured more than the tolerance slower than the best).</p>\n")
    if wrong:
        tolerance = settings.tolerance
        rows = [[p.P, ", ".join(f"{k}={number(v)}" for k, v in p.variables.items() if k not in ("P", "logP")),
                 p.chosen_label, p.best_label, p.penalty,
                 {True: "yes", False: "no", None: ""}[turns_on_the_input(p, tolerance)]] for p in wrong[:15]]
        out.append(_table(["P", "variables", "chosen", "measured best", "penalty", "turns on the input"], rows,
                          numeric=(0, 4)))
        if len(wrong) > 15:
            out.append(f"<p class=\"muted\">… and {len(wrong) - 15} more.</p>\n")
    return "".join(out)


def _interface(section: InterfaceSection, evaluation: EvaluationDocument | None) -> str:
    info = section.info
    variables = ", ".join(info.variables) or "none"
    doc = f"<p>{escape(info.doc)}</p>\n" if info.doc else ""
    out = [f'<h2 id="{_anchor(info.name)}">Interface {escape(info.name)}</h2>\n', doc,
           f"<p>explanatory variables: {escape(variables)}; calibrated at P = "
           f"{escape(', '.join(str(r) for r in info.ranks))}</p>\n", _overview(section)]
    if evaluation is not None:
        out.append(_evaluation(evaluation, evaluation.interfaces.get(info.name), info.name))
    if section.maps:
        out.append("<h3>Where each implementation is chosen</h3>\n")
        out += [_image(image) for image in section.maps]
    out.append(_notes(section.notes))
    out += [_model(s, info.name) for s in section.implementations]
    out.append(_failures(info))
    return "".join(out)


def render(data: BuildData, sections: list[InterfaceSection], notes: list[str]) -> str:
    """The whole page."""
    library = escape(data.models.library)
    contents = "".join(
        f'<li><a href="#{_anchor(s.info.name)}">{escape(s.info.name)}</a>: '
        + ", ".join(f'<a href="#{_anchor(s.info.name, i.info.name)}">{escape(i.info.name)}</a>'
                    for i in s.implementations) + "</li>"
        for s in sections)
    body = "".join(_interface(s, data.evaluation) for s in sections)
    generated = time.strftime("%Y-%m-%d %H:%M:%S %z")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>hlc report: {library}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
{_header(data)}
</header>
<main>
<nav><p><strong>Interfaces</strong></p><ul>{contents}</ul></nav>
{_notes(notes, "What this report could not show")}
{body}
</main>
<footer><p class="muted">Generated by hlc report on {escape(generated)}. MRE is the geometric mean of
1 + |measured − predicted| / measured: 1.10 means predictions within about 10%.</p></footer>
</body>
</html>
"""
