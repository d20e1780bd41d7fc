"""``hlc report``: read a build, compute and draw its figures, write the page.

Each figure is made on its own; one that cannot be made becomes a note (on
the page and in :attr:`Report.notes`) and the rest of the report goes on, so
a build with an excluded implementation or without an evaluation still gets
its report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hlc.reports import analysis, plots
from hlc.reports.analysis import ReportError
from hlc.reports.data import BuildData, ImplementationInfo, InterfaceInfo, read_build
from hlc.reports.page import Image, ImplementationSection, InterfaceSection, render

MAX_RANK_MAPS = 4  # region maps per pair of variables: one per calibrated rank count, at most this many
MODELLED = ("fitted", "factored")


@dataclass
class Report:
    """What ``write_report`` wrote."""

    index: Path  # the HTML page
    images: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the report could not draw, and why


def write_report(build: str | Path, *, out: str | Path | None = None,
                 maps: Sequence[tuple[str, str]] | None = None,
                 fixed: Mapping[str, float] | None = None) -> Report:
    """Write an offline HTML report of the built library in ``build``.

    ``out`` is the folder of the page and its images (default
    ``<build>/report``); ``maps`` lists pairs of variables to draw region maps
    over (default: each interface's first two); ``fixed`` holds the other
    variables of a map (default: the geometric middle of their domain).
    Raises FileNotFoundError when ``build`` has no models.json.
    """
    data = read_build(build)
    folder = Path(out) if out is not None else Path(build) / "report"
    folder.mkdir(parents=True, exist_ok=True)
    writer = _Writer(data, folder)
    fixed = dict(fixed or {})
    known = {v for info in data.interfaces for v in info.variables}
    for name in fixed:
        if name not in known:
            writer.notes.append(f"--fix {name}: no interface has a variable {name}; it is ignored")
    pairs = []
    for pair in maps or []:
        pair = tuple(pair)
        if len(pair) != 2 or pair[0] == pair[1]:
            writer.notes.append(f"map {','.join(map(str, pair))}: a map needs two different variables; not drawn")
        elif not any(set(pair) <= set(info.variables) for info in data.interfaces):
            writer.notes.append(f"map {pair[0]},{pair[1]}: no interface has both variables; it is not drawn")
        else:
            pairs.append(pair)
    sections = [writer.interface(info, pairs, fixed) for info in data.interfaces]
    index = folder / "index.html"
    index.write_text(render(data, sections, writer.notes), encoding="utf-8")
    notes = list(writer.notes)
    for section in sections:
        notes += [f"{section.info.name}: {note}" for note in section.notes]
        for part in section.implementations:
            notes += [f"{section.info.name} / {part.info.name}: {note}" for note in part.notes]
    return Report(index, writer.images, notes)


class _Writer:
    """Draws the figures of one report into its folder, collecting notes."""

    def __init__(self, data: BuildData, folder: Path):
        self.data = data
        self.folder = folder
        self.images: list[Path] = []
        self.notes: list[str] = list(data.notes)

    def draw(self, name: str, alt: str, caption: str, notes: list[str], what: str,
             make: Callable[[Path], tuple[int, int]]) -> Image | None:
        """Run one figure's computation and drawing; a failure becomes a note."""
        path = self.folder / f"{name}.png"
        try:
            width, height = make(path)
        except ReportError as error:
            notes.append(f"{what}: not drawn ({error})")
            return None
        except Exception as error:  # a figure must never sink the report
            notes.append(f"{what}: could not be drawn ({type(error).__name__}: {error})")
            return None
        self.images.append(path)
        return Image(path.name, alt, caption, width, height)

    def interface(self, info: InterfaceInfo, pairs: list[tuple[str, str]],
                  fixed: Mapping[str, float]) -> InterfaceSection:
        evaluation = self.data.evaluation
        section = InterfaceSection(info, evaluation=evaluation.interfaces.get(info.name) if evaluation else None)
        module = self.data.module
        palette = plots.colours(info.names)
        values = analysis.fixed_values(info, fixed)
        if module is None:
            section.notes.append("no module: no region maps")
        elif not info.variables:
            section.notes.append(self._constant_choice(info))
        elif len(info.variables) == 1:
            self._strips(section, palette)
        else:
            self._maps(section, pairs, values, palette)
        for implementation in info.implementations:
            part = ImplementationSection(implementation)
            section.implementations.append(part)
            status = implementation.entry.status
            if status not in MODELLED:
                cause = implementation.entry.cause or ""
                part.notes.append(f"{status}{': ' + cause.splitlines()[0] if cause else ''}: "
                                  "no model, so no prediction plots")
                continue
            if module is None:
                part.notes.append("no module: no prediction plots")
                continue
            self._fit(info, implementation.name, part)
            if implementation.parameters:  # where --fix names a variable, the plots hold it there
                self._sweeps(info, implementation, values, part, observed=not set(fixed) & set(info.variables))
        return section

    def _constant_choice(self, info: InterfaceInfo) -> str:
        parts = []
        for ranks in info.ranks:
            try:
                choice = analysis.chooser(self.data.module, info.name)(**analysis.with_ranks({}, ranks))
            except Exception as error:
                return f"no explanatory variables, and the choice could not be computed ({error})"
            times = ", ".join(f"{k} {v:.3g} s" for k, v in choice.predicted.items())
            parts.append(f"at P={ranks} {choice.implementation or 'nothing'} ({times})")
        return "no explanatory variables, so no region map: the dispatcher always chooses the same; " + "; ".join(parts)

    def _strips(self, section: InterfaceSection, palette: dict[str, str]) -> None:
        info = section.info
        variable = info.variables[0]
        for ranks in info.ranks[:MAX_RANK_MAPS]:
            def make(path: Path, ranks: int = ranks) -> tuple[int, int]:
                strip = analysis.strip(self.data.module, info, variable, ranks)
                strip.overlay = analysis.overlay(self.data.evaluation, info.name, variable, None, ranks)
                return plots.strip_figure(strip, palette, path)

            image = self.draw(f"{info.name}-strip-{variable}-P{ranks}", f"{info.name}: choice along {variable}",
                              f"Predicted time of each implementation along {variable} at P={ranks}, and below it "
                              "the implementation the dispatcher chooses (share of the range in the legend).",
                              section.notes, f"strip over {variable} at P={ranks}", make)
            if image:
                section.maps.append(image)

    def _maps(self, section: InterfaceSection, pairs: list[tuple[str, str]], values: dict[str, float],
              palette: dict[str, str]) -> None:
        info = section.info
        chosen = [p for p in pairs if set(p) <= set(info.variables)]
        for x, y in chosen or [(info.variables[0], info.variables[1])]:
            for ranks in info.ranks[:MAX_RANK_MAPS]:
                def make(path: Path, x: str = x, y: str = y, ranks: int = ranks) -> tuple[int, int]:
                    region = analysis.region_map(self.data.module, info, x, y, values, ranks)
                    region.overlay = analysis.overlay(self.data.evaluation, info.name, x, y, ranks)
                    return plots.map_figure(region, palette, path)

                others = {k: v for k, v in values.items() if k not in (x, y)}
                held = (" The other variables are held at " + ", ".join(f"{k}={v:g}" for k, v in others.items())
                        + "; evaluated points are drawn wherever their values of those lie.") if others else ""
                overlay = (" Dots: evaluated points where the choice was right; red crosses: where it was wrong;"
                           " orange crosses: where it was wrong and the choice turns on the input (no alternative"
                           " was within the tolerance on both inputs timed there)." if self.data.evaluation else "")
                image = self.draw(f"{info.name}-map-{x}-{y}-P{ranks}", f"{info.name}: regions over {x} and {y}",
                                  f"The implementation the dispatcher chooses over the calibrated ranges of {x} and "
                                  f"{y} at P={ranks}; where one of them follows the other in every sample, only "
                                  f"the band along that curve, the rest being no input at all.{held}{overlay}",
                                  section.notes,
                                  f"region map over {x}, {y} at P={ranks}", make)
                if image:
                    section.maps.append(image)
        if len(info.ranks) > MAX_RANK_MAPS:
            section.notes.append(f"maps drawn for P = {info.ranks[:MAX_RANK_MAPS]} only, not for "
                                 f"{info.ranks[MAX_RANK_MAPS:]}")

    def _fit(self, info: InterfaceInfo, implementation: str, part: ImplementationSection) -> None:
        def make(path: Path) -> tuple[int, int]:
            points = analysis.fit_points(self.data.module, info, implementation)
            if points.total > len(points.measured) + points.unusable:
                part.notes.append(f"{len(points.measured)} of {points.total} samples drawn (a random subset)")
            if points.unusable:
                part.notes.append(f"{points.unusable} samples left out: the model predicts no positive time there")
            return plots.fit_figure(points, implementation, path)

        image = self.draw(f"{info.name}-{implementation}-fit", f"{implementation}: measured against predicted",
                          "Left: measured against predicted seconds (log-log; on the line the model is exact). "
                          "Then the relative residual measured/predicted − 1 against each variable. Blue: fitting "
                          "samples, orange: verification samples.", part.notes, "measured-vs-predicted plot", make)
        if image:
            part.images.append(image)

    def _sweeps(self, info: InterfaceInfo, implementation: ImplementationInfo, values: dict[str, float],
                part: ImplementationSection, observed: bool = True) -> None:
        try:
            found = analysis.sweeps(self.data.module, info, implementation, self.data.constants, values, observed)
        except Exception as error:
            part.notes.append(f"the model against its parameters: not drawn ({error})")
            return
        for sweep in found:
            image = self.draw(f"{info.name}-{implementation.name}-{sweep.parameter}",
                              f"{implementation.name}: predicted time against {sweep.parameter}",
                              f"The model of {implementation.name} against {sweep.parameter} at three points along "
                              f"{info.variables[0] if info.variables else 'the variables'} (those of its samples "
                              "nearest 15%, 50% and 85% of the way, each with the variables measured there; with "
                              "--fix, or without samples, the others held at their fixed values), other parameters "
                              "at the values the dispatcher sets there; the star marks the value it chooses.",
                              part.notes, f"plot against {sweep.parameter}",
                              lambda path, sweep=sweep: plots.sweep_figure(sweep, path))
            if image:
                part.images.append(image)
