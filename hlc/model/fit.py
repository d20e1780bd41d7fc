"""Weighted least squares by SVD, with automatic removal of irrelevant terms.

The model is y = Σ β_k f_k(x) (thesis §2.3).  Weighted least squares is
ordinary least squares on whitened rows: every row is divided by its weight
w_i, so one fit path serves both error measures —

* relative error (the default, thesis §2.3.2): w_i = y_i / ȳ, so the fit
  minimizes Σ ((y_i − ŷ_i) / y_i)² up to a constant;
* absolute error: w_i = 1.

Identifiability first: a column that is a linear combination of earlier
columns on the samples (``logP`` beside ``1`` when one rank count was
profiled) is left out by name, and the earlier columns keep its weight
(:func:`unidentifiable`).  The system is then solved by singular value
decomposition: singular values below a relative tolerance are treated as
zero, so nearly dependent columns do not break the fit.

Relevance (thesis §2.2.5, eq. 28–30): each coefficient gets a half-width
h_i = t · sqrt(V · C_i), with t the two-sided Student-t quantile for the
confidence level and n − r degrees of freedom, V the whitened residual
variance and C_i the i-th diagonal element of (AᵀA)⁻¹.  While the term with
the smallest |β_i / h_i| has a ratio of at most 1 its interval includes 0: it
is dropped (coefficient 0) and the rest refitted.

Confidence band: the covariance of the kept coefficients is
Σ = V · (AᵀA)⁻¹ (whitened design A, from the same SVD: V_svd · diag(1/s²) ·
V_svdᵀ, near-zero singular values contributing nothing), so the predicted
mean at a point with term values x has the half-width t · sqrt(xᵀ Σ x) at the
fit's confidence — for a one-term model, |x| · h.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from hlc.errors import UserError

CONSTANT = "1"
# Singular values below this fraction of the largest are treated as zero.
SINGULAR_TOLERANCE = 1e-10
# A unit column within this distance of the span of earlier ones is a combination of them.
ALIAS_TOLERANCE = 1e-9


class FitError(UserError, ValueError):
    """The samples cannot support the requested fit."""


class RankWarning(UserWarning):
    """The design matrix is rank-deficient: some columns are (nearly) dependent."""


@dataclass(frozen=True)
class Fit:
    """The result of :func:`fit`: every statistic of the final model."""

    terms: tuple[str, ...]  # every term offered, the constant first when offered
    coefficients: dict[str, float]  # kept terms only
    half_widths: dict[str, float]  # kept terms only
    dropped: list[str]  # in the order the relevance rule removed them
    relative: bool
    confidence: float
    samples: int
    residuals: np.ndarray = field(repr=False)  # y − ŷ, one per sample
    predicted: np.ndarray = field(repr=False)
    times: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    # Σ = V·(AᵀA)⁻¹ over the kept terms (constant under "1"): kept → kept → covariance
    covariance: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    quantile: float = math.nan  # t: the two-sided Student-t quantile at the confidence, n − r degrees of freedom
    # terms the samples cannot tell from earlier ones: term → the kept terms it equals a combination of
    aliases: dict[str, list[str]] = field(default_factory=dict)

    @property
    def kept(self) -> list[str]:
        """Terms with a coefficient, in the order they were offered."""
        return [t for t in self.terms if t in self.coefficients]

    @property
    def r2(self) -> float:
        """R² = 1 − Σ((y − ŷ)/w)² / Σ((y − ȳ_w)/w)², ȳ_w the mean weighted by 1/w²."""
        inverse = 1.0 / self.weights**2
        mean = float(np.sum(self.times * inverse) / np.sum(inverse))
        total = float(np.sum(((self.times - mean) / self.weights) ** 2))
        if total == 0.0:
            return 1.0
        return 1.0 - float(np.sum((self.residuals / self.weights) ** 2)) / total

    @property
    def mre(self) -> float:
        """Mean relative error: geometric mean of 1 + |(y − ŷ)/y| (1.053 is 5.3%)."""
        return mean_relative_error(self.times, self.predicted)

    @property
    def variance(self) -> float:
        """V = Σ((y − ŷ)/w)² / (n − r), r the number of kept terms."""
        freedom = self.samples - len(self.coefficients)
        return float(np.sum((self.residuals / self.weights) ** 2) / freedom) if freedom > 0 else math.nan

    def coefficient(self, term: str) -> float:
        """β of ``term``; 0.0 for a dropped term."""
        if term not in self.terms:
            raise KeyError(f"'{term}' is not a term of this fit; terms: {', '.join(self.terms)}")
        return self.coefficients.get(term, 0.0)

    def predict(self, terms: Mapping[str, ArrayLike]) -> np.ndarray:
        """ŷ for new values of the (kept, non-constant) terms."""
        length = _length(terms)
        total = np.zeros(length)
        for term, beta in self.coefficients.items():
            total = total + beta * (1.0 if term == CONSTANT else np.asarray(terms[term], dtype=float))
        return total

    def band(self, terms: Mapping[str, ArrayLike]) -> np.ndarray:
        """Half-width t · sqrt(xᵀ Σ x) of the confidence band of ŷ at new values
        of the (kept, non-constant) terms, given as to :meth:`predict`."""
        return confidence_band(self.covariance, self.quantile, terms)

    def mre_on(self, terms: Mapping[str, ArrayLike], times: ArrayLike) -> float:
        """MRE of this model on other samples (verification, thesis §3.6.3)."""
        return mean_relative_error(np.asarray(times, dtype=float), self.predict(terms))

    def summary(self) -> str:
        """The model as a table: coefficients with half-widths, and the fit statistics."""
        lines = [f"{'term':<28} {'coefficient':>14} {'± half-width':>14}"]
        for term in self.kept:
            lines.append(f"{term:<28} {self.coefficients[term]:>14.6g} {self.half_widths[term]:>14.3g}")
        if self.dropped:
            lines.append("dropped as irrelevant: " + ", ".join(self.dropped))
        for term, others in self.aliases.items():
            lines.append(f"left out: {aliased_text(term, others)}")
        kind = "relative" if self.relative else "absolute"
        lines.append(f"{self.samples} samples, {kind} error, {self.confidence:.0%} confidence: "
                     f"R² = {self.r2:.4f}, MRE = {self.mre:.4f}")
        return "\n".join(lines)


def aliased_text(term: str, others: list[str]) -> str:
    """Why a term was left out: "the samples cannot tell logP from 1: 1 carries its weight"."""
    if len(others) == 1:
        return f"the samples cannot tell {term} from {others[0]}: {others[0]} carries its weight"
    return (f"the samples cannot tell {term} from a combination of {', '.join(others[:-1])} and {others[-1]}: "
            f"they carry its weight")


def unidentifiable(design: np.ndarray, names: list[str]) -> dict[str, list[str]]:
    """The columns that are a linear combination of earlier ones on these
    samples, each with the earlier columns it combines (in offered order).

    The samples cannot tell such a column from that combination — ``logP``
    from ``1`` when one rank count was profiled, ``n * logP`` from ``n`` — so
    its weight is not the samples' to give: the earlier, simpler column
    keeps it and the later one is left out, by name, rather than both
    sharing it as a minimum-norm solution would."""
    scale = np.linalg.norm(design, axis=0)
    normal = design / np.where(scale > 0, scale, 1.0)
    kept: list[int] = []
    aliases: dict[str, list[str]] = {}
    for j in range(design.shape[1]):
        if scale[j] == 0:
            continue  # a column of zeros: the relevance rule drops it
        if kept:
            basis = normal[:, kept]
            coefficients, *_ = np.linalg.lstsq(basis, normal[:, j], rcond=None)
            residual = normal[:, j] - basis @ coefficients
            if np.linalg.norm(residual) <= ALIAS_TOLERANCE:
                used = [names[kept[i]] for i in np.flatnonzero(np.abs(coefficients) > 1e-6)]
                aliases[names[j]] = used or [names[kept[0]]]
                continue
        kept.append(j)
    return aliases


def mean_relative_error(times: np.ndarray, predicted: np.ndarray) -> float:
    """Geometric mean of 1 + |(y − ŷ)/y| (thesis eq. 9–10)."""
    times = np.asarray(times, dtype=float)
    if times.size == 0:
        return math.nan
    ratios = 1.0 + np.abs((times - np.asarray(predicted, dtype=float)) / times)
    return float(np.exp(np.mean(np.log(ratios))))


def confidence_band(covariance: Mapping[str, Mapping[str, float]], quantile: float,
                    terms: Mapping[str, ArrayLike]) -> np.ndarray:
    """t · sqrt(xᵀ Σ x) at each point: ``covariance`` is Σ over the kept terms
    (constant "1", whose value is 1), ``terms`` the other kept terms' values."""
    kept = list(covariance)
    length = _length(terms)
    x = np.column_stack([np.ones(length) if term == CONSTANT
                         else np.broadcast_to(np.asarray(terms[term], dtype=float), (length,))
                         for term in kept]) if kept else np.zeros((length, 0))
    sigma = np.array([[covariance[a][b] for b in kept] for a in kept], dtype=float).reshape(len(kept), len(kept))
    variance = np.einsum("ij,jk,ik->i", x, sigma, x)
    return quantile * np.sqrt(np.maximum(variance, 0.0))


