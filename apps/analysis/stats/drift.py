"""Drift within a session, each rater compared with themselves: the method's fatigue test.

The pooled slope of score on minutes (`diagnostics.fatigue`) mixes two things: drift within a
session, and differences between raters who reach late minutes and those who do not (slow
raters who are also harsh make a pooled slope that no session has). Here every rater is their
own baseline (rater fixed effects: minutes and scores centred within each rater), so only the
change within sessions is left:

    b = sum_i x~_i y~_i / sum_i x~_i^2,   x~ = x - mean of the rater's x, y~ likewise.

Its standard error is cluster-robust by rater (CR1: G/(G-1) times the sandwich of the raters'
score sums), since one rater's answers share their mood and their scale; the fixed effects are
nested in the clusters, so they take no further degrees of freedom (as Stata's xtreg, fe
vce(cluster) does). Raters differ a lot in how much of the clock they cover (a slow rater's
minutes spread far wider), and with such unequal clusters the t test of that standard error
said "drift" in 6-8% of driftless studies at 5% (benchmarks/sim_session_drift.py). The test and
the interval are therefore the wild cluster bootstrap of that t statistic with the null imposed
(Rademacher weights per rater; Cameron, Gelbach and Miller 2008), the interval by inverting the
test: its false-alarm rate measured 4.7-5.2% (20,000 studies a design). The slope and CR1 error
are checked against statsmodels' OLS with rater dummies and clustered covariance in
tests/analysis/stats/test_drift.py.

Two clocks: minutes into the session (the method's "scores drop after 45 minutes") and position,
the scorecard's place among the rater's scorecards in time order (a fast rater's tenth card
comes earlier in minutes than a slow rater's).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The warning's test: the minutes slope at this two-sided level. One test per study, so the
# false-alarm rate is this (measured: benchmarks/sim_session_drift.py).
DRIFT_ALPHA = 0.05
# The method's session lengths: best under 30 minutes, scores drop after 45.
METHOD_BEST_MINUTES = 30
METHOD_DROP_MINUTES = 45


def _t_statistics(sxy: np.ndarray, sxx: np.ndarray, null: float) -> np.ndarray:
    """CR1 t statistics of slope = null, from per-rater sums of x~y (rows: resamples) and x~x."""
    total = float(sxx.sum())
    g = sxx.size
    slope = sxy.sum(axis=-1) / total
    scores = sxy - slope[..., None] * sxx
    variance = g / (g - 1) * np.sum(scores * scores, axis=-1) / total**2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((slope - null) / np.sqrt(variance))


def _wild_p(sxy: np.ndarray, sxx: np.ndarray, null: float, weights: np.ndarray) -> float:
    """The wild cluster bootstrap p-value of slope = null, the null imposed on the residuals."""
    observed = float(_t_statistics(sxy, sxx, null))
    if not np.isfinite(observed):
        return 1.0 if observed != observed else 0.0
    restricted = sxy - null * sxx
    resampled = _t_statistics(weights * restricted + null * sxx, sxx, null)
    resampled = np.where(np.isfinite(resampled), resampled, np.inf)
    return float(np.mean(np.abs(resampled) >= abs(observed) - 1e-12))


def _inverted_bound(
    sxy: np.ndarray,
    sxx: np.ndarray,
    weights: np.ndarray,
    slope: float,
    se: float,
    side: float,
    alpha: float,
) -> float:
    """The end of {b: p(b) >= alpha} on one side of the slope, by bisection."""
    inside, step = slope, max(se, 1e-12)
    outside = slope + side * step
    for _ in range(60):
        if _wild_p(sxy, sxx, outside, weights) < alpha:
            break
        inside, step = outside, step * 2
        outside = slope + side * step
    else:
        return float("nan")
    for _ in range(30):
        middle = (inside + outside) / 2
        if _wild_p(sxy, sxx, middle, weights) < alpha:
            outside = middle
        else:
            inside = middle
    return (inside + outside) / 2


def within_rater_slope(
    x: np.ndarray,
    y: np.ndarray,
    raters: np.ndarray,
    *,
    seed: int,
    rounds: int = 999,
    level: float = 0.95,
    interval: bool = True,
) -> dict[str, float | int | str | None]:
    """The within-rater slope of y on x with its wild-cluster-bootstrap interval and p-value
    (`interval=False`: the p-value only, for simulations of the test).

    Rows with nan x or y are left out. Raters with one answer, or whose x never changes, carry
    no within-rater information and are not counted in ``raters``. ``reason`` says why there is
    no estimate (``too_few_raters``: fewer than 2 raters with variation).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    empty: dict[str, float | int | str | None] = {
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "se": None,
        "p_value": None,
        "n": int(x.size),
        "raters": 0,
        "level": level,
        "rounds": rounds,
        "seed": seed,
        "reason": "too_few_raters",
    }
    if x.size < 3:
        return empty
    _, codes = np.unique(np.asarray(raters)[keep], return_inverse=True)
    g = int(codes.max()) + 1
    count = np.bincount(codes, minlength=g).astype(np.float64)
    xt = x - (np.bincount(codes, weights=x, minlength=g) / count)[codes]
    yt = y - (np.bincount(codes, weights=y, minlength=g) / count)[codes]
    sxx = np.bincount(codes, weights=xt * xt, minlength=g)
    varied = sxx > 1e-12 * max(1.0, float(np.max(np.abs(x))) ** 2)
    clusters = int(varied.sum())
    if clusters < 2:
        return {**empty, "raters": clusters}
    sxx = sxx[varied]
    sxy = np.bincount(codes, weights=xt * yt, minlength=g)[varied]
    slope = float(sxy.sum() / sxx.sum())
    scores = sxy - slope * sxx
    se = float(np.sqrt(clusters / (clusters - 1) * float(scores @ scores))) / float(sxx.sum())
    weights = np.random.default_rng(seed).choice([-1.0, 1.0], size=(rounds, clusters))
    alpha = 1 - level
    return {
        "value": slope,
        "ci_low": _inverted_bound(sxy, sxx, weights, slope, se, -1.0, alpha) if interval else None,
        "ci_high": _inverted_bound(sxy, sxx, weights, slope, se, 1.0, alpha) if interval else None,
        "se": se,
        "p_value": _wild_p(sxy, sxx, 0.0, weights),
        "n": int(x.size),
        "raters": clusters,
        "level": level,
        "rounds": rounds,
        "seed": seed,
        "reason": "",
    }


