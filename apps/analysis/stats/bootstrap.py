"""Bootstrap confidence intervals for means and proportions, plain or clustered by rater.

Public API
----------
``Interval``
    Frozen dataclass ``(estimate, ci_low, ci_high, n)``; nan where undefined (n == 0).
    ``Interval.as_dict()`` gives ``{"value", "ci_low", "ci_high", "n"}`` with nan -> None.
``mean_ci(values, *, clusters=None, rounds=1000, seed, level=0.95, method="percentile")``
    -> ``Interval``. ``method`` is ``"percentile"`` or ``"bca"``.
``proportion_ci(successes, *, clusters=None, rounds=1000, seed, level=0.95) -> Interval``
``grouped_mean_ci(values, groups, n_groups, *, clusters=None, rounds=1000, seed, level=0.95)``
    -> ``(estimate, ci_low, ci_high, n)``, arrays of length ``n_groups``.
``bootstrap_statistic(statistic, n_units, *, rounds=1000, seed, level=0.95)``
    -> ``(ci_low, ci_high)``: percentile interval of ``statistic(indices)`` over resampled units.
``SharedDraws(seed)``
    Rater resamples that two sections of one document read alike (``SharedDraws.source``),
    drawn once for both.

Conventions
-----------
* Percentile intervals (quantiles with linear interpolation, as ``scipy.stats.bootstrap``),
  1,000 rounds by default: with 1,000 rounds the Monte Carlo error of a 2.5% quantile is small
  next to the interval's width.
* ``clusters`` (one label per value, normally the rater) makes the bootstrap resample whole
  clusters: a lenient rater raises every score they give, so their values are not independent
  and resampling values one by one gives intervals that are too narrow
  (``benchmarks/sim_coverage.py``: 95% intervals for a mean cover 94% of the time with
  clusters and 62% without, when raters differ in leniency). The resampled statistic is then the ratio (sum of drawn clusters' values) /
  (number of drawn values), i.e. the mean of the pooled resample.
* Missing values (nan) are dropped together with their cluster labels; ``n`` counts the values
  used. Scorecards may legitimately skip a question.
* Every random draw comes from ``numpy.random.default_rng(seed)``, so equal inputs and seed give
  equal intervals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.special import ndtr, ndtri

from apps.analysis.stats.keys import distinct_pairs

# Random numbers drawn per batch of rounds: bounds memory at ~16 MB per work array.
_BATCH_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class Interval:
    estimate: float
    ci_low: float
    ci_high: float
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        def clean(x: float) -> float | None:
            return None if np.isnan(x) else float(x)

        return {
            "value": clean(self.estimate),
            "ci_low": clean(self.ci_low),
            "ci_high": clean(self.ci_high),
            "n": int(self.n),
        }


_EMPTY = Interval(estimate=float("nan"), ci_low=float("nan"), ci_high=float("nan"), n=0)


def _check_common(rounds: int, level: float) -> None:
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")


def _clean(
    values: np.ndarray, clusters: np.ndarray | None, *extra: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None, list[np.ndarray]]:
    """Drop nan values (and the matching cluster/extra entries); relabel clusters 0..C-1."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError("values must be a 1-D array")
    if np.any(np.isinf(v)):
        raise ValueError("values must not be infinite")
    # Nothing to drop (the usual case): the columns are used as they are, not copied.
    present = ~np.isnan(v)
    keep: np.ndarray | slice = slice(None) if present.all() else present
    others = []
    for arr in extra:
        a = np.asarray(arr)
        if a.shape != v.shape:
            raise ValueError("groups must have one entry per value")
        others.append(a[keep])
    cl: np.ndarray | None = None
    if clusters is not None:
        c = np.asarray(clusters)
        if c.shape != v.shape:
            raise ValueError("clusters must have one entry per value")
        cl = np.unique(c[keep], return_inverse=True)[1].astype(np.int64)
    return v[keep], cl, others


