"""Style-controlled Bradley-Terry: source strengths with what raters reward besides humor
regressed out (a contextual BT, as LMArena's "style control"), and item scores to match.

Public API
----------
``StyleFit``
    Frozen dataclass of the source-level fit. Per source code (arrays of ``n_sources``):
    ``theta``, ``theta_se``, ``theta_low``, ``theta_high`` (style-controlled) and ``plain_theta``,
    ``plain_se``, ``plain_low``, ``plain_high`` (the same code with beta = 0); differences as
    (n_sources, n_sources) matrices, ``[a, b]`` = source a minus source b: ``diff``,
    ``diff_low``, ``diff_high``, ``plain_diff``, ``plain_diff_low``, ``plain_diff_high``. Per
    kept covariate: ``beta``, ``beta_se``, ``beta_low``, ``beta_high``, ``beta_names``,
    ``standardised`` (bool), ``centre`` and ``scale`` (the column was used as
    ``(x - centre) / scale``). ``cov``: the cluster-robust covariance of ``(theta, beta)``
    (n_sources + p square; theta centred, so it is singular), ``plain_cov``. ``n_clusters``
    (raters), ``df`` (n_clusters - 1), ``n_pairs`` (comparisons used), ``converged``,
    ``plain_converged``, ``iterations``, ``dropped`` (covariate name -> ``"constant"`` or
    ``"collinear"``), ``source_flags`` (source code -> ``"no_pairs"``,
    ``"no_cross_source_pairs"``, ``"undefeated"``, ``"never_won"``), ``level``, ``reason``
    (why there are no intervals, else None).
``style_controlled_sources(left, right, left_won, rater, item_source, n_sources, covariates,
covariate_names, *, level=0.95) -> StyleFit``
``ItemStyleFit``
    Frozen dataclass, per item: ``scores`` (style-controlled), ``ci_low``, ``ci_high``,
    ``rank``, ``adjustment`` (what was subtracted: beta_hat . (x_i - component mean)),
    ``plain_scores``, ``plain_low``, ``plain_high``, ``plain_rank``, ``component``; and
    ``n_components``, ``sources`` (the ``StyleFit`` that gave beta), ``beta_low``,
    ``beta_high`` (beta's bootstrap intervals), ``rounds``, ``seed``, ``level``,
    ``n_clusters``, ``dropped``, ``nonconverged_rounds``, ``reason``.
``style_controlled_items(left, right, left_won, rater, item_source, n_sources, covariates,
covariate_names, *, rounds=1000, seed, level=0.95, alpha=DEFAULT_ALPHA) -> ItemStyleFit``
``order_changes(plain_scores, plain_low, plain_high, controlled_scores, controlled_low,
controlled_high, names, *, component=None) -> list[dict]``
    The pairs whose separated order flips, or whose separation appears or disappears, when
    style is controlled.

Inputs
------
One row per comparison: ``left``, ``right`` (item indices), ``left_won`` (bool), ``rater``
(any labels: the clusters). ``item_source``: a source code per item (a model, or "human");
``covariates``: an (n_items, p) float matrix with ``covariate_names``, e.g. log length (in
the item's own units: characters for Chinese, words otherwise), a language indicator, level
indicators, the offense flag, the judged-human rate. Only items that appear in a comparison
are read (others may hold nan). Categorical covariates come as 0/1 columns; a full set of
them is collinear (the differences of a constant are 0) and the last is dropped.

Covariate scaling (say it where the betas are shown): a column with more than two distinct
values among the compared items is standardised to mean 0 and standard deviation 1 over those
items, so its beta is the log-odds effect of one standard deviation; a column with two values
(an indicator) is used as given, so its beta is the effect of having the attribute. A column
constant over the compared items carries no information and is dropped (``dropped``, not an
error); so is one that is a linear combination of the source contrasts and the columns before
it (e.g. a covariate constant within each source: it is the source effect itself).

Source model (``style_controlled_sources``)
-------------------------------------------
logit P(left wins) = theta_src(left) - theta_src(right) + beta . (x_left - x_right).
Maximum likelihood (Newton with step halving) of the logistic regression without intercept on
the difference design, with the first identified source as reference; ``theta`` is reported
centred to mean 0 over the identified sources, as the other boards are. Comparisons between
two items of one source have a zero source contrast and still inform beta. ``plain_theta`` is
the same code with no covariate (beta = 0), so both boards come from one implementation.

Covariance: cluster-robust by rater, V = G/(G-1) B M B with B the inverse Fisher information
and M = sum over raters of (their summed scores) (their summed scores)^T: one rater's
judgments share that rater's taste and their own idea of what is funny, so they are not
independent (CR1, Cameron & Miller 2015, "A practitioner's guide to cluster-robust
inference", J. Hum. Resour. 50:317). statsmodels' ``GLM(..., family=Binomial()).fit(
cov_type="cluster")`` multiplies by G/(G-1) * (N-1)/(N-K) (N comparisons, K parameters) by
default; with ``use_correction=False`` it uses no factor, so ours is that times G/(G-1), and
ours times (N-1)/(N-K) is its default (both checked to 1e-6 relative in the tests). With
thousands of comparisons and a dozen parameters the extra factor is ~1.001. Intervals are
Wald intervals, estimate +- t_{G-1} quantile x robust standard error (the t reference with
G - 1 degrees of freedom, as Stata does with CR1, is safer than the normal one with a few dozen
raters). With fewer than two raters there is no cluster-robust variance: every interval is nan
and ``reason`` says why (``"too_few_raters"``).

Estimand: the population value of the fit when the raters are drawn again and the items are
the study's (raters random, items fixed: "these jokes"), unlike the model comparison's
``bt``, which also treats items as random. What beta means: the log-odds a rater adds for a
covariate difference, averaged over the study's comparisons; the controlled theta is a
source's strength had its jokes the same covariates as the others'. Both are attenuated
towards 0 by everything the model leaves out (rater taste, item differences within a source),
as every logistic coefficient is (in the simulation, a planted 0.4 per sd gave an estimand of
0.34). Items fixed also means that beta takes up whatever chance correlation a covariate has
with the quality of the study's own jokes: with 15 jokes a source the estimand itself ordered
the sources as their jokes' planted quality in 92% of simulated studies
(``benchmarks/sim_style_control.py``).

Sources without a finite maximum-likelihood strength: a source that never lost a comparison
against another source ("undefeated") has theta = +infinity, one that never won ("never_won")
-infinity. The likelihood's supremum is then reached with that source's cross-source
comparisons all predicted right, so the other estimates are the fit without them (repeated
until no source is left in that state); its own theta is nan, and its comparisons within the
source still inform beta. A source with no comparison at all, or none with another source, is
flagged the same way. The remaining sources must be connected by cross-source comparisons
(else ValueError: their strengths would not be on one scale).

Items (``style_controlled_items``)
----------------------------------
An item's covariates are constant, so beside a free strength per item beta is not identified:
whatever the covariate does is absorbed into the item's own strength. The nearest right thing,
done here: beta is estimated from the source-level fit above (identified by differences
between items of one source and across sources, given that a source's strengths do not vary
with the covariate beyond what beta says), and an item's style-controlled score is its plain
Bradley-Terry score (``bt_fit``, ridge ``alpha``) minus beta_hat . (x_i - mean of x over its
connected component), so scores stay centred within each component like ``bt_fit``'s. The
subtraction is ``adjustment``.

Its interval accounts for both stages' uncertainty: a rater-clustered bootstrap that re-fits
both per round (the same draws of raters for the item scores and for beta; the item fits are
``bradley_terry``'s batched Newton solver warm-started at the full fit, the source fits a
batched Newton on the comparisons compressed to item pairs). A sandwich on the stacked
estimating equations would need the item fit's full information matrix per component and its
cross terms with the source fit; the bootstrap has neither to write down, reuses the solver,
and is the method of the plain item intervals, which it reproduces exactly (same seed, same
draws as ``bt_bootstrap(cluster="rater", interval="expanded")``). Intervals are expanded
percentile intervals (``bt_bootstrap``'s ``interval="expanded"``, Hesterberg 2015) with G =
raters. Cost (``benchmarks/sim_style_control.py``): 100 items, 20,000 comparisons, two
covariates and 200 rounds take ~0.5 s, the source fit alone ~40 ms. Estimand: the population
value of this two-stage fit, raters random, items fixed. Caveat: beta comes from a model that
leaves the items' own differences out, so it is attenuated beside the item scores' scale
(non-collapsibility of the logit) and a little of the covariate's effect stays in the
controlled scores; in the simulation the estimand still ranks the items as their planted
quality with a Spearman correlation of 0.98 (the estimates: controlled 0.81, plain 0.37).

Ranks: ``ci_aware_ranks`` within each component, for the controlled and the plain scores.

Order changes (``order_changes``)
---------------------------------
Two entries are *separated* when their intervals do not overlap (``low[a] > high[b]``), the
rule by which ``ci_aware_ranks`` lets one push the other down. For every pair (within one
component when ``component`` is given) the function returns a record when controlling
changes that relation: ``"flipped"`` (separated both times, in opposite orders),
``"separation_lost"`` (separated only without control), ``"separation_gained"`` (only with
control). Codes and names only: the caller words them in the reader's language.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, ndtr, stdtrit

# The batched Newton solver is bradley_terry's own; reusing it keeps the item scores of every
# bootstrap round identical to bt_bootstrap's (the module has no public batched entry point).
from apps.analysis.stats.bradley_terry import DEFAULT_ALPHA, _newton, bt_fit
from apps.analysis.stats.ranks import ci_aware_ranks

CHANGE_CODES = ("flipped", "separation_lost", "separation_gained")
# Per-round Newton steps stop below this: ~1e-6 left after the next quadratic step, far below
# the Monte Carlo error of a percentile (as bradley_terry's _BOOTSTRAP_TOL).
_BOOTSTRAP_TOL = 1e-3
_BATCH_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class StyleFit:
    theta: np.ndarray
    theta_se: np.ndarray
    theta_low: np.ndarray
    theta_high: np.ndarray
    diff: np.ndarray
    diff_low: np.ndarray
    diff_high: np.ndarray
    plain_theta: np.ndarray
    plain_se: np.ndarray
    plain_low: np.ndarray
    plain_high: np.ndarray
    plain_diff: np.ndarray
    plain_diff_low: np.ndarray
    plain_diff_high: np.ndarray
    beta: np.ndarray
    beta_se: np.ndarray
    beta_low: np.ndarray
    beta_high: np.ndarray
    beta_names: tuple[str, ...]
    standardised: tuple[bool, ...]
    centre: np.ndarray
    scale: np.ndarray
    cov: np.ndarray
    plain_cov: np.ndarray
    n_clusters: int
    df: int
    n_pairs: int
    converged: bool
    plain_converged: bool
    iterations: int
    dropped: dict[str, str]
    source_flags: dict[int, str]
    level: float
    reason: str | None


@dataclass(frozen=True)
class ItemStyleFit:
    scores: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rank: np.ndarray
    adjustment: np.ndarray
    plain_scores: np.ndarray
    plain_low: np.ndarray
    plain_high: np.ndarray
    plain_rank: np.ndarray
    component: np.ndarray
    n_components: int
    sources: StyleFit
    beta_low: np.ndarray
    beta_high: np.ndarray
    rounds: int
    seed: int
    level: float
    n_clusters: int
    dropped: dict[str, str]
    nonconverged_rounds: int
    reason: str | None


# ---------------------------------------------------------------------------------------------
# Inputs and the difference design
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Design:
    left: np.ndarray
    right: np.ndarray
    y: np.ndarray  # 1.0 when left won
    cluster: np.ndarray  # rater index 0..G-1 per comparison
    n_clusters: int
    n_items: int
    n_sources: int
    src: np.ndarray  # source code per item
    z: np.ndarray  # (n_items, p_kept) covariates as used (scaled); rows of uncompared items 0
    names: tuple[str, ...]
    standardised: tuple[bool, ...]
    centre: np.ndarray
    scale: np.ndarray
    dropped: dict[str, str]
    sources: np.ndarray  # identified source codes, the first is the reference
    flags: dict[int, str]
    used: np.ndarray  # comparisons that enter the fit


def _source_block(d_left: np.ndarray, d_right: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Reference-coded source contrast columns (the first identified source is the reference)."""
    cols = sources[1:]
    return np.asarray(
        (d_left[:, None] == cols[None, :]).astype(float)
        - (d_right[:, None] == cols[None, :]).astype(float)
    )


