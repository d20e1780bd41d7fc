"""The report's figures, drawn with matplotlib's object API into PNG files.

``matplotlib.figure.Figure`` is used directly (no pyplot): no global state, no
GUI backend, nothing to close.  Each function takes results of
:mod:`hlc.reports.analysis` and a path and returns the image's size in pixels,
which the page writes into its ``<img>`` so the layout does not jump.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap, to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from hlc.reports.analysis import Axis, FitPoints, Overlay, RegionMap, Strip, Sweep, is_log

DPI = 100
FITTING = "#1f77b4"
VERIFICATION = "#ff7f0e"
NONE_APPLIES = "#d9d9d9"
WRONG = "#d62728"
TURNS = "#ff7f0e"  # a wrong choice at a point whose choice turns on the input
LEGEND = 2.5  # inches kept right of a map for its legend


def colours(names: list[str]) -> dict[str, str]:
    """One colour per implementation, the same in every figure of an interface."""
    import matplotlib

    palette = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: to_hex(palette(i % palette.N)) for i, name in enumerate(names)}


def _margins(figure: Figure, left: float, right: float, bottom: float, top: float,
             wspace: float = 0.0, hspace: float = 0.0, panels: tuple[int, int] = (1, 1)) -> None:
    """Fixed margins in inches: no layout engine, which would draw every figure
    twice (half the time of a report went into constrained layout)."""
    width, height = figure.get_size_inches()
    columns, rows = panels
    inner_width = width - left - right - wspace * (columns - 1)
    inner_height = height - bottom - top - hspace * (rows - 1)
    figure.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                           wspace=wspace * columns / inner_width, hspace=hspace * rows / inner_height)


def _save(figure: Figure, path: Path) -> tuple[int, int]:
    figure.savefig(path, dpi=DPI, format="png")
    width, height = figure.get_size_inches()
    return round(width * DPI), round(height * DPI)


def _scale(ax, axis_: Axis, which: str) -> None:
    if axis_.log:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    (ax.set_xlim if which == "x" else ax.set_ylim)(axis_.edges[0], axis_.edges[-1])
    (ax.set_xlabel if which == "x" else ax.set_ylabel)(axis_.name)


def _shown(values: dict[str, float]) -> str:
    return ", ".join(f"{k}={_number(v)}" for k, v in values.items())


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def fit_figure(points: FitPoints, implementation: str, path: Path) -> tuple[int, int]:
    """Measured against predicted (log-log, y = x), then the residual
    measured/predicted − 1 against each variable that varies."""
    variables = {k: v for k, v in points.variables.items() if len(np.unique(v)) > 1}
    panels = 1 + len(variables)
    figure = Figure(figsize=(3.4 * panels, 3.3))
    axes = figure.subplots(1, panels, squeeze=False)[0]
    _margins(figure, 0.75, 0.15, 0.5, 0.3, wspace=0.8, panels=(panels, 1))
    fitting, verify = ~points.verify, points.verify
    size = 6 if fitting.sum() > 500 else 14  # many samples: small dots, so the cloud shows its density
    ax = axes[0]
    ax.scatter(points.predicted[fitting], points.measured[fitting], s=size, color=FITTING, alpha=0.5,
               linewidths=0, label=f"fitting ({int(fitting.sum())})")
    ax.scatter(points.predicted[verify], points.measured[verify], s=14, color=VERIFICATION, marker="D",
               linewidths=0, label=f"verification ({int(verify.sum())})")
    low = float(min(points.predicted.min(), points.measured.min()))
    high = float(max(points.predicted.max(), points.measured.max()))
    ax.plot([low, high], [low, high], color="black", linewidth=0.8, label="measured = predicted")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted seconds")
    ax.set_ylabel("measured seconds")
    ax.set_title(f"{implementation}: measured vs predicted", fontsize="medium")
    ax.legend(fontsize="x-small", loc="upper left")
    residuals = points.measured / points.predicted - 1
    for ax, (name, values) in zip(axes[1:], variables.items(), strict=True):
        ax.axhline(0, color="black", linewidth=0.8)
        ax.scatter(values[fitting], residuals[fitting], s=size, color=FITTING, alpha=0.5, linewidths=0)
        ax.scatter(values[verify], residuals[verify], s=14, color=VERIFICATION, marker="D", linewidths=0)
        if values.min() > 0 and is_log(float(values.min()), float(values.max())):
            ax.set_xscale("log")
        elif np.all(values == np.round(values)):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if np.abs(residuals).max() > 10:  # a model off by orders of magnitude: keep the small residuals readable
            ax.set_yscale("symlog", linthresh=1)
        ax.set_xlabel(name)
        ax.set_ylabel("measured / predicted − 1")
        ax.set_title(f"residuals against {name}", fontsize="medium")
    return _save(figure, path)


def _overlay_handles(ax, overlay: Overlay | None) -> list[Line2D]:
    """Right choices as small dots, wrong ones as red crosses (drawn on
    top), and wrong ones where the choice turns on the input as orange
    crosses: no model of the variables could have been right there."""
    if overlay is None:
        return []
    turns = overlay.turns if overlay.turns is not None else np.zeros_like(overlay.right)
    right, wrong, unavoidable = overlay.right, ~overlay.right & ~turns, ~overlay.right & turns
    ax.plot(overlay.x[right], overlay.y[right], linestyle="none", marker="o", markersize=4,
            markerfacecolor="black", markeredgecolor="white", markeredgewidth=0.4)
    handles = [Line2D([], [], linestyle="none", marker="o", markersize=4, markerfacecolor="black",
                      markeredgecolor="white", label=f"evaluated: right ({int(right.sum())})")]
    for chosen, colour, label in ((wrong, WRONG, "evaluated: wrong"), (unavoidable, TURNS, "wrong, input decides")):
        if chosen.any() or chosen is wrong:
            ax.plot(overlay.x[chosen], overlay.y[chosen], linestyle="none", marker="x", markersize=8,
                    color=colour, markeredgewidth=2)
            handles.append(Line2D([], [], linestyle="none", marker="x", markersize=8, color=colour,
                                  markeredgewidth=2, label=f"{label} ({int(chosen.sum())})"))
    return handles


def _regions(names: list[str], shares: dict[str, float], palette: dict[str, str]) -> tuple[ListedColormap, list]:
    cmap = ListedColormap([palette[name] for name in names] + [NONE_APPLIES])
    handles = [Patch(facecolor=palette[name], edgecolor="black", linewidth=0.4,
                     label=f"{name} ({100 * shares[name]:.1f}%)") for name in names if name in shares]
    if shares.get("", 0.0) > 0:
        handles.append(Patch(facecolor=NONE_APPLIES, edgecolor="black", linewidth=0.4,
                             label=f"none applies ({100 * shares['']:.1f}%)"))
    return cmap, handles


def _legend(figure: Figure, handles: list, title: str) -> None:
    """The legend in the right margin that _margins left for it."""
    width, height = figure.get_size_inches()
    figure.legend(handles=handles, loc="upper left", bbox_to_anchor=(1 - (LEGEND - 0.15) / width, 1 - 0.35 / height),
                  fontsize="small", title=title, title_fontsize="small", frameon=False)


def map_figure(region: RegionMap, palette: dict[str, str], path: Path) -> tuple[int, int]:
    """Each cell coloured by the implementation the dispatcher chooses there."""
    figure = Figure(figsize=(8.6, 5.2))
    ax = figure.subplots()
    _margins(figure, 0.7, LEGEND, 0.5, 0.35)
    cmap, handles = _regions(region.names, region.shares, palette)
    data = np.where(region.chosen < 0, len(region.names), region.chosen)
    if region.profiled is not None and not region.profiled.all():  # blank where no input can lie
        data = np.ma.masked_where(~region.profiled, data)
        handles.append(Patch(facecolor="white", edgecolor="black", linewidth=0.4,
                             label=f"no input there ({100 * (1 - region.profiled.mean()):.0f}% of the map)"))
    ax.pcolormesh(region.x.edges, region.y.edges, data, cmap=cmap, vmin=-0.5, vmax=len(region.names) + 0.5,
                  shading="flat", rasterized=True)
    _scale(ax, region.x, "x")
    _scale(ax, region.y, "y")
    handles += _overlay_handles(ax, region.overlay)
    title = f"{region.interface}: the dispatcher's choice at P={region.ranks}"
    if region.fixed:
        title += f"; {_shown(region.fixed)}"
    ax.set_title(title, fontsize="medium")
    _legend(figure, handles, "implementation (share)")
    return _save(figure, path)


def strip_figure(strip: Strip, palette: dict[str, str], path: Path) -> tuple[int, int]:
    """One variable: predicted times of every implementation, and below them
    the strip of the dispatcher's choices."""
    figure = Figure(figsize=(8.6, 4.8))
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [4, 1]})
    _margins(figure, 0.8, LEGEND, 0.5, 0.35, hspace=0.1, panels=(1, 2))
    for name in strip.names:
        values = np.where(np.isfinite(strip.predicted[name]) & (strip.predicted[name] > 0),
                          strip.predicted[name], np.nan)
        if np.isfinite(values).any():
            top.plot(strip.x.values, values, color=palette[name], linewidth=1.6, label=name)
    top.set_yscale("log")
    top.set_ylabel("predicted seconds")
    top.set_title(f"{strip.interface}: predicted time and the dispatcher's choice at P={strip.ranks}",
                  fontsize="medium")
    cmap, handles = _regions(strip.names, strip.shares, palette)
    data = np.where(strip.chosen < 0, len(strip.names), strip.chosen)[np.newaxis, :]
    bottom.pcolormesh(strip.x.edges, [0, 1], data, cmap=cmap, vmin=-0.5, vmax=len(strip.names) + 0.5,
                      shading="flat", rasterized=True)
    bottom.set_yticks([])
    bottom.set_ylim(0, 1)
    handles += _overlay_handles(bottom, strip.overlay)
    _scale(bottom, strip.x, "x")
    _legend(figure, handles, "chosen (share)")
    return _save(figure, path)