def _quantiles_rows(a: np.ndarray, qs: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Linear-interpolation quantiles of each row of ``a``, ignoring nan (all-nan row -> nan).

    Written out because ``np.nanquantile`` runs a 1-D routine row by row
    (``apply_along_axis``), too slow for thousands of groups. Rows are sorted a block at a time,
    so 50,000 items x 1,000 rounds need no second full-size copy.
    """
    n_rows = a.shape[0]
    out = (np.empty(n_rows), np.empty(n_rows))
    block = max(1, _BATCH_ELEMENTS // max(a.shape[1], 1))
    for first in range(0, n_rows, block):
        srt = np.sort(a[first : first + block], axis=1)  # nan sorts last
        m = (~np.isnan(srt)).sum(axis=1)
        rows = np.arange(srt.shape[0])
        for k, q in enumerate(qs):
            pos = q * np.maximum(m - 1, 0)
            lo = np.floor(pos).astype(np.int64)
            hi = np.minimum(lo + 1, np.maximum(m - 1, 0))
            frac = pos - lo
            val = srt[rows, lo] * (1.0 - frac) + srt[rows, hi] * frac
            out[k][first : first + block] = np.where(m > 0, val, np.nan)
    return out[0], out[1]


def _cluster_means(
    sums: np.ndarray, counts: np.ndarray, rounds: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap means from resampling the C clusters with replacement, ``rounds`` times."""
    n_clusters = sums.size
    chunk = max(1, _BATCH_ELEMENTS // n_clusters)
    out = np.empty(rounds)
    for start in range(0, rounds, chunk):
        r = min(chunk, rounds - start)
        idx = rng.integers(0, n_clusters, size=(r, n_clusters))
        out[start : start + r] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    return out


def _bca_bounds(
    boot: np.ndarray, estimate: float, jack: np.ndarray, level: float
) -> tuple[float, float]:
    """BCa quantile levels (Efron & Tibshirani 1993, sec. 14.3), computed as scipy does.

    ``jack`` holds the leave-one-unit-out estimates (units are clusters when clustered).
    """
    # z0 corrects median bias: the share of rounds below the estimate, ties counted half.
    share = ((boot < estimate).mean() + (boot <= estimate).mean()) / 2.0
    # An estimate outside every round would give z0 = +-inf; clip to half a round's share.
    half = 0.5 / boot.size
    share = min(max(share, half), 1.0 - half)
    z0 = float(ndtri(share))
    dev = jack.mean() - jack
    den = float((dev**2).sum())
    # The acceleration corrects for a standard error that changes with the parameter (skew).
    accel = float((dev**3).sum() / (6.0 * den**1.5)) if den > 0 else 0.0
    tail = (1.0 - level) / 2.0
    bounds = []
    for z_alpha in (float(ndtri(tail)), float(ndtri(1.0 - tail))):
        num = z0 + z_alpha
        bounds.append(float(ndtr(z0 + num / (1.0 - accel * num))))
    return bounds[0], bounds[1]


def mean_ci(
    values: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
    method: str = "percentile",
) -> Interval:
    """Bootstrap interval for a mean; resamples clusters (raters) when ``clusters`` is given.

    ``method="bca"`` (bias-corrected and accelerated) matters for skewed data and small n,
    e.g. a mean of a 1-7 funniness scale piled up at 1; its jackknife is over clusters when
    clustered. A single value or cluster gives the degenerate interval [estimate, estimate].
    """
    _check_common(rounds, level)
    if method not in ("percentile", "bca"):
        raise ValueError('method must be "percentile" or "bca"')
    v, cl, _ = _clean(values, clusters)
    if v.size == 0:
        return _EMPTY
    estimate = float(v.mean())
    rng = np.random.default_rng(seed)
    if cl is None:
        sums, counts = v, np.ones(v.size)
        boot = _grouped_boot_iid(
            v, np.zeros(v.size, dtype=np.int64), np.array([v.size]), rounds, rng
        )[0]
    else:
        sums = np.bincount(cl, weights=v)
        counts = np.bincount(cl).astype(np.float64)
        boot = _cluster_means(sums, counts, rounds, rng)
    tail = (1.0 - level) / 2.0
    if boot.min() == boot.max():
        return Interval(estimate, float(boot[0]), float(boot[0]), int(v.size))
    if method == "bca":
        jack = (sums.sum() - sums) / (counts.sum() - counts)
        q_low, q_high = _bca_bounds(boot, estimate, jack, level)
    else:
        q_low, q_high = tail, 1.0 - tail
    low, high = np.quantile(boot, [q_low, q_high])
    return Interval(estimate, float(low), float(high), int(v.size))


def _wilson(successes: float, n: float, level: float) -> tuple[float, float]:
    z = float(ndtri(1.0 - (1.0 - level) / 2.0))
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    # At 0 or n successes the bound is exactly 0 or 1; the formula leaves round-off.
    low = 0.0 if successes <= 0 else max(0.0, float(centre - half))
    high = 1.0 if successes >= n else min(1.0, float(centre + half))
    return low, high


def proportion_ci(
    successes: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
) -> Interval:
    """Bootstrap interval for a proportion (``mean_ci`` of 0/1 outcomes, percentile method).

    When every outcome is the same (15 of 15 raters spot the AI) the bootstrap distribution is
    a single point and the percentile interval would claim certainty, [1, 1]. Then, and only
    then, the Wilson score interval is returned instead, computed with n = the number of
    clusters when clustered (the conservative effective sample size when a rater's outcomes
    may all move together). nan entries are missing outcomes and are dropped.
    """
    arr = np.asarray(successes)
    as_float = arr.astype(np.float64)
    known = as_float[~np.isnan(as_float)]
    if np.any((known != 0.0) & (known != 1.0)):
        raise ValueError("successes must be 0/1 or boolean")
    result = mean_ci(as_float, clusters=clusters, rounds=rounds, seed=seed, level=level)
    if result.n == 0 or known.min() != known.max():
        return result
    _, cl, _ = _clean(as_float, clusters)
    n_eff = result.n if cl is None else int(cl.max()) + 1
    low, high = _wilson(result.estimate * n_eff, n_eff, level)
    return Interval(result.estimate, low, high, result.n)


def multiplicities(rng: np.random.Generator, n_units: int, r: int) -> np.ndarray:
    """(r, n_units) counts, as floats, of each unit in r resamples of n_units units drawn with
    replacement: each row is a Multinomial(n_units, 1/n_units) vector.

    Counted from index draws with one flat bincount: linear in the number of units, where
    numpy's multinomial runs one binomial per unit and round (with 75,000 one-grade raters,
    13 ms a round). Every bootstrap here that resamples raters or units draws through this, so
    the same seed gives the same resamples whichever statistic reads them.
    """
    idx = rng.integers(0, n_units, size=(r, n_units))
    idx += (np.arange(r, dtype=np.int64) * n_units)[:, None]
    return np.bincount(idx.ravel(), minlength=r * n_units).reshape(r, n_units).astype(np.float64)


# From this many clusters a round is counted on its own: its counts (8 bytes a cluster) stay in
# the processor's cache, where one count of every round at once scatters over r times as much.
_COUNT_BY_ROUND_FROM = 2_000


def cluster_draws(rng: np.random.Generator, n_clusters: int, r: int) -> np.ndarray:
    """(n_clusters, r) multiplicities of each cluster in r resamples, one column a round: the
    same counts as `multiplicities` from the same draws, counted straight into this layout.
    A sparse matrix multiplies only a C-ordered array: the transpose of `multiplicities` was
    copied into that order for every product."""
    idx = rng.integers(0, n_clusters, size=(r, n_clusters))
    if n_clusters >= _COUNT_BY_ROUND_FROM:
        # Each round's counts go into a row, then the rows are turned into columns in one
        # copy: written straight into a column, every count landed on its own cache line.
        by_round = np.empty((r, n_clusters), dtype=np.int64)
        for k in range(r):
            by_round[k] = np.bincount(idx[k], minlength=n_clusters)
        return by_round.T.astype(np.float64, order="C")
    idx *= r
    idx += np.arange(r, dtype=np.int64)[:, None]
    counts = np.bincount(idx.ravel(), minlength=n_clusters * r)
    return counts.reshape(n_clusters, r).astype(np.float64)


ClusterDraws = Callable[[int, int, int], np.ndarray]
"""``(n_clusters, first round, rounds)`` -> the ``(n_clusters, rounds)`` multiplicities of
those rounds, as ``cluster_draws`` gives them; a bootstrap asks for its rounds in order."""


def drawn_in_turn(rng: np.random.Generator) -> ClusterDraws:
    """Each batch drawn from ``rng`` when asked for: a bootstrap's own resamples."""
    return lambda n_clusters, first, r: cluster_draws(rng, n_clusters, r)


# What SharedDraws keeps at most for a reader that has not asked yet: 128 MB, eight batches of
# 75,000 raters (the crowd set's), the whole of a study with a few thousand.
_SHARED_BUDGET_BYTES = 128 * 2**20


class SharedDraws:
    """Rater resamples read by two bootstraps of one document (the study's k-rater ICC and its
    group tables, on the primary question): the same batch of rounds is drawn once, by
    whichever asks first, and kept until the other asks for it.

    Each batch comes from a generator of its own, seeded by the document's seed, the key, the
    number of clusters and the batch's rounds, so a batch is the same whoever draws it, in
    whatever thread and order: the document does not depend on the sharing, only its time
    does. Every column is a Multinomial(n, 1/n) resample of the n clusters, as
    ``cluster_draws`` gives it, and the batches are independent, so each reader's intervals
    are those of its own rater bootstrap; the two read the same resampled raters, as the
    groupings of ``grouped_mean_ci_many`` already do among themselves.

    A batch is kept for ``readers`` - 1 more reads and within ``budget`` bytes; beyond that it
    is not kept, and a later reader draws it again (the same numbers). A reader that asks for a
    batch another is drawing waits for it: drawing takes milliseconds and always finishes.
    Batches are read-only, since both readers hold them.
    """

    def __init__(self, seed: int, *, readers: int = 2, budget: int = _SHARED_BUDGET_BYTES) -> None:
        self._seed = seed
        self._readers = readers
        self._budget = budget
        self._held = 0
        self._lock = threading.Lock()
        # (key, clusters, first round, rounds) -> (the batch, to come or drawn; reads left;
        # its bytes)
        self._batches: dict[tuple[int, int, int, int], tuple[Future[np.ndarray], int, int]] = {}

    def source(self, key: int) -> ClusterDraws:
        """The draws of one set of resamples (for instance, one question's)."""
        return lambda n_clusters, first, r: self.batch(key, n_clusters, first, r)

    def batch(self, key: int, n_clusters: int, first: int, r: int) -> np.ndarray:
        name = (key, n_clusters, first, r)
        with self._lock:
            found = self._batches.pop(name, None)
            if found is not None:
                future, left, size = found
                if left > 1:
                    self._batches[name] = (future, left - 1, size)
                else:
                    self._held -= size
            else:
                future = Future()
                size = 8 * n_clusters * r
                if self._readers > 1 and self._held + size <= self._budget:
                    self._batches[name] = (future, self._readers - 1, size)
                    self._held += size
        if found is not None:
            return future.result()
        try:
            rng = np.random.default_rng([self._seed, key, n_clusters, first, r])
            drawn = cluster_draws(rng, n_clusters, r)
        except BaseException as exc:  # a reader waiting for it gets the error, not a hang
            future.set_exception(exc)
            raise
        drawn.flags.writeable = False
        future.set_result(drawn)
        return drawn


def _grouped_boot_clustered(
    v: np.ndarray,
    g: np.ndarray | list[np.ndarray],
    cl: np.ndarray,
    n_groups: int | list[int],
    rounds: int,
    resamples: ClusterDraws,
) -> np.ndarray:
    """(total groups, rounds) resampled group means; with several groupings (lists), their
    groups are stacked in order and every grouping sees the same resampled raters.

    A grouping equal to an earlier one (every dimension with one group, such as a study of one
    model, groups all ratings alike) takes that one's rows: its products would be the same."""
    gs = g if isinstance(g, list) else [g]
    sizes = n_groups if isinstance(n_groups, list) else [n_groups]
    first: list[int] = []  # per grouping, the first grouping equal to it
    for i, (gd, size) in enumerate(zip(gs, sizes, strict=True)):
        equal = (
            j for j in range(i) if first[j] == j and sizes[j] == size and np.array_equal(gs[j], gd)
        )
        first.append(next(equal, i))
    distinct = [i for i, j in enumerate(first) if i == j]
    boot = _clustered_group_means(
        v, [gs[j] for j in distinct], cl, [sizes[j] for j in distinct], rounds, resamples
    )
    if len(distinct) == len(gs):
        return boot
    start = dict(zip(distinct, np.cumsum([0] + [sizes[j] for j in distinct]), strict=False))
    return np.concatenate([boot[start[j] : start[j] + sizes[j]] for j in first])


def _clustered_group_means(
    v: np.ndarray,
    gs: list[np.ndarray],
    cl: np.ndarray,
    sizes: list[int],
    rounds: int,
    resamples: ClusterDraws,
) -> np.ndarray:
    """``_grouped_boot_clustered`` of distinct groupings."""
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    total = int(sum(sizes))
    n_clusters = int(cl.max()) + 1
    # One sparse (2G x C) matrix of per-(group, cluster) sums stacked over counts: a round is
    # one product with that round's cluster multiplicities, so raters are resampled jointly
    # across groups at the cost of one sparse-dense product per batch of rounds. It is built
    # from one entry per (group, cluster) cell, each grouping in turn: built from the ratings
    # themselves it held every rating twice per grouping (640 MB for a million ratings).
    cell_rows, cell_cols, cell_sums, cell_counts = [], [], [], []
    for gd, off in zip(gs, offsets, strict=True):
        cells, inverse = np.unique(gd * n_clusters + cl, return_inverse=True)
        cell_sums.append(np.bincount(inverse, weights=v, minlength=cells.size))
        cell_counts.append(np.bincount(inverse, minlength=cells.size).astype(np.float64))
        cell_rows.append(cells // n_clusters + off)
        cell_cols.append(cells % n_clusters)
    rows = np.concatenate(cell_rows)
    stacked = sparse.csr_matrix(
        (
            np.concatenate([*cell_sums, *cell_counts]),
            (np.concatenate([rows, rows + total]), np.tile(np.concatenate(cell_cols), 2)),
        ),
        shape=(2 * total, n_clusters),
    )
    out = np.empty((total, rounds))
    chunk = max(1, _BATCH_ELEMENTS // max(n_clusters, total))
    for start in range(0, rounds, chunk):
        r = min(chunk, rounds - start)
        prod = np.asarray(stacked @ resamples(n_clusters, start, r))
        with np.errstate(invalid="ignore", divide="ignore"):
            # A round that draws none of a group's raters has no mean for it (nan, skipped).
            out[:, start : start + r] = prod[:total] / np.where(
                prod[total:] > 0, prod[total:], np.nan
            )
    return out


def _grouped_boot_iid(
    v: np.ndarray, g: np.ndarray, n: np.ndarray, rounds: int, rng: np.random.Generator
) -> np.ndarray:
    """Ordinary bootstrap within each group (stratified: every group keeps its own n)."""
    n_groups = n.size
    out = np.full((n_groups, rounds), np.nan)
    pairs, counts = np.unique(np.stack([g, v]), axis=1, return_counts=True)
    pg, pv = pairs[0].astype(np.int64), pairs[1]
    distinct = np.bincount(pg, minlength=n_groups)
    width = int(distinct.max())
    nonempty = np.flatnonzero(n > 0)
    if 3 * nonempty.size * width <= v.size:
        # Few distinct values per group (rating scales have 5 or 7): a group's resample is a
        # multinomial draw of its n over its distinct values, exact and O(groups x values).
        first = np.concatenate([[0], np.cumsum(distinct)[:-1]])
        slot = np.arange(pg.size) - first[pg]
        probs = np.zeros((n_groups, width))
        vals = np.zeros((n_groups, width))
        probs[pg, slot] = counts / n[pg]
        vals[pg, slot] = pv
        probs, vals, n_ne = probs[nonempty], vals[nonempty], n[nonempty]
        last = distinct[nonempty] - 1
        chunk = max(1, _BATCH_ELEMENTS // nonempty.size)
        for start in range(0, rounds, chunk):
            r = min(chunk, rounds - start)
            # The multinomial as a chain of conditional binomials, one value slot at a time
            # across all groups and rounds (numpy's own multinomial loops per group in C but
            # is ~5x slower here). A group's last value takes whatever count remains.
            left_n = np.broadcast_to(n_ne, (r, nonempty.size)).copy()
            left_p = np.ones(nonempty.size)
            total = np.zeros((r, nonempty.size))
            for k in range(width):
                with np.errstate(invalid="ignore", divide="ignore"):
                    cond = np.clip(probs[:, k] / left_p, 0.0, 1.0)
                cond = np.where(k == last, 1.0, np.where(k > last, 0.0, cond))
                x = rng.binomial(left_n, cond)
                total += x * vals[:, k]
                left_n -= x
                left_p = left_p - probs[:, k]
            out[nonempty, start : start + r] = (total / n_ne).T
        return out
    # Mostly distinct (continuous) values: draw indices within each group's block directly.
    order = np.argsort(g, kind="stable")
    sv, sg = v[order], g[order]
    starts = np.concatenate([[0], np.cumsum(n)[:-1]])
    base, size = starts[sg], n[sg].astype(np.float64)
    block_starts = starts[nonempty]
    chunk = max(1, _BATCH_ELEMENTS // v.size)
    for start in range(0, rounds, chunk):
        r = min(chunk, rounds - start)
        idx = base + (rng.random((r, v.size)) * size).astype(np.int64)
        sums = np.add.reduceat(sv[idx], block_starts, axis=1)
        out[nonempty, start : start + r] = (sums / n[nonempty]).T
    return out


def grouped_mean_ci(
    values: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    clusters: np.ndarray | None = None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Means and percentile intervals for many groups (e.g. every item) at once.

    Returns ``(estimate, ci_low, ci_high, n)``, each of length ``n_groups``; groups without
    values get nan and n = 0.

    Without ``clusters`` each group is bootstrapped on its own with its own n (the ordinary
    bootstrap of that group), vectorized across groups: by multinomial draws over each group's
    distinct values when those are few (rating scales), else by index draws within each group.
    With ``clusters`` the clusters (raters) are resampled jointly across all groups, as one
    rater's judgments of different items belong to one resampling unit; per group this is the
    ratio (sum of drawn values) / (number of drawn values), which for a group whose raters
    each gave one value is, to first order, the ordinary bootstrap of that group (the number
    of its raters drawn varies a little from round to round). Rounds that draw none of a
    group's raters are skipped for that group.
    """
    _check_common(rounds, level)
    if n_groups < 0:
        raise ValueError("n_groups must be >= 0")
    v, cl, (g_raw,) = _clean(values, clusters, groups)
    if g_raw.size and not np.issubdtype(g_raw.dtype, np.integer):
        raise ValueError("groups must be integer group indices")
    g = g_raw.astype(np.int64)
    if g.size and (g.min() < 0 or g.max() >= n_groups):
        raise ValueError("group index out of range [0, n_groups)")
    n = np.bincount(g, minlength=n_groups)
    sums = np.bincount(g, weights=v, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(n > 0, sums / np.maximum(n, 1), np.nan)
    if v.size == 0:
        nan = np.full(n_groups, np.nan)
        return estimate, nan, nan.copy(), n
    rng = np.random.default_rng(seed)
    if cl is None:
        boot = _grouped_boot_iid(v, g, n, rounds, rng)
    else:
        boot = _grouped_boot_clustered(v, g, cl, n_groups, rounds, drawn_in_turn(rng))
    tail = (1.0 - level) / 2.0
    low, high = _quantiles_rows(boot, (tail, 1.0 - tail))
    return estimate, low, high, n


GroupStats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def grouped_mean_ci_many(
    values: np.ndarray,
    groupings: list[tuple[np.ndarray, int]],
    *,
    clusters: np.ndarray,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
    resamples: ClusterDraws | None = None,
) -> list[GroupStats]:
    """:func:`grouped_mean_ci` with clusters for several groupings of the same values at once
    (per model, per level, per humor type, ...): one resample of the raters per round serves
    every grouping, so each grouping's intervals are those of a rater-clustered bootstrap, and
    the raters are drawn once instead of once per grouping.

    ``resamples``: where the raters' resamples come from (``SharedDraws.source``, to read them
    with another bootstrap of the same raters); by default they are drawn from ``seed``.

    ``groupings`` holds (group index of each value, number of groups) pairs; returns one
    ``(estimate, ci_low, ci_high, n)`` per grouping, in order.
    """
    _check_common(rounds, level)
    if not groupings:
        return []
    v, cl, raw = _clean(values, clusters, *(groups for groups, _ in groupings))
    sizes = [int(n_groups) for _, n_groups in groupings]
    gs = []
    for g_raw, n_groups in zip(raw, sizes, strict=True):
        if g_raw.size and not np.issubdtype(g_raw.dtype, np.integer):
            raise ValueError("groups must be integer group indices")
        g = g_raw.astype(np.int64)
        if g.size and (g.min() < 0 or g.max() >= n_groups):
            raise ValueError("group index out of range [0, n_groups)")
        gs.append(g)
    results: list[GroupStats] = []
    estimates = []
    for g, n_groups in zip(gs, sizes, strict=True):
        n = np.bincount(g, minlength=n_groups)
        sums = np.bincount(g, weights=v, minlength=n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            estimates.append((np.where(n > 0, sums / np.maximum(n, 1), np.nan), n))
    if v.size == 0 or cl is None:
        for estimate, n in estimates:
            nan = np.full(n.size, np.nan)
            results.append((estimate, nan, nan.copy(), n))
        return results
    boot = _grouped_boot_clustered(
        v, gs, cl, sizes, rounds, resamples or drawn_in_turn(np.random.default_rng(seed))
    )
    tail = (1.0 - level) / 2.0
    low, high = _quantiles_rows(boot, (tail, 1.0 - tail))
    start = 0
    for (estimate, n), size in zip(estimates, sizes, strict=True):
        results.append((estimate, low[start : start + size], high[start : start + size], n))
        start += size
    return results


def bootstrap_statistic(
    statistic: Callable[[np.ndarray], float],
    n_units: int,
    *,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of ``statistic(idx)``, ``idx`` = n_units unit indices drawn with
    replacement (e.g. items, for kappa/alpha). Rounds where the statistic is nan (undefined on
    that resample, e.g. no variation) are skipped; (nan, nan) if every round is.
    """
    _check_common(rounds, level)
    if n_units < 1:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    stats = np.array(
        [float(statistic(rng.integers(0, n_units, size=n_units))) for _ in range(rounds)]
    )
    stats = stats[~np.isnan(stats)]
    if stats.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_weights(
    n_units: int, *, rounds: int = 1000, seed: int, chunk: int | None = None
) -> Iterator[np.ndarray]:
    """Batches of (r, n_units) resampling weights: how often each unit was drawn in a round.

    The draws are those of :func:`bootstrap_statistic` with the same seed (numpy fills one
    (r, n) array of integers exactly as r calls of n), so a statistic written over weights
    gives the same interval, computed for a whole batch of rounds at once.
    """
    rng = np.random.default_rng(seed)
    size = chunk or max(1, _BATCH_ELEMENTS // max(n_units, 1))
    for start in range(0, rounds, size):
        yield multiplicities(rng, n_units, min(size, rounds - start))


def bootstrap_weighted_statistic(
    statistic: Callable[[np.ndarray], np.ndarray],
    n_units: int,
    *,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
) -> tuple[float, float]:
    """:func:`bootstrap_statistic` for a statistic of unit weights, a batch of rounds a call.

    ``statistic(weights)`` takes an (r, n_units) array of draw counts and returns the r
    statistics (nan where undefined). Same draws, so the same interval as
    ``bootstrap_statistic(lambda idx: statistic(bincount(idx)[None])[0], ...)``.
    """
    _check_common(rounds, level)
    if n_units < 1:
        return float("nan"), float("nan")
    stats = np.concatenate(
        [
            np.asarray(statistic(w), dtype=np.float64)
            for w in bootstrap_weights(n_units, rounds=rounds, seed=seed)
        ]
    )
    stats = stats[~np.isnan(stats)]
    if stats.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [tail, 1.0 - tail])
    return float(low), float(high)


def grouped_proportion_ci(
    successes: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    clusters: np.ndarray | None = None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`grouped_mean_ci` for 0/1 outcomes, with proportion_ci's rule for unanimous groups.

    A group whose outcomes are all equal (an item every rater judged correctly) would get the
    degenerate percentile interval [1, 1]; such groups get the Wilson score interval instead,
    with n = the group's number of outcomes (or of distinct clusters, when clustered).
    """
    values = np.asarray(successes, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    estimate, low, high, n = grouped_mean_ci(
        values, g, n_groups, clusters=clusters, rounds=rounds, seed=seed, level=level
    )
    if values.size == 0:
        return estimate, low, high, n
    ones = np.bincount(g, weights=values, minlength=n_groups)
    unanimous = (n > 0) & ((ones == 0) | (ones == n))
    if clusters is not None:
        pairs = distinct_pairs(g, np.asarray(clusters, dtype=np.int64))
        n_eff = np.bincount(pairs[0], minlength=n_groups)
    else:
        n_eff = n
    for k in np.flatnonzero(unanimous):
        share = ones[k] / n[k]
        low[k], high[k] = _wilson(share * n_eff[k], float(n_eff[k]), level)
    return estimate, low, high, n
