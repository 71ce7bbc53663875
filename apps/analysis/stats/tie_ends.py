"""Honest ends of a board fitted with ties: one-sided bounds under Davidson or Rao-Kupper.

The tie-model counterpart of ``ends.one_sided_bounds`` (read that module's docstring first:
the finite-centre scale, the exact simultaneous cut, identification and ``end_ranks`` carry
over unchanged; only the likelihood differs).

Public API
----------
``tie_one_sided_bounds(left, right, outcome, n_items, *, model, level=0.95,
alpha=DEFAULT_ALPHA, profile_ridge=PROFILE_RIDGE) -> ends.EndBounds``
    Judgments as ``ties.tie_fit`` (outcome ``LEFT``, ``RIGHT`` or ``TIE``), ``model`` one of
    ``ties.TIE_MODELS``. Returns the fields of ``ends.EndBounds`` with the same meaning;
    ``cut`` is always ``"exact"`` and ``simultaneous`` True.

End items
---------
``end = +1`` for an item compared, with no tie and no loss (only wins); ``-1`` with no tie and
no win (only losses); 0 otherwise. A tie keeps an item finite: under both models P(tie) > 0 at
any finite strength difference and -> 0 as the difference grows, so an item with a tie has a
finite maximum-likelihood score whatever else it did (as an item with a loss has in plain
Bradley-Terry).

The limit, the scale, the profile
---------------------------------
Under both models P(u beats f) -> 1 as s_u -> inf (Davidson: e^{s_u} / (e^{s_u} + e^{s_f} +
nu e^{(s_u + s_f) / 2}) -> 1, the tie term growing only like e^{s_u / 2}; Rao-Kupper:
pi_u / (pi_u + theta pi_f) -> 1). So, as in ``ends``, at the limit an end item's comparisons
contribute 0 to the log-likelihood and nothing to its gradient, and the full data's ML
estimate of the finite items (strengths and the tie parameter) is the tie-model fit to the
comparisons between finite items, ties included (every tie is between two finite items, since
an end item has none). ``scores`` are that fit (``ties.tie_fit`` with ridge ``alpha`` on the
finite comparisons), centred per component over its finite items: the finite centre.

For an undefeated item u of component C with finite items F_C, ``t_u = s_u - mean_{F_C} s``
and ``l_p(t) = sup over (s_F, tie parameter) of [l_F(s_F, tie) + sum_f W_uf log P(u beats f |
s_u = mean_{F_C}(s_F) + t)]``, unpenalised (other end items at their limits, as in ``ends``).
The tie parameter is one for the whole data (``ties``: "One tie parameter"), so l_F is the
log-likelihood of *all* finite comparisons, every component's, and the sup runs over every
finite strength and the tie parameter: another component's comparisons enter u's profile
through the tie parameter alone. Each u term rises with t, ``sup l_p = sup l_F`` (t -> inf),
and the bound is the t where ``2 (sup l_p - l_p(t)) = -2 log((1 - level) / (2 K))``, K the
number of compared items (``ends._cut_value``: exact cut, Bonferroni over both sides of
every compared item). Never-won items are the mirror image: swapping every preference
negates every strength under both models (ties stay ties).

Numerics. The inner sup is a damped Newton ascent over (finite strengths, tie parameter) with
the analytic gradient and Hessian built from ``ties``' per-pair likelihood pieces
(``_pair_loglik``, ``_pair_derivatives``, ``_tie_term``): both models are concave in (s, log
tie parameter), so Newton with step halving converges in a few steps from the warm start (the
previous optimum). Where it cannot step (a singular Hessian, no gain along the step) the same
start goes to ``scipy.optimize.minimize(method="L-BFGS-B")``; the tests check that both reach
the same bound. The root is ``brentq`` on a bracket found by doubling, as in ``ends``.
Strengths carry the tiny ridge ``profile_ridge`` (1e-9, ``ends.PROFILE_RIDGE``) only to fix
each component's translation and to keep a sup that is not attained (another component's
items held only by that ridge) at a finite point. With no tie among the finite comparisons the
tie parameter sits at its boundary (nu = 0, theta = 1), as ``tie_fit`` sets it, and the
profile is exactly ``ends``' Bradley-Terry profile. Cost: one dense (finite items + 1)-square
solve per Newton step, a few steps per evaluation, about 20 evaluations per end item: meant for
boards of up to a few hundred finite items, as ``ends``. The tests check the bound against a
profile written out by hand and maximised by scipy to 1e-4, and the Davidson bound without ties
against ``ends.one_sided_bounds``.

Identification
--------------
``identified`` is False, and ``bound`` nan, for every item of a component where the finite
items' own ML estimate does not exist on the finite-centre scale, the rules of ``ends`` with
ties counted as both a win and a loss (that is what keeps an item finite): (a) the component
has no finite item; (b) its finite items are not connected among themselves by comparisons
(ties included); (c) its finite items' "beat or tied" graph (an edge i -> j when i beat or tied
j, so a tie is an edge both ways) is not strongly connected: some set of finite items never
lost nor tied against the rest of the finite items, e.g. an item whose only loss was to an
undefeated item and which has no tie, and at the limit it runs to infinity too. (d) Also not
identified, everywhere: finite comparisons that are all ties while ties exist (the tie
parameter's sup is at infinity, nothing measured). Items never compared: end 0, score and
bound nan, not identified. An end item with no comparison against a finite item has a flat
profile: bound -inf (+inf for never-won); bounds beyond +-200 are reported as infinite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from apps.analysis.stats.bradley_terry import DEFAULT_ALPHA
from apps.analysis.stats.ends import PROFILE_RIDGE, EndBounds, _cut_value
from apps.analysis.stats.ties import (
    _LOG_NU_ZERO,
    TIE,
    _check_alpha,
    _check_judgments,
    _check_model,
    _fit_prepared,
    _pair_derivatives,
    _pair_loglik,
    _prepare,
    _tie_term,
)

_T_LIMIT = 200.0  # as ends._T_LIMIT
# Rao-Kupper's eta = log theta must stay > 0 where ties exist (the tie term is -inf at 0).
_ETA_FLOOR = 1e-12
# Newton stops when half the squared Newton decrement (the predicted gain) is below this.
_NEWTON_TOL = 1e-18
_NEWTON_MAX_ITER = 100


@dataclass
class _Finite:
    """The comparisons between finite items, as free parameters x = (s over ``items``, tau)."""

    model: str
    la: np.ndarray  # local index of each distinct pair's first item
    lb: np.ndarray
    cells: np.ndarray  # (P, 3): first preferred, second preferred, ties
    ties: float
    tie_free: bool  # False: no tie, tau fixed at the boundary
    ridge: float
    x: np.ndarray  # warm start

    def counts(self, mirror: bool) -> tuple[np.ndarray, np.ndarray]:
        w, lo, t = self.cells[:, 0], self.cells[:, 1], self.cells[:, 2]
        if mirror:
            w, lo = lo, w
        if self.model == "davidson":
            return w - lo, w + lo + t
        return w + t, lo + t

    def boundary(self) -> float:
        return _LOG_NU_ZERO if self.model == "davidson" else 0.0


def _negative(
    x: np.ndarray,
    fin: _Finite,
    first: np.ndarray,
    second: np.ndarray,
    u_terms: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None,
) -> tuple[float, np.ndarray]:
    """Minus the (tiny-ridge) log-likelihood of ``_newton_pieces`` and its gradient, for the
    quasi-Newton path (the tie parameter held at its boundary where there is no tie)."""
    value, grad, _ = _newton_pieces(x, fin, first, second, u_terms)
    if not fin.tie_free:
        grad[-1] = 0.0
    return -value, -grad


def _newton_pieces(
    x: np.ndarray,
    fin: _Finite,
    first: np.ndarray,
    second: np.ndarray,
    u_terms: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """The tiny-ridge log-likelihood of ``_negative`` (not negated), its gradient and its
    Hessian over x = (s, tau); the pieces are ``ties``' per-pair derivatives."""
    k = x.size - 1
    s, tau = x[:k], x[k]
    tau_a = np.array([[tau]])
    d = (s[fin.la] - s[fin.lb])[None, :]
    value = float(_pair_loglik(fin.model, d, tau_a, first[None, :], second[None, :]).sum())
    gd, gt, hdd, hdt, htt = (
        v[0] for v in _pair_derivatives(fin.model, d, tau_a, first[None, :], second[None, :])
    )
    grad = np.zeros(k + 1)
    np.add.at(grad, fin.la, gd)
    np.add.at(grad, fin.lb, -gd)
    hess = np.zeros((k + 1, k + 1))
    flat = hess.reshape(-1)
    width = k + 1
    np.add.at(flat, fin.la * width + fin.la, hdd)
    np.add.at(flat, fin.lb * width + fin.lb, hdd)
    np.add.at(flat, fin.la * width + fin.lb, -hdd)
    np.add.at(flat, fin.lb * width + fin.la, -hdd)
    cross = np.zeros(k)
    np.add.at(cross, fin.la, hdt)
    np.add.at(cross, fin.lb, -hdt)
    g_tau, h_tau = float(gt.sum()), float(htt.sum())
    tv, tg, th = _tie_term(fin.model, np.array([tau]), np.array([fin.ties]))
    value += float(tv[0])
    g_tau += float(tg[0])
    h_tau += float(th[0])
    if u_terms is not None:
        opp, wins, centre, t = u_terms
        du = (s[centre].mean() + t - s[opp])[None, :]
        u_first = wins[None, :]
        u_second = wins[None, :] if fin.model == "davidson" else np.zeros_like(u_first)
        value += float(_pair_loglik(fin.model, du, tau_a, u_first, u_second).sum())
        gu, gtu, hu, hut, httu = (
            v[0] for v in _pair_derivatives(fin.model, du, tau_a, u_first, u_second)
        )
        # d(du_p)/ds = c - e_opp(p), c the centre's averaging vector.
        lever = np.zeros((opp.size, k))
        lever[:, centre] = 1.0 / centre.size
        lever[np.arange(opp.size), opp] -= 1.0
        grad[:k] += lever.T @ gu
        hess[:k, :k] += lever.T @ (hu[:, None] * lever)
        cross += lever.T @ hut
        g_tau += float(gtu.sum())
        h_tau += float(httu.sum())
    value -= fin.ridge * float(s @ s)
    grad[:k] -= 2.0 * fin.ridge * s
    hess[np.arange(k), np.arange(k)] -= 2.0 * fin.ridge
    grad[k] = g_tau
    hess[:k, k] = hess[k, :k] = cross
    hess[k, k] = h_tau
    return value, grad, hess