def _identify_sources(
    src_l: np.ndarray, src_r: np.ndarray, y: np.ndarray, n_sources: int
) -> tuple[np.ndarray, dict[int, str], np.ndarray]:
    flags: dict[int, str] = {}
    seen = np.zeros(n_sources, dtype=bool)
    seen[src_l] = seen[src_r] = True
    cross = src_l != src_r
    in_cross = np.zeros(n_sources, dtype=bool)
    in_cross[src_l[cross]] = in_cross[src_r[cross]] = True
    for s in range(n_sources):
        if not seen[s]:
            flags[s] = "no_pairs"
        elif not in_cross[s]:
            flags[s] = "no_cross_source_pairs"
    active = in_cross.copy()
    while True:
        keep = cross & active[src_l] & active[src_r]
        won = np.where(y > 0.5, src_l, src_r)[keep]
        lost = np.where(y > 0.5, src_r, src_l)[keep]
        wins = np.bincount(won, minlength=n_sources)
        losses = np.bincount(lost, minlength=n_sources)
        changed = False
        for code in np.flatnonzero(active):
            if wins[code] + losses[code] == 0:
                # Its only comparisons with other sources were with sources dropped above.
                flags[int(code)] = "no_cross_source_pairs"
            elif losses[code] == 0 or wins[code] == 0:
                flags[int(code)] = "undefeated" if losses[code] == 0 else "never_won"
            else:
                continue
            active[code] = False
            changed = True
        if not changed:
            break
    keep = cross & active[src_l] & active[src_r]
    codes = np.flatnonzero(active)
    if codes.size > 1:
        graph = sparse.coo_matrix(
            (np.ones(int(keep.sum())), (src_l[keep], src_r[keep])), shape=(n_sources, n_sources)
        )
        _, labels = connected_components(graph, directed=False)
        groups = {int(labels[s]) for s in codes}
        if len(groups) > 1:
            parts = [[int(s) for s in codes if labels[s] == g] for g in sorted(groups)]
            raise ValueError(
                f"the sources are not connected by comparisons between them: {parts} "
                "(their strengths would not be on one scale)"
            )
    used = ~cross | keep
    return codes, flags, used


