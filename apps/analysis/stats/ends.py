"""Honest ends of a Bradley-Terry board: one-sided bounds for undefeated and never-winning items.

An item that won every comparison it took part in has no finite maximum-likelihood score (the
likelihood keeps rising as its strength goes to +inf); one that never won is the mirror image.
``bradley_terry.bt_fit`` keeps them finite with its ridge, but the value it returns is set by
the ridge, not by the data, and so is any two-sided interval around it. What the data do say
is one-sided: "at least this strong" (or "at most"). This module computes that bound from the
profile likelihood, and the rank that follows from it.

Public API
----------
``CUTS``
    The accepted values of ``one_sided_bounds(cut=...)``: ``("exact", "chi2")``.
``PROFILE_RIDGE``
    The tiny ridge of the inner (profile) fits, 1e-9 (see "The bound").
``EndBounds``
    Frozen dataclass, per item (arrays of length ``n_items``): ``end`` (int: +1 undefeated =
    compared and never lost, -1 never won = compared and never won, 0 otherwise), ``bound``
    (float: a lower bound for +1, an upper bound for -1, nan otherwise and where the scale is
    not identified), ``scores`` (float: the finite items' penalised ML scores on the
    finite-centre scale; nan for end items and items never compared), ``component`` (int:
    connected component of the comparison graph, as ``BTFit.component``), ``identified``
    (bool: the item's component has a finite-centre scale the data determine, see "When the
    scale is not identified"); scalars ``level``, ``cut``, ``simultaneous``.
``one_sided_bounds(winners, losers, n_items, *, level=0.95, alpha=DEFAULT_ALPHA, cut="exact",
simultaneous=True, profile_ridge=PROFILE_RIDGE) -> EndBounds``
    One row per comparison, as ``bt_fit``. ``alpha`` is the ridge of the finite items'
    scores only; the bounds use the unpenalised likelihood.
``finite_comparison_mask(winners, losers, end) -> np.ndarray``
    Boolean mask of the comparisons between two finite items (``end == 0`` for both).
``shift_to_finite_centre(scores, component, end) -> tuple[np.ndarray, np.ndarray]``
    ``(shifted, shift)``: ``shift`` per item is the mean score of the finite items of its
    component (nan where it has none); ``shifted = scores - shift`` for finite items, nan for
    end items.
``end_ranks(scores, ci_low, ci_high, ends, component=None) -> np.ndarray``
    CI-aware ranks (``ranks.ci_aware_ranks``) over finite items' two-sided intervals and end
    items' one-sided ones (1 = best, within components).
``ProfileLikelihood`` / ``profile_loglik(winners, losers, n_items, item, *, ridge=0.0)``
    Diagnostics: the profile log-likelihood l_p(t) of one item relative to the mean of all
    the others, as a callable.

The scale
---------
Scores and bounds are reported on one scale: within each connected component, log-strengths
relative to the mean of the component's *finite* items F (compared, at least one win and one
loss). ``bt_fit`` centres on the mean of all items, ridge-held end items included, so one
undefeated item at +6 drags every other score down by 6 / k (0.69 on a 20-item test case
with four end items); the finite mean does not move with the ridge.

Finite items' scores are the penalised fit (ridge ``alpha``, as ``bt_fit``) to the comparisons
between finite items only. That is the maximum-likelihood estimate of the full data with end
items at their limits, not an approximation of it: at the limit every comparison of an end
item has probability 1 (an undefeated item beats its opponents with certainty), contributes 0
to the log-likelihood and nothing to the gradient of the finite items, so the full likelihood
is the finite-finite likelihood. (A full-data ridge fit instead keeps a small residual pull
of each ridge-held end item on its opponents: 0.017 at the default ridge on the test case,
5e-8 at alpha = 1e-9.) The fit centres on the finite items, which is the finite centre.

The bound
---------
Estimand, for an undefeated item u of a component with finite items F:
``t_u = s_u - mean_{j in F} s_j``, and the statement is ``t_u >= bound``; for a never-won item
v, ``t_v <= bound``. With ``simultaneous=True`` (default) every bound of the call holds at
once with confidence ``level``; with ``simultaneous=False`` each holds on its own with
confidence ``level`` (see "Selection" for why the default is simultaneous).

Profile log-likelihood (unpenalised): ``l_p(t) = sup {l(s) : s_u - mean_F(s) = t}``, the sup
over every other strength. The other end items are nuisance parameters too, and their own
log-likelihood terms are maximised (to exactly 0) at their limits whatever t is, so the sup
puts them there and drops their comparisons, including any comparison of u with a never-won
item: beating an item that is infinitely weak says nothing about u against F. So several end
items in one component are profiled one at a time, each with the others at their limits
(a test checks that u's bound equals the bound in the data without the other's comparisons).
Hence ``l_p(t) = sup_{s_F} [l_F(s_F) + sum_f W_uf log sigmoid(mean_F(s_F) + t - s_f)]``. Each
u term rises with t, so l_p is non-decreasing, and its sup is the limit t -> inf, where every u
term goes to 0: ``sup l_p = sup l_F``, the maximised log-likelihood of the finite-finite
comparisons. That is the maximised likelihood of the data with u's comparisons removed, as
first reasoned, once one adds that the other end items drop out of it the same way (they are
still ends, or uncompared, without u). It is a sup, not always a maximum: removing u can
leave an item that lost only to u undefeated among the rest; such components are not
identified (below) and get no bound.

The bound is the t where ``2 (sup l_p - l_p(t)) = c``, solved with ``scipy.optimize.brentq``
on a bracket found by doubling, the inner sup by damped Newton iterations over the other
strengths with the constraint eliminated (a null-space parametrisation). Never-won items are
the mirror image: swapping winners and losers negates every strength and turns them into
undefeated items. Inner fits use the tiny ridge ``profile_ridge`` (1e-9, on the free
coordinates) only so that a sup that is not attained is approached by a finite point; the
tests show it moves the bounds by < 1e-6 against ``profile_ridge=0`` (and 1e-6 by < 1e-3),
and check the bound against a profile written out by hand and maximised by scipy to 1e-6.

The cut ``c``
-------------
``cut="chi2"``: ``c = z**2`` with z the normal quantile of the one-sided level (2.706 at 95%),
the usual one-sided likelihood-ratio cut. ``cut="exact"`` (default): ``c = -2 log(error)``
(5.991 for an error of 5%). Why not the chi-square cut: at the boundary its approximation
fails. With the other strengths known, ``exp(-(sup l_p - l_p(t0)))`` is
``prod_f P(u beats f | t0)^W_uf``, exactly the probability of the observed outcome, "u won all
its comparisons", when the truth is t0: the exact p-value of the one-sided test of t0 (no
outcome is more extreme). Inverting that test gives the exact cut, and then P(u ends
undefeated and its bound exceeds the truth) <= error for every t0 and every design, like a
Clopper-Pearson bound (against a single finite opponent it *is* the Clopper-Pearson bound of a
win probability after n wins in n; a test checks this). The chi-square cut rejects t0 whenever
that probability is below exp(-1.353) = 0.26, so an item whose chance of a clean sheet is
5-26% misses every time it has one. With the other strengths profiled the guarantee is
approximate; ``benchmarks/sim_end_bounds.py`` measures it.

Selection, and why bounds are simultaneous by default
-----------------------------------------------------
An item is undefeated partly *because* it was lucky, and a per-item guarantee says nothing
about the items that happened to end undefeated: among 20-40 items with 12 comparisons each,
many moderately strong items have a 1-5% chance of a clean sheet, and together they produce
about as many undefeated items as the truly strong ones. Measured (``benchmarks/README.md``,
"Honest ends: one-sided bounds"), the share of undefeated or never-won items whose bound holds
was 28-67% with the chi-square cut and 75-94% with the per-item exact cut at 95%, against 99%
or more with the simultaneous one. No per-item cut can fix this in general: the coverage given
"undefeated" depends on how true strengths are spread, which one study does not reveal. What
does hold whatever the spread is a statement about the whole board: with
``simultaneous=True`` the error is split over every compared item and both sides (Bonferroni:
error (1 - level) / (2 K), K compared items in the call), so P(any bound of the board misses)
<= 1 - level with the other strengths known, and then every bound a reader picks out,
however it was selected, holds with that confidence. The price: bounds are lower (the cut
grows like 2 log K: 14.2 for K = 30, 18.8 for 300), so ranks claim less.

When the scale is not identified
--------------------------------
``identified`` is False, and ``bound`` nan, for every item of a component where the finite
items' own ML estimate does not exist on the finite-centre scale: (a) no finite item, e.g. two
items, one beat the other: no centre to put a bound on; the data still order the two, but not
on this board's scale, ``end_ranks`` gives them rank 1 (no claim) and a board should show them
unranked; (b) the finite items are not connected by comparisons among themselves (they were
linked only through end items, so their relative placement, hence their mean, is not
determined; the profile is then flat or nearly so); (c) the finite items' win graph is not
strongly connected: some finite item never lost (or never won) against another finite item,
e.g. it lost only to an undefeated item, and at the limit it is infinitely far from the rest
too. In (c) the profile likelihood still gives a number, but its nuisance parameters sit at
infinity and the likelihood-ratio logic fails: in the simulation such bounds missed badly
(4.7 against a truth of 2.6), so none is reported. Finite items' scores there are partly held
by the ridge: a board should not present them, or ranks drawn from them, as measured.

This is common in sparse designs (``benchmarks/sim_end_bounds.py``, 20-40 items): with 3
comparisons per item almost no end item had a bound; with 6, 0-11%; with 12, 27-81% (the wider
the spread of true strengths, the fewer); with 24, 78%. Today's board shows ridge-held scores and intervals for
such finite items without a flag; ``identified`` is that flag.

Edge cases: an end item with no comparison against a finite item (e.g. undefeated, having
beaten only never-won items) has a flat profile: bound -inf (+inf for never-won), which says
nothing, honestly. A bound below -200 (above +200) on this log scale is reported as -inf
(+inf). Items never compared: end 0, bound and score nan, ``identified`` False.

Ranks
-----
``end_ranks`` applies the rule of ``ranks.ci_aware_ranks`` (rank = 1 + number of items whose
interval lies entirely above) to finite items' two-sided intervals and the end items' one-sided
ones: undefeated ``[bound, +inf)``, never-won ``(-inf, bound]``, nan bound: no claim either
way. Consequences: an undefeated item is always rank 1 (nothing can lie above +inf) and shares
it with every item that can tie it (upper end >= its bound: other undefeated items, finite
items whose interval reaches its bound); it pushes down the items whose upper end falls below
its bound. A never-won item gets the bottom rank that follows: 1 + the number of items whose
lower end exceeds its bound; it pushes no one down.

Why that is honest: the rule only claims "j is better than i" when j's lower end is above i's
upper end; if both intervals cover their true values, the claim is true. A one-sided interval
covers its item's true value as a two-sided one does, and its infinite side is never wrong,
so every order the rank asserts is backed by the coverage of the two intervals involved,
whichever kind they are; rank 1 for an undefeated item claims only that no item is clearly
better, which the data cannot refute. Per-side risk: a two-sided level-L interval misses on
each side with about (1 - L) / 2; a per-item one-sided bound at ``level`` with 1 - ``level``;
the simultaneous bound at 95% with far less per item, so its claims carry no more risk than
the finite items' own. (In the simulation, of the order claims involving an end item, at most
a few per cent were false, in strata with few claims, and none in the others.)

What the caller must do for finite items' intervals
---------------------------------------------------
The intervals must be on the finite-centre scale. ``bt_bootstrap`` centres each round on the
mean of all (present) items of a component, ridge-held end items included; their ridge values
change from round to round, so the shift to the finite centre differs per round and cannot be
applied to the percentiles after the fact (``shift_to_finite_centre`` of an interval is only
an approximation). No new bootstrap is needed, though: run ``bt_bootstrap`` on the finite
comparisons only, ``m = finite_comparison_mask(winners, losers, ends.end)`` then
``bt_bootstrap(winners[m], losers[m], n_items, clusters=raters[m], ...)``. That is exact, not a
shortcut: resampling only re-weights comparisons that happened, so an item that never lost
never loses in any resample (it stays an end or is not drawn), and by the argument above each
resample's ML estimate of the finite items is the fit to its finite-finite comparisons,
centred on the finite mean, which is what ``bt_bootstrap`` computes on the masked data. Its
``fit.scores`` equal ``EndBounds.scores`` on finite items (same data, same ``alpha``; tested).
One difference from resampling the full data: raters who judged only pairs involving an end
item drop out of the rater count G (the multinomial draws G' <= G raters, and the expanded
interval uses G'); both are valid cluster bootstraps of the finite-finite comparisons.

``shift_to_finite_centre`` is for point scores from a full-data fit (e.g. ``BTFit.scores``):
it moves them exactly onto the finite centre; they still differ from ``EndBounds.scores`` by
the ridge-held end items' residual pull (above).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, log_expit, ndtri

from apps.analysis.stats.bradley_terry import DEFAULT_ALPHA, bt_fit
from apps.analysis.stats.ranks import ci_aware_ranks

CUTS = ("exact", "chi2")
PROFILE_RIDGE = 1e-9

# Beyond +-200 log-strength units a win probability is below e^-200: a bound that far out
# says nothing, and is reported as infinite.
_T_LIMIT = 200.0


@dataclass(frozen=True)
class EndBounds:
    end: np.ndarray
    bound: np.ndarray
    scores: np.ndarray
    component: np.ndarray
    identified: np.ndarray
    level: float
    cut: str
    simultaneous: bool


# ---------------------------------------------------------------------------------------------
# The inner fits: maximise the unpenalised BT log-likelihood under linear constraints
# ---------------------------------------------------------------------------------------------


def _loglik(wins: np.ndarray, s: np.ndarray) -> float:
    """sum_ij W_ij log P(i beats j) for a dense (k, k) win-count matrix."""
    d = s[:, None] - s[None, :]
    return float(np.sum(wins * log_expit(d)))


def _null_space(constraints: np.ndarray) -> np.ndarray:
    """Orthonormal basis (k, k - m) of the vectors orthogonal to the m columns given."""
    k, m = constraints.shape
    q, _ = np.linalg.qr(constraints, mode="complete")
    return np.asarray(q[:, m:]) if k > m else np.zeros((k, 0))


def _constrained_max(
    wins: np.ndarray,
    offset: np.ndarray,
    basis: np.ndarray,
    z0: np.ndarray,
    ridge: float,
    max_iter: int = 500,
) -> tuple[float, np.ndarray]:
    """max over z of l(offset + basis z) - ridge |z|^2, by damped Newton iterations.

    Returns (the unpenalised l at the optimum, z). The objective is concave; ``ridge`` only
    makes it strictly so along directions where the sup is not attained.
    """
    z = z0.copy()
    total = wins + wins.T
    row_wins = wins.sum(axis=1)

    def value(zz: np.ndarray) -> float:
        return _loglik(wins, offset + basis @ zz) - ridge * float(zz @ zz)

    f = value(z)
    for _ in range(max_iter):
        if z.size == 0:
            break
        s = offset + basis @ z
        p = expit(s[:, None] - s[None, :])
        grad_s = row_wins - np.sum(total * p, axis=1)
        q = total * p * (1.0 - p)
        info = np.diag(q.sum(axis=1)) - q
        grad = basis.T @ grad_s - 2.0 * ridge * z
        hess = basis.T @ info @ basis + 2.0 * ridge * np.eye(z.size)
        step = np.linalg.solve(hess, grad)
        slope = float(grad @ step)
        tau = 1.0
        while True:
            f_new = value(z + tau * step)
            if f_new >= f + 1e-4 * tau * slope - 1e-13 * abs(f) or tau < 1e-12:
                break
            tau *= 0.5
        z = z + tau * step
        moved = tau * float(np.max(np.abs(step)))
        gain = f_new - f
        f = f_new
        if moved < 1e-10 or (slope < 1e-14 and gain <= 1e-14):
            break
    return _loglik(wins, offset + basis @ z), z


class ProfileLikelihood:
    """l_p(t) for item 0 of a dense win matrix, relative to the mean of items 1..k-1.

    Calling it with t returns l_p(t); afterwards ``offset(t) + basis @ z`` are the maximising
    strengths. Keeps the last inner optimum as the warm start of the next evaluation (brentq
    evaluates nearby points in turn).
    """

    def __init__(self, wins: np.ndarray, ridge: float) -> None:
        k = wins.shape[0]
        self.wins = wins
        self.ridge = ridge
        # Constraint vector c: s_0 - mean(s_1..s_{k-1}); translation is fixed by 1's s = 0. The
        # two are orthogonal (c sums to 0), so t * c / |c|^2 is a particular solution.
        self.c = np.concatenate([[1.0], np.full(k - 1, -1.0 / (k - 1))])
        ones = np.ones(k) / np.sqrt(k)
        self.basis = _null_space(np.column_stack([ones, self.c / np.linalg.norm(self.c)]))
        self.z = np.zeros(self.basis.shape[1])

    def offset(self, t: float) -> np.ndarray:
        return np.asarray(t * self.c / float(self.c @ self.c))

    def __call__(self, t: float) -> float:
        value, self.z = _constrained_max(self.wins, self.offset(t), self.basis, self.z, self.ridge)
        return value


def _max_loglik(wins: np.ndarray, ridge: float) -> float:
    """sup_s l(s) over a dense win matrix (translation fixed; ridge as in the profile)."""
    k = wins.shape[0]
    if k < 2:
        return 0.0
    basis = _null_space(np.ones((k, 1)) / np.sqrt(k))
    value, _ = _constrained_max(wins, np.zeros(k), basis, np.zeros(k - 1), ridge)
    return value


def _lower_bound(wins: np.ndarray, sup: float, cut: float, ridge: float) -> float:
    """Lower bound for item 0 (undefeated) of the sub-problem: 2 (sup - l_p(t)) = cut."""
    if wins[0, 1:].sum() <= 0:
        return -np.inf  # no comparison with a finite item: the profile is flat
    profile = ProfileLikelihood(wins, ridge)

    def gap(t: float) -> float:
        return 2.0 * (sup - profile(t)) - cut

    # A flat profile (no information) is common in sparse designs: test the far end first, so
    # it costs one inner fit instead of a doubling search.
    if gap(-_T_LIMIT) <= 0.0:
        return -np.inf
    profile.z = np.zeros_like(profile.z)
    hi = 1.0
    while gap(hi) >= 0.0:
        hi = 2.0 * hi + 1.0
        if hi > _T_LIMIT:  # cannot happen: gap -> -cut as t -> inf; guards a runaway loop
            raise RuntimeError("profile likelihood did not approach its supremum")
    lo = min(hi - 1.0, -1.0)
    while gap(lo) <= 0.0:
        lo = max(2.0 * lo - 1.0, -_T_LIMIT)
    # Imported here: scipy.optimize takes a tenth of a second to import (its global and
    # linear-programming solvers), and most aggregations never bound an undefeated item.
    from scipy.optimize import brentq

    return float(brentq(gap, lo, hi, xtol=1e-10, rtol=1e-12))


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def _cut_value(level: float, cut: str, family: int) -> float:
    """The likelihood-ratio cut for one-sided error (1 - level) / family."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    error = (1.0 - level) / max(family, 1)
    if cut == "exact":
        return float(-2.0 * np.log(error))
    if cut == "chi2":
        return float(ndtri(1.0 - error) ** 2)
    raise ValueError(f"cut must be one of {CUTS}, not {cut!r}")