def _newton_max(
    fin: _Finite,
    x0: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    u_terms: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None,
) -> np.ndarray | None:
    """Damped Newton ascent of the concave tiny-ridge log-likelihood (both models are concave
    in (s, log tie parameter)); None when it does not converge, for the quasi-Newton path."""
    k = x0.size - 1
    x = x0.copy()
    # Without a tie the tie parameter stays at its boundary: only the strengths move.
    free = np.ones(k + 1, dtype=bool)
    free[k] = fin.tie_free
    value, grad, hess = _newton_pieces(x, fin, first, second, u_terms)
    for _ in range(_NEWTON_MAX_ITER):
        g, h = grad[free], hess[np.ix_(free, free)]
        try:
            step = np.linalg.solve(-h, g)
        except np.linalg.LinAlgError:
            return None
        decrement = float(g @ step)
        if not np.isfinite(decrement) or decrement < 0.0:
            return None
        if decrement < _NEWTON_TOL:
            return x
        full = np.zeros(k + 1)
        full[free] = step
        size = 1.0
        if fin.tie_free and fin.model == "rao_kupper" and full[k] < 0.0:
            # Rao-Kupper's eta must stay above 0 where ties exist.
            size = min(1.0, 0.9 * (x[k] - _ETA_FLOOR) / -full[k])
        for _ in range(60):
            trial = x + size * full
            new_value, new_grad, new_hess = _newton_pieces(trial, fin, first, second, u_terms)
            if np.isfinite(new_value) and new_value >= value - 1e-12 * abs(value):
                break
            size *= 0.5
        else:
            return None
        x, value, grad, hess = trial, new_value, new_grad, new_hess
    return None


