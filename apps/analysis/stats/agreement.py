"""Inter-rater agreement: Cohen's and Fleiss' kappa, Krippendorff's alpha, per-item and cross-group
agreement, with bootstrap intervals over items.

The results document's intervals are for raters in general and come from
``rater_agreement.py`` (a rater jackknife, and Cohen's kappa over pairs of raters); the item
bootstrap here answers "other items, the same raters".

Ratings arrive in "long" form: parallel arrays ``item`` (int), ``rater`` (int) and ``value``
(float), one row per rating. A row whose value is nan is a missing rating and is dropped, exactly
as if it were absent. One rater rates an item at most once (the database enforces it); a repeated
(item, rater) pair is rejected because every coefficient here is defined over pairs of *different*
raters.

Every coefficient returns nan, never raises, when it is undefined for the data (for instance no
item rated twice, or every rating in the study identical: with no variation there is no chance
disagreement to correct against).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import sparse

from apps.analysis.stats.bootstrap import Interval, bootstrap_weighted_statistic
from apps.analysis.stats.keys import distinct_pairs

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

KappaWeights = Literal["linear", "quadratic"]
AlphaLevel = Literal["nominal", "ordinal", "interval"]
PairWeights = Literal["quadratic", "linear", "nominal"]

_KAPPA_WEIGHTS = (None, "linear", "quadratic")
_ALPHA_LEVELS = ("nominal", "ordinal", "interval")
_PAIR_WEIGHTS = ("quadratic", "linear", "nominal")


# --------------------------------------------------------------------------------------------
# input helpers


def _isnan(x: np.ndarray) -> npt.NDArray[np.bool_]:
    if x.dtype.kind == "f":
        return np.isnan(x)
    return np.zeros(x.shape, dtype=bool)


def _codes(x: np.ndarray, categories: np.ndarray, what: str) -> IntArray:
    """Position of each element of ``x`` in ``categories`` (which need not be sorted)."""
    sorter = np.argsort(categories, kind="stable")
    ordered = categories[sorter]
    pos = np.searchsorted(ordered, x)
    pos_clipped = np.minimum(pos, len(ordered) - 1)
    if len(ordered) == 0 or not np.array_equal(ordered[pos_clipped], x):
        bad = x[(pos >= len(ordered)) | (ordered[pos_clipped] != x)]
        raise ValueError(f"{what} outside the given categories: {np.unique(bad)[:5].tolist()}")
    return sorter[pos_clipped].astype(np.int64)


def _long_form(
    item: np.ndarray, rater: np.ndarray | None, value: np.ndarray
) -> tuple[IntArray, IntArray | None, FloatArray]:
    """Validate parallel long-form arrays and drop the missing (nan) ratings."""
    item_a = np.asarray(item)
    value_a = np.asarray(value, dtype=np.float64)
    if item_a.ndim != 1 or value_a.shape != item_a.shape:
        raise ValueError("item and value must be 1-D arrays of the same length")
    if item_a.size and not np.issubdtype(item_a.dtype, np.integer):
        raise ValueError("item must hold integer indices")
    keep = ~np.isnan(value_a)
    rater_out: IntArray | None = None
    if rater is not None:
        rater_a = np.asarray(rater)
        if rater_a.shape != item_a.shape:
            raise ValueError("rater must have the same length as item")
        if rater_a.size and not np.issubdtype(rater_a.dtype, np.integer):
            raise ValueError("rater must hold integer indices")
        rater_out = rater_a[keep].astype(np.int64)
    item_out = item_a[keep].astype(np.int64)
    value_out = value_a[keep]
    if rater_out is not None and item_out.size > 1:
        order = np.lexsort((rater_out, item_out))
        i_s, r_s = item_out[order], rater_out[order]
        dup = (i_s[1:] == i_s[:-1]) & (r_s[1:] == r_s[:-1])
        if dup.any():
            k = int(np.flatnonzero(dup)[0])
            raise ValueError(
                f"rater {int(r_s[k])} rated item {int(i_s[k])} more than once; "
                "agreement needs one rating per rater and item"
            )
    return item_out, rater_out, value_out


def _check_item_range(item: IntArray, n_items: int) -> None:
    if item.size and (item.min() < 0 or item.max() >= n_items):
        raise ValueError(f"item indices must lie in [0, {n_items})")


# --------------------------------------------------------------------------------------------
# Cohen's kappa


@dataclass(frozen=True)
class CohenKappa:
    """Cohen's kappa with its parts: observed and chance agreement and the number of units."""

    kappa: float
    p_o: float
    p_e: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {"kappa": self.kappa, "p_o": self.p_o, "p_e": self.p_e, "n": self.n}