def _strongly_connected(members: np.ndarray, wins_local: np.ndarray) -> bool:
    graph = sparse.csr_matrix(wins_local > 0)
    n_scc, _ = connected_components(graph, directed=True, connection="strong")
    return bool(n_scc == 1) if members.size else False


def one_sided_bounds(
    winners: np.ndarray,
    losers: np.ndarray,
    n_items: int,
    *,
    level: float = 0.95,
    alpha: float = DEFAULT_ALPHA,
    cut: str = "exact",
    simultaneous: bool = True,
    profile_ridge: float = PROFILE_RIDGE,
) -> EndBounds:
    """Profile-likelihood one-sided bounds of end items, finite items' scores, on one scale.

    See the module docstring for the scale, the estimand, the choice of ``cut`` and
    ``simultaneous``.
    """
    if not profile_ridge >= 0:
        raise ValueError("profile_ridge must be >= 0")
    # bt_fit validates the comparisons and labels the components of the full graph.
    full = bt_fit(winners, losers, n_items, alpha=alpha)
    w = np.asarray(winners, dtype=np.int64)
    lo = np.asarray(losers, dtype=np.int64)
    won = np.bincount(w, minlength=n_items)
    lost = np.bincount(lo, minlength=n_items)
    compared = (won + lost) > 0
    end = np.zeros(n_items, dtype=np.int64)
    end[compared & (lost == 0)] = 1
    end[compared & (won == 0)] = -1
    finite = compared & (end == 0)
    # Simultaneous: Bonferroni over every compared item and both sides (an item can end on
    # either side, and each side's event has its own guarantee).
    c_value = _cut_value(level, cut, 2 * int(compared.sum()) if simultaneous else 1)

    keep = finite[w] & finite[lo]
    finite_fit = bt_fit(w[keep], lo[keep], n_items, alpha=alpha)
    scores = np.where(finite, finite_fit.scores, np.nan)
    bound = np.full(n_items, np.nan)
    identified = np.zeros(n_items, dtype=bool)

    for label in np.unique(full.component[compared]):
        members = np.flatnonzero(full.component == label)
        fin = members[finite[members]]
        ends = members[end[members] != 0]
        if fin.size == 0:
            continue  # only end items: no finite centre, nothing to place a bound on
        # Dense win counts over [finite items..., end items...] of this component.
        order = np.concatenate([fin, ends])
        local = np.full(n_items, -1, dtype=np.int64)
        local[order] = np.arange(order.size)
        sel = full.component[w] == label
        wins = np.zeros((order.size, order.size))
        np.add.at(wins, (local[w[sel]], local[lo[sel]]), 1.0)
        n_fin = fin.size
        wins_ff = wins[:n_fin, :n_fin]
        pieces = np.unique(finite_fit.component[fin]).size
        ok = pieces == 1 and _strongly_connected(fin, wins_ff)
        identified[members] = ok
        if not ok:
            # No finite centre the data determine: a bound relative to it would rest on
            # ridge-held or limit values (the simulation shows such bounds missing badly).
            continue
        sup = _max_loglik(wins_ff, profile_ridge)
        for pos, item in enumerate(ends, start=n_fin):
            # Sub-problem: the end item first, then the finite items; the other end items sit
            # at their limits, where their comparisons contribute exactly 0.
            idx = np.concatenate([[pos], np.arange(n_fin)])
            sub = wins[np.ix_(idx, idx)]
            if end[item] == 1:
                bound[item] = _lower_bound(sub, sup, c_value, profile_ridge)
            else:
                # Mirror image: swapped outcomes negate every strength (l_F's sup is unchanged).
                bound[item] = -_lower_bound(sub.T.copy(), sup, c_value, profile_ridge)
    return EndBounds(
        end=end,
        bound=bound,
        scores=scores,
        component=full.component,
        identified=identified,
        level=float(level),
        cut=cut,
        simultaneous=simultaneous,
    )