def _inner_max(
    fin: _Finite,
    mirror: bool,
    u_terms: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None,
) -> float:
    """sup of the unpenalised log-likelihood (finite comparisons, plus u's at t if given)."""
    first, second = fin.counts(mirror)
    k = fin.x.size - 1
    x0 = fin.x.copy()
    if not fin.tie_free:
        x0[k] = fin.boundary()
    x = _newton_max(fin, x0, first, second, u_terms)
    if x is None:
        x = _quasi_newton_max(fin, x0, first, second, u_terms)
    fin.x = x
    s = x[:k]
    value = -_negative(x, fin, first, second, u_terms)[0]
    return float(value + fin.ridge * float(s @ s))


def _quasi_newton_max(
    fin: _Finite,
    x0: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    u_terms: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None,
) -> np.ndarray:
    """L-BFGS-B from the same start: slower, for the rare start Newton cannot leave."""
    k = x0.size - 1
    bounds: list[tuple[float | None, float | None]] = [(None, None)] * k
    if not fin.tie_free:
        bounds.append((fin.boundary(), fin.boundary()))
    elif fin.model == "rao_kupper":
        bounds.append((_ETA_FLOOR, None))
    else:
        bounds.append((None, None))
    # Imported here, as in `ends`: scipy.optimize takes a tenth of a second to import.
    from scipy.optimize import minimize

    res = minimize(
        _negative,
        x0,
        args=(fin, first, second, u_terms),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-10, "maxcor": 30},
    )
    return np.asarray(res.x)