def positions_in_session(minutes: np.ndarray, raters: np.ndarray) -> np.ndarray:
    """Each answer's place (1, 2, ...) among its rater's answers in time order; nan minutes
    stay nan."""
    minutes = np.asarray(minutes, dtype=np.float64)
    raters = np.asarray(raters)
    out = np.full(minutes.shape, np.nan)
    known = np.flatnonzero(np.isfinite(minutes))
    if not known.size:
        return out
    order = known[np.lexsort((minutes[known], raters[known]))]
    sorted_raters = raters[order]
    starts = np.r_[True, sorted_raters[1:] != sorted_raters[:-1]]
    run_start = np.maximum.accumulate(np.where(starts, np.arange(order.size), 0))
    out[order] = np.arange(order.size) - run_start + 1
    return out


def session_drift(
    minutes: np.ndarray,
    values: np.ndarray,
    raters: np.ndarray,
    levels: Sequence[str] | np.ndarray,
    *,
    seed: int,
    rounds: int = 999,
    level: float = 0.95,
    alpha: float = DRIFT_ALPHA,
) -> dict[str, object]:
    """Within-rater drift by minute and by position, for the study and per item level.

    ``drifts`` is the warning's test: the study's minutes slope excludes 0 at ``alpha``.
    """
    minutes = np.asarray(minutes, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    raters = np.asarray(raters)
    levels = np.asarray(levels, dtype=object)
    positions = positions_in_session(minutes, raters)

    def slope(x: np.ndarray, rows: np.ndarray, seed: int) -> dict[str, float | int | str | None]:
        return within_rater_slope(
            x[rows], values[rows], raters[rows], seed=seed, rounds=rounds, level=level
        )

    every = np.ones(values.shape, dtype=bool)
    by_minute = slope(minutes, every, seed)
    by_position = slope(positions, every, seed + 1)
    per_level = {}
    for k, name in enumerate(sorted({str(v) for v in levels.tolist()})):
        rows = levels == name
        per_level[name] = {
            "per_minute": slope(minutes, rows, seed + 2 * k + 2),
            "per_position": slope(positions, rows, seed + 2 * k + 3),
        }
    p_value = by_minute["p_value"]
    return {
        "model": "rater fixed effects; wild cluster bootstrap by rater (Rademacher, null imposed)",
        "per_minute": by_minute,
        "per_position": by_position,
        "by_level": per_level,
        "alpha": alpha,
        "drifts": isinstance(p_value, float) and p_value < alpha,
        "method_best_minutes": METHOD_BEST_MINUTES,
        "method_drop_minutes": METHOD_DROP_MINUTES,
    }


def drift_warnings(drift: dict[str, object] | None) -> list[dict[str, object]]:
    """The study's warning when late answers differ: the within-rater minutes slope excludes 0
    at the test's level. Its size is given per 10 minutes, with the interval."""
    if not drift or not drift.get("drifts"):
        return []
    slope = drift["per_minute"]
    assert isinstance(slope, dict)
    per_ten = 10 * float(slope["value"])
    low, high = slope["ci_low"], slope["ci_high"]
    params: dict[str, object] = {
        "question": str(drift.get("question") or ""),
        "size": round(per_ten, 3),
        "low": None if low is None else round(10 * float(low), 3),
        "high": None if high is None else round(10 * float(high), 3),
        "p": float(slope["p_value"]),
        "best": METHOD_BEST_MINUTES,
        "drop": METHOD_DROP_MINUTES,
    }
    direction = "down" if per_ten < 0 else "up"
    return [
        {
            "code": "session_drift",
            "scope": "study",
            "subject": str(drift.get("question") or ""),
            "params": params,
            "message": (
                f"Late answers differ: within a session, {params['question']} drifts {direction} "
                f"by {abs(per_ten):.2f} points per 10 minutes (95% interval {params['low']} to "
                f"{params['high']}, each rater compared with themselves). The method keeps "
                f"sessions under {METHOD_BEST_MINUTES} minutes; scores drop after "
                f"{METHOD_DROP_MINUTES}."
            ),
            "value": per_ten,
            "threshold": 0.0,
        }
    ]