def _kappa_weight_matrix(k: int, weights: str | None) -> FloatArray:
    """Disagreement weights over category positions, scaled so the largest is 1."""
    if weights not in _KAPPA_WEIGHTS:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")
    idx = np.arange(k, dtype=np.float64)
    diff = np.abs(idx[:, None] - idx[None, :])
    if weights is None:
        return (diff > 0).astype(np.float64)
    scale = max(k - 1, 1)
    return diff / scale if weights == "linear" else (diff / scale) ** 2


def cohen_kappa_table(table: np.ndarray, *, weights: str | None = None) -> CohenKappa:
    """Cohen's (weighted) kappa from a k x k contingency table (rows: rater A, columns: rater B).

    With O the table of observed proportions, E = outer(row marginals, column marginals) the
    proportions expected if the raters were independent, and w_ij a disagreement weight (0 on the
    diagonal; 1 off it for plain kappa, |i-j|/(k-1) linear, ((i-j)/(k-1))^2 quadratic)::

        p_o = 1 - sum_ij w_ij O_ij        p_e = 1 - sum_ij w_ij E_ij
        kappa = (p_o - p_e) / (1 - p_e) = 1 - sum(w O) / sum(w E)

    Weights are over category *positions*, so the categories are taken as equally spaced (the
    convention of Cohen 1968 and of scikit-learn). nan when p_e = 1 (no variation at all).
    """
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError("table must be a square k x k array")
    if (t < 0).any():
        raise ValueError("table counts must be non-negative")
    total = float(t.sum())
    if total == 0:
        return CohenKappa(kappa=float("nan"), p_o=float("nan"), p_e=float("nan"), n=0)
    w = _kappa_weight_matrix(t.shape[0], weights)
    observed = t / total
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    d_o = float((w * observed).sum())
    d_e = float((w * expected).sum())
    kappa = 1.0 - d_o / d_e if d_e > 0 else float("nan")
    return CohenKappa(kappa=kappa, p_o=1.0 - d_o, p_e=1.0 - d_e, n=round(total))


def cohen_kappa(
    a: np.ndarray,
    b: np.ndarray,
    *,
    weights: str | None = None,
    categories: np.ndarray | None = None,
) -> float:
    """Cohen's kappa between two raters; ``a[i]`` and ``b[i]`` rate the same unit i.

    See :func:`cohen_kappa_table` for the formula. ``weights``: None, "linear" or "quadratic".
    ``categories`` fixes the category order (which the weights follow) and lets unused categories
    count; by default the sorted distinct values of ``a`` and ``b``. Units where either rating is
    nan are dropped.
    """
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.ndim != 1 or a_arr.shape != b_arr.shape:
        raise ValueError("a and b must be 1-D arrays of the same length")
    keep = ~(_isnan(a_arr) | _isnan(b_arr))
    a_arr, b_arr = a_arr[keep], b_arr[keep]
    cats = (
        np.unique(np.concatenate([a_arr, b_arr])) if categories is None else np.asarray(categories)
    )
    if len(np.unique(cats)) != len(cats):
        raise ValueError("categories must be distinct")
    k = len(cats)
    if k == 0:
        return float("nan")
    ia, ib = _codes(a_arr, cats, "rating"), _codes(b_arr, cats, "rating")
    table = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k)
    return cohen_kappa_table(table, weights=weights).kappa