def _prepare(
    left: np.ndarray,
    right: np.ndarray,
    left_won: np.ndarray,
    rater: np.ndarray,
    item_source: np.ndarray,
    n_sources: int,
    covariates: np.ndarray,
    covariate_names: Any,
) -> _Design:
    x = np.asarray(covariates, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError("covariates must be an (n_items, p) matrix")
    n_items, p = x.shape
    names = tuple(str(n) for n in covariate_names)
    if len(names) != p:
        raise ValueError(f"covariate_names has {len(names)} names for {p} covariate columns")
    if len(set(names)) != p:
        raise ValueError("covariate_names must be distinct")
    lf, rt = np.asarray(left), np.asarray(right)
    if lf.ndim != 1 or rt.shape != lf.shape:
        raise ValueError("left and right must be 1-D arrays of equal length")
    if lf.size == 0:
        raise ValueError("there are no comparisons")
    if not (np.issubdtype(lf.dtype, np.integer) and np.issubdtype(rt.dtype, np.integer)):
        raise ValueError("left and right must be integer item indices")
    if min(lf.min(), rt.min()) < 0 or max(lf.max(), rt.max()) >= n_items:
        raise ValueError(f"an item index in left or right is outside [0, {n_items})")
    if np.any(lf == rt):
        raise ValueError("an item cannot be compared with itself (left == right)")
    won = np.asarray(left_won)
    if won.shape != lf.shape:
        raise ValueError("left_won must have one entry per comparison")
    if won.dtype != bool and not np.all(np.isin(won, (0, 1))):
        raise ValueError("left_won must be boolean")
    raters = np.asarray(rater)
    if raters.shape != lf.shape:
        raise ValueError("rater must have one label per comparison")
    src = np.asarray(item_source)
    if src.shape != (n_items,) or (src.size and not np.issubdtype(src.dtype, np.integer)):
        raise ValueError("item_source must hold one integer source code per item")
    if n_sources < 1 or (src.size and (src.min() < 0 or src.max() >= n_sources)):
        raise ValueError(f"an item_source code is outside [0, {n_sources})")
    lf, rt, src = lf.astype(np.int64), rt.astype(np.int64), src.astype(np.int64)
    y = won.astype(np.float64)
    _, cluster = np.unique(raters, return_inverse=True)
    cluster = cluster.reshape(-1).astype(np.int64)

    compared = np.zeros(n_items, dtype=bool)
    compared[lf] = compared[rt] = True
    z = np.zeros((n_items, 0))
    kept: list[int] = []
    dropped: dict[str, str] = {}
    centres, scales, std_flags = [], [], []
    for j, name in enumerate(names):
        col = x[compared, j]
        if not np.all(np.isfinite(col)):
            bad = int((~np.isfinite(col)).sum())
            raise ValueError(
                f"covariate {name!r} is missing or not finite for {bad} compared items"
            )
        values = np.unique(col)
        if values.size < 2:
            dropped[name] = "constant"
            continue
        # An indicator keeps its 0/1 meaning; anything else is put in standard deviations.
        standardise = values.size > 2
        centre = float(col.mean()) if standardise else 0.0
        scale = float(col.std()) if standardise else 1.0
        kept.append(j)
        centres.append(centre)
        scales.append(scale)
        std_flags.append(standardise)
    z = np.zeros((n_items, len(kept)))
    for k, j in enumerate(kept):
        z[compared, k] = (x[compared, j] - centres[k]) / scales[k]

    sources, flags, used = _identify_sources(src[lf], src[rt], y, n_sources)
    # Columns that add nothing to the source contrasts and the columns before them.
    design = _source_block(src[lf[used]], src[rt[used]], sources)
    rank = np.linalg.matrix_rank(design) if design.shape[1] else 0
    final: list[int] = []
    for k, j in enumerate(kept):
        trial = np.column_stack([design, z[lf[used], k] - z[rt[used], k]])
        trial_rank = np.linalg.matrix_rank(trial)
        if trial_rank > rank:
            design, rank = trial, trial_rank
            final.append(k)
        else:
            dropped[names[j]] = "collinear"
    return _Design(
        left=lf,
        right=rt,
        y=y,
        cluster=cluster,
        n_clusters=int(cluster.max()) + 1,
        n_items=n_items,
        n_sources=n_sources,
        src=src,
        z=z[:, final],
        names=tuple(names[kept[k]] for k in final),
        standardised=tuple(std_flags[k] for k in final),
        centre=np.array([centres[k] for k in final]),
        scale=np.array([scales[k] for k in final]),
        dropped=dropped,
        sources=sources,
        flags=flags,
        used=used,
    )


def _design_matrix(d: _Design, with_covariates: bool) -> np.ndarray:
    lf, rt = d.left[d.used], d.right[d.used]
    block = _source_block(d.src[lf], d.src[rt], d.sources)
    if not with_covariates:
        return block
    return np.column_stack([block, d.z[lf] - d.z[rt]])


# ---------------------------------------------------------------------------------------------
# Maximum likelihood and the cluster-robust covariance
# ---------------------------------------------------------------------------------------------


def _loglik(x: np.ndarray, y: np.ndarray, coef: np.ndarray) -> float:
    eta = x @ coef
    # log P(y | eta) = y eta - log(1 + e^eta), written to stay finite for large |eta|.
    return float(np.sum(y * eta - np.logaddexp(0.0, eta)))


def _logistic_ml(
    x: np.ndarray, y: np.ndarray, *, tol: float = 1e-10, max_iter: int = 100
) -> tuple[np.ndarray, bool, int]:
    """Logistic regression without intercept: Newton with step halving on the log-likelihood."""
    coef = np.zeros(x.shape[1])
    if x.shape[1] == 0:
        return coef, True, 0
    ll = _loglik(x, y, coef)
    for iteration in range(1, max_iter + 1):
        p = expit(x @ coef)
        grad = x.T @ (y - p)
        info = (x * (p * (1.0 - p))[:, None]).T @ x
        step = np.linalg.solve(info, grad)
        t = 1.0
        while True:
            trial = coef + t * step
            ll_new = _loglik(x, y, trial)
            if ll_new >= ll - 1e-12 * abs(ll) or t < 1e-10:
                break
            t *= 0.5
        coef, ll = trial, ll_new
        if np.max(np.abs(t * step)) < tol:
            return coef, True, iteration
    return coef, False, max_iter


def _cluster_cov(
    x: np.ndarray, y: np.ndarray, coef: np.ndarray, cluster: np.ndarray, n_clusters: int
) -> np.ndarray:
    """CR1 sandwich: G/(G-1) B M B, B = inverse information, M = sum of per-rater score outer
    products."""
    p = expit(x @ coef)
    info = (x * (p * (1.0 - p))[:, None]).T @ x
    bread = np.linalg.inv(info)
    scores = x * (y - p)[:, None]
    per_cluster = np.zeros((n_clusters, x.shape[1]))
    np.add.at(per_cluster, cluster, scores)
    meat = per_cluster.T @ per_cluster
    factor = n_clusters / (n_clusters - 1.0) if n_clusters > 1 else math.nan
    return np.asarray(factor * bread @ meat @ bread)


def _centring(d: _Design) -> np.ndarray:
    """(n_sources, len(sources) - 1): reference-coded strengths -> strengths centred to mean 0
    over the identified sources; rows of the other sources are nan."""
    k = d.sources.size
    full = np.zeros((k, max(k - 1, 0)))
    full[1:, :] = np.eye(k - 1)
    centred = full - full.mean(axis=0, keepdims=True)
    out = np.full((d.n_sources, max(k - 1, 0)), np.nan)
    out[d.sources] = centred
    return out


def _wald(value: np.ndarray, se: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    return value - q * se, value + q * se


def _board(
    d: _Design, with_covariates: bool, q: float
) -> tuple[np.ndarray, np.ndarray, bool, int, dict[str, np.ndarray]]:
    """One fit: (coefficients, robust covariance, converged, iterations, reported pieces)."""
    x = _design_matrix(d, with_covariates)
    y = d.y[d.used]
    coef, converged, iterations = _logistic_ml(x, y)
    cov = _cluster_cov(x, y, coef, d.cluster[d.used], d.n_clusters)
    n_src_par = d.sources.size - 1 if d.sources.size else 0
    t_map = _centring(d) if d.sources.size else np.full((d.n_sources, 0), np.nan)
    p = coef.size - n_src_par
    # Map (reference-coded theta, beta) to (centred theta over all codes, beta).
    jac = np.zeros((d.n_sources + p, coef.size))
    jac[: d.n_sources, :n_src_par] = t_map
    jac[d.n_sources :, n_src_par:] = np.eye(p)
    if d.sources.size == 1:
        jac[d.sources[0], :] = 0.0  # a single identified source is its own centre
    est = np.nan_to_num(jac) @ coef
    est[: d.n_sources][np.isnan(t_map).any(axis=1) | (t_map.shape[1] == 0)] = np.nan
    if d.sources.size == 1:
        est[d.sources[0]] = 0.0
    full_cov = jac @ cov @ jac.T
    theta = est[: d.n_sources]
    diff = theta[:, None] - theta[None, :]
    diff_var = (
        np.diag(full_cov)[: d.n_sources, None]
        + np.diag(full_cov)[None, : d.n_sources]
        - 2.0 * full_cov[: d.n_sources, : d.n_sources]
    )
    diff_se = np.sqrt(np.maximum(diff_var, 0.0))
    se = np.sqrt(np.maximum(np.diag(full_cov), 0.0))
    low, high = _wald(est, se, q)
    diff_low, diff_high = _wald(diff, diff_se, q)
    pieces = {
        "est": est,
        "se": se,
        "low": low,
        "high": high,
        "diff": diff,
        "diff_low": diff_low,
        "diff_high": diff_high,
    }
    return coef, full_cov, converged, iterations, pieces


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")


def _fit_sources(d: _Design, level: float) -> StyleFit:
    reason = None
    if d.n_clusters < 2:
        # A rater-clustered variance needs at least two raters.
        reason = "too_few_raters"
        q = math.nan
    else:
        q = float(stdtrit(d.n_clusters - 1, 0.5 + level / 2.0))
    _, cov, conv, iters, fit = _board(d, True, q)
    _, plain_cov, plain_conv, _, plain = _board(d, False, q)
    ns = d.n_sources
    return StyleFit(
        theta=fit["est"][:ns],
        theta_se=fit["se"][:ns],
        theta_low=fit["low"][:ns],
        theta_high=fit["high"][:ns],
        diff=fit["diff"],
        diff_low=fit["diff_low"],
        diff_high=fit["diff_high"],
        plain_theta=plain["est"],
        plain_se=plain["se"],
        plain_low=plain["low"],
        plain_high=plain["high"],
        plain_diff=plain["diff"],
        plain_diff_low=plain["diff_low"],
        plain_diff_high=plain["diff_high"],
        beta=fit["est"][ns:],
        beta_se=fit["se"][ns:],
        beta_low=fit["low"][ns:],
        beta_high=fit["high"][ns:],
        beta_names=d.names,
        standardised=d.standardised,
        centre=d.centre,
        scale=d.scale,
        cov=cov,
        plain_cov=plain_cov,
        n_clusters=d.n_clusters,
        df=d.n_clusters - 1,
        n_pairs=int(d.used.sum()),
        converged=conv,
        plain_converged=plain_conv,
        iterations=iters,
        dropped=dict(d.dropped),
        source_flags=dict(d.flags),
        level=level,
        reason=reason,
    )


def style_controlled_sources(
    left: np.ndarray,
    right: np.ndarray,
    left_won: np.ndarray,
    rater: np.ndarray,
    item_source: np.ndarray,
    n_sources: int,
    covariates: np.ndarray,
    covariate_names: Any,
    *,
    level: float = 0.95,
) -> StyleFit:
    """Source strengths with and without style control (see the module docstring)."""
    _check_level(level)
    d = _prepare(left, right, left_won, rater, item_source, n_sources, covariates, covariate_names)
    return _fit_sources(d, level)


# ---------------------------------------------------------------------------------------------
# Items: the two-stage fit and its rater-clustered bootstrap
# ---------------------------------------------------------------------------------------------


def _batched_logistic(
    x: np.ndarray, wins: np.ndarray, totals: np.ndarray, init: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Binomial logistic regressions, one per round: ``wins``/``totals`` (R, n) on rows ``x``
    (n, K). Newton from ``init``; a step longer than 2 in any coefficient is shortened (a
    round in which a source never loses drifts out instead of overshooting). Returns the
    coefficients (R, K) and converged flags (R,)."""
    n_rounds, k = wins.shape[0], x.shape[1]
    coef = np.broadcast_to(init, (n_rounds, k)).copy()
    converged = np.zeros(n_rounds, dtype=bool)
    if k == 0:
        return coef, np.ones(n_rounds, dtype=bool)
    outer = (x[:, :, None] * x[:, None, :]).reshape(x.shape[0], k * k)
    # A vanishing ridge keeps a round solvable when its draw left a source without comparisons.
    ridge = 1e-9 * np.eye(k)
    for _ in range(50):
        p = expit(coef @ x.T)
        grad = (wins - totals * p) @ x
        info = ((totals * p * (1.0 - p)) @ outer).reshape(n_rounds, k, k) + ridge
        step = np.linalg.solve(info, grad[:, :, None])[:, :, 0]
        longest = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, 2.0 / np.maximum(longest, 1e-300))
        coef += step
        converged = longest[:, 0] < _BOOTSTRAP_TOL * 1e-2
        if converged.all():
            break
    return coef, converged


def style_controlled_items(
    left: np.ndarray,
    right: np.ndarray,
    left_won: np.ndarray,
    rater: np.ndarray,
    item_source: np.ndarray,
    n_sources: int,
    covariates: np.ndarray,
    covariate_names: Any,
    *,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
    alpha: float = DEFAULT_ALPHA,
) -> ItemStyleFit:
    """Style-controlled item scores with rater-clustered bootstrap intervals (module docstring)."""
    _check_level(level)
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    d = _prepare(left, right, left_won, rater, item_source, n_sources, covariates, covariate_names)
    sources = _fit_sources(d, level)
    winners = np.where(d.y > 0.5, d.left, d.right)
    losers = np.where(d.y > 0.5, d.right, d.left)
    fit = bt_fit(winners, losers, d.n_items, alpha=alpha, max_iter=200)
    labels, n_comp = fit.component, fit.n_components
    sizes = np.bincount(labels, minlength=n_comp)
    z_sum = np.zeros((n_comp, d.z.shape[1]))
    np.add.at(z_sum, labels, d.z)
    zc = d.z - z_sum[labels] / sizes[labels, None]
    beta_hat = sources.beta
    adjustment = zc @ beta_hat if beta_hat.size else np.zeros(d.n_items)
    controlled = fit.scores - adjustment

    nan_items = np.full(d.n_items, np.nan)
    reason = sources.reason
    n_clusters = d.n_clusters
    comps = [m for m in (np.flatnonzero(labels == c) for c in range(n_comp)) if m.size >= 2]
    boot_s = np.full((rounds, d.n_items), np.nan)
    boot_c = np.full((rounds, d.n_items), np.nan)
    boot_beta = np.full((rounds, beta_hat.size), np.nan)
    nonconverged = 0
    if reason is None:
        # Source stage: comparisons compressed to unordered item pairs, counts per rater.
        x_all = _design_matrix(d, True)
        used = np.flatnonzero(d.used)
        lo_item = np.minimum(d.left[used], d.right[used])
        hi_item = np.maximum(d.left[used], d.right[used])
        key = lo_item * d.n_items + hi_item
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        sign = np.where(d.left[used] == lo_item, 1.0, -1.0)
        x_pair = x_all[first] * sign[first, None]  # oriented lower index minus higher
        low_won = np.where(sign > 0, d.y[used], 1.0 - d.y[used])
        shape = (uniq.size, n_clusters)
        per_total = sparse.csr_matrix((np.ones(used.size), (inv, d.cluster[used])), shape=shape)
        per_wins = sparse.csr_matrix((low_won, (inv, d.cluster[used])), shape=shape)
        coef_hat, _, _ = _logistic_ml(x_all, d.y[used])
        n_src_par = coef_hat.size - beta_hat.size
        # Item stage: ordered (winner, loser) counts per rater, as bt_bootstrap builds them.
        okey = winners * d.n_items + losers
        ouniq, oinv = np.unique(okey, return_inverse=True)
        per_item = sparse.csr_matrix(
            (np.ones(okey.size), (oinv.reshape(-1), d.cluster)), shape=(ouniq.size, n_clusters)
        )
        pw, pl = ouniq // d.n_items, ouniq % d.n_items
        local = np.zeros(d.n_items, dtype=np.int64)
        for members in comps:
            local[members] = np.arange(members.size)
        comp_rows = [np.flatnonzero(labels[pw] == labels[m[0]]) for m in comps]
        largest = max((m.size for m in comps), default=1)
        chunk = int(
            max(
                1,
                min(rounds, _BATCH_ELEMENTS // (largest * largest), _BATCH_ELEMENTS // n_clusters),
            )
        )
        rng = np.random.default_rng(seed)
        for start in range(0, rounds, chunk):
            r = min(chunk, rounds - start)
            draw = rng.multinomial(
                n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=r
            ).T.astype(np.float64)
            coef, conv = _batched_logistic(
                x_pair, np.asarray((per_wins @ draw).T), np.asarray((per_total @ draw).T), coef_hat
            )
            nonconverged += int((~conv).sum())
            beta_r = coef[:, n_src_par:]
            boot_beta[start : start + r] = beta_r
            for members, rows in zip(comps, comp_rows, strict=True):
                k = members.size
                counts = np.asarray((per_item[rows] @ draw).T)
                wins = np.zeros((r, k, k))
                wins.reshape(r, k * k)[:, local[pw[rows]] * k + local[pl[rows]]] = counts
                init = np.broadcast_to(fit.scores[members], (r, k))
                s, _, _ = _newton(wins, init, alpha, _BOOTSTRAP_TOL, 200)
                s = s - s.mean(axis=1, keepdims=True)
                boot_s[start : start + r, members] = s
                boot_c[start : start + r, members] = s - beta_r @ zc[members].T

    tail = (1.0 - level) / 2.0
    if n_clusters > 1:
        # bt_bootstrap's expanded percentile interval with G = raters.
        q = math.sqrt(n_clusters / (n_clusters - 1.0)) * float(stdtrit(n_clusters - 1, 1.0 - tail))
        tail = float(ndtr(-q))
    plain_low, plain_high = nan_items.copy(), nan_items.copy()
    ci_low, ci_high = nan_items.copy(), nan_items.copy()
    beta_low = np.full(beta_hat.size, np.nan)
    beta_high = np.full(beta_hat.size, np.nan)
    compared = np.zeros(d.n_items, dtype=bool)
    for members in comps:
        compared[members] = True
    if reason is None and compared.any():
        plain_low[compared], plain_high[compared] = np.quantile(
            boot_s[:, compared], [tail, 1.0 - tail], axis=0
        )
        ci_low[compared], ci_high[compared] = np.quantile(
            boot_c[:, compared], [tail, 1.0 - tail], axis=0
        )
    if reason is None and beta_hat.size:
        beta_low, beta_high = np.quantile(boot_beta, [tail, 1.0 - tail], axis=0)
    # An item never compared is its own component: score 0 by centring, no interval.
    controlled[~compared] = 0.0
    adjustment[~compared] = 0.0
    return ItemStyleFit(
        scores=controlled,
        ci_low=ci_low,
        ci_high=ci_high,
        rank=ci_aware_ranks(controlled, ci_low, ci_high, component=labels),
        adjustment=adjustment,
        plain_scores=fit.scores,
        plain_low=plain_low,
        plain_high=plain_high,
        plain_rank=ci_aware_ranks(fit.scores, plain_low, plain_high, component=labels),
        component=labels,
        n_components=n_comp,
        sources=sources,
        beta_low=beta_low,
        beta_high=beta_high,
        rounds=rounds,
        seed=seed,
        level=level,
        n_clusters=n_clusters,
        dropped=dict(d.dropped),
        nonconverged_rounds=nonconverged,
        reason=reason,
    )


# ---------------------------------------------------------------------------------------------
# Order changes
# ---------------------------------------------------------------------------------------------


def _relation(low: np.ndarray, high: np.ndarray, a: int, b: int) -> int:
    """+1 when a is clearly above b, -1 when clearly below, 0 otherwise (nan: never separated)."""
    if low[a] > high[b]:
        return 1
    if low[b] > high[a]:
        return -1
    return 0


def order_changes(
    plain_scores: np.ndarray,
    plain_low: np.ndarray,
    plain_high: np.ndarray,
    controlled_scores: np.ndarray,
    controlled_low: np.ndarray,
    controlled_high: np.ndarray,
    names: Any,
    *,
    component: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """Pairs whose separated order changes under style control.

    Each record: ``change`` (one of ``CHANGE_CODES``), ``a`` and ``b`` (names), ``a_index``,
    ``b_index``, ``plain`` and ``controlled`` (``"a_above"``, ``"b_above"`` or ``"overlap"``),
    ``plain_diff`` and ``controlled_diff`` (score of a minus score of b). ``a`` is the entry
    above without control when it was separated then, else the one above with control; so a
    flip reads "a was clearly above b, now b is clearly above a". Sorted by change (flips
    first), then by the indices.
    """
    arrays = [
        np.asarray(v, dtype=np.float64)
        for v in (
            plain_scores,
            plain_low,
            plain_high,
            controlled_scores,
            controlled_low,
            controlled_high,
        )
    ]
    n = arrays[0].shape[0] if arrays[0].ndim == 1 else -1
    if n < 0 or any(v.shape != (n,) for v in arrays):
        raise ValueError("scores and interval bounds must be 1-D arrays of equal length")
    labels = [str(v) for v in names]
    if len(labels) != n:
        raise ValueError(f"names has {len(labels)} entries for {n} scores")
    comp = np.zeros(n, dtype=np.int64) if component is None else np.asarray(component)
    if comp.shape != (n,):
        raise ValueError("component must have one label per entry")
    p_score, p_low, p_high, c_score, c_low, c_high = arrays
    word = {1: "a_above", -1: "b_above", 0: "overlap"}
    out: list[dict[str, Any]] = []
    for i in range(n):
        for j in range(i + 1, n):
            if comp[i] != comp[j]:
                continue
            before = _relation(p_low, p_high, i, j)
            after = _relation(c_low, c_high, i, j)
            if before == after or (before == 0 and after == 0):
                continue
            if before != 0 and after != 0:
                change = "flipped"
            elif before != 0:
                change = "separation_lost"
            else:
                change = "separation_gained"
            a, b = (i, j) if (before or after) > 0 else (j, i)
            sign = 1 if a == i else -1
            out.append(
                {
                    "change": change,
                    "a": labels[a],
                    "b": labels[b],
                    "a_index": a,
                    "b_index": b,
                    "plain": word[before * sign],
                    "controlled": word[after * sign],
                    "plain_diff": float(p_score[a] - p_score[b]),
                    "controlled_diff": float(c_score[a] - c_score[b]),
                }
            )
    out.sort(key=lambda r: (CHANGE_CODES.index(r["change"]), r["a_index"], r["b_index"]))
    return out
