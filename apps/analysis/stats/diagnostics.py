"""Study diagnostics: sample-size and agreement warnings, background-group coverage, position
bias in A/B pairs and fatigue drift within a session.

Intervals here are percentile bootstraps that resample *clusters* (normally raters) when
``clusters`` is given: one rater's judgments are not independent of each other (a harsh rater
is harsh on every item), so resampling single rows would make the intervals too narrow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import numpy as np
import numpy.typing as npt
from scipy.special import stdtr

from apps.analysis.stats.bootstrap import (
    Interval,
    bootstrap_weighted_statistic,
    grouped_mean_ci,
    proportion_ci,
)

FloatArray = npt.NDArray[np.float64]


class StudyWarning(TypedDict):
    """A warning as stored with the results and shown on the dashboard.

    ``code`` and ``params`` are what the pages and the report render in the reader's language;
    ``message`` is the same sentence in English for scripts that read the JSON.
    """

    code: str
    subject: str
    params: dict[str, str | float | int]
    message: str
    value: float
    threshold: float


# --------------------------------------------------------------------------------------------
# warnings


def sample_size_warnings(
    items_per_model: Mapping[str, int],
    raters_per_item: Mapping[str, int],
    *,
    min_items_per_model: int = 30,
    min_raters_per_item: int = 15,
) -> list[StudyWarning]:
    """Warnings for models with fewer than ``min_items_per_model`` items and items with fewer
    than ``min_raters_per_item`` raters (the method's minimums: 30 and 15).

    Each warning: {"code": "too_few_items" | "too_few_raters", "subject": model or item,
    "message", "value": the count, "threshold"}; models first, then items, in the order given.
    """
    out: list[StudyWarning] = []
    for model, n in items_per_model.items():
        if n < min_items_per_model:
            out.append(
                StudyWarning(
                    code="too_few_items",
                    subject=str(model),
                    params={"model": str(model), "n": n, "min": min_items_per_model},
                    message=(
                        f"{model} has {n} rated item{'s' if n != 1 else ''}; at least "
                        f"{min_items_per_model} are needed before its scores can be compared."
                    ),
                    value=n,
                    threshold=min_items_per_model,
                )
            )
    for item, n in raters_per_item.items():
        if n < min_raters_per_item:
            out.append(
                StudyWarning(
                    code="too_few_raters",
                    subject=str(item),
                    params={"item": str(item), "n": n, "min": min_raters_per_item},
                    message=(
                        f"Item {item} has {n} rater{'s' if n != 1 else ''}; at least "
                        f"{min_raters_per_item} are needed for a stable mean and agreement."
                    ),
                    value=n,
                    threshold=min_raters_per_item,
                )
            )
    return out


def agreement_flags(
    *,
    kappa: Mapping[str, float] | None = None,
    cross_group: Mapping[str, float] | None = None,
    kappa_threshold: float = 0.4,
    cross_group_threshold: float = 0.3,
) -> list[StudyWarning]:
    """Flags from agreement statistics, in the same shape as :func:`sample_size_warnings`.

    - ``kappa`` maps a subject (a question, an item set, or an item's per-item agreement) to its
      kappa/alpha: below ``kappa_threshold`` (0.4) it is "controversial", too controversial to
      rank on.
    - ``cross_group`` maps an item to its cross-group agreement: below ``cross_group_threshold``
      (0.3) it is "culture_dependent": raters of different backgrounds disagree, so the item says
      more about the audience than about the model.

    nan values (too little data to compute) raise no flag: the sample-size warnings cover them.
    """
    out: list[StudyWarning] = []
    for subject, value in (kappa or {}).items():
        if np.isfinite(value) and value < kappa_threshold:
            out.append(
                StudyWarning(
                    code="controversial",
                    subject=str(subject),
                    params={
                        "subject": str(subject),
                        "value": float(value),
                        "threshold": kappa_threshold,
                    },
                    message=(
                        f"{subject}: agreement {value:.2f} is below {kappa_threshold:g}; "
                        "too controversial to rank on."
                    ),
                    value=float(value),
                    threshold=kappa_threshold,
                )
            )
    for subject, value in (cross_group or {}).items():
        if np.isfinite(value) and value < cross_group_threshold:
            out.append(
                StudyWarning(
                    code="culture_dependent",
                    subject=str(subject),
                    params={
                        "subject": str(subject),
                        "value": float(value),
                        "threshold": cross_group_threshold,
                    },
                    message=(
                        f"{subject}: agreement across background groups {value:.2f} is below "
                        f"{cross_group_threshold:g}; the reaction depends on the audience, "
                        "not evidence about the model."
                    ),
                    value=float(value),
                    threshold=cross_group_threshold,
                )
            )
    return out


def group_coverage(
    item: np.ndarray, rater_group_of_row: np.ndarray, n_items: int, n_groups: int
) -> npt.NDArray[np.int64]:
    """(n_items, n_groups) number of ratings of each item by raters of each background group."""
    item_a = np.asarray(item, dtype=np.int64)
    group_a = np.asarray(rater_group_of_row, dtype=np.int64)
    if item_a.shape != group_a.shape or item_a.ndim != 1:
        raise ValueError("item and rater_group_of_row must be 1-D arrays of the same length")
    if item_a.size and (item_a.min() < 0 or item_a.max() >= n_items):
        raise ValueError(f"item indices must lie in [0, {n_items})")
    if group_a.size and (group_a.min() < 0 or group_a.max() >= n_groups):
        raise ValueError(f"group indices must lie in [0, {n_groups})")
    counts = np.bincount(item_a * n_groups + group_a, minlength=n_items * n_groups)
    return counts.reshape(n_items, n_groups).astype(np.int64)


# --------------------------------------------------------------------------------------------
# clusters


def _cluster_codes(clusters: np.ndarray | None, n: int) -> tuple[npt.NDArray[np.int64], int]:
    if clusters is None:
        return np.arange(n, dtype=np.int64), n
    c = np.asarray(clusters)
    if c.shape != (n,):
        raise ValueError("clusters must have one entry per row")
    _, codes = np.unique(c, return_inverse=True)
    codes = codes.astype(np.int64)
    return codes, int(codes.max()) + 1 if n else 0


# --------------------------------------------------------------------------------------------
# position bias


def position_bias(
    left_chosen: np.ndarray,
    *,
    clusters: np.ndarray | None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
) -> Interval:
    """Share of A/B judgments won by the item shown on the left, with a bootstrap interval
    (rater-clustered when ``clusters`` is given; ``bootstrap.proportion_ci``). 0.5 means no
    position bias; the test is :func:`position_bias_p_value`.
    """
    left = np.asarray(left_chosen, dtype=np.float64)
    return proportion_ci(left, clusters=clusters, rounds=rounds, seed=seed, level=level)


def position_bias_p_value(left_chosen: np.ndarray, *, clusters: np.ndarray | None) -> float:
    """Two-sided p-value for H0: the left item is chosen with probability 0.5.

    Without clusters: the exact binomial test on k left choices out of N. With clusters (raters):
    a cluster-robust score test, because a rater who always clicks left makes rows dependent::

        p_hat = sum_g S_g / N,   e_g = S_g - N_g / 2   (residuals under H0)
        se = sqrt(G / (G - 1) * sum_g e_g^2) / N,   t = (p_hat - 1/2) / se,   t ~ t(G - 1)

    nan with no judgments (or fewer than 2 clusters).
    """
    left = np.asarray(left_chosen, dtype=np.float64)
    keep = ~np.isnan(left)
    n = int(keep.sum())
    if n == 0:
        return float("nan")
    if clusters is None:
        k = int(left[keep].sum())
        # Imported here: scipy.stats costs about half a second to import, and the aggregation
        # only ever asks for the clustered test below.
        from scipy.stats import binomtest

        return float(binomtest(k, n, 0.5).pvalue)
    codes, _ = _cluster_codes(clusters, len(left))
    _, codes = np.unique(codes[keep], return_inverse=True)
    g = int(codes.max()) + 1
    if g < 2:
        return float("nan")
    s_g = np.bincount(codes, weights=left[keep], minlength=g)
    n_g = np.bincount(codes, minlength=g).astype(np.float64)
    resid = s_g - 0.5 * n_g
    se = float(np.sqrt(g / (g - 1) * float(resid @ resid))) / n
    diff = float(s_g.sum()) / n - 0.5
    if se == 0:
        return 1.0 if diff == 0 else 0.0
    # scipy.stats.t.sf(x, df) is stdtr(df, -x).
    return float(2.0 * stdtr(g - 1, -abs(diff / se)))


# --------------------------------------------------------------------------------------------
# fatigue


def _none_if_nan(x: float) -> float | None:
    # Stored as JSON, where nan is not a value (same convention as Interval.as_dict).
    return None if np.isnan(x) else float(x)


def _ols_slope(totals: np.ndarray) -> float:
    """OLS slope from weighted totals (N, sum x, sum y, sum x^2, sum xy) of centred data."""
    big_n, sx, sy, sxx, sxy = (float(t) for t in totals)
    if big_n == 0:
        return float("nan")
    mx, my = sx / big_n, sy / big_n
    var_x = sxx / big_n - mx * mx
    # A resample whose minutes are (numerically) all equal has no slope.
    if var_x <= 1e-12 * max(1.0, sxx / big_n):
        return float("nan")
    return (sxy / big_n - mx * my) / var_x


def fatigue(
    minutes_into_session: np.ndarray,
    values: np.ndarray,
    *,
    clusters: np.ndarray | None,
    rounds: int = 1000,
    seed: int,
    bin_minutes: float = 1.0,
    level: float = 0.95,
) -> dict[str, object]:
    """Score drift over a session: mean score per time bin and the linear trend.

    - ``bins``: for each bin [k * bin_minutes, (k + 1) * bin_minutes) holding judgments, its
      ``start``, ``end``, ``n``, ``mean`` and bootstrap ``ci_low``/``ci_high``.
    - ``slope``: the OLS slope of score on minutes, b = sum (x - x_bar)(y - y_bar) /
      sum (x - x_bar)^2, in score points per minute (negative: scores drift down as the session
      wears on), with a bootstrap interval.

    Both bootstraps resample clusters (raters) when given. Rows with nan minutes or nan values
    are ignored.
    """
    if not bin_minutes > 0:
        raise ValueError("bin_minutes must be positive")
    x = np.asarray(minutes_into_session, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError("minutes_into_session and values must be 1-D arrays of the same length")
    codes, _ = _cluster_codes(clusters, len(x))
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y, codes = x[keep], y[keep], codes[keep]
    if x.size and x.min() < 0:
        raise ValueError("minutes_into_session must not be negative")
    n = len(x)

    bins: list[dict[str, float | int | None]] = []
    if n:
        bin_index = np.floor(x / bin_minutes).astype(np.int64)
        mean, ci_low, ci_high, count = grouped_mean_ci(
            y,
            bin_index,
            int(bin_index.max()) + 1,
            clusters=None if clusters is None else codes,
            rounds=rounds,
            seed=seed,
            level=level,
        )
        for k in np.flatnonzero(count):
            bins.append(
                {
                    "start": float(k * bin_minutes),
                    "end": float((k + 1) * bin_minutes),
                    "n": int(count[k]),
                    "mean": float(mean[k]),
                    "ci_low": _none_if_nan(ci_low[k]),
                    "ci_high": _none_if_nan(ci_high[k]),
                }
            )

    slope_estimate = low = high = float("nan")
    if n >= 2:
        # Centre first: the slope is shift-invariant and the per-cluster cross-products then do
        # not cancel catastrophically.
        xc, yc = x - x.mean(), y - y.mean()
        _, cl = np.unique(codes, return_inverse=True)
        g = int(cl.max()) + 1
        # Per-cluster sufficient statistics: every resample's slope is one (5 x G) @ (G,) product.
        per_cluster = np.vstack(
            [
                np.bincount(cl, weights=wts, minlength=g)
                for wts in (np.ones(n), xc, yc, xc * xc, xc * yc)
            ]
        )
        slope_estimate = _ols_slope(per_cluster.sum(axis=1))
        if np.isfinite(slope_estimate):

            def statistic(w: np.ndarray) -> np.ndarray:
                # Every round of the batch: (r, G) weights -> (5, r) totals -> r slopes.
                return np.array([_ols_slope(totals) for totals in (per_cluster @ w.T).T])

            low, high = bootstrap_weighted_statistic(
                statistic, g, rounds=rounds, seed=seed, level=level
            )
    return {
        "bin_minutes": bin_minutes,
        "n": n,
        "bins": bins,
        "slope": Interval(slope_estimate, low, high, n).as_dict(),
        "rounds": rounds,
        "seed": seed,
        "level": level,
    }


__all__ = [
    "StudyWarning",
    "agreement_flags",
    "fatigue",
    "group_coverage",
    "position_bias",
    "position_bias_p_value",
    "sample_size_warnings",
]
