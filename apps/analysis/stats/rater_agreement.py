"""Agreement whose uncertainty comes from the raters: raters are a sample of raters in general.

An agreement coefficient describes how far *raters in general* agree on the study's items.
Its uncertainty therefore comes from which raters happened to take part; the items are the
study's own (fixed). The intervals here treat raters as clusters, never single ratings: one
rater's answers across items come as a whole.

Two pieces:

* :class:`RaterUnits` holds Fleiss' kappa and Krippendorff's alpha (nominal, ordinal,
  interval) as functions of a weight per rater, for many weight vectors at once (one sparse
  product per batch). A weight of 0 leaves the rater out, 1 keeps them; a bootstrap count k
  stands for k copies of the rater, and a pair of two copies of the same rater is never a pair
  of raters (it would agree with itself), so every pair sum runs over pairs of *different*
  raters: with W_u the total weight on unit u and Q_u the sum of squared weights, the weighted
  number of ordered pairs is W_u^2 - Q_u. With all weights 1 every coefficient is exactly the
  usual one (tested against the plain functions and the ``krippendorff`` package).
* :func:`pairwise_cohen_kappa` is Cohen's kappa for every pair of raters who share at least
  ``min_shared`` items, and the mean over those pairs, computed from sparse products (a crowd
  study with 75,000 one-rating raters has no qualifying pair and costs one pass over the
  ratings).

The interval, :func:`rater_jackknife_interval`: a delete-a-group jackknife over raters
(raters dealt at random, by seed, into ``groups`` groups; each replicate leaves one group
out; t interval with groups - 1 degrees of freedom). It is weight-based (0/1 weights through
the same sums as the estimate) and needs ``groups`` replicates instead of 1,000 bootstrap
rounds; ``benchmarks/sim_agreement_coverage.py`` measures its coverage against the rater
bootstrap and the item bootstrap for the estimand "these items, rated by raters in general".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.special import stdtrit

from apps.analysis.stats.keys import has_repeated_pairs

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Replicates of the delete-a-group jackknife (fewer raters: one rater per group).
JACKKNIFE_GROUPS = 50
# Cohen's kappa of a pair of raters counts toward the mean only when the two share at least
# this many items: below that, a pair's own marginals (from which kappa takes chance
# agreement) rest on too few answers, and the pair's kappa is mostly noise.
MIN_SHARED_ITEMS = 10
# Elements of one work array (entries x replicates), to bound memory at ~16 MB per array.
_BATCH_ELEMENTS = 2_000_000
_LEVELS = ("nominal", "ordinal", "interval")


def _long_form(
    item: np.ndarray, rater: np.ndarray, value: np.ndarray
) -> tuple[IntArray, IntArray, FloatArray]:
    item_a = np.asarray(item)
    rater_a = np.asarray(rater)
    value_a = np.asarray(value, dtype=np.float64)
    if item_a.ndim != 1 or item_a.shape != value_a.shape or rater_a.shape != item_a.shape:
        raise ValueError("item, rater and value must be 1-D arrays of the same length")
    if item_a.size and not (
        np.issubdtype(item_a.dtype, np.integer) and np.issubdtype(rater_a.dtype, np.integer)
    ):
        raise ValueError("item and rater must hold integer indices")
    keep = ~np.isnan(value_a)
    item_a, rater_a, value_a = item_a[keep], rater_a[keep], value_a[keep]
    if has_repeated_pairs(item_a, rater_a):
        raise ValueError("a rater rated an item more than once; one rating per rater and item")
    return item_a.astype(np.int64), rater_a.astype(np.int64), value_a


@dataclass(frozen=True)
class RaterUnits:
    """Per (unit, value) entry: which raters gave that value to that unit, as a sparse matrix
    over raters, so that the weighted count of every entry for a batch of weight vectors is
    one product. ``raters`` maps a local rater column to the caller's rater index."""

    values: FloatArray  # sorted distinct values, indexed by code
    raters: IntArray  # (R,) caller's rater index of each column
    entry_unit: IntArray  # (E,) unit of each entry (0..U-1)
    entry_code: IntArray  # (E,) value code of each entry
    membership: sparse.csr_matrix  # (E, R): 1 where the rater gave the entry's value to its unit
    unit_sum: sparse.csr_matrix  # (U, E): 1 where the entry belongs to the unit
    code_sum: sparse.csr_matrix  # (V, E): 1 where the entry has the code

    @classmethod
    def build(cls, item: np.ndarray, rater: np.ndarray, value: np.ndarray) -> RaterUnits:
        item_a, rater_a, value_a = _long_form(item, rater, value)
        values, code = np.unique(value_a, return_inverse=True)
        raters, rater_col = np.unique(rater_a, return_inverse=True)
        _, unit = np.unique(item_a, return_inverse=True)
        v = max(len(values), 1)
        keys, entry = np.unique(unit * v + code, return_inverse=True)
        entry_unit, entry_code = (keys // v).astype(np.int64), (keys % v).astype(np.int64)
        n_e, n_r = len(keys), len(raters)
        n_u = int(entry_unit.max()) + 1 if n_e else 0
        membership = sparse.csr_matrix(
            (np.ones(item_a.size), (entry.ravel(), rater_col.ravel())), shape=(n_e, n_r)
        )
        unit_sum = sparse.csr_matrix((np.ones(n_e), (entry_unit, np.arange(n_e))), shape=(n_u, n_e))
        code_sum = sparse.csr_matrix(
            (np.ones(n_e), (entry_code, np.arange(n_e))), shape=(len(values), n_e)
        )
        return cls(
            values.astype(np.float64),
            raters.astype(np.int64),
            entry_unit,
            entry_code,
            membership,
            unit_sum,
            code_sum,
        )

    @property
    def n_raters(self) -> int:
        return len(self.raters)

    def coefficients(self, weights: np.ndarray, levels: tuple[str, ...]) -> dict[str, FloatArray]:
        """Fleiss' kappa ("fleiss") and alpha at each of ``levels`` for every row of
        ``weights`` (replicates x raters); nan where a replicate leaves the coefficient
        undefined."""
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.shape[1] != self.n_raters:
            raise ValueError("one weight per rater")
        out: dict[str, list[FloatArray]] = {"fleiss": [], **{level: [] for level in levels}}
        size = max(1, _BATCH_ELEMENTS // max(self.membership.shape[0], 1))
        for start in range(0, w.shape[0], size):
            batch = self._batch(w[start : start + size], levels)
            for key, stat in batch.items():
                out[key].append(stat)
        return {key: np.concatenate(parts) if parts else np.zeros(0) for key, parts in out.items()}

    def _batch(self, w: FloatArray, levels: tuple[str, ...]) -> dict[str, FloatArray]:
        n_e = np.asarray(self.membership @ w.T)  # (E, r) weight on each entry
        q_e = np.asarray(self.membership @ (w * w).T)
        big_w = np.asarray(self.unit_sum @ n_e)  # (U, r) total weight per unit
        big_q = np.asarray(self.unit_sum @ q_e)
        same = np.asarray(self.unit_sum @ (n_e * n_e))  # sum over values of n_uc^2
        pairs = big_w * big_w - big_q  # weighted ordered pairs of different raters
        pairable = pairs > 1e-9
        with np.errstate(invalid="ignore", divide="ignore"):
            safe_pairs = np.where(pairable, pairs, 1.0)
            safe_w = np.where(big_w > 0, big_w, 1.0)
            # Fleiss: per unit, the share of agreeing pairs of different raters; category
            # shares averaged over units rated at all (fleiss_kappa's convention).
            p_unit = np.where(pairable, (same - big_q) / safe_pairs, 0.0)
            n_pairable = pairable.sum(axis=0)
            rated = (big_w > 0).sum(axis=0)
            p_bar = p_unit.sum(axis=0) / n_pairable
            props = n_e / safe_w[self.entry_unit]
            p_j = np.asarray(self.code_sum @ props) / rated
            p_e = (p_j * p_j).sum(axis=0)
            fleiss = (p_bar - p_e) / (1.0 - p_e)
        result = {
            "fleiss": np.where((n_pairable > 0) & (rated > 0) & (p_e < 1.0 - 1e-12), fleiss, np.nan)
        }
        if not levels:
            return result
        # Alpha: only pairable units' values count; each unit's pair sum is scaled by
        # m_u / pairs_u (= 1 / (m_u - 1) when every weight is 1).
        scale = np.where(pairable, big_w / safe_pairs, 0.0)
        n_pooled_e = n_e * pairable[self.entry_unit]
        n_c = np.asarray(self.code_sum @ n_pooled_e)  # (V, r)
        n = n_c.sum(axis=0)
        for level in levels:
            if level == "nominal":
                observed = (scale * (big_w * big_w - same)).sum(axis=0)
                expected = n * n - (n_c * n_c).sum(axis=0)
            else:
                if level == "ordinal":
                    positions = np.cumsum(n_c, axis=0) - n_c / 2.0  # mid-ranks, per replicate
                else:
                    positions = np.broadcast_to(self.values[:, None], n_c.shape)
                with np.errstate(invalid="ignore", divide="ignore"):
                    centre = (n_c * positions).sum(axis=0) / n
                x = positions - centre  # (V, r), centred so the subtraction below keeps digits
                x_e = x[self.entry_code]
                s1 = np.asarray(self.unit_sum @ (n_e * x_e))
                s2 = np.asarray(self.unit_sum @ (n_e * x_e * x_e))
                # sum over ordered pairs of raters of (x_i - x_j)^2 = 2 (W S2 - S1^2); pairs of
                # copies of one rater add 0.
                d_unit = np.maximum(2.0 * (big_w * s2 - s1 * s1), 0.0)
                observed = (scale * d_unit).sum(axis=0)
                expected = 2.0 * n * (n_c * x * x).sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                alpha = 1.0 - (n - 1.0) * observed / expected
            result[level] = np.where((n > 1) & (expected > 1e-12), alpha, np.nan)
        return result


def jackknife_groups(n_raters: int, *, groups: int, seed: int) -> tuple[IntArray, int]:
    """Each rater's group: raters dealt at random into G = min(groups, n_raters) groups of
    (nearly) equal size. Returns (labels, G); G < 2 means no jackknife."""
    g = min(groups, n_raters)
    order = np.random.default_rng(seed).permutation(n_raters)
    label = np.empty(n_raters, dtype=np.int64)
    label[order] = np.arange(n_raters) % max(g, 1)
    return label, g


def jackknife_weights(n_raters: int, *, groups: int, seed: int) -> FloatArray:
    """(G, n_raters) 0/1 weights; replicate g leaves group g out (none when G < 2)."""
    label, g = jackknife_groups(n_raters, groups=groups, seed=seed)
    if g < 2:
        return np.zeros((0, n_raters))
    return (label[None, :] != np.arange(g)[:, None]).astype(np.float64)


def jackknife_t_interval(
    estimate: float, replicates: np.ndarray, *, level: float = 0.95, upper: float | None = 1.0
) -> tuple[float, float]:
    """t interval from delete-a-group jackknife replicates (nan replicates dropped):
    variance (G - 1) / G * sum (theta_g - mean)^2, G - 1 degrees of freedom; the upper bound
    clipped at ``upper`` (agreement cannot exceed 1)."""
    reps = np.asarray(replicates, dtype=np.float64)
    reps = reps[np.isfinite(reps)]
    g = reps.size
    if g < 2 or not np.isfinite(estimate):
        return float("nan"), float("nan")
    variance = (g - 1) / g * float(((reps - reps.mean()) ** 2).sum())
    crit = float(stdtrit(g - 1, 0.5 + level / 2.0))
    half = crit * float(np.sqrt(variance))
    low, high = estimate - half, estimate + half
    if upper is not None:
        high = min(high, upper)
    return float(low), float(high)


@dataclass(frozen=True)
class RaterInterval:
    """An estimate with its rater-jackknife interval; ``n`` the units (items) it rests on and
    ``raters`` the raters."""

    estimate: float
    ci_low: float
    ci_high: float
    n: int
    raters: int

    def as_dict(self) -> dict[str, float | int | str | None]:
        def clean(x: float) -> float | None:
            return None if not np.isfinite(x) else float(x)

        return {
            "value": clean(self.estimate),
            "ci_low": clean(self.ci_low),
            "ci_high": clean(self.ci_high),
            "n": self.n,
            "n_raters": self.raters,
            "interval": "rater_jackknife",
        }


def rater_agreement_intervals(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    *,
    levels: tuple[str, ...],
    seed: int,
    groups: int = JACKKNIFE_GROUPS,
    level_ci: float = 0.95,
) -> dict[str, RaterInterval]:
    """Fleiss' kappa ("fleiss") and Krippendorff's alpha at each of ``levels``, each with its
    delete-a-group rater-jackknife interval (one set of replicates serves every coefficient)."""
    for name in levels:
        if name not in _LEVELS:
            raise ValueError(f"level must be one of {_LEVELS}, not {name!r}")
    units = RaterUnits.build(item, rater, value)
    full = units.coefficients(np.ones((1, units.n_raters)), levels)
    # Ratings per unit: Fleiss rests on the units rated at all, alpha on those rated twice.
    counts = np.asarray(units.unit_sum @ np.asarray(units.membership.sum(axis=1))).ravel()
    pairable, rated = int(np.count_nonzero(counts >= 2)), int(counts.size)
    jack = units.coefficients(jackknife_weights(units.n_raters, groups=groups, seed=seed), levels)
    out: dict[str, RaterInterval] = {}
    for key in full:
        estimate = float(full[key][0])
        low, high = jackknife_t_interval(estimate, jack[key], level=level_ci)
        out[key] = RaterInterval(
            estimate, low, high, rated if key == "fleiss" else pairable, units.n_raters
        )
    return out


def rater_bootstrap_interval(
    statistic: Callable[[FloatArray], FloatArray],
    n_raters: int,
    *,
    rounds: int,
    seed: int,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of ``statistic(weights)`` over rater bootstrap counts (for the
    coverage comparison; the exported intervals use the jackknife)."""
    from apps.analysis.stats.bootstrap import bootstrap_weighted_statistic

    return bootstrap_weighted_statistic(statistic, n_raters, rounds=rounds, seed=seed, level=level)


# --------------------------------------------------------------------------------------------
# Cohen's kappa over pairs of raters


@dataclass(frozen=True)
class PairKappas:
    """Cohen's kappa of every qualifying pair of raters (left < right, caller's indices)."""

    left: IntArray
    right: IntArray
    shared: IntArray  # items the pair shares
    kappa: dict[str, FloatArray]  # per weighting ("unweighted", "linear", "quadratic")
    min_shared: int
    candidate_pairs: int  # pairs sharing at least min_shared items (kappa defined or not)


_WEIGHTINGS = ("unweighted", "linear", "quadratic")


def _pair_weight(a: IntArray, b: IntArray, k: int, weighting: str) -> FloatArray:
    """Disagreement weight of category positions a and b (0 when equal, at most 1)."""
    diff = np.abs(a - b).astype(np.float64)
    if weighting == "unweighted":
        return (diff > 0).astype(np.float64)
    scale = max(k - 1, 1)
    return diff / scale if weighting == "linear" else (diff / scale) ** 2


def _expected_disagreement(rows: FloatArray, cols: FloatArray, weighting: str) -> FloatArray:
    """Per pair: sum_cd w_cd r_c s_d / n, with r, s the two raters' answer counts (n each);
    closed forms for plain and quadratic weights, so that a 101-point scale costs no k x k
    product per pair."""
    k = rows.shape[1]
    n = rows.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if weighting == "unweighted":
            return (n * n - (rows * cols).sum(axis=1)) / n
        x = np.arange(k, dtype=np.float64) / max(k - 1, 1)
        if weighting == "quadratic":
            r1, s1 = rows @ x, cols @ x
            return (n * (rows @ (x * x)) + n * (cols @ (x * x)) - 2.0 * r1 * s1) / n
        w = np.abs(x[:, None] - x[None, :])
        return ((rows @ w) * cols).sum(axis=1) / n


def pairwise_cohen_kappa(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    categories: np.ndarray,
    *,
    weightings: tuple[str, ...] = ("unweighted", "quadratic"),
    min_shared: int = MIN_SHARED_ITEMS,
) -> PairKappas:
    """Cohen's kappa, per weighting, for every pair of raters sharing >= ``min_shared`` items.

    A pair's kappa is :func:`apps.analysis.stats.agreement.cohen_kappa_table` on the k x k
    table of its shared items (k = len(categories); weights over category positions: plain,
    linear |i-j|/(k-1), quadratic ((i-j)/(k-1))^2). nan where it is undefined (both raters
    constant on their shared items, for instance).

    Vectorised: shared counts of all rater pairs are one sparse product (in blocks of raters,
    keeping only pairs that reach ``min_shared``); raters with fewer ratings than that are
    dropped first. For the qualifying pairs the shared items are read from the two raters'
    rows at once, and every pair's margins and disagreement are bincounts.
    """
    if min_shared < 1:
        raise ValueError("min_shared must be at least 1")
    item_a, rater_a, value_a = _long_form(item, rater, value)
    cats = np.asarray(categories, dtype=np.float64)
    k = len(cats)
    pos = np.searchsorted(cats, value_a)
    if value_a.size and (
        (pos >= k).any() or not np.array_equal(cats[np.minimum(pos, k - 1)], value_a)
    ):
        raise ValueError("rating values outside the given categories")
    empty = PairKappas(
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        {w: np.zeros(0) for w in weightings},
        min_shared,
        0,
    )
    per_rater = np.bincount(rater_a) if rater_a.size else np.zeros(0, np.int64)
    keep = per_rater[rater_a] >= min_shared if rater_a.size else np.zeros(0, bool)
    if not keep.any():
        return empty
    raters, col = np.unique(rater_a[keep], return_inverse=True)
    items, icol = np.unique(item_a[keep], return_inverse=True)
    code = pos[keep] + 1  # 1..k, 0 reserved for "not rated"
    shape = (len(raters), len(items))
    coded = sparse.csr_matrix((code.astype(np.float64), (col, icol)), shape=shape)
    rated = sparse.csr_matrix((np.ones(col.size), (col, icol)), shape=shape)
    # Qualifying pairs, a block of raters at a time (memory bounded by the block's pairs).
    lefts, rights, counts = [], [], []
    block = max(1, _BATCH_ELEMENTS // max(len(raters), 1))
    rated_t = rated.T.tocsc()
    for start in range(0, len(raters), block):
        shared = (rated[start : start + block] @ rated_t).tocoo()
        left = shared.row.astype(np.int64) + start
        ok = (shared.col > left) & (shared.data >= min_shared)
        lefts.append(left[ok])
        rights.append(shared.col[ok].astype(np.int64))
        counts.append(shared.data[ok].astype(np.int64))
    left = np.concatenate(lefts)
    right = np.concatenate(rights)
    n_shared = np.concatenate(counts)
    if left.size == 0:
        return empty
    order = np.lexsort((right, left))
    left, right, n_shared = left[order], right[order], n_shared[order]
    # Per pair: its raters' answer counts on the shared items (the table's margins) and the
    # observed disagreement of each weighting; pairs taken in chunks so that the shared-item
    # arrays stay bounded (and no k x k table per pair is held: scales may have 101 points).
    for weighting in weightings:
        if weighting not in _WEIGHTINGS:
            raise ValueError(f"weighting must be one of {_WEIGHTINGS}, not {weighting!r}")
    base = k + 1
    rows = np.zeros((left.size, k))
    cols = np.zeros((left.size, k))
    d_o = {weighting: np.zeros(left.size) for weighting in weightings}
    chunk_pairs = max(1, _BATCH_ELEMENTS // max(int(n_shared.max()), k, 1))
    for start in range(0, left.size, chunk_pairs):
        sl = slice(start, start + chunk_pairs)
        n_chunk = min(chunk_pairs, left.size - start)
        a = coded[left[sl]].multiply(rated[right[sl]])
        b = coded[right[sl]].multiply(rated[left[sl]])
        both = (a + base * b).tocoo()  # same pattern: the items both raters rated
        va = both.data.astype(np.int64) % base - 1
        vb = both.data.astype(np.int64) // base - 1
        pair = both.row.astype(np.int64)
        rows[sl] = np.bincount(pair * k + va, minlength=n_chunk * k).reshape(n_chunk, k)
        cols[sl] = np.bincount(pair * k + vb, minlength=n_chunk * k).reshape(n_chunk, k)
        for weighting in weightings:
            weight = _pair_weight(va, vb, k, weighting)
            d_o[weighting][sl] = np.bincount(pair, weights=weight, minlength=n_chunk)
    kappas: dict[str, FloatArray] = {}
    for weighting in weightings:
        # kappa = 1 - sum(w O) / sum(w E), E = outer(row margins, column margins) / n.
        d_e = _expected_disagreement(rows, cols, weighting)
        with np.errstate(invalid="ignore", divide="ignore"):
            kappa = 1.0 - d_o[weighting] / d_e
        kappas[weighting] = np.where(d_e > 1e-12, kappa, np.nan)
    return PairKappas(raters[left], raters[right], n_shared, kappas, min_shared, int(left.size))


def _by(label: IntArray, values: FloatArray, g: int) -> FloatArray:
    return np.bincount(label, weights=values, minlength=g).astype(np.float64)


@dataclass(frozen=True)
class MeanPairKappa:
    """The mean of Cohen's kappa over qualifying pairs of raters, with its rater-jackknife
    interval; nan (and ``pairs`` 0) when no pair qualifies."""

    estimate: float
    ci_low: float
    ci_high: float
    pairs: int  # pairs whose kappa counts (defined)
    raters: int  # raters in those pairs
    min_shared: int
    weighting: str

    def as_dict(self) -> dict[str, float | int | str | None]:
        def clean(x: float) -> float | None:
            return None if not np.isfinite(x) else float(x)

        return {
            "value": clean(self.estimate),
            "ci_low": clean(self.ci_low),
            "ci_high": clean(self.ci_high),
            "n_pairs": self.pairs,
            "n_raters": self.raters,
            "min_shared_items": self.min_shared,
            "weights": self.weighting,
            "interval": "rater_jackknife",
        }


def mean_pair_kappa_intervals(
    pairs: PairKappas,
    *,
    seed: int,
    groups: int = JACKKNIFE_GROUPS,
    level_ci: float = 0.95,
) -> dict[str, MeanPairKappa]:
    """Per weighting: the mean over pairs of raters, and its delete-a-group rater jackknife
    (a replicate drops every pair that has a rater of the left-out group)."""
    out: dict[str, MeanPairKappa] = {}
    for weighting, kappa in pairs.kappa.items():
        defined = np.isfinite(kappa)
        left, right, k = pairs.left[defined], pairs.right[defined], kappa[defined]
        if k.size == 0:
            out[weighting] = MeanPairKappa(
                float("nan"), float("nan"), float("nan"), 0, 0, pairs.min_shared, weighting
            )
            continue
        raters, idx = np.unique(np.concatenate([left, right]), return_inverse=True)
        estimate = float(k.mean())
        label, g = jackknife_groups(len(raters), groups=groups, seed=seed)
        reps = np.zeros(0)
        if g >= 2:
            # Replicate g keeps the pairs with neither rater in group g: all pairs, less those
            # touching g, plus those with both raters in g (subtracted twice).
            gl, gr = label[idx[: k.size]], label[idx[k.size :]]
            inside = gl == gr
            ones = np.ones(k.size)
            kept_sum = k.sum() - _by(gl, k, g) - _by(gr, k, g) + _by(gl[inside], k[inside], g)
            kept_n = k.size - _by(gl, ones, g) - _by(gr, ones, g) + _by(gl[inside], ones[inside], g)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps = np.where(kept_n > 0, kept_sum / kept_n, np.nan)
        low, high = jackknife_t_interval(estimate, reps, level=level_ci)
        out[weighting] = MeanPairKappa(
            estimate, low, high, int(k.size), len(raters), pairs.min_shared, weighting
        )
    return out


__all__ = [
    "JACKKNIFE_GROUPS",
    "MIN_SHARED_ITEMS",
    "MeanPairKappa",
    "PairKappas",
    "RaterInterval",
    "RaterUnits",
    "jackknife_groups",
    "jackknife_t_interval",
    "jackknife_weights",
    "mean_pair_kappa_intervals",
    "pairwise_cohen_kappa",
    "rater_agreement_intervals",
]