def sweep_figure(sweep: Sweep, path: Path) -> tuple[int, int]:
    """Predicted time against one parameter at a few points, the dispatcher's
    value marked (thesis Fig. 5-5)."""
    import matplotlib

    figure = Figure(figsize=(7.4, 4.4))
    ax = figure.subplots()
    _margins(figure, 0.8, 0.2, 0.5, 0.6)
    shades = matplotlib.colormaps["viridis"]
    positive = []
    for i, curve in enumerate(sweep.curves):
        colour = shades(0.1 + 0.75 * i / max(len(sweep.curves) - 1, 1))
        values = np.where(np.isfinite(curve.predicted) & (curve.predicted > 0), curve.predicted, np.nan)
        positive += list(values[np.isfinite(values)])
        marker = "o" if len(sweep.values) <= 40 else None
        label = curve.label + (f" → {sweep.parameter}={curve.chosen}" if curve.chosen is not None
                               else " (does not apply)")
        ax.plot(sweep.values, values, color=colour, marker=marker, markersize=3, linewidth=1.4, label=label)
        if curve.chosen is not None:
            at = np.flatnonzero(sweep.values == curve.chosen)
            if at.size and math.isfinite(values[at[0]]):
                ax.plot([curve.chosen], [values[at[0]]], linestyle="none", marker="*", markersize=16,
                        color=colour, markeredgecolor="black", zorder=5)
    if positive and max(positive) / min(positive) > 30:
        ax.set_yscale("log")
    if len(sweep.values) and sweep.values[0] > 0 and sweep.values[-1] / sweep.values[0] > 30:
        ax.set_xscale("log")  # the values are spread geometrically over a long range
    ax.set_xlabel(sweep.parameter)
    ax.set_ylabel("predicted seconds")
    title = f"{sweep.implementation}: predicted time against {sweep.parameter} at P={sweep.ranks}"
    if sweep.held:
        title += f"\nother variables: {_shown(sweep.held)}"
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small", title="★ the dispatcher's choice", title_fontsize="small")
    return _save(figure, path)