def _lower_bound(
    fin: _Finite,
    mirror: bool,
    opp: np.ndarray,
    wins: np.ndarray,
    centre: np.ndarray,
    sup: float,
    cut: float,
) -> float:
    """Lower bound of t for the (oriented) undefeated item: 2 (sup - l_p(t)) = cut."""
    if wins.sum() <= 0:
        return -np.inf  # no comparison with a finite item: flat profile
    start = fin.x.copy()
    k = start.size - 1
    oriented = start.copy()
    if mirror:
        oriented[:k] = -oriented[:k]  # the mirror image negates every strength
    fin.x = oriented.copy()

    def gap(t: float) -> float:
        return 2.0 * (sup - _inner_max(fin, mirror, (opp, wins, centre, t))) - cut

    if gap(-_T_LIMIT) <= 0.0:
        fin.x = start
        return -np.inf
    fin.x = oriented.copy()
    hi = 1.0
    while gap(hi) >= 0.0:
        hi = 2.0 * hi + 1.0
        if hi > _T_LIMIT:
            raise RuntimeError("profile likelihood did not approach its supremum")
    lo = min(hi - 1.0, -1.0)
    while gap(lo) <= 0.0:
        lo = max(2.0 * lo - 1.0, -_T_LIMIT)
    from scipy.optimize import brentq

    root = float(brentq(gap, lo, hi, xtol=1e-10, rtol=1e-12))
    fin.x = start
    return root


