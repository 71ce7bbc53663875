"""Weights of the content composite per content type, fitted from human ratings. Pure: numpy and
scipy only.

The composite of an article is ``w_f·fluency + w_i·informativeness + w_o·originality`` with the
weights of its content type summing to 1, so it stays on the scale of its inputs (1..5 for
human means, 0..1 for the L1 metric dimensions).

Defaults, used until a content type has enough ratings to fit (and kept when a fit fails):

* news 0.4 / 0.4 / 0.2 — a news piece is judged first on being readable and on carrying facts;
  a novel angle matters less than getting the story across.
* analysis 0.25 / 0.5 / 0.25 — analysis exists to inform: the reader wants explanation and
  evidence, with clarity and a fresh view as secondary virtues.
* creative 0.2 / 0.2 / 0.6 — creative writing is valued for being original; fluency and
  information are the floor, not the point.
* items without a content type get equal weights: there is nothing to prefer one dimension by.

The fit
-------
Outcome: "rated good", one row per scorecard (binomial counts per item collapse to the same
likelihood; rows keep each rater's verdict visible to the cross-validation). The service
decides what "good" means and documents it; this module only needs 0/1 outcomes.

Regressors: per-item human means of the three dimensions on the rubric's own 1..5 scale, not
standardised. All three share one scale, so a slope is "log-odds of good per scale point" and
slopes compare directly. The model is ``logit P(good) = a + b_f·f + b_i·i + b_o·o``, fitted by
maximum likelihood with Newton–Raphson (the log-likelihood is concave, so Newton with step
halving converges in a few iterations whenever the maximum exists).

Why normalised slopes are weights: the fitted log-odds rank items by ``b·x``; dividing by
``sum(b)`` (> 0) changes neither the ranking nor the relative importance of a scale point on
each dimension, and gives a weighted mean on the 1..5 scale, which is the composite. A negative
slope (a dimension that lowers the chance of "good" once the others are held fixed, usually
collinearity) cannot be a weight of a mean: it is clipped to 0 and a warning is recorded.

Quality, stored with the weights: log-likelihood, the null (intercept-only) log-likelihood,
McFadden's pseudo-R² = 1 − LL/LL0, k-fold cross-validated accuracy and AUC with folds drawn by
item (rows of one item share their regressors; splitting them across folds would leak) from an
explicit seed, and the counts.

Fallback to the defaults, with the reason, when a content type has fewer than MIN_ITEMS items,
when every row has the same outcome (nothing to regress), when the maximum likelihood does not
exist (perfect separation: slopes run off to infinity) or when no slope is positive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import expit, log_expit
from scipy.stats import rankdata

DIMENSIONS: tuple[str, str, str] = ("fluency", "informativeness", "originality")

DEFAULT_WEIGHTS: dict[str, tuple[float, float, float]] = {
    "news": (0.4, 0.4, 0.2),
    "analysis": (0.25, 0.5, 0.25),
    "creative": (0.2, 0.2, 0.6),
    # Items without a content type.
    "": (1 / 3, 1 / 3, 1 / 3),
}

# Below this many items a content type keeps its defaults: three slopes and an intercept from
# fewer items are noise.
MIN_ITEMS = 10
CV_FOLDS = 5
# A fitted |slope| above this (log-odds per scale point) means the likelihood kept rising
# along a direction: the classes are (nearly) separated and the estimate is not finite.
SEPARATION_SLOPE = 30.0
METHOD = "logistic-ml"

FloatArray = npt.NDArray[np.float64]


def default_weights(content_type: str) -> tuple[float, float, float]:
    return DEFAULT_WEIGHTS.get(content_type, DEFAULT_WEIGHTS[""])


@dataclass(frozen=True)
class LogitFit:
    params: FloatArray  # intercept first, then one slope per column
    std_errors: FloatArray
    log_likelihood: float
    null_log_likelihood: float
    converged: bool
    iterations: int

    @property
    def pseudo_r2(self) -> float:
        if self.null_log_likelihood == 0:
            return float("nan")
        return 1.0 - self.log_likelihood / self.null_log_likelihood


@dataclass(frozen=True)
class WeightsFit:
    content_type: str
    weights: tuple[float, float, float]
    is_default: bool
    method: str
    n_items: int
    quality: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "content_type": self.content_type,
            "weights": dict(zip(DIMENSIONS, self.weights, strict=True)),
            "is_default": self.is_default,
            "method": self.method,
            "n_items": self.n_items,
            "quality": self.quality,
        }


def _log_likelihood(design: FloatArray, y: FloatArray, beta: FloatArray) -> float:
    eta = design @ beta
    return float(np.sum(y * log_expit(eta) + (1.0 - y) * log_expit(-eta)))


def logit_fit(x: FloatArray, y: FloatArray, *, max_iter: int = 100, tol: float = 1e-10) -> LogitFit:
    """Maximum-likelihood logistic regression with an intercept (Newton–Raphson, step halving).

    ``x`` is (n, k), ``y`` 0/1 of length n. ``converged`` is False when the iterations ran out
    (as happens under separation); the caller decides what to do with such a fit.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.size:
        raise ValueError("x must be (n, k) and y must have n entries")
    if np.any((y != 0) & (y != 1)):
        raise ValueError("y must be 0/1")
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite")
    design = np.column_stack([np.ones(y.size), x])
    beta = np.zeros(design.shape[1])
    ll = _log_likelihood(design, y, beta)
    converged = False
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        p = expit(design @ beta)
        gradient = design.T @ (y - p)
        hessian = (design * (p * (1.0 - p))[:, None]).T @ design
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        scale = 1.0
        while True:
            candidate = beta + scale * step
            new_ll = _log_likelihood(design, y, candidate)
            if new_ll >= ll - 1e-12 or scale < 1e-8:
                break
            scale /= 2.0
        beta, previous, ll = candidate, ll, new_ll
        if abs(ll - previous) < tol and float(np.max(np.abs(scale * step))) < 1e-6:
            converged = True
            break
    p = expit(design @ beta)
    hessian = (design * (p * (1.0 - p))[:, None]).T @ design
    try:
        std_errors = np.sqrt(np.clip(np.diag(np.linalg.inv(hessian)), 0.0, None))
    except np.linalg.LinAlgError:
        std_errors = np.full(beta.size, np.nan)
    share = float(y.mean())
    if 0.0 < share < 1.0:
        null_ll = float(y.size * (share * np.log(share) + (1 - share) * np.log(1 - share)))
    else:
        null_ll = 0.0
    return LogitFit(
        params=beta,
        std_errors=std_errors,
        log_likelihood=ll,
        null_log_likelihood=null_ll,
        converged=converged,
        iterations=iterations,
    )


