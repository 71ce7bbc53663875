"""Variances for crossed designs: items *and* raters random.

A rating belongs to an item and to a rater, a pair judgment to two items and a rater. When both
the items and the raters are samples from larger populations ("the model's jokes in general,
rated by raters in general"), two observations are correlated whenever they share a unit: the
same item (its own funniness), the same rater (their leniency or taste), or both.

For a statistic linearised as ``theta_hat - theta ~= sum_o psi_o`` (``psi_o`` the influence of
observation o) the variance is then

    Var = sum_{o, o'} psi_o psi_o'^T  [o and o' share at least one unit]

and this module estimates exactly that sum, by inclusion-exclusion over the sets of units an
observation belongs to: with U(o) the units of o,

    [U(o) & U(o') nonempty] = sum over nonempty S within U(o) & U(o') of (-1)^(|S| + 1)

so the sum is ``sum_S (-1)^(|S|+1) (sum_{o : S within U(o)} psi_o)^2`` over every set S of
units that some observation holds. For scorecards (U = {item, rater}) this is the two-way
cluster-robust variance of Cameron, Gelbach & Miller (2011, JBES 29:238),
V = V_items + V_raters - V_cells, which is also what Owen's (2007, Ann. Appl. Stat. 1:246)
correction of the pigeonhole bootstrap estimates; for pair judgments (U = {left item, right
item, rater}) it extends the same rule to an observation that belongs to two items.

Why not the plain two-way ("pigeonhole") bootstrap that resamples items and raters
independently: it counts the rating noise once per crossed factor (roughly V_items + V_raters +
V_cells instead of V_items + V_raters - V_cells) and over-covers, about 99-100% for model
differences in simulation (``benchmarks/sim_model_coverage.py``).

Intervals are t intervals with ``min(items, raters) - 1`` degrees of freedom (the smaller
sample of the two limits the precision of a variance estimate); the per-term small-sample factor
G / (G - 1) of each cluster sum is applied (Cameron, Gelbach & Miller's c_G).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import sparse
from scipy.special import ndtri, stdtr, stdtrit

_BITS = 21  # unit ids below 2**21 (2 million units) pack three to an int64 key


@dataclass(frozen=True)
class CrossedDesign:
    """The unit memberships of a set of observations, prepared once for many statistics.

    ``units``: one int array per membership column (item, rater; or left item, right item,
    rater), each holding a unit id from one shared numbering (an item and a rater must not
    share an id), -1 where the observation has no unit in that column.
    """

    n_obs: int
    # One entry per kind of unit set: (sign, a sparse (sets x observations) membership matrix).
    terms: tuple[tuple[int, sparse.csr_matrix], ...]

    @classmethod
    def build(
        cls, units: Sequence[np.ndarray], kinds: Sequence[str] | None = None
    ) -> CrossedDesign:
        """``kinds`` names each column's kind of unit (e.g. "item", "item", "rater"); sets of
        units of the same kinds form one term with its own small-sample factor G / (G - 1).
        By default every column is its own kind."""
        columns = np.stack([np.asarray(u, dtype=np.int64) for u in units], axis=1)
        n_obs, n_cols = columns.shape
        kinds = list(kinds) if kinds is not None else [str(k) for k in range(n_cols)]
        if len(kinds) != n_cols:
            raise ValueError("one kind per column of units")
        if columns.size and columns.max() >= 2**_BITS:
            raise ValueError("too many units for the crossed design")
        by_signature: dict[tuple[str, ...], tuple[list[np.ndarray], list[np.ndarray]]] = {}
        obs_index = np.arange(n_obs)
        for size in range(1, n_cols + 1):
            for subset in combinations(range(n_cols), size):
                signature = tuple(sorted(kinds[c] for c in subset))
                sub = columns[:, subset]
                ok = (sub >= 0).all(axis=1)
                ordered = np.sort(sub[ok], axis=1)
                key = np.zeros(int(ok.sum()), dtype=np.int64)
                for k in range(size):
                    key = (key << _BITS) | ordered[:, k]
                keys, owners = by_signature.setdefault(signature, ([], []))
                keys.append(key)
                owners.append(obs_index[ok])
        terms = []
        for signature, (keys, owners) in by_signature.items():
            _, group = np.unique(np.concatenate(keys), return_inverse=True)
            group = group.ravel()
            n_groups = int(group.max()) + 1 if group.size else 0
            owner = np.concatenate(owners)
            membership = sparse.csr_matrix(
                (np.ones(group.size), (group, owner)), shape=(n_groups, n_obs)
            )
            terms.append((1 if len(signature) % 2 else -1, membership))
        return cls(n_obs=n_obs, terms=tuple(terms))

    def covariance(
        self,
        psi: np.ndarray,
        *,
        small_sample: bool = True,
        leverage: np.ndarray | None = None,
    ) -> np.ndarray:
        """(d, d) estimate of the covariance of ``sum_o psi_o`` for influence values (n, d).

        ``small_sample=False`` leaves out every small-sample factor (the plain double sum).
        ``leverage`` (n, d): each observation's weight in a weighted mean (columns summing to
        1, e.g. 1 / N on a source's answers). Each unit set's sum is then divided by
        1 - (its share of the weight), which makes it the exact change of a mean when that unit
        set is deleted, and the jackknife's (G - 1) / G replaces G / (G - 1): the delete-one-
        cluster jackknife of Cameron, Gelbach & Miller's two-way rule, which is less narrow
        than the plug-in sums when an item or rater holds a large share of a source's answers.
        """
        values = np.asarray(psi, dtype=np.float64).reshape(self.n_obs, -1)
        weights = (
            None
            if leverage is None
            else np.asarray(leverage, dtype=np.float64).reshape(self.n_obs, -1)
        )
        d = values.shape[1]
        total = np.zeros((d, d))
        for sign, membership in self.terms:
            if membership.shape[0] == 0:
                continue
            sums = np.asarray(membership @ values)
            used = np.count_nonzero(sums, axis=0)
            if weights is not None:
                share = np.asarray(membership @ weights)
                # A unit set holding all of a statistic's weight cannot be deleted: no step.
                sums = np.where(share < 1.0 - 1e-12, sums / np.maximum(1.0 - share, 1e-12), 0.0)
                if small_sample:
                    factor = np.where(used > 1, (used - 1) / np.maximum(used, 1), 1.0)
                    sums = sums * np.sqrt(factor)
            elif small_sample:
                # Per statistic (column), G counts only the clusters that statistic touches.
                factor = np.where(used > 1, used / np.maximum(used - 1, 1), 1.0)
                sums = sums * np.sqrt(factor)
            total += sign * (sums.T @ sums)
        return total

    def deletion_covariance(
        self, scores: np.ndarray, hessians: np.ndarray, information: np.ndarray
    ) -> np.ndarray:
        """Covariance of an M-estimate from one-step deletions of each unit set (a jackknife).

        ``scores`` (n, d) are the observations' estimating-function contributions, ``hessians``
        (n, d, d) their information contributions, ``information`` their (d, d) total. Deleting
        the observations of a unit set g moves the estimate by about
        (information - H_g)^+ U_g; the deletions of every kind of unit set are combined by the
        same inclusion-exclusion as :meth:`covariance`, each with the jackknife's (G - 1) / G.
        Unlike the plug-in sandwich this accounts for the leverage of each cluster, which
        matters for a fit on a few dozen items (a logistic fit's CR1 sandwich runs narrow).
        ``information`` may be singular along the all-ones direction (centred strengths):
        that direction is added back before solving and the scores are orthogonal to it.
        """
        u = np.asarray(scores, dtype=np.float64).reshape(self.n_obs, -1)
        d = u.shape[1]
        h = np.asarray(hessians, dtype=np.float64).reshape(self.n_obs, d * d)
        ones = np.full((d, d), 1.0 / d)
        ridge = 1e-6 * max(float(np.trace(information)) / d, 1e-12) * np.eye(d)
        total = np.zeros((d, d))
        for sign, membership in self.terms:
            n_groups = membership.shape[0]
            if n_groups == 0:
                continue
            u_g = np.asarray(membership @ u)
            if n_groups > self.n_obs // 4:
                # Unit sets that hold one or two observations each (cells: an item and a
                # rater): deleting one barely moves the information, so the one-step deletion
                # is the plug-in H^+ U_g, without a solve per set.
                delta = u_g @ np.linalg.pinv(information + ones)
                used = int(np.count_nonzero(np.abs(u_g).sum(axis=1)))
                factor = (used - 1) / used if used > 1 else 1.0
                total += sign * factor * (delta.T @ delta)
                continue
            h_g = np.asarray(membership @ h).reshape(n_groups, d, d)
            # A small ridge keeps every system solvable: deleting a unit set may cut a
            # competitor off (a source with one item), and its direction then carries neither
            # information nor score (the fit's score is 0 there), so no step. (Batched LU:
            # a batched pseudo-inverse costs ~50x more on 100,000 unit sets.)
            left = information[None, :, :] - h_g + ones[None, :, :] + ridge[None, :, :]
            delta = np.linalg.solve(left, u_g[:, :, None])[:, :, 0]
            used = int(np.count_nonzero(np.abs(u_g).sum(axis=1)))
            factor = (used - 1) / used if used > 1 else 1.0
            total += sign * factor * (delta.T @ delta)
        return total


def crossed_variance(
    psi: np.ndarray, units: Sequence[np.ndarray], kinds: Sequence[str] | None = None
) -> float:
    """Variance of ``sum(psi)`` when observations sharing any unit are correlated."""
    design = CrossedDesign.build(units, kinds)
    return float(design.covariance(np.asarray(psi, dtype=float))[0, 0])


def one_way_variance(psi: np.ndarray, cluster: np.ndarray) -> float:
    """Cluster-robust variance of ``sum(psi)`` with one clustering (G / (G - 1) corrected)."""
    values = np.asarray(psi, dtype=np.float64)
    _, codes = np.unique(np.asarray(cluster), return_inverse=True)
    sums = np.bincount(codes, weights=values)
    used = int(np.count_nonzero(sums))
    factor = used / (used - 1) if used > 1 else 1.0
    return float(factor * (sums @ sums))


def t_interval(
    estimate: float, variance: float, df: float, level: float = 0.95
) -> tuple[float, float, float]:
    """(low, high, two-sided p-value against 0) of a t interval; nan when undefined."""
    if not (np.isfinite(estimate) and np.isfinite(variance)) or variance < 0 or df < 1:
        return float("nan"), float("nan"), float("nan")
    se = float(np.sqrt(variance))
    # scipy.special's t functions: scipy.stats.t's argument checks cost ~1 ms a call here.
    crit = float(stdtrit(df, 0.5 + level / 2.0))
    if se == 0:
        return estimate, estimate, (1.0 if estimate == 0 else 0.0)
    p_value = float(2.0 * stdtr(df, -abs(estimate) / se))
    return estimate - crit * se, estimate + crit * se, p_value


def grouped_t_interval(
    values: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    level: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: mean and the studentized interval mean +- t_{n-1} s / sqrt(n).

    For an item's mean over its raters (one answer per rater, raters random) this is the
    interval for "the item rated by raters in general"; percentile bootstraps of ~30 answers
    run narrow (92% for nominal 95%, the bootstrap's variance is (n - 1) / n too small and its
    tails normal). nan where a group has fewer than 2 values; ``bounds`` clips to the scale.
    """
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    keep = ~np.isnan(v)
    v, g = v[keep], g[keep]
    n = np.bincount(g, minlength=n_groups).astype(np.int64)
    sums = np.bincount(g, weights=v, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, sums / np.maximum(n, 1), np.nan)
        dev = v - mean[g]
        ss = np.bincount(g, weights=dev * dev, minlength=n_groups)
        se = np.sqrt(ss / np.maximum(n - 1, 1) / np.maximum(n, 1))
        crit = stdtrit(np.maximum(n - 1, 1), 0.5 + level / 2.0)
    low = np.where(n >= 2, mean - crit * se, np.nan)
    high = np.where(n >= 2, mean + crit * se, np.nan)
    if bounds is not None:
        low = np.where(np.isnan(low), np.nan, np.clip(low, *bounds))
        high = np.where(np.isnan(high), np.nan, np.clip(high, *bounds))
    return mean, low, high, n


def grouped_wilson_interval(
    successes: np.ndarray, groups: np.ndarray, n_groups: int, *, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: share of 1s and its Wilson score interval (never [1, 1] for 15 of 15)."""
    v = np.asarray(successes, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    keep = ~np.isnan(v)
    v, g = v[keep], g[keep]
    n = np.bincount(g, minlength=n_groups).astype(np.float64)
    k = np.bincount(g, weights=v, minlength=n_groups)
    z = float(ndtri(0.5 + level / 2.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    low = np.where(k <= 0, 0.0, np.maximum(0.0, centre - half))
    high = np.where(k >= n, 1.0, np.minimum(1.0, centre + half))
    empty = n == 0
    return (
        np.where(empty, np.nan, p),
        np.where(empty, np.nan, low),
        np.where(empty, np.nan, high),
        n.astype(np.int64),
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (nan entries are left out and stay nan)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out.tolist()
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out.tolist()


def benjamini_hochberg(p_values: Sequence[float], q: float) -> tuple[np.ndarray, np.ndarray]:
    """(rejected, adjusted q-values) by Benjamini-Hochberg at false-discovery rate ``q``.

    nan p-values are not tests: never rejected, q-value nan, and not counted in m.
    """
    p = np.asarray(p_values, dtype=np.float64)
    rejected = np.zeros(p.shape, dtype=bool)
    adjusted = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return rejected, adjusted
    order = ok[np.argsort(p[ok], kind="stable")]
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    passing = np.flatnonzero(p[order] <= q * np.arange(1, m + 1) / m)
    if passing.size:
        rejected[order[: passing.max() + 1]] = True
    return rejected, adjusted


__all__ = [
    "CrossedDesign",
    "benjamini_hochberg",
    "crossed_variance",
    "grouped_t_interval",
    "grouped_wilson_interval",
    "holm",
    "one_way_variance",
    "t_interval",
]