def tie_one_sided_bounds(
    left: np.ndarray,
    right: np.ndarray,
    outcome: np.ndarray,
    n_items: int,
    *,
    model: str,
    level: float = 0.95,
    alpha: float = DEFAULT_ALPHA,
    profile_ridge: float = PROFILE_RIDGE,
) -> EndBounds:
    """Exact simultaneous one-sided bounds of end items under a tie model (module docstring)."""
    _check_model(model)
    alpha = _check_alpha(alpha)
    if not profile_ridge >= 0:
        raise ValueError("profile_ridge must be >= 0")
    a, b, kind = _check_judgments(left, right, outcome, n_items)
    full = _prepare(a, b, kind, n_items, None)
    first_won = kind == 0
    second_won = kind == 1
    is_tie = kind == TIE
    won = np.bincount(a[first_won], minlength=n_items) + np.bincount(
        b[second_won], minlength=n_items
    )
    lost = np.bincount(b[first_won], minlength=n_items) + np.bincount(
        a[second_won], minlength=n_items
    )
    tied = np.bincount(a[is_tie], minlength=n_items) + np.bincount(b[is_tie], minlength=n_items)
    compared = (won + lost + tied) > 0
    end = np.zeros(n_items, dtype=np.int64)
    end[compared & (tied == 0) & (lost == 0)] = 1
    end[compared & (tied == 0) & (won == 0)] = -1
    finite = compared & (end == 0)
    cut = _cut_value(level, "exact", 2 * int(compared.sum()))

    keep = finite[a] & finite[b]
    fdata = _prepare(a[keep], b[keep], kind[keep], n_items, None)
    fit, tau = _fit_prepared(fdata, model, alpha)
    scores = np.where(finite, fit.scores, np.nan)
    bound = np.full(n_items, np.nan)
    identified = np.zeros(n_items, dtype=bool)

    n_ties = float(fdata.cells[:, 2].sum())
    n_decisive = float(fdata.cells[:, :2].sum())
    items = np.flatnonzero(finite)
    local = np.full(n_items, -1, dtype=np.int64)
    local[items] = np.arange(items.size)
    # (d): only ties among finite items (with a tie somewhere) puts the tie parameter at
    # infinity; no finite item at all leaves nothing to profile.
    if items.size == 0 or (n_ties > 0 and n_decisive == 0):
        return EndBounds(end, bound, scores, full.labels, identified, float(level), "exact", True)

    # "Beat or tied" graph over finite items (local indices), for rule (c).
    cells = fdata.cells
    la, lb = local[fdata.pa], local[fdata.pb]
    beat_a, beat_b, tie = cells[:, 0] > 0, cells[:, 1] > 0, cells[:, 2] > 0
    src = np.concatenate([la[beat_a], lb[beat_b], la[tie], lb[tie]])
    dst = np.concatenate([lb[beat_a], la[beat_b], lb[tie], la[tie]])
    graph = sparse.csr_matrix((np.ones(src.size), (src, dst)), shape=(items.size, items.size))

    fin = _Finite(
        model=model,
        la=la,
        lb=lb,
        cells=cells,
        ties=n_ties,
        tie_free=n_ties > 0,
        ridge=profile_ridge,
        x=np.concatenate([fit.scores[items], [tau[0] if n_ties > 0 else 0.0]]),
    )
    sup: float | None = None
    # End items' comparisons with finite items, per end item and opponent.
    end_rows = ((end[a] != 0) & finite[b]) | ((end[b] != 0) & finite[a])
    for label in np.unique(full.labels[compared]):
        members = np.flatnonzero(full.labels == label)
        fin_m = members[finite[members]]
        ends_m = members[end[members] != 0]
        if fin_m.size == 0:
            continue
        lf = local[fin_m]
        sub = graph[lf][:, lf]
        pieces = np.unique(fdata.labels[fin_m]).size
        n_scc, _ = connected_components(sub, directed=True, connection="strong")
        ok = pieces == 1 and n_scc == 1
        identified[members] = ok
        if not ok or ends_m.size == 0:
            continue
        if sup is None:
            sup = _inner_max(fin, False, None)
        for item in ends_m:
            rows = end_rows & ((a == item) | (b == item))
            opp_global = np.where(a[rows] == item, b[rows], a[rows])
            opp_items, wins = np.unique(opp_global, return_counts=True)
            args = (local[opp_items], wins.astype(np.float64), lf, sup, cut)
            if end[item] == 1:
                bound[item] = _lower_bound(fin, False, *args)
            else:
                bound[item] = -_lower_bound(fin, True, *args)
    return EndBounds(end, bound, scores, full.labels, identified, float(level), "exact", True)