def finite_comparison_mask(winners: np.ndarray, losers: np.ndarray, end: np.ndarray) -> np.ndarray:
    """True for the comparisons between two finite items (``end == 0`` for both).

    Bootstrap these to get finite items' intervals on the finite-centre scale (module
    docstring, "What the caller must do").
    """
    e = np.asarray(end)
    return np.asarray((e[np.asarray(winners)] == 0) & (e[np.asarray(losers)] == 0))


def shift_to_finite_centre(
    scores: np.ndarray, component: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move a full-data fit's scores onto the finite-centre scale.

    Returns ``(shifted, shift)``: ``shift`` per item is the mean score of the finite items
    (``end == 0``, score not nan) of its component, nan if it has none; ``shifted`` is
    ``scores - shift`` for finite items and nan for end items. Exact for point scores; for
    bootstrap intervals see the module docstring (use ``finite_comparison_mask``).
    """
    s = np.asarray(scores, dtype=np.float64)
    comp = np.asarray(component)
    e = np.asarray(end)
    if s.ndim != 1 or comp.shape != s.shape or e.shape != s.shape:
        raise ValueError("scores, component and end must be 1-D arrays of equal length")
    finite = (e == 0) & ~np.isnan(s)
    shift = np.full(s.shape, np.nan)
    for label in np.unique(comp):
        members = comp == label
        pick = members & finite
        if pick.any():
            shift[members] = s[pick].mean()
    shifted = np.where(e == 0, s - shift, np.nan)
    return shifted, shift


def end_ranks(
    scores: np.ndarray,
    ci_low: np.ndarray,
    ci_high: np.ndarray,
    ends: EndBounds,
    component: np.ndarray | None = None,
) -> np.ndarray:
    """CI-aware ranks with one-sided intervals for end items (1 = best, within components).

    ``scores``, ``ci_low`` and ``ci_high`` are the finite items' values on the finite-centre
    scale (their entries for end items are ignored); ``component`` defaults to
    ``ends.component``.
    """
    s = np.asarray(scores, dtype=np.float64)
    lo = np.asarray(ci_low, dtype=np.float64)
    hi = np.asarray(ci_high, dtype=np.float64)
    if s.shape != ends.end.shape or lo.shape != s.shape or hi.shape != s.shape:
        raise ValueError("scores, ci_low and ci_high must have one entry per item of ends")
    up, down = ends.end == 1, ends.end == -1
    low = np.where(up, ends.bound, np.where(down, -np.inf, lo))
    high = np.where(up, np.inf, np.where(down, ends.bound, hi))
    comp = ends.component if component is None else np.asarray(component)
    return ci_aware_ranks(np.where(np.isnan(s), 0.0, s), low, high, component=comp)


def profile_loglik(
    winners: np.ndarray, losers: np.ndarray, n_items: int, item: int, *, ridge: float = 0.0
) -> ProfileLikelihood:
    """l_p(t) of ``item`` relative to the mean of the *other* items of the data given.

    For tests and diagnostics: every other item is a nuisance strength (no end items are
    dropped; pass the comparisons you mean). Its items are ordered ``item`` first, then the
    others in index order. ``ridge`` as ``profile_ridge``.
    """
    w = np.asarray(winners, dtype=np.int64)
    lo = np.asarray(losers, dtype=np.int64)
    order = np.concatenate([[item], np.delete(np.arange(n_items), item)])
    local = np.empty(n_items, dtype=np.int64)
    local[order] = np.arange(n_items)
    wins = np.zeros((n_items, n_items))
    np.add.at(wins, (local[w], local[lo]), 1.0)
    return ProfileLikelihood(wins, ridge)