# --------------------------------------------------------------------------------------------
# Fleiss' kappa


@dataclass(frozen=True)
class FleissKappa:
    """Fleiss' kappa with its parts (the names follow Fleiss 1971)."""

    kappa: float
    p_bar: float  # mean observed agreement over subjects rated at least twice
    p_e_bar: float  # chance agreement
    p_i: FloatArray  # per-subject agreement, nan where the subject has < 2 ratings
    p_j: FloatArray  # category prevalence
    n_subjects: int  # subjects rated at least twice

    def as_dict(self) -> dict[str, object]:
        return {
            "kappa": self.kappa,
            "p_bar": self.p_bar,
            "p_e_bar": self.p_e_bar,
            "p_i": self.p_i.tolist(),
            "p_j": self.p_j.tolist(),
            "n_subjects": self.n_subjects,
        }


def _fleiss_unit_parts(counts: np.ndarray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per-subject pieces of Fleiss' kappa for the subjects rated at least once.

    Returns (P_i or 0, 1 if rated twice or more else 0, per-subject category proportions); the
    kappa of any weighted set of subjects is a ratio of weighted sums of these, which is what
    makes the item bootstrap a matrix product instead of a recomputation.
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2:
        raise ValueError("counts must be a (subjects, categories) array")
    if (c < 0).any():
        raise ValueError("counts must be non-negative")
    n_i = c.sum(axis=1)
    c = c[n_i > 0]
    n_i = n_i[n_i > 0]
    twice = n_i >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        p_i = np.where(twice, (c * (c - 1)).sum(axis=1) / (n_i * (n_i - 1)), 0.0)
    props = c / n_i[:, None]
    return p_i, twice.astype(np.float64), props


def _fleiss_from_weights(
    p_i: FloatArray, twice: FloatArray, props: FloatArray, w: FloatArray
) -> tuple[float, float, float, FloatArray]:
    n_twice = float(w @ twice)
    total = float(w.sum())
    if n_twice == 0 or total == 0:
        nan = float("nan")
        return nan, nan, nan, np.full(props.shape[1], nan)
    p_bar = float(w @ p_i) / n_twice
    p_j = (w @ props) / total
    p_e = float(p_j @ p_j)
    kappa = (p_bar - p_e) / (1.0 - p_e) if p_e < 1.0 else float("nan")
    return kappa, p_bar, p_e, p_j


def fleiss_kappa_details(counts: np.ndarray) -> FleissKappa:
    """Fleiss' kappa and its parts; see :func:`fleiss_kappa`."""
    c = np.asarray(counts, dtype=np.float64)
    p_i, twice, props = _fleiss_unit_parts(c)
    kappa, p_bar, p_e, p_j = _fleiss_from_weights(p_i, twice, props, np.ones(len(p_i)))
    n_i = c.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_i_all = np.where(n_i >= 2, (c * (c - 1)).sum(axis=1) / (n_i * (n_i - 1)), np.nan)
    return FleissKappa(
        kappa=kappa,
        p_bar=p_bar,
        p_e_bar=p_e,
        p_i=p_i_all,
        p_j=p_j,
        n_subjects=int(twice.sum()),
    )


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa from a (subjects x categories) table of how many raters chose each category.

    With n_ij raters putting subject i in category j and n_i = sum_j n_ij (Fleiss 1971)::

        P_i   = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1))        agreement on subject i
        P_bar = mean of P_i over subjects with n_i >= 2
        p_j   = mean over subjects with n_i >= 1 of n_ij / n_i  category prevalence
        P_e   = sum_j p_j^2
        kappa = (P_bar - P_e) / (1 - P_e)

    When every n_i equals n this is Fleiss' formula exactly (P_i = (sum_j n_ij^2 - n)/(n(n-1)),
    p_j = sum_i n_ij / (N n)). For unequal n_i (missing ratings) it is the generalization in Gwet,
    *Handbook of Inter-Rater Reliability* (4th ed., 2014), ch. 2, as implemented in the irrCAC R
    package (``fleiss.kappa.raw``): subjects with no rating are ignored, subjects with a single
    rating inform the prevalence p_j but not the observed agreement. nan when no subject is rated
    twice or when P_e = 1.
    """
    return fleiss_kappa_details(counts).kappa


def fleiss_counts(
    item: np.ndarray, value: np.ndarray, n_items: int, categories: np.ndarray
) -> npt.NDArray[np.int64]:
    """(n_items, len(categories)) number of ratings of each item in each category (nan dropped)."""
    item_a, _, value_a = _long_form(item, None, value)
    _check_item_range(item_a, n_items)
    cats = np.asarray(categories, dtype=np.float64)
    k = len(cats)
    codes = _codes(value_a, cats, "rating value")
    return np.bincount(item_a * k + codes, minlength=n_items * k).reshape(n_items, k)


def fleiss_kappa_ci(
    item: np.ndarray,
    value: np.ndarray,
    n_items: int,
    categories: np.ndarray,
    *,
    rounds: int = 1000,
    seed: int,
    level_ci: float = 0.95,
) -> Interval:
    """Fleiss' kappa with a percentile bootstrap interval over items.

    The units resampled are the items rated at least once (``n`` in the result); each round is a
    weighted sum of per-item parts (see :func:`fleiss_kappa`), never a recount of raw ratings.
    """
    counts = fleiss_counts(item, value, n_items, categories)
    p_i, twice, props = _fleiss_unit_parts(counts)
    n_units = len(p_i)
    estimate = _fleiss_from_weights(p_i, twice, props, np.ones(n_units))[0]
    if n_units == 0 or np.isnan(estimate):
        return Interval(estimate, float("nan"), float("nan"), n_units)

    def statistic(w: FloatArray) -> FloatArray:
        # The kappa of every round of the batch at once (rows of w are rounds).
        n_twice = w @ twice
        total = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_bar = (w @ p_i) / n_twice
            p_j = (w @ props) / total[:, None]
            p_e = (p_j * p_j).sum(axis=1)
            kappa = (p_bar - p_e) / (1.0 - p_e)
        return np.where((n_twice > 0) & (total > 0) & (p_e < 1.0), kappa, np.nan)

    low, high = bootstrap_weighted_statistic(
        statistic, n_units, rounds=rounds, seed=seed, level=level_ci
    )
    return Interval(estimate, low, high, n_units)


# --------------------------------------------------------------------------------------------
# Krippendorff's alpha


@dataclass(frozen=True)
class _AlphaUnits:
    """Per-unit coincidence data, built once, from which alpha of any weighting of units follows.

    Only pairable units (>= 2 ratings) are kept. The count table is stored sparsely as entries
    (unit, value code, count): at most one per distinct (unit, value), so its size is bounded by
    both the number of ratings and units x distinct values.
    """

    level: str
    values: FloatArray  # sorted distinct values, indexed by code
    m: FloatArray  # (U,) ratings per unit
    e_unit: IntArray  # entries
    e_code: IntArray
    e_count: FloatArray
    d_unit: FloatArray  # (U,) sum over ordered pairs of delta^2 / (m_u - 1); nominal & interval

    @property
    def n_units(self) -> int:
        return len(self.m)

    def alpha(self, w: FloatArray) -> float:
        """Alpha of the units weighted by ``w`` (w = ones for the data as observed)."""
        w_e = w[self.e_unit] * self.e_count
        n_c = np.bincount(self.e_code, weights=w_e, minlength=len(self.values))
        n = float(n_c.sum())
        if n <= 1:
            return float("nan")
        if self.level == "nominal":
            observed = float(w @ self.d_unit)
            expected = n * n - float(n_c @ n_c)
        else:
            if self.level == "ordinal":
                # The ordinal metric delta_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 is the
                # squared difference of mid-ranks r_c = N_{<c} + n_c/2 under the pooled value
                # frequencies n_g, so it reduces to the interval computation on r. The ranks
                # depend on n_g, hence on the resample, so the per-unit sums are redone here.
                positions = np.cumsum(n_c) - n_c / 2.0
                d_unit = self._interval_unit_sums(positions)
            else:
                positions = self.values
                d_unit = self.d_unit
            observed = float(w @ d_unit)
            mean = float(n_c @ positions) / n
            # sum_ck n_c n_k (x_c - x_k)^2 = 2 n sum_c n_c (x_c - mean)^2 (two-pass, no cancellation)
            expected = 2.0 * n * float(n_c @ (positions - mean) ** 2)
        if expected <= 0:
            return float("nan")
        return 1.0 - (n - 1.0) * observed / expected

    def _interval_unit_sums(self, positions: FloatArray) -> FloatArray:
        return _interval_unit_sums(positions, self.e_unit, self.e_code, self.e_count, self.m)

    def alphas(self, w: FloatArray) -> FloatArray:
        """:meth:`alpha` for every row of ``w`` (r, U) at once: one bootstrap batch."""
        table = sparse.csr_matrix(
            (self.e_count, (self.e_unit, self.e_code)), shape=(self.n_units, len(self.values))
        )
        n_c = np.asarray((table.T @ w.T).T)  # (r, V) pooled value counts per round
        n = n_c.sum(axis=1)
        if self.level == "nominal":
            observed = w @ self.d_unit
            expected = n * n - (n_c * n_c).sum(axis=1)
        else:
            if self.level == "ordinal":
                # Mid-ranks per round; the per-unit sums sum_i (x_i - mean_u)^2 follow from the
                # unit's first and second moments, s2 - s1^2 / m, here for all rounds at once
                # (centred on the pooled mean first, so the subtraction does not cancel).
                positions = np.cumsum(n_c, axis=1) - n_c / 2.0  # (r, V)
                with np.errstate(invalid="ignore", divide="ignore"):
                    centre = (n_c * positions).sum(axis=1) / n
                x = positions - centre[:, None]
                s1 = np.asarray(table @ x.T)  # (U, r)
                s2 = np.asarray(table @ (x * x).T)
                ss = np.maximum(s2 - s1 * s1 / self.m[:, None], 0.0)
                d_unit = 2.0 * self.m[:, None] * ss / (self.m[:, None] - 1.0)
                observed = (w * d_unit.T).sum(axis=1)
            else:
                positions = np.broadcast_to(self.values, n_c.shape)
                observed = w @ self.d_unit
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = (n_c * positions).sum(axis=1) / n
                expected = 2.0 * n * (n_c * (positions - mean[:, None]) ** 2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            result = 1.0 - (n - 1.0) * observed / expected
        return np.where((n > 1) & (expected > 0), result, np.nan)


def _interval_unit_sums(
    positions: FloatArray, e_unit: IntArray, e_code: IntArray, e_count: FloatArray, m: FloatArray
) -> FloatArray:
    """Per unit: sum over ordered pairs of raters of (x_i - x_j)^2, divided by (m_u - 1).

    sum_{i != j} (x_i - x_j)^2 = 2 m_u sum_i (x_i - mean_u)^2; the deviations are taken from the
    unit's own mean so that a unit where everyone agrees gives exactly 0.
    """
    x = positions[e_code]
    s1 = np.bincount(e_unit, weights=e_count * x, minlength=len(m))
    dev = x - (s1 / m)[e_unit]
    ss = np.bincount(e_unit, weights=e_count * dev * dev, minlength=len(m))
    return 2.0 * m * ss / (m - 1.0)


def _alpha_units(item: np.ndarray, rater: np.ndarray, value: np.ndarray, level: str) -> _AlphaUnits:
    if level not in _ALPHA_LEVELS:
        raise ValueError(f"level must be one of {_ALPHA_LEVELS}, not {level!r}")
    item_a, _, value_a = _long_form(item, rater, value)
    values, code = np.unique(value_a, return_inverse=True)
    _, unit, per_unit = np.unique(item_a, return_inverse=True, return_counts=True)
    pairable = per_unit[unit] >= 2
    unit_ids, unit = np.unique(unit[pairable], return_inverse=True)
    v = len(values)
    keys, counts = np.unique(unit * v + code[pairable], return_counts=True)
    e_unit, e_code = (keys // v).astype(np.int64), (keys % v).astype(np.int64)
    e_count = counts.astype(np.float64)
    m = np.bincount(e_unit, weights=e_count, minlength=len(unit_ids)).astype(np.float64)
    values_f = values.astype(np.float64)
    if level == "nominal":
        # Ordered pairs of raters that disagree: m_u^2 - sum_c n_uc^2.
        sq = np.bincount(e_unit, weights=e_count**2, minlength=len(m))
        d_unit = (m * m - sq) / (m - 1.0)
    elif level == "interval":
        d_unit = _interval_unit_sums(values_f, e_unit, e_code, e_count, m)
    else:
        d_unit = np.zeros(len(m))  # ordinal: depends on the weights, computed per call
    return _AlphaUnits(level, values_f, m, e_unit, e_code, e_count, d_unit)


def krippendorff_alpha(
    item: np.ndarray, rater: np.ndarray, value: np.ndarray, *, level: str
) -> float:
    """Krippendorff's alpha for nominal, ordinal or interval data, with missing ratings.

    Only units with at least two ratings (m_u >= 2) count. Coincidences (Krippendorff 2011,
    "Computing Krippendorff's Alpha-Reliability"), with n_uc the ratings of unit u equal to c::

        o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)      n_c = sum_k o_ck,  n = sum_c n_c
        alpha = 1 - (n - 1) * sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck

    delta_ck: nominal [c != k]; interval (c - k)^2; ordinal
    (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 over the ordered values.

    Vectorized: per-unit pair sums are computed once from (unit, value) counts (the ordinal metric
    as squared mid-rank differences), so the cost is linear in the number of ratings and does not
    grow with the square of the number of distinct values.
    """
    units = _alpha_units(item, rater, value, level)
    if units.n_units == 0:
        return float("nan")
    return units.alpha(np.ones(units.n_units))


def krippendorff_alpha_ci(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    *,
    level: str,
    rounds: int = 1000,
    seed: int,
    level_ci: float = 0.95,
) -> Interval:
    """Krippendorff's alpha with a percentile bootstrap interval over units (items).

    The pairable units (``n`` in the result) are resampled with replacement; each round weights the
    per-unit coincidence sums built once by :func:`krippendorff_alpha` (for ordinal data the
    mid-ranks are recomputed from the resampled value frequencies, as the metric requires).
    """
    units = _alpha_units(item, rater, value, level)
    n_units = units.n_units
    if n_units == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    estimate = units.alpha(np.ones(n_units))
    if np.isnan(estimate):
        return Interval(estimate, float("nan"), float("nan"), n_units)

    low, high = bootstrap_weighted_statistic(
        units.alphas, n_units, rounds=rounds, seed=seed, level=level_ci
    )
    return Interval(estimate, low, high, n_units)


# --------------------------------------------------------------------------------------------
# per-item and cross-group agreement


def _pair_weight_matrix(
    values: FloatArray, scale_min: float, scale_max: float, weights: str
) -> FloatArray:
    if weights not in _PAIR_WEIGHTS:
        raise ValueError(f"weights must be one of {_PAIR_WEIGHTS}, not {weights!r}")
    if not scale_max > scale_min:
        raise ValueError("scale_max must be greater than scale_min")
    diff = np.abs(values[:, None] - values[None, :])
    if weights == "nominal":
        return (diff > 0).astype(np.float64)
    span = float(scale_max - scale_min)
    return diff / span if weights == "linear" else (diff / span) ** 2


def _scale_codes(
    value: FloatArray, scale_min: float, scale_max: float
) -> tuple[FloatArray, IntArray]:
    if value.size and (value.min() < scale_min or value.max() > scale_max):
        raise ValueError(f"rating values must lie in [{scale_min}, {scale_max}]")
    values, code = np.unique(value, return_inverse=True)
    return values, code.astype(np.int64)


def _expected_disagreement(counts: FloatArray, w: FloatArray) -> float:
    """Mean weight between two values drawn independently from the pooled distribution."""
    total = float(counts.sum())
    if total == 0:
        return float("nan")
    p = counts / total
    return float(p @ w @ p)


def per_item_agreement(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    n_items: int,
    *,
    scale_min: float,
    scale_max: float,
    weights: str = "quadratic",
) -> FloatArray:
    """(n_items,) chance-corrected agreement among the raters of each item.

    agreement_u = 1 - D_obs(u) / D_exp, where

    - D_obs(u) is the mean disagreement weight over all pairs of different raters of item u;
    - D_exp is the mean disagreement weight between two values drawn independently from the
      study-wide answer distribution (every rating passed in), i.e. sum_ab p_a p_b w(a, b);
    - w(a, b) = ((a - b) / (max - min))^2 for "quadratic" (ordinal scales), |a - b| / (max - min)
      for "linear", and [a != b] for "nominal" (binary or unordered answers).

    1 means the raters agree perfectly, 0 that they agree no more than strangers answering at
    random from the study's distribution, negative values less than that. nan where the item has
    fewer than 2 ratings, and everywhere when D_exp = 0 (all answers in the study identical).
    """
    item_a, _, value_a = _long_form(item, rater, value)
    _check_item_range(item_a, n_items)
    values, code = _scale_codes(value_a, scale_min, scale_max)
    w = _pair_weight_matrix(values, scale_min, scale_max, weights)
    v = len(values)
    counts = np.bincount(item_a * v + code, minlength=n_items * v).reshape(n_items, v)
    counts_f = counts.astype(np.float64)
    d_exp = _expected_disagreement(counts_f.sum(axis=0), w)
    m = counts_f.sum(axis=1)
    # Sum of w over ordered pairs of ratings: c^T W c (w is 0 on the diagonal, so a rating is
    # never paired with itself).
    pair_sum = ((counts_f @ w) * counts_f).sum(axis=1)
    n_pairs = m * (m - 1.0)
    out = np.full(n_items, np.nan)
    ok = n_pairs > 0
    if d_exp > 0:
        out[ok] = 1.0 - (pair_sum[ok] / n_pairs[ok]) / d_exp
    return out


def cross_group_agreement(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    rater_group: np.ndarray,
    n_items: int,
    *,
    scale_min: float,
    scale_max: float,
    weights: str = "quadratic",
    min_raters_per_group: int = 1,
) -> FloatArray:
    """(n_items,) agreement between raters of *different background groups* on each item.

    agreement_u = 1 - D_obs(u) / D_exp, where

    - D_obs(u) is the mean disagreement weight w(a, b) over the pairs of raters of item u who
      belong to different groups (pairs within one group are left out);
    - D_exp is the mean w between two values drawn independently from the study-wide answer
      distribution of this question (all ratings passed in): sum_ab p_a p_b w(a, b);
    - w(a, b) = ((a - b) / (max - min))^2 for "quadratic" (ordinal scales), |a - b| / (max - min)
      for "linear", [a != b] for "nominal" (binary answers such as the offense flag).

    1: raters from different backgrounds give the same answers; 0: they agree no better than
    chance given how the study's answers are spread; below 0: they disagree systematically.
    nan where the item has no pair of raters from different groups (and everywhere when
    D_exp = 0). ``rater_group[r]`` is rater r's group; a negative group means unknown, and such
    raters are left out of the pairs (their answers still count in D_exp).

    ``min_raters_per_group``: the item needs at least two groups with this many raters each,
    or it is nan. With one rater per group the statistic is one pair's disagreement divided by
    the study-wide expected disagreement: on a rare flag or a concentrated scale that prints
    numbers such as -7, which say nothing about the item (``cross_group_reasons`` names why
    an item has none).

    Computed from counts per item x group x value: the cross-group pair sum is the sum over all
    pairs minus the sums within each group.
    """
    item_a, rater_a, value_a = _long_form(item, rater, value)
    assert rater_a is not None
    _check_item_range(item_a, n_items)
    groups_of_rater = np.asarray(rater_group)
    if rater_a.size and (rater_a.min() < 0 or rater_a.max() >= len(groups_of_rater)):
        raise ValueError("every rater index must have an entry in rater_group")
    values, code = _scale_codes(value_a, scale_min, scale_max)
    w = _pair_weight_matrix(values, scale_min, scale_max, weights)
    v = len(values)
    d_exp = _expected_disagreement(np.bincount(code, minlength=v).astype(np.float64), w)

    group = groups_of_rater[rater_a].astype(np.int64)
    known = group >= 0
    n_groups = int(group[known].max()) + 1 if known.any() else 0
    key = (item_a[known] * n_groups + group[known]) * v + code[known]
    counts = np.bincount(key, minlength=n_items * n_groups * v).astype(np.float64)
    counts = counts.reshape(n_items, n_groups, v)

    per_item = counts.sum(axis=1)
    all_pairs = ((per_item @ w) * per_item).sum(axis=1)
    within_pairs = ((counts @ w) * counts).sum(axis=(1, 2))
    m = per_item.sum(axis=1)
    m_g = counts.sum(axis=2)
    n_cross = m * m - (m_g * m_g).sum(axis=1)  # ordered cross-group pairs
    out = np.full(n_items, np.nan)
    raters_in_group = _raters_per_item_group(item_a[known], rater_a[known], group[known], n_items)
    ok = (n_cross > 0) & ((raters_in_group >= min_raters_per_group).sum(axis=1) >= 2)
    if d_exp > 0:
        out[ok] = 1.0 - ((all_pairs[ok] - within_pairs[ok]) / n_cross[ok]) / d_exp
    return out


# The report's minimum: cross-group agreement only where two background groups have this many
# of the item's raters each (9 cross-group pairs at the least).
CROSS_GROUP_MIN_RATERS = 3


def _raters_per_item_group(
    item: np.ndarray, rater: np.ndarray, group: np.ndarray, n_items: int
) -> np.ndarray:
    """(n_items, n_groups) distinct raters of each item in each group."""
    n_groups = int(group.max()) + 1 if group.size else 0
    out = np.zeros((n_items, n_groups), dtype=np.int64)
    if group.size:
        pairs = distinct_pairs(item, rater)
        first_group = np.zeros(int(rater.max()) + 1, dtype=np.int64)
        first_group[rater] = group
        np.add.at(out, (pairs[0], first_group[pairs[1]]), 1)
    return out


def cross_group_reasons(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    rater_group: np.ndarray,
    n_items: int,
    *,
    scale_min: float,
    scale_max: float,
    min_raters_per_group: int,
) -> list[str | None]:
    """Why ``cross_group_agreement`` has no value for an item (None where it has one).

    "too_few_raters_per_group": fewer than two background groups with ``min_raters_per_group``
    raters of the item each; "no_variation": every answer of the study to this question is the
    same, so no disagreement is expected and the ratio is undefined.
    """
    item_a, rater_a, value_a = _long_form(item, rater, value)
    assert rater_a is not None
    group = np.asarray(rater_group)[rater_a].astype(np.int64)
    known = group >= 0
    counts = _raters_per_item_group(item_a[known], rater_a[known], group[known], n_items)
    supported = (counts >= min_raters_per_group).sum(axis=1) >= 2
    _scale_codes(value_a, scale_min, scale_max)  # the same checks as the statistic itself
    varied = np.unique(value_a).size > 1
    reasons: list[str | None] = []
    for i in range(n_items):
        if not supported[i]:
            reasons.append("too_few_raters_per_group")
        else:
            reasons.append(None if varied else "no_variation")
    return reasons


__all__ = [
    "CohenKappa",
    "FleissKappa",
    "cohen_kappa",
    "cohen_kappa_table",
    "cross_group_agreement",
    "cross_group_reasons",
    "fleiss_counts",
    "fleiss_kappa",
    "fleiss_kappa_ci",
    "fleiss_kappa_details",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "per_item_agreement",
]