def auc(scores: FloatArray, y: FloatArray) -> float:
    """Area under the ROC curve (Mann–Whitney form, ties counted half); nan without both classes."""
    scores = np.asarray(scores, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    positives = int(y.sum())
    negatives = int(y.size - positives)
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[y == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def cross_validate(
    x: FloatArray, y: FloatArray, groups: npt.NDArray[Any], *, folds: int, seed: int
) -> dict[str, float | int | None]:
    """k-fold cross-validated accuracy (threshold 0.5) and AUC, folds drawn over groups (items).

    Out-of-fold predictions are pooled and scored once; a fold whose training rows have a single
    outcome predicts that outcome's share.
    """
    unique = np.unique(groups)
    k = min(folds, unique.size)
    if k < 2:
        return {"cv_accuracy": None, "cv_auc": None, "cv_folds": 0}
    rng = np.random.default_rng(seed)
    fold_of_group = dict(zip(unique.tolist(), rng.permutation(unique.size) % k, strict=True))
    fold = np.array([fold_of_group[g] for g in groups.tolist()])
    predicted = np.empty(y.size)
    for f in range(k):
        test = fold == f
        train = ~test
        share = float(y[train].mean())
        if share in (0.0, 1.0):
            predicted[test] = share
            continue
        fit = logit_fit(x[train], y[train])
        predicted[test] = expit(np.column_stack([np.ones(int(test.sum())), x[test]]) @ fit.params)
    accuracy = float(np.mean((predicted >= 0.5) == (y == 1)))
    area = auc(predicted, y)
    return {
        "cv_accuracy": accuracy,
        "cv_auc": None if np.isnan(area) else area,
        "cv_folds": int(k),
    }


def _fallback(
    content_type: str, n_items: int, reason: str, quality: dict[str, Any] | None = None
) -> WeightsFit:
    return WeightsFit(
        content_type=content_type,
        weights=default_weights(content_type),
        is_default=True,
        method="default",
        n_items=n_items,
        quality={**(quality or {}), "reason": reason},
    )


def fit_weights(
    *,
    content_type: str,
    x: FloatArray | Sequence[Sequence[float]],
    y: FloatArray | Sequence[float],
    items: npt.NDArray[Any] | Sequence[Any],
    seed: int,
    folds: int = CV_FOLDS,
    min_items: int = MIN_ITEMS,
) -> WeightsFit:
    """Weights for one content type from rows (one per scorecard): ``x`` (n, 3) the item's
    human means of fluency, informativeness and originality, ``y`` whether the scorecard rated
    the item good, ``items`` the item of each row (for counting and for the folds)."""
    x_arr = np.asarray(x, dtype=np.float64).reshape(-1, len(DIMENSIONS))
    y_arr = np.asarray(y, dtype=np.float64)
    groups = np.asarray(items)
    if not (x_arr.shape[0] == y_arr.size == groups.size):
        raise ValueError("x, y and items must have one entry per row")
    n_items = int(np.unique(groups).size)
    counts = {"n_rows": int(y_arr.size), "n_good": int(y_arr.sum())}
    if n_items < min_items:
        return _fallback(
            content_type,
            n_items,
            f"{n_items} rated items; at least {min_items} are needed to fit",
            counts,
        )
    if y_arr.min() == y_arr.max():
        return _fallback(content_type, n_items, "every scorecard has the same verdict", counts)
    fit = logit_fit(x_arr, y_arr)
    slopes = fit.params[1:]
    quality: dict[str, Any] = {
        **counts,
        "intercept": float(fit.params[0]),
        "slopes": dict(zip(DIMENSIONS, slopes.tolist(), strict=True)),
        "std_errors": dict(zip(DIMENSIONS, fit.std_errors[1:].tolist(), strict=True)),
        "log_likelihood": fit.log_likelihood,
        "null_log_likelihood": fit.null_log_likelihood,
        "pseudo_r2": fit.pseudo_r2,
        "iterations": fit.iterations,
        "warnings": [],
    }
    if not fit.converged or float(np.max(np.abs(slopes))) > SEPARATION_SLOPE:
        return _fallback(
            content_type,
            n_items,
            "the verdicts are perfectly separated by the scores; the fit has no finite maximum",
            quality,
        )
    negative = [name for name, b in zip(DIMENSIONS, slopes, strict=True) if b < 0]
    clipped = np.clip(slopes, 0.0, None)
    if clipped.sum() <= 0:
        return _fallback(content_type, n_items, "no dimension raises the chance of good", quality)
    for name in negative:
        quality["warnings"].append(f"negative slope for {name} clipped to 0")
    quality.update(cross_validate(x_arr, y_arr, groups, folds=folds, seed=seed))
    weights = clipped / clipped.sum()
    return WeightsFit(
        content_type=content_type,
        weights=(float(weights[0]), float(weights[1]), float(weights[2])),
        is_default=False,
        method=METHOD,
        n_items=n_items,
        quality=quality,
    )


def composite(
    scores: Mapping[str, float | None], weights: Sequence[float] | Mapping[str, float]
) -> float | None:
    """Σ weight·dimension; None when a dimension is missing."""
    if isinstance(weights, Mapping):
        w = [float(weights[name]) for name in DIMENSIONS]
    else:
        w = [float(v) for v in weights]
    total = 0.0
    for name, weight in zip(DIMENSIONS, w, strict=True):
        value = scores.get(name)
        if value is None or not np.isfinite(value):
            return None
        total += weight * float(value)
    return total