def _length(terms: Mapping[str, ArrayLike]) -> int:
    lengths = {np.asarray(values).shape[0] for values in terms.values() if np.ndim(values) > 0}
    if len(lengths) > 1:
        raise ValueError(f"terms have different numbers of samples: {sorted(lengths)}")
    return lengths.pop() if lengths else 1


def _solve(matrix: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Least squares by SVD: coefficients, the covariance factor
    (AᵀA)⁺ = V_svd · diag(1/s²) · V_svdᵀ, and whether the matrix was rank-deficient."""
    u, singular, vt = np.linalg.svd(matrix, full_matrices=False)
    keep = singular > SINGULAR_TOLERANCE * (singular[0] if singular.size else 0.0)
    inverse = np.where(keep, 1.0 / np.where(keep, singular, 1.0), 0.0)
    beta = vt.T @ (inverse * (u.T @ target))
    scaled = vt.T * inverse
    return beta, scaled @ scaled.T, not bool(np.all(keep))


def t_quantile(confidence: float, freedom: int) -> float:
    """The two-sided Student-t quantile of a ``confidence`` band at
    ``freedom`` degrees of freedom: the inverse of the t distribution
    function, from scipy.special (what scipy.stats's ``t.ppf`` calls).
    Imported here, not with the module: loading a built library imports
    this one (for its predictions), and needs no SciPy to predict; and not
    from scipy.stats, whose import took 0.4-0.9 s of every build's fit."""
    from scipy.special import stdtrit

    return float(stdtrit(freedom, 1.0 - (1.0 - confidence) / 2.0))


def fit(terms: Mapping[str, ArrayLike], times: ArrayLike, *, relative: bool = True,
        confidence: float = 0.95, constant: bool = True, prune: bool = True) -> Fit:
    """Fit ``times`` as a linear combination of ``terms`` (name → values per sample).

    The constant term, named ``"1"``, is offered unless ``constant`` is false.
    Terms whose coefficient is not significantly different from zero at the
    given ``confidence`` are removed one at a time, least relevant first
    (unless ``prune`` is false: then every term is kept).
    """
    y = np.asarray(times, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"times must be one-dimensional, not of shape {y.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if not np.all(np.isfinite(y)):
        raise FitError("times contain infinite or missing values")
    if relative and np.any(y <= 0):
        raise FitError("a relative-error fit needs positive times")
    names = ([CONSTANT] if constant else []) + [t for t in terms if t != CONSTANT]
    if not names:
        raise FitError("no terms to fit")
    columns = []
    for name in names:
        column = np.ones_like(y) if name == CONSTANT else np.asarray(terms[name], dtype=float)
        if column.shape != y.shape:
            raise ValueError(f"term '{name}' has {column.shape[0] if column.ndim else 1} values, "
                             f"times have {y.shape[0]}")
        if not np.all(np.isfinite(column)):
            raise FitError(f"term '{name}' has infinite or missing values")
        columns.append(column)
    if y.size <= len(names):
        raise FitError(f"{y.size} samples cannot fit {len(names)} terms: "
                       f"at least {len(names) + 1} are needed")
    weights = y / y.mean() if relative else np.ones_like(y)
    design = np.column_stack(columns) / weights[:, None]
    target = y / weights

    aliases = unidentifiable(design, names)
    active = [i for i, name in enumerate(names) if name not in aliases]
    dropped: list[str] = []
    rank_deficient = False
    if prune:
        # A column of zeros carries nothing; left in, rounding in the SVD can
        # give it a tiny coefficient with a tinier half-width, and keep it.
        empty = [i for i in active if not design[:, i].any()][:len(active) - 1]
        dropped += [names[i] for i in empty]
        active = [i for i in active if i not in empty]
        rank_deficient = bool(empty)
    while True:
        beta, factor, deficient = _solve(design[:, active], target)
        rank_deficient |= deficient
        residuals = y - (np.column_stack(columns)[:, active] @ beta)
        freedom = y.size - len(active)
        variance = float(np.sum((residuals / weights) ** 2) / freedom)
        quantile = t_quantile(confidence, freedom)
        half = quantile * np.sqrt(variance * np.diag(factor))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(half > 0, np.abs(beta) / half, np.where(beta != 0, np.inf, 0.0))
        weakest = int(np.argmin(ratio))
        if not prune or ratio[weakest] > 1.0 or len(active) == 1:
            break
        dropped.append(names[active[weakest]])
        del active[weakest]
    if rank_deficient:
        warnings.warn("the terms are linearly dependent (duplicate or zero columns); "
                      "dependent terms share their weight", RankWarning, stacklevel=2)
    kept = [names[i] for i in active]
    return Fit(
        terms=tuple(names),
        coefficients={name: float(b) for name, b in zip(kept, beta, strict=True)},
        half_widths={name: float(h) for name, h in zip(kept, half, strict=True)},
        dropped=dropped, relative=relative, confidence=confidence, samples=int(y.size),
        residuals=residuals, predicted=y - residuals, times=y, weights=weights,
        covariance={a: {b: float(variance * factor[i, j]) for j, b in enumerate(kept)} for i, a in enumerate(kept)},
        quantile=quantile, aliases=aliases,
    )
