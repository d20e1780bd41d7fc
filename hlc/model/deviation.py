"""How far a fitted model's samples typically lie from it, where.

A model predicts the centre of what its samples measured.  Where the
machine's cost is steady, the samples lie close to the model; where it is
not, they scatter, and a decision there between two alternatives that the
model rates alike is a gamble on the worse one's bad moments.  In one
evaluation on a shared machine, a radix sort of 844,360 keys in two 12-bit
passes took from 2.3 to 6.1 ms round by round, where the narrow sort's
rounds lay between 2.3 and 2.8 ms: chosen by its predicted centre, the
radix sort took twice as long there as the narrow sort.

The typical deviation is fitted as a non-negative sum of the model's own
kept terms, to the absolute residuals of its fitting samples (relative to
each sample's time, as the model is fitted; those the host ran steady for,
hlc.model.calibration._deviation_rows): each term carries the share of
the scatter that the samples where it weighs show.  Being a sum of the
same terms, the time a decision plans for, the prediction plus RISK
typical deviations (Σβ·t + ΣRISK·γ·t, ``TimeModel.plan_deviations``), is
valued with the prediction, each term once.  The verification samples
play no part, so that they still judge the model.

The choice between implementations weighs the planned time, and so do
the searches of their parameters (hlc.dispatch.reference).  RISK
was set by refitting the samples of fifteen sort builds of this project and
replaying the choices against their two exhaustive evaluations each
(``hlc evaluate --replay``): from RISK 0 to 2, right choices went from
97.9% to 98.5% on average, the expected penalty from 0.51% to 0.26% and the
worst from 52% to 29%; at 3 and 4 the right share fell again.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hlc.model.nonnegative import nonnegative_least_squares

#: Typical deviations a decision adds to a prediction.
RISK = 2.0


def fit_deviation(columns: Mapping[str, np.ndarray], times: np.ndarray, residuals: np.ndarray, *,
                  relative: bool = True) -> dict[str, float]:
    """The coefficients γ ≥ 0, by term, of the least-squares fit of
    Σ γ_t · column_t to |residuals| (each row divided by its time when
    ``relative``); only the non-zero ones.  ``columns`` are the model's
    kept terms valued on its fitting samples (``"1"`` a column of ones)."""
    names = list(columns)
    times = np.asarray(times, dtype=float)
    if not names or len(times) < 2:
        return {}
    weights = times if relative else np.ones_like(times)
    design = np.column_stack([np.asarray(columns[name], dtype=float) for name in names]) / weights[:, None]
    scale = np.linalg.norm(design, axis=0)
    usable = np.isfinite(scale) & (scale > 0)
    if not usable.any():
        return {}
    target = np.abs(np.asarray(residuals, dtype=float)) / weights
    solution = nonnegative_least_squares(design[:, usable] / scale[usable], target)
    gamma = solution / scale[usable]
    return {name: float(value) for name, value in zip(np.array(names)[usable], gamma, strict=True) if value > 0}
