"""Reliability of the board: would running the study again give the same order?

Two standard answers, as pure statistics over one kind of judgment at a time.

Public API
----------
``MIN_RATERS`` (4), ``MIN_ITEMS`` (3), ``MIN_EMPIRICAL_ITEMS`` (10), ``DEFAULT_KS`` (1, 3, 5,
10, 15, 20), ``INTERVALS`` ("percentile", "expanded")
``SplitHalf``
    Frozen dataclass: ``kind`` ("pairs" | "scores"), ``mean``, ``median``, ``q025``, ``q975``,
    ``n_splits_used``, ``n_items_mean``, ``spearman_brown``, ``reason``, ``splits``, ``seed``,
    ``n_raters``. ``as_dict()`` gives the same fields as a plain dict.
``split_half_ranking_pairs(left, right, winner_is_left, rater, n_items, *, splits=200, seed,
min_items=MIN_ITEMS, alpha=DEFAULT_ALPHA) -> SplitHalf``
    Pair judgments: Bradley-Terry (``bt_fit``) on each half of the raters.
``split_half_ranking_scores(item, rater, value, n_items, *, splits=200, seed,
min_items=MIN_ITEMS) -> SplitHalf``
    Scorecard answers to one question: item means of each half's raters.
``KRater``
    Frozen dataclass for one k: ``k``, ``value`` (ICC(1,k)), ``ci_low``, ``ci_high``,
    ``empirical`` (Wong & Paritosh's k-rater reliability, or None), ``empirical_items``.
``KRaterReliability``
    Frozen dataclass: ``icc`` (ICC(1)), ``icc_ci_low``, ``icc_ci_high``, ``k_mean`` (mean
    ratings per item), ``at_mean`` (``KRater`` at ``k_mean``), ``by_k`` (tuple of ``KRater``,
    one per k of ``ks``), ``k0``, ``ms_between``, ``ms_within``, ``n_items``, ``n_raters``,
    ``n_ratings``, ``rounds``, ``failed_rounds``, ``seed``, ``level``, ``interval``, ``draws``,
    ``reason``. ``as_dict()`` gives the same fields as plain dicts and lists.
``k_rater_reliability(item, rater, value, n_items, *, ks=DEFAULT_KS, rounds=1000, seed,
level=0.95, interval="expanded", draws=200, empirical_min_items=MIN_EMPIRICAL_ITEMS)
-> KRaterReliability``
``spearman_brown(icc, k) -> float``
    k * icc / (1 + (k - 1) * icc).
``GroupReliability``
    Frozen dataclass: ``group``, ``n_items``, ``pairs`` (``SplitHalf`` or None), ``scores``
    (``SplitHalf`` or None), ``k_rater`` (``KRaterReliability`` or None).
``by_group(item_group, *, scores=None, pairs=None, splits=200, rounds=1000, seed,
ks=DEFAULT_KS, level=0.95, interval="expanded", draws=200, min_items=MIN_ITEMS,
alpha=DEFAULT_ALPHA) -> dict[str, GroupReliability]``
    Both statistics for the items of each group code (e.g. the model that wrote the item).
    ``scores`` is ``(item, rater, value)`` of one question, ``pairs`` is ``(left, right,
    winner_is_left, rater)``. A single code for every item gives the study as a whole;
    ``whole=LABEL`` adds the study beside its groups, and then the groups' empirical k-rater
    reliability is read from the study's random orders of each item's ratings (the rest of
    each group's numbers are those of its answers alone).

Items and raters are integer indices (as in ``StudyInputs``); values are floats, and a nan
value (an unanswered question) is dropped. One rating per (rater, item) and question.

Split-half ranking correlation
------------------------------
The raters who gave judgments of the kind at hand are dealt at random into two halves (a
random permutation; the first floor(n / 2) raters form half A, the rest half B, so with an odd
number of raters B has one more), stratified by nothing: not by background group, activity or
the items a rater saw. Each half's raters give their own board (Bradley-Terry scores, or item
means), and the two boards are compared by Spearman's rank correlation (average ranks for ties)
over the items that have data in both halves. This is repeated ``splits`` times with
independent random splits (``numpy.random.default_rng(seed)``).

``mean`` and ``median`` summarise the correlations over the random splits, and ``q025`` /
``q975`` are their 2.5% and 97.5% quantiles. This is the distribution of the statistic over
the ways *these* raters could have been halved: how much the answer depends on the arbitrary
split, for this data. It is not a confidence interval for any population quantity (all splits
reuse the same judgments, and the raters are not resampled). ``spearman_brown`` is the
Spearman-Brown step-up of the mean, 2 r / (1 + r): the conventional estimate of the correlation
the full-data board would have with another full-size board of raters like these (each half
has half the raters). For a rank correlation of two model fits the step-up is an
approximation (it is exact for the Pearson correlation of averages of parallel measures); a
negative mean gives a negative step-up, which means "no reliability beyond chance".

Pairs and connected components: Bradley-Terry scores are comparable only within a connected
component of a fit's comparison graph (``bradley_terry`` module docstring), and LaughLab pairs
items only within a topic, so a study's graph is usually one component per topic. Items
compared in both halves are therefore grouped by (component in half A, component in half B);
Spearman's rho is computed within each group of at least 3 items (two items give only +-1) and
the groups' correlations are averaged with weights equal to their numbers of items (each item
counts once). With a connected design this is the plain Spearman correlation. Groups whose
scores are constant in a half (rho undefined) are left out. ``n_items_mean`` counts the items
that entered a split's correlation, averaged over the splits used.

Cost: two Bradley-Terry fits per split (each warm-started at the full-data fit). On the
benchmarks' full-size study (2,000 items in topics of 20, 100,000 pairs, 600 raters) 200
splits took 17-22 s on the 2-core build machine (``benchmarks/sim_reliability.py``), the
per-component Newton loop of ``bt_fit`` being most of it; item means of 49,000 answers took
0.7 s.

A split is used when at least ``min_items`` items enter its correlation and the correlation is
defined. The result is undefined (every number None, ``reason`` set) when fewer than
``MIN_RATERS`` raters gave judgments ("too_few_raters"), or when fewer than half of the splits
are usable ("too_few_items" when they lacked common items, "no_variation" when the boards were
constant): a summary of a small, selected subset of the splits would not describe the split
distribution.

k-rater reliability
-------------------
Single-rater reliability is ICC(1) of the one-way random-effects ANOVA (Shrout & Fleiss 1979,
"Intraclass correlations: uses in assessing rater reliability", Psychol. Bull. 86:420; case 1:
each item rated by its own raters) for unbalanced data:
``ICC(1) = (MSB - MSW) / (MSB + (k0 - 1) MSW)`` with MSB and MSW the between- and within-item
mean squares over the n items with at least one rating (N ratings, n_i per item) and
``k0 = (N - sum n_i^2 / N) / (n - 1)`` the ANOVA's effective number of ratings per item (equal
to k in a balanced design). The k-rater reliability is the Spearman-Brown step-up
``ICC(1,k) = k ICC / (1 + (k - 1) ICC)``, reported at the study's mean number of ratings per
item (``k_mean = N / n``) and at each k in ``ks``. In a balanced design ICC(1,k) at k = k0 is
Shrout and Fleiss's ICC(1,k) = (MSB - MSW) / MSB.

The one-way model counts rater leniency as error: the reliability is of absolute scores, as
LaughLab uses them (items are rated by different raters, so a lenient rater's scores are not
cancelled by design). When the same raters rate every item and differ in leniency, ICC(1)
underestimates the reliability of a fixed panel's item means. The ANOVA estimate of ICC(1) can
be negative (MSB < MSW: no detectable difference between items) and is reported as it is;
ICC(1,k) is computed from the ICC truncated at 0, because a variance ratio cannot be negative
and the step-up of a negative ICC is not a reliability (it can leave [-1, 1]).

Estimand of the interval: the reliability of the mean of k random raters' scores of *these*
items, for raters like these, i.e. k s2_u / (k s2_u + s2_e) with s2_u the variance of these
items' population mean scores and s2_e the variance of one rating around its item's mean over
raters in general. The items are fixed; the raters are the sample. The interval resamples
raters with replacement (``rounds`` times; a rater drawn m times counts m times, with all of
their ratings) and recomputes ICC(1) from the resampled ratings (an item no drawn rater rated
drops out of that round). Rounds in which the ICC is undefined (fewer than 2 items or zero
variance in the resample) are counted in ``failed_rounds`` and left out of the quantiles.
Because Spearman-Brown is increasing in the ICC, the ICC(1,k) interval is the step-up of the
ICC interval's ends (percentile intervals follow monotone maps), so every k has the same
coverage.

Centring the bootstrap. Resampling the raw ratings is biased for this statistic: the observed
item means already hold the rating noise once (their spread is s2_u + s2_e / n_i), and the
resample adds it a second time, while a rater drawn twice agrees with themself and shrinks the
within-item spread; the bootstrap ICCs then sit one to two standard errors above the estimate
and the plain percentile interval covered the planted value in only 56-85% of studies. So before
resampling, the ratings are moved to a population with the fitted variance components: item
means are pulled toward the grand mean by sqrt((MSB - MSW) / MSB) (their weighted spread then
equals the estimated k0 s2_u; 0 when MSB <= MSW) and each rating's deviation from its item
mean is scaled by sqrt(n_i / (n_i - 1)) (the bootstrap's plug-in variance then equals the
unbiased one), as the residual rescaling of Carpenter, Goldstein & Rasbash (2003, JRSS C 52:431)
does for multilevel models. Each rater's ratings are moved together, so rater leniency stays
clustered by rater. The point estimate is always from the raw ratings.

``interval="expanded"`` (default) is the expanded percentile interval of Hesterberg (2015, Am.
Stat. 69:371; as ``bt_bootstrap``: the tail where a normal quantile equals
sqrt(G / (G - 1)) t_{G-1}, G = raters), ``interval="percentile"`` the plain percentiles. In
``benchmarks/sim_reliability.py`` (400 studies per scenario, planted variances) the expanded
interval covered 94.0%, 95.5%, 92.7% and 87.5% against 93.8%, 95.3%, 91.0% and 84.3% for the
plain one, for 1-10% more width: it is never worse, hence the default. The last scenario
(20 raters who each rate 80% of the items and differ in leniency) is the one-way model's known
weakness: raters shared across items make ICC(1) biased low (mean 0.119 for a planted 0.132),
which no resampling repairs. See "Reliability of the board" in ``benchmarks/README.md``.

Empirical k-rater reliability (Wong & Paritosh 2022, "k-Rater Reliability: The Correct Unit of
Reliability for Aggregated Human Annotations", ACL): per draw, each item with at least 2k
ratings gets two disjoint random sets of k of its raters, and the Pearson correlation across
those items of the two sets' means is taken; ``empirical`` is the mean over ``draws`` draws
(None when fewer than ``empirical_min_items`` items have 2k ratings: a correlation over a
handful of items says little). Raters are drawn per item, as in
the one-way model, so in expectation the correlation of two independent k-rater means is
exactly ICC(1,k): a model-free cross-check of the Spearman-Brown prediction, on the subset of
items with 2k ratings (``empirical_items``).

Undefined cases (all numbers None, ``reason`` set): fewer than ``MIN_RATERS`` raters
("too_few_raters"), fewer than 2 rated items ("too_few_items"), fewer than 2 ratings per item
on average ("too_few_ratings_per_item"), no within-item degrees of freedom or no variance
("zero_variance").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import ndtr, stdtrit

from apps.analysis.stats.bootstrap import ClusterDraws, drawn_in_turn
from apps.analysis.stats.bradley_terry import DEFAULT_ALPHA, _newton, bt_fit
from apps.analysis.stats.keys import has_repeated_pairs

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MIN_RATERS = 4
MIN_ITEMS = 3
MIN_EMPIRICAL_ITEMS = 10
DEFAULT_KS = (1, 3, 5, 10, 15, 20)
INTERVALS = ("percentile", "expanded")
# A split-half summary needs at least this share of the splits to be usable.
_MIN_USED_SHARE = 0.5
# Spearman's rho of two items is +-1 whatever the data: a component group needs three.
_MIN_GROUP = 3
# Bradley-Terry fits of a half only feed ranks: a largest step of 1e-6 log-strength units
# changes no order that the data can tell apart, and saves the last Newton iteration.
_TOL = 1e-6
# Elements per batched work array: the split-half fits' (halves x k x k) wins, the bootstrap's
# (items x rounds) arrays, the empirical draws' shuffled tables; ~16 MB each.
_BATCH_ELEMENTS = 2_000_000
# A variance below this share of the sum of squares is rounding noise of a constant.
_FLAT = 1e-10


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitHalf:
    kind: str
    mean: float | None
    median: float | None
    q025: float | None
    q975: float | None
    n_splits_used: int
    n_items_mean: float | None
    spearman_brown: float | None
    reason: str | None
    splits: int
    seed: int
    n_raters: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KRater:
    k: float
    value: float | None
    ci_low: float | None
    ci_high: float | None
    empirical: float | None
    empirical_items: int


@dataclass(frozen=True)
class KRaterReliability:
    icc: float | None
    icc_ci_low: float | None
    icc_ci_high: float | None
    k_mean: float | None
    at_mean: KRater | None
    by_k: tuple[KRater, ...]
    k0: float | None
    ms_between: float | None
    ms_within: float | None
    n_items: int
    n_raters: int
    n_ratings: int
    rounds: int
    failed_rounds: int
    seed: int
    level: float
    interval: str
    draws: int
    reason: str | None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["by_k"] = list(out["by_k"])
        return out


@dataclass(frozen=True)
class GroupReliability:
    group: str
    n_items: int
    pairs: SplitHalf | None
    scores: SplitHalf | None
    k_rater: KRaterReliability | None


# ---------------------------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------------------------


def _index_array(a: np.ndarray, name: str) -> IntArray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer indices")
    return arr.astype(np.int64, copy=False)


def _ratings(
    item: np.ndarray, rater: np.ndarray, value: np.ndarray, n_items: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """Checked long-form ratings without nan values; raters relabelled 0..R-1."""
    it = _index_array(item, "item")
    ra = _index_array(rater, "rater")
    va = np.asarray(value, dtype=np.float64)
    if not (it.shape == ra.shape == va.shape):
        raise ValueError("item, rater and value must have the same length")
    if n_items < 0:
        raise ValueError("n_items must be >= 0")
    keep = ~np.isnan(va)
    it, ra, va = it[keep], ra[keep], va[keep]
    if not np.all(np.isfinite(va)):
        raise ValueError("values must be finite (nan marks a missing answer)")
    if it.size and (it.min() < 0 or it.max() >= n_items):
        raise ValueError("item index out of range [0, n_items)")
    ra = _relabelled(ra)
    if has_repeated_pairs(it, ra):
        raise ValueError("a rater rated an item more than once; one rating per rater and item")
    return it, ra, va


def _relabelled(ra: IntArray) -> IntArray:
    """Raters numbered 0..R-1 in the order of their labels (``np.unique``'s inverse)."""
    if ra.size and ra.min() >= 0 and ra.max() < 4 * ra.size + 1024:
        # Indices as StudyInputs numbers them: a count per label is a linear-time unique.
        present = np.bincount(ra) > 0
        return (np.cumsum(present) - 1)[ra]
    _, inverse = np.unique(ra, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1)


def _check_split_args(splits: int, min_items: int) -> None:
    if splits < 1:
        raise ValueError("splits must be >= 1")
    if min_items < _MIN_GROUP:
        raise ValueError(f"min_items must be >= {_MIN_GROUP}")


# ---------------------------------------------------------------------------------------------
# Split-half ranking correlation
# ---------------------------------------------------------------------------------------------


def _group_ranks(groups: IntArray, values: FloatArray, n_groups: int) -> FloatArray:
    """Average ranks (ties share their mean rank) of ``values`` within each group, centred on
    the group's mean rank."""
    # One group (the scores' correlation): a stable sort of the values is the same order.
    order = np.argsort(values, kind="stable") if n_groups == 1 else np.lexsort((values, groups))
    g, v = groups[order], values[order]
    new_run = np.ones(g.size, dtype=bool)
    new_run[1:] = (g[1:] != g[:-1]) | (v[1:] != v[:-1])
    run = np.cumsum(new_run) - 1
    position = np.arange(g.size, dtype=np.float64)
    run_pos = np.bincount(run, weights=position) / np.bincount(run)
    group_pos = np.bincount(g, weights=position, minlength=n_groups) / np.maximum(
        np.bincount(g, minlength=n_groups), 1
    )
    centred = np.empty(g.size)
    centred[order] = run_pos[run] - group_pos[g]
    return centred


def _grouped_spearman(
    a: FloatArray, b: FloatArray, groups: IntArray, min_items: int
) -> tuple[float, int, str | None]:
    """Item-weighted mean of the within-group Spearman correlations of ``a`` and ``b``.

    Groups of fewer than ``_MIN_GROUP`` items, and groups where either side is constant, are
    left out. Returns (rho, items used, reason the split is unusable or None).
    """
    if a.size < min_items:
        return float("nan"), 0, "too_few_items"
    labels, groups, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    n_groups = labels.size
    keep = (sizes >= _MIN_GROUP)[groups]
    if int(keep.sum()) < min_items:
        return float("nan"), 0, "too_few_items"
    groups, a, b = groups[keep], a[keep], b[keep]
    ra = _group_ranks(groups, a, n_groups)
    rb = _group_ranks(groups, b, n_groups)
    num = np.bincount(groups, weights=ra * rb, minlength=n_groups)
    ssa = np.bincount(groups, weights=ra * ra, minlength=n_groups)
    ssb = np.bincount(groups, weights=rb * rb, minlength=n_groups)
    count = np.bincount(groups, minlength=n_groups).astype(np.float64)
    defined = (ssa > 0) & (ssb > 0) & (count >= _MIN_GROUP)
    used = int(count[defined].sum())
    if not defined.any():
        return float("nan"), 0, "no_variation"
    if used < min_items:
        return float("nan"), used, "too_few_items"
    rho = num[defined] / np.sqrt(ssa[defined] * ssb[defined])
    return float(np.clip(np.average(rho, weights=count[defined]), -1.0, 1.0)), used, None


def _summary(
    kind: str,
    rhos: list[float],
    items: list[int],
    failures: list[str],
    *,
    splits: int,
    seed: int,
    n_raters: int,
) -> SplitHalf:
    undefined: dict[str, Any] = {
        "kind": kind,
        "mean": None,
        "median": None,
        "q025": None,
        "q975": None,
        "n_items_mean": None,
        "spearman_brown": None,
        "splits": splits,
        "seed": seed,
        "n_raters": n_raters,
    }
    if n_raters < MIN_RATERS:
        return SplitHalf(**undefined, n_splits_used=0, reason="too_few_raters")
    if len(rhos) < _MIN_USED_SHARE * splits:
        # The commonest reason the splits failed names the result's reason.
        codes, counts = np.unique(np.array(failures or ["too_few_items"]), return_counts=True)
        return SplitHalf(**undefined, n_splits_used=len(rhos), reason=str(codes[counts.argmax()]))
    r = np.array(rhos)
    mean = float(r.mean())
    low, median, high = (float(x) for x in np.quantile(r, [0.025, 0.5, 0.975]))
    return SplitHalf(
        kind=kind,
        mean=mean,
        median=median,
        q025=low,
        q975=high,
        n_splits_used=len(rhos),
        n_items_mean=float(np.mean(items)),
        spearman_brown=2.0 * mean / (1.0 + mean) if mean > -1.0 else None,
        reason=None,
        splits=splits,
        seed=seed,
        n_raters=n_raters,
    )


class _Tally:
    """Each item set's correlations over the splits, and why a split was unusable."""

    def __init__(self, n_sets: int) -> None:
        self.rhos: list[list[float]] = [[] for _ in range(n_sets)]
        self.used: list[list[int]] = [[] for _ in range(n_sets)]
        self.failures: list[list[str]] = [[] for _ in range(n_sets)]

    def split(
        self,
        a: FloatArray,
        b: FloatArray,
        group: IntArray,
        both: BoolArray,
        item_sets: list[BoolArray],
        min_items: int,
    ) -> None:
        """One split's two boards ``a`` and ``b`` over all items, correlated within each set
        on its items seen in both halves."""
        for k, items in enumerate(item_sets):
            idx = np.flatnonzero(both & items)
            rho, n, why = _grouped_spearman(a[idx], b[idx], group[idx], min_items)
            if why is None:
                self.rhos[k].append(rho)
                self.used[k].append(n)
            else:
                self.failures[k].append(why)

    def summaries(
        self, kind: str, *, splits: int, seed: int, n_raters: list[int]
    ) -> list[SplitHalf]:
        return [
            _summary(kind, rhos, used, failures, splits=splits, seed=seed, n_raters=raters)
            for rhos, used, failures, raters in zip(
                self.rhos, self.used, self.failures, n_raters, strict=True
            )
        ]


def _half_masks(rng: np.random.Generator, n_raters: int, splits: int) -> BoolArray:
    """(splits, n_raters): True for the raters of half A in each split."""
    halves = np.zeros((splits, n_raters), dtype=bool)
    for s in range(splits):
        halves[s, rng.permutation(n_raters)[: n_raters // 2]] = True
    return halves


def _half_components(winners: np.ndarray, losers: np.ndarray, n_items: int) -> tuple[int, IntArray]:
    graph = sparse.coo_matrix((np.ones(winners.size), (winners, losers)), shape=(n_items, n_items))
    n_comp, labels = connected_components(graph, directed=False)
    return int(n_comp), labels.astype(np.int64)


def _half_fits(
    winners: np.ndarray,
    losers: np.ndarray,
    rater: np.ndarray,
    n_items: int,
    halves: BoolArray,
    *,
    alpha: float,
) -> tuple[FloatArray, FloatArray]:
    """Bradley-Terry scores of every half of every split, (splits, n_items) for A and for B.

    All halves of one component of the full comparison graph are solved in one batch by
    bradley_terry's Newton solver, warm-started at the full-data fit (a few steps from each
    half's optimum), instead of one fit per half and per component: on a study of many small
    topics that is what the time went to. The answer is bt_fit's: the ridge's optimum centres
    every connected part of a half on its own (a shift within a part leaves its likelihood
    unchanged, so the ridge alone sets its mean, to 0), and an item a half never compared sits
    at 0; the tests hold the two equal.
    """
    splits = halves.shape[0]
    full = bt_fit(winners, losers, n_items, alpha=alpha)
    out = np.zeros((2 * splits, n_items))
    in_a = halves[:, rater]  # (splits, judgments)
    for c in range(full.n_components):
        members = np.flatnonzero(full.component == c)
        if members.size < 2:
            continue
        local = np.full(n_items, -1, dtype=np.int64)
        local[members] = np.arange(members.size)
        rows = np.flatnonzero(full.component[winners] == c)
        lw, ll = local[winners[rows]], local[losers[rows]]
        k = members.size
        chunk = max(1, min(2 * splits, _BATCH_ELEMENTS // (k * k)))
        for first in range(0, 2 * splits, chunk):
            batch = np.arange(first, min(first + chunk, 2 * splits))
            wins = np.zeros((batch.size, k, k))
            for b, row in enumerate(batch):
                side = in_a[row % splits, rows] if row < splits else ~in_a[row - splits, rows]
                np.add.at(wins[b], (lw[side], ll[side]), 1.0)
            start = np.broadcast_to(full.scores[members], (batch.size, k)).copy()
            fitted, _, _ = _newton(wins, start, alpha, _TOL, 200)
            out[np.ix_(batch, members)] = fitted
    return out[:splits], out[splits:]


def _pairs_split_half(
    left: np.ndarray,
    right: np.ndarray,
    winner_is_left: np.ndarray,
    rater: np.ndarray,
    n_items: int,
    item_sets: list[BoolArray],
    *,
    splits: int,
    seed: int,
    min_items: int,
    alpha: float,
) -> list[SplitHalf]:
    """Split-half ranking correlation of the Bradley-Terry board, restricted to each item set.

    Both halves are fitted on all their pairs; each item set only chooses which items enter
    the correlation, so a model's items are scored against every opponent they met.
    """
    _check_split_args(splits, min_items)
    lt = _index_array(left, "left")
    rt = _index_array(right, "right")
    wl = np.asarray(winner_is_left, dtype=bool)
    rr = _index_array(rater, "rater")
    if not (lt.shape == rt.shape == wl.shape == rr.shape):
        raise ValueError("left, right, winner_is_left and rater must have the same length")
    winners = np.where(wl, lt, rt)
    losers = np.where(wl, rt, lt)
    _, rr = np.unique(rr, return_inverse=True)
    n_all = int(rr.max()) + 1 if rr.size else 0
    # Raters counted per item set: those who judged a pair touching one of its items.
    n_raters = [
        int(np.unique(rr[items[lt] | items[rt]]).size) if rr.size else 0 for items in item_sets
    ]
    tally = _Tally(len(item_sets))
    if n_all >= MIN_RATERS and max(n_raters, default=0) >= MIN_RATERS:
        halves = _half_masks(np.random.default_rng(seed), n_all, splits)
        scores_a, scores_b = _half_fits(winners, losers, rr, n_items, halves, alpha=alpha)
        for s in range(splits):
            in_a = halves[s][rr]
            fits, seen = [], []
            for side, scores in ((in_a, scores_a[s]), (~in_a, scores_b[s])):
                n_comp, labels = _half_components(winners[side], losers[side], n_items)
                fits.append((scores, labels, n_comp))
                seen.append(
                    np.bincount(lt[side], minlength=n_items)
                    + np.bincount(rt[side], minlength=n_items)
                    > 0
                )
            both = seen[0] & seen[1]
            (a_scores, a_comp, _), (b_scores, b_comp, b_n) = fits
            # One label per (component in half A, component in half B).
            group = a_comp * (b_n + 1) + b_comp
            tally.split(a_scores, b_scores, group, both, item_sets, min_items)
    return tally.summaries("pairs", splits=splits, seed=seed, n_raters=n_raters)


def split_half_ranking_pairs(
    left: np.ndarray,
    right: np.ndarray,
    winner_is_left: np.ndarray,
    rater: np.ndarray,
    n_items: int,
    *,
    splits: int = 200,
    seed: int,
    min_items: int = MIN_ITEMS,
    alpha: float = DEFAULT_ALPHA,
) -> SplitHalf:
    """Split-half Spearman correlation of the two halves' Bradley-Terry scores (see the module
    docstring: random rater halves, within-component correlation, Spearman-Brown step-up)."""
    return _pairs_split_half(
        left,
        right,
        winner_is_left,
        rater,
        n_items,
        [np.ones(n_items, dtype=bool)],
        splits=splits,
        seed=seed,
        min_items=min_items,
        alpha=alpha,
    )[0]


def split_half_ranking_scores(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    n_items: int,
    *,
    splits: int = 200,
    seed: int,
    min_items: int = MIN_ITEMS,
) -> SplitHalf:
    """Split-half Spearman correlation of the two halves' item means for one question, over
    the items rated in both halves (see the module docstring)."""
    _check_split_args(splits, min_items)
    it, ra, va = _ratings(item, rater, value, n_items)
    everything = np.ones(n_items, dtype=bool)
    return _scores_split_half(it, ra, va, n_items, [everything], splits, seed, min_items)[0]


def _scores_split_half(
    it: IntArray,
    ra: IntArray,
    va: FloatArray,
    n_items: int,
    item_sets: list[BoolArray],
    splits: int,
    seed: int,
    min_items: int,
) -> list[SplitHalf]:
    """``split_half_ranking_scores`` of the ratings of each item set, from checked ratings
    whose raters all rated in every set.

    Every set then deals the same raters into the same halves (the same seed, the same
    relabelled raters), so an item's two half means are the same whichever set it is read in:
    each split's means are counted once for all the sets, which equals one call per set's
    ratings exactly (``tests/analysis/stats/test_reliability.py``).
    """
    n_raters = int(ra.max()) + 1 if ra.size else 0
    tally = _Tally(len(item_sets))
    if n_raters >= MIN_RATERS:
        halves = _half_masks(np.random.default_rng(seed), n_raters, splits)
        single = np.zeros(n_items, dtype=np.int64)
        for s in range(splits):
            # One count and one sum per (half, item): bin i is half A's item i, bin n + i
            # half B's; each bin adds the same ratings in the same order as a count per half.
            key = it + n_items * (~halves[s][ra])
            count = np.bincount(key, minlength=2 * n_items).reshape(2, n_items)
            total = np.bincount(key, weights=va, minlength=2 * n_items).reshape(2, n_items)
            means = total / np.maximum(count, 1)
            both = (count[0] > 0) & (count[1] > 0)
            tally.split(means[0], means[1], single, both, item_sets, min_items)
    return tally.summaries("scores", splits=splits, seed=seed, n_raters=[n_raters] * len(item_sets))


# ---------------------------------------------------------------------------------------------
# k-rater reliability
# ---------------------------------------------------------------------------------------------


def spearman_brown(icc: float, k: float) -> float:
    """Reliability of the mean of k ratings from the single-rating reliability ``icc``."""
    return k * icc / (1.0 + (k - 1.0) * icc)


def _one_way(
    n: np.ndarray,
    s: np.ndarray,
    total_n: np.ndarray,
    total_s: np.ndarray,
    total_q: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One-way ANOVA per column from per-item (rows) weighted counts ``n`` and sums ``s``, and
    each column's total count, sum and sum of squares.

    The totals come in apart because the bootstrap has them from one product per rater (the
    sum of squares is never needed item by item). Returns (ICC(1), k0, MSB, MSW), nan where
    undefined (fewer than 2 items, no within-item degrees of freedom, or a zero denominator).
    """
    groups = np.count_nonzero(n, axis=0).astype(np.float64)
    # An item without a weighted rating has s = 0: s * s / max(n, 1) is 0 there unasked.
    between_part = np.einsum("ij,ij->j", s, s / np.maximum(n, 1.0))
    n_squared = np.einsum("ij,ij->j", n, n)
    ss_within = np.maximum(total_q - between_part, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ss_between = np.maximum(between_part - total_s * total_s / total_n, 0.0)
        df_b = groups - 1.0
        df_w = total_n - groups
        msb = np.where(df_b > 0, ss_between / df_b, np.nan)
        msw = np.where(df_w > 0, ss_within / df_w, np.nan)
        k0 = np.where(df_b > 0, (total_n - n_squared / total_n) / df_b, np.nan)
        denom = msb + (k0 - 1.0) * msw
        icc = np.where(denom > 0, (msb - msw) / denom, np.nan)
    return icc, k0, msb, msw


def _one_way_of(
    it: IntArray, centred: FloatArray, n_items: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_one_way`` of one set of (already centred) ratings."""
    n = np.bincount(it, minlength=n_items).astype(np.float64)[:, None]
    s = np.bincount(it, weights=centred, minlength=n_items)[:, None]
    return _one_way(
        n, s, np.array([float(it.size)]), s.sum(axis=0), np.array([float(centred @ centred)])
    )


def _expanded_tail(tail: float, units: int) -> float:
    """Hesterberg's expanded percentile tail for ``units`` resampled clusters."""
    if units < 2:
        return tail
    z = np.sqrt(units / (units - 1.0)) * float(stdtrit(units - 1, 1.0 - tail))
    return float(ndtr(-z))


def _bootstrap_icc(
    it: IntArray,
    ra: IntArray,
    va: FloatArray,
    n_items: int,
    n_raters: int,
    rounds: int,
    rng: np.random.Generator,
    *,
    centre: bool = True,
    resamples: ClusterDraws | None = None,
) -> FloatArray:
    """ICC(1) of ``rounds`` rater-clustered resamples (nan where undefined), drawn from ``rng``
    or read from ``resamples`` (``bootstrap.SharedDraws``), which then leaves ``rng`` as it was.

    ``centre=True`` first moves the ratings so that the resampled population has the fitted
    variance components (see "Centring the bootstrap" in the module docstring); ``False`` is
    the plain rater bootstrap, kept for ``benchmarks/sim_reliability.py``'s comparison.
    """
    # Batches as large as for every item given (so the same draws), rows for the rated items
    # only: a group's bootstrap (by_group) is given all the study's items, and the others are
    # rows of zeros in every product and sum (two thirds of them for each of three sources).
    chunk = max(1, _BATCH_ELEMENTS // max(n_items, n_raters, 1))
    it = _relabelled(it)
    n_items = int(it.max()) + 1 if it.size else 0
    counts = np.bincount(it, minlength=n_items).astype(np.float64)
    safe = np.maximum(counts, 1.0)
    item_mean = np.bincount(it, weights=va, minlength=n_items) / safe
    grand = float(va.mean())
    if centre:
        _, _, msb_a, msw_a = _one_way_of(it, va - grand, n_items)
        msb, msw = float(msb_a[0]), float(msw_a[0])
        shrink = np.sqrt(max(msb - msw, 0.0) / msb) if msb > 0 else 0.0
        inflate = np.sqrt(safe / np.maximum(counts - 1.0, 1.0))
        moved = shrink * (item_mean[it] - grand) + inflate[it] * (va - item_mean[it])
    else:
        moved = va - grand
    shape = (n_items, n_raters)
    per_count = sparse.csr_matrix((np.ones(it.size), (it, ra)), shape=shape)
    per_sum = sparse.csr_matrix((moved, (it, ra)), shape=shape)
    # The column totals only need each rater's count, sum and sum of squares.
    rater_totals = np.stack(
        [
            np.bincount(ra, minlength=n_raters).astype(np.float64),
            np.bincount(ra, weights=moved, minlength=n_raters),
            np.bincount(ra, weights=moved * moved, minlength=n_raters),
        ]
    )
    boot = np.empty(rounds)
    resampled = resamples or drawn_in_turn(rng)
    for first in range(0, rounds, chunk):
        r = min(chunk, rounds - first)
        draw = resampled(n_raters, first, r)
        total_n, total_s, total_q = rater_totals @ draw
        boot[first : first + r] = _one_way(
            np.asarray(per_count @ draw), np.asarray(per_sum @ draw), total_n, total_s, total_q
        )[0]
    return boot


def _empirical_krr(
    it: IntArray,
    va: FloatArray,
    n_items: int,
    ks: Sequence[int],
    draws: int,
    min_items: int,
    rng: np.random.Generator,
    item_sets: list[BoolArray] | None = None,
) -> list[list[tuple[float | None, int]]]:
    """Wong & Paritosh's k-rater reliability for each k, (mean correlation or None, items), of
    the items of each set (None: one set of every item), all read from the same random orders.

    Each item's ratings are shuffled once per draw, whatever set it is read in: the sets of
    ``by_group`` (the study and each of its groups) then cost one shuffle of the study's
    ratings instead of two. A set of every item among them gets the values of a call with it
    alone: the other sets' items are its own, so they add no shuffle."""
    if item_sets is None:
        item_sets = [np.ones(n_items, dtype=bool)]
    counts = np.bincount(it, minlength=n_items)
    eligible = [[np.flatnonzero((counts >= 2 * k) & items) for k in ks] for items in item_sets]
    active = [[e.size >= min_items for e in by_k] for by_k in eligible]
    sums: list[list[list[float]]] = [[[] for _ in ks] for _ in item_sets]
    used = [k for on_k in active for k, on in zip(ks, on_k, strict=True) if on]
    if used:
        fewest = 2 * min(used)
        classes = _count_classes(counts, fewest)
        # Per k: the items of the tables that reach 2k ratings, in the tables' order, as one
        # 0/1 column per set that k is estimated for.
        layouts: list[tuple[list[int], FloatArray, FloatArray] | None] = []
        for j, k in enumerate(ks):
            sets_k = [s for s in range(len(item_sets)) if active[s][j]]
            if not sets_k:
                layouts.append(None)
                continue
            order = np.concatenate([m for m in classes if counts[m[0]] >= 2 * k])
            weights = np.stack([item_sets[s][order] for s in sets_k], axis=1).astype(np.float64)
            layouts.append((sets_k, weights, weights.sum(axis=0)))
        # Centred ratings keep the moments below accurate whatever the scale's location.
        centred = va - va.mean()
        for blocks in _shuffled_blocks(it, centred, counts, fewest, draws, rng, used):
            # Running sums along each item's random order: the sum of its first k ratings and
            # of the next k for every k, without a pass over the ratings per k.
            running = [np.cumsum(block, axis=2) for block in blocks]
            r = running[0].shape[0]
            for j, k in enumerate(ks):
                layout = layouts[j]
                if layout is None:
                    continue
                sets_k, weights, n = layout
                # The first 2k of a random order of each eligible item's ratings: two random
                # disjoint sets of k raters, their means a and b (a common factor 1/k is left
                # out: a correlation does not see it).
                reached = [total for total in running if total.shape[2] >= 2 * k]
                a = np.concatenate([total[:, :, k - 1] for total in reached], axis=1)
                b = np.concatenate([total[:, :, 2 * k - 1] for total in reached], axis=1)
                b -= a
                # Every set's sums of a, b, a^2, b^2 and ab in one product with its columns:
                # one pass over the draws for the study and all its groups.
                stacked = np.stack([a, b, a * a, b * b, a * b]).reshape(5 * r, -1)
                sa, sb, saa, sbb, sab = (stacked @ weights).reshape(5, r, len(sets_k))
                var_a = saa - sa * sa / n
                var_b = sbb - sb * sb / n
                cov = sab - sa * sb / n
                # A side constant over the set's items has no correlation (the moments leave
                # rounding noise there, not an exact 0).
                ok = (var_a > _FLAT * saa) & (var_b > _FLAT * sbb)
                rho = cov / np.sqrt(np.where(ok, var_a * var_b, 1.0))
                for column, s in enumerate(sets_k):
                    sums[s][j].extend(rho[ok[:, column], column].tolist())
    results: list[list[tuple[float | None, int]]] = []
    for s, by_k in enumerate(eligible):
        results.append(
            [
                (
                    float(np.mean(sums[s][j])) if active[s][j] and sums[s][j] else None,
                    int(e.size) if active[s][j] else 0,
                )
                for j, e in enumerate(by_k)
            ]
        )
    return results


def _count_classes(counts: IntArray, fewest: int) -> list[IntArray]:
    """The items with at least ``fewest`` ratings, grouped by their number of ratings (fewest
    first): the rows of ``_shuffled_blocks``' tables, in order."""
    return [np.flatnonzero(counts == c) for c in np.unique(counts[counts >= fewest]).tolist()]


def _shuffled_blocks(
    it: IntArray,
    va: FloatArray,
    counts: IntArray,
    fewest: int,
    draws: int,
    rng: np.random.Generator,
    ks: Sequence[int] | None = None,
) -> Iterator[list[FloatArray]]:
    """`draws` random orders of the ratings of every item with at least `fewest`, in batches:
    for each number of ratings c, a (draws in the batch, items with c ratings, d) array, the
    first d places of each order.

    Items are grouped by how many ratings they have, so each group is a plain table whose rows
    are shuffled in place (Fisher-Yates per row); sorting random keys over all the ratings did
    the same about twice as slowly (benchmarks/bench_krr_draws.py). Without `ks`, d = c: the
    whole order. With `ks`, only the places they read are drawn: d = 2k for the largest k of
    `ks` with 2k <= c (so every k <= c / 2 of them reads the same order), and where that is
    far fewer than c, only those d places are drawn (`_random_prefix`)."""
    order = np.argsort(it, kind="stable")
    start = np.concatenate(([0], np.cumsum(counts)))[:-1]
    ordered = va[order]
    tables = [
        ordered[start[items][:, None] + np.arange(counts[items[0]])]
        for items in _count_classes(counts, fewest)
    ]
    depths = [
        table.shape[1]
        if ks is None
        else 2 * max((k for k in ks if 2 * k <= table.shape[1]), default=table.shape[1] // 2)
        for table in tables
    ]
    size = sum(table.size for table in tables)
    chunk = max(1, _BATCH_ELEMENTS // max(size, 1))
    for first in range(0, draws, chunk):
        r = min(chunk, draws - first)
        yield [
            _random_prefix(table, r, depth, rng)
            if _prefix_cheaper(table.shape[1], depth)
            else rng.permuted(np.broadcast_to(table, (r, *table.shape)), axis=2)[:, :, :depth]
            for table, depth in zip(tables, depths, strict=True)
        ]


def _prefix_cheaper(c: int, depth: int) -> bool:
    """Whether drawing `depth` places of rows of `c` ratings (`_random_prefix`) beats
    shuffling the whole rows. A shuffle costs about 15 ns a rating; the places about 6 ns
    times depth + depth^2 / 2 a row (each place is moved past the earlier ones). Measured
    (benchmarks/bench_krr_draws.py --prefix, two runs): 2 places of 3-20 ratings in 0.04-0.95
    of the time, 6 of 12-30 in 0.38-0.83; 4 of 5, 6 of 7, 10 of 11 or 20 of 40 in 0.89-3.2."""
    return depth < c and depth * (depth + 2) <= 4 * c


def _random_prefix(table: FloatArray, r: int, depth: int, rng: np.random.Generator) -> FloatArray:
    """(r, rows, depth): the first `depth` places of an independent uniformly random order of
    each row of `table`, r times over. Place j is drawn uniformly among the row's entries not
    drawn before it: its rank x among them, moved past each earlier pick at or below it,
    smallest first (the x-th entry left). The same law as the first places of a shuffle."""
    n, c = table.shape
    picks = np.empty((r, n, depth), dtype=np.intp)
    for j in range(depth):
        x = rng.integers(0, c - j, size=(r, n))
        for earlier in np.sort(picks[:, :, :j], axis=2).transpose(2, 0, 1):
            x += x >= earlier
        picks[:, :, j] = x
    drawn: FloatArray = table[np.arange(n)[:, None], picks]
    return drawn


def k_rater_reliability(
    item: np.ndarray,
    rater: np.ndarray,
    value: np.ndarray,
    n_items: int,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
    interval: str = "expanded",
    draws: int = 200,
    empirical_min_items: int = MIN_EMPIRICAL_ITEMS,
) -> KRaterReliability:
    """ICC(1) and ICC(1,k) with rater-clustered bootstrap intervals, and the empirical k-rater
    reliability (see the module docstring for the estimand and the undefined cases)."""
    options = _KRaterOptions.checked(ks, rounds, seed, level, interval, draws, empirical_min_items)
    it, ra, va = _ratings(item, rater, value, n_items)
    return _k_rater_of(it, ra, va, n_items, options)


def _k_rater_of(
    it: IntArray, ra: IntArray, va: FloatArray, n_items: int, options: _KRaterOptions
) -> KRaterReliability:
    """``k_rater_reliability`` of checked ratings."""
    rng = np.random.default_rng(options.seed)
    found = _k_rater_without_empirical(it, ra, va, n_items, options, rng)
    if found.reason is not None:
        return found
    empirical = _empirical_krr(
        it, va, n_items, options.ks, options.draws, options.empirical_min_items, rng
    )
    return _with_empirical(found, empirical[0])


@dataclass(frozen=True)
class _KRaterOptions:
    ks: tuple[int, ...]
    rounds: int
    seed: int
    level: float
    interval: str
    draws: int
    empirical_min_items: int

    @classmethod
    def checked(
        cls,
        ks: Sequence[int],
        rounds: int,
        seed: int,
        level: float,
        interval: str,
        draws: int,
        empirical_min_items: int,
    ) -> _KRaterOptions:
        if rounds < 1:
            raise ValueError("rounds must be >= 1")
        if draws < 1:
            raise ValueError("draws must be >= 1")
        if not 0.0 < level < 1.0:
            raise ValueError("level must be in (0, 1)")
        if interval not in INTERVALS:
            raise ValueError(f"interval must be one of {INTERVALS}")
        as_ints = tuple(int(k) for k in ks)
        if any(k < 1 for k in as_ints):
            raise ValueError("every k must be >= 1")
        if empirical_min_items < 3:
            raise ValueError("empirical_min_items must be >= 3")
        return cls(as_ints, rounds, seed, level, interval, draws, empirical_min_items)


def _with_empirical(
    found: KRaterReliability, empirical: list[tuple[float | None, int]]
) -> KRaterReliability:
    """``found`` with the empirical k-rater reliability of each of its k."""
    return replace(
        found,
        by_k=tuple(
            replace(at_k, empirical=value, empirical_items=items)
            for at_k, (value, items) in zip(found.by_k, empirical, strict=True)
        ),
    )


def _k_rater_without_empirical(
    it: IntArray,
    ra: IntArray,
    va: FloatArray,
    n_items: int,
    options: _KRaterOptions,
    rng: np.random.Generator,
    resamples: ClusterDraws | None = None,
) -> KRaterReliability:
    """``k_rater_reliability`` of checked ratings, its empirical part left empty; the
    bootstrap draws from ``rng`` (and the empirical part from it next), or reads its raters'
    resamples from ``resamples``."""
    ks, rounds, seed, level, interval, draws = (
        options.ks,
        options.rounds,
        options.seed,
        options.level,
        options.interval,
        options.draws,
    )
    n_raters = int(ra.max()) + 1 if ra.size else 0
    counts = np.bincount(it, minlength=n_items)
    rated = int((counts > 0).sum())

    def undefined(reason: str, **known: float | None) -> KRaterReliability:
        fields: dict[str, Any] = {
            "icc": None,
            "icc_ci_low": None,
            "icc_ci_high": None,
            "k_mean": None,
            "at_mean": None,
            "by_k": (),
            "k0": None,
            "ms_between": None,
            "ms_within": None,
        }
        fields.update(known)
        return KRaterReliability(
            **fields,
            n_items=rated,
            n_raters=n_raters,
            n_ratings=int(it.size),
            rounds=rounds,
            failed_rounds=0,
            seed=seed,
            level=level,
            interval=interval,
            draws=draws,
            reason=reason,
        )

    if n_raters < MIN_RATERS:
        return undefined("too_few_raters")
    if rated < 2:
        return undefined("too_few_items")
    k_mean = it.size / rated
    if k_mean < 2.0:
        return undefined("too_few_ratings_per_item")
    # Centred values keep the sums of squares accurate for any location of the scale.
    centred = va - va.mean()
    icc_a, k0_a, msb_a, msw_a = _one_way_of(it, centred, n_items)
    icc, k0, msb, msw = float(icc_a[0]), float(k0_a[0]), float(msb_a[0]), float(msw_a[0])
    if not np.isfinite(icc) or msb + msw <= 0:
        return undefined(
            "zero_variance",
            k0=k0 if np.isfinite(k0) else None,
            ms_between=msb if np.isfinite(msb) else None,
            ms_within=msw if np.isfinite(msw) else None,
        )

    boot = _bootstrap_icc(
        it, ra, va, n_items, n_raters, rounds, rng, centre=True, resamples=resamples
    )
    finite = boot[np.isfinite(boot)]
    failed = int(rounds - finite.size)
    tail = (1.0 - level) / 2.0
    if interval == "expanded":
        tail = _expanded_tail(tail, n_raters)
    lo: float | None = None
    hi: float | None = None
    if finite.size:
        lo, hi = (float(x) for x in np.quantile(finite, [tail, 1.0 - tail]))

    def at(k: float) -> KRater:
        return KRater(
            k=k,
            value=spearman_brown(max(icc, 0.0), k),
            ci_low=None if lo is None else spearman_brown(max(lo, 0.0), k),
            ci_high=None if hi is None else spearman_brown(max(hi, 0.0), k),
            empirical=None,
            empirical_items=0,
        )

    return KRaterReliability(
        icc=icc,
        icc_ci_low=lo,
        icc_ci_high=hi,
        k_mean=float(k_mean),
        at_mean=at(float(k_mean)),
        by_k=tuple(at(float(k)) for k in ks),
        k0=k0,
        ms_between=msb,
        ms_within=msw,
        n_items=rated,
        n_raters=n_raters,
        n_ratings=int(it.size),
        rounds=rounds,
        failed_rounds=failed,
        seed=seed,
        level=level,
        interval=interval,
        draws=draws,
        reason=None,
    )


# ---------------------------------------------------------------------------------------------
# Per group of items
# ---------------------------------------------------------------------------------------------


def by_group(
    item_group: Sequence[str] | np.ndarray,
    *,
    scores: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
    splits: int = 200,
    rounds: int = 1000,
    seed: int,
    ks: Sequence[int] = DEFAULT_KS,
    level: float = 0.95,
    interval: str = "expanded",
    draws: int = 200,
    min_items: int = MIN_ITEMS,
    alpha: float = DEFAULT_ALPHA,
    whole: str | None = None,
    threads: int = 1,
    resamples: ClusterDraws | None = None,
) -> dict[str, GroupReliability]:
    """Split-half correlations and k-rater reliability for the items of each group code.

    With ``threads`` > 1 the k-rater reliability, about two thirds of the time on a large
    study, is computed in a second thread while this one computes the split halves: each draws
    from its own generator seeded with ``seed``, so the results are the same either way.

    ``whole``: also the whole study under this label, from the same rater splits and the same
    pair fits (each split's two Bradley-Terry fits are the expensive part, so sharing them
    halves the cost of asking for the study and its groups), and the same shuffles of each
    item's ratings for the empirical k-rater reliability (see ``_k_rater_by_group``).
    ``resamples``: the raters' resamples of the whole study's ICC bootstrap, read with another
    section of the document (``bootstrap.SharedDraws``); by default drawn from ``seed``.

    ``item_group`` holds one code per item (its length is the number of items). Scorecard
    statistics use the group's answers only. The pairs' split-half fits use every pair (an
    item's score depends on all the opponents it met, usually of other groups) and correlate
    the group's items; the rater splits are shared by all groups. Every group uses ``seed``.
    """
    codes = np.asarray([str(c) for c in item_group])
    n_items = int(codes.size)
    labels = sorted(set(codes.tolist()))
    members = {label: codes == label for label in labels}
    if whole is not None:
        if whole in members:
            raise ValueError(f"the whole study's label {whole!r} is also a group code")
        labels.append(whole)
        members[whole] = np.ones(codes.size, dtype=bool)
    pair_results: dict[str, SplitHalf] = {}
    if pairs is not None:
        left, right, winner_is_left, rater = pairs
        found = _pairs_split_half(
            left,
            right,
            winner_is_left,
            rater,
            n_items,
            [members[label] for label in labels],
            splits=splits,
            seed=seed,
            min_items=min_items,
            alpha=alpha,
        )
        pair_results = dict(zip(labels, found, strict=True))
    score_results: dict[str, SplitHalf] = {}
    k_results: dict[str, KRaterReliability] = {}
    if scores is not None:
        item, rater, value = (np.asarray(a) for a in scores)
        index = _index_array(item, "item")
        if index.size and (index.min() < 0 or index.max() >= n_items):
            raise ValueError("item index out of range [0, len(item_group))")
        _check_split_args(splits, min_items)
        options = _KRaterOptions.checked(
            ks, rounds, seed, level, interval, draws, MIN_EMPIRICAL_ITEMS
        )
        # Checked once: every group's ratings are rows of these (see _group_ratings).
        checked = _ratings(item, rater, value, n_items)
        # Two workers: the k-rater reliability in one, its groups' bootstraps in the other
        # (see _k_rater_by_group), while this thread computes the split halves.
        with ThreadPoolExecutor(max_workers=2) if threads > 1 else nullcontext() as pool:
            k_later = (
                pool.submit(
                    _k_rater_by_group, checked, n_items, members, whole, options, pool, resamples
                )
                if pool is not None
                else None
            )
            score_results = _scores_split_half_by_group(
                checked, n_items, members, splits=splits, seed=seed, min_items=min_items
            )
            k_results = (
                k_later.result()
                if k_later is not None
                else _k_rater_by_group(
                    checked, n_items, members, whole, options, resamples=resamples
                )
            )
    return {
        label: GroupReliability(
            group=label,
            n_items=int(members[label].sum()),
            pairs=pair_results.get(label),
            scores=score_results.get(label),
            k_rater=k_results.get(label),
        )
        for label in labels
    }


def _group_ratings(
    checked: tuple[IntArray, IntArray, FloatArray], items: BoolArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """The ratings of a set of items, as ``_ratings`` gives them for that set's answers alone:
    the checked ratings' rows (in order, nan already dropped), raters numbered anew."""
    it, ra, va = checked
    rows = items[it]
    return it[rows], _relabelled(ra[rows]), va[rows]


def _k_rater_by_group(
    checked: tuple[IntArray, IntArray, FloatArray],
    n_items: int,
    members: dict[str, BoolArray],
    whole: str | None,
    options: _KRaterOptions,
    pool: Executor | None = None,
    resamples: ClusterDraws | None = None,
) -> dict[str, KRaterReliability]:
    """``k_rater_reliability`` of each group's answers; beside the whole study, the groups'
    empirical k-rater reliability is read from the study's random orders.

    Each group's ICC and interval are those of its answers alone. The empirical part shuffles
    every item's ratings once per draw for the study and reads each group's items from the
    same orders: each group's value is still the mean over ``draws`` independent draws of its
    items' ratings (it differs from a call on the group's answers alone only by Monte Carlo
    error), and the shuffles, the largest part of the statistic's time, are not done twice.
    The whole study's result equals ``k_rater_reliability`` of all the answers exactly, unless
    its bootstrap reads ``resamples`` (then its interval comes from those resamples).

    With a ``pool``, each group's own bootstrap (from its own generator) is handed to it while
    this thread computes the study's bootstrap and the shared draws; a group's bootstrap that no
    worker has started by then is computed here. The results are the same either way.
    """
    it, ra, va = checked

    def alone(label: str, *, empirical: bool) -> KRaterReliability:
        g_it, g_ra, g_va = _group_ratings(checked, members[label])
        if empirical:
            return _k_rater_of(g_it, g_ra, g_va, n_items, options)
        rng = np.random.default_rng(options.seed)
        return _k_rater_without_empirical(g_it, g_ra, g_va, n_items, options, rng)

    if whole is None:
        return {label: alone(label, empirical=True) for label in members}
    later = {
        label: pool.submit(alone, label, empirical=False)
        for label in members
        if label != whole and pool is not None
    }
    rng = np.random.default_rng(options.seed)
    study = _k_rater_without_empirical(it, ra, va, n_items, options, rng, resamples)
    if study.reason is not None:
        for future in later.values():
            future.cancel()
        # No study-wide draws to share (the study's own statistic is undefined): each group
        # draws its own, as a call on its answers alone does.
        return {
            label: study if label == whole else alone(label, empirical=True) for label in members
        }
    labels = list(members)
    empirical = _empirical_krr(
        it,
        va,
        n_items,
        options.ks,
        options.draws,
        options.empirical_min_items,
        rng,
        [members[label] for label in labels],
    )
    found = {
        label: study
        if label == whole
        else later[label].result()
        if label in later and not later[label].cancel()
        else alone(label, empirical=False)
        for label in members
    }
    return {
        label: found[label] if found[label].reason is not None else _with_empirical(found[label], e)
        for label, e in zip(labels, empirical, strict=True)
    }


def _scores_split_half_by_group(
    checked: tuple[IntArray, IntArray, FloatArray],
    n_items: int,
    members: dict[str, BoolArray],
    *,
    splits: int,
    seed: int,
    min_items: int,
) -> dict[str, SplitHalf]:
    """``split_half_ranking_scores`` of each group's answers: counted once for the groups that
    every rater answered in (usually all of them), one call per group for the others."""
    it, ra, va = checked
    n_raters = int(ra.max()) + 1 if ra.size else 0
    everyone = [
        label
        for label, items in members.items()
        if (np.bincount(ra[items[it]], minlength=n_raters) > 0).all()
    ]
    # None of them when each rater answered one group only (a crowd's one-grade raters): then
    # no halves of all the raters are dealt, which every split would count for no set.
    found = (
        _scores_split_half(
            it, ra, va, n_items, [members[label] for label in everyone], splits, seed, min_items
        )
        if everyone
        else []
    )
    out = dict(zip(everyone, found, strict=True))
    everything = [np.ones(n_items, dtype=bool)]
    for label, items in members.items():
        if label not in out:
            out[label] = _scores_split_half(
                *_group_ratings(checked, items), n_items, everything, splits, seed, min_items
            )[0]
    return out
