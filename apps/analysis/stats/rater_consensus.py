"""What the other raters predict: the consensus an anomalous-rater screen compares a rater with.

Public API
----------
``TURING_PRIOR_WEIGHT``
    The smallest weight (in judgments) of the prior behind a Turing prediction.
``PairJudgments(left, right, left_won, rater, n_items, order=None, item_length=None)``
    Decisive pair judgments, one row each: item indices shown left and right, whether the left
    item won, the rater's index, the submission order (any number that sorts; rows without one,
    nan, go after the others in their given order) and each item's length in its own units
    (nan: unknown). ``.checked(n_raters)`` validates and normalises (ValueError naming the
    problem). A tie or a "neither" is not a decisive judgment: leave it out.
``TuringJudgments(item, guessed_ai, rater, n_items, order=None)``
    One row per Turing judgment: the item and whether the rater said "written by an AI".
``longer_sign(pairs) -> np.ndarray``
    Per pair, +1 when the left item is longer, -1 when the right one is, 0 when equal/unknown.
``PositionFit`` (``scores``, ``offset``, ``offset_information``, ``component``,
``converged``); ``bt_position_fit(left, right, left_won, n_items, *, alpha=DEFAULT_ALPHA,
tol=1e-10, max_iter=500) -> PositionFit``
    Bradley-Terry with a position effect: P(left wins) = sigmoid(s_left - s_right + offset).
``strength_prior_ridge(fit, left, right, *, alpha=DEFAULT_ALPHA) -> float``
    The empirical-Bayes ridge: 1 / (2 sigma**2) for the items' strengths ~ N(0, sigma**2).
``PairConsensus`` (``logit``, ``eta``, ``variance``, ``others_left_share``,
``others_longer_share``, ``fit``, ``alpha``); ``pair_consensus(pairs, n_raters, *,
alpha=None, left_out=None) -> PairConsensus``
    Per judgment, the log-odds that the left item wins as the *other* raters predict it; per
    rater, the other raters' pooled share of left choices and of longer-item choices.
``TuringConsensus`` (``logit``, ``others_ai_share``, ``prior_weight``);
``turing_consensus(turing, n_raters, *, prior_weight=None, left_out=None) -> TuringConsensus``
    Per judgment, the log-odds of "AI" as the other raters predict it; per rater their pooled
    "AI" rate.

``left_out`` (one flag per rater) leaves raters' judgments out of everyone's consensus (the
screen's second pass leaves out the raters its first pass proposed); their own judgments are
still predicted, from the others.

Pairs: the model and why each rater's consensus leaves the rater out
--------------------------------------------------------------------
P(left wins) = sigmoid(s_left - s_right + delta): Bradley-Terry log-strengths ``s`` and a
position offset ``delta`` shared by the whole study. A study-wide preference for the left side
is therefore part of what is expected, and so is a length effect shared by all raters (an
item's length never changes, so it is part of the item's strength).

Each rater is compared with a fit on the *other* raters' judgments: with a dozen raters a
rater's own share of an item's comparisons is large, and a fit that includes them is pulled
towards them, hiding the very bias the screen looks for. The leave-one-rater-out fit is
computed, not approximated by an influence function: the full joint fit (Newton steps on ``s``
per connected component, alternated with Newton steps on ``delta``, until neither moves by
1e-10) is the warm start, and each of the rater's components is refitted without the rater's
judgments jointly with ``delta`` by batched damped Newton iterations, to a change below 1e-7.
The rest of the study pulls on ``delta`` too: its judgments outside the component (less the
rater's own) enter as their gradient and information at the full fit, with their items'
strengths held there. So the refit is exact for a study of one component (checked against a
refit in the tests, to 1e-6); with several, the other components' strengths do not follow the
changed offset (with sides at random they barely would: 0.02 log-odds with 12 raters in two
topics, against a prediction SD of ~0.45). Two items no counted judgment links are predicted
by the prior alone (the offset, with the prior variance of a difference, 1 / alpha).

Shrinkage (why not the tiny ridge of ``bradley_terry``): the consensus predicts a new
rater's choices, and a maximum-likelihood fit over-states the differences between items (its
scores spread by their sampling noise on top of the true spread), so honest raters look as if
they disagreed with it. The strengths get a N(0, sigma**2) prior, the ridge alpha = 1 /
(2 sigma**2), with sigma**2 estimated by the method of moments from a first fit with
``bradley_terry.DEFAULT_ALPHA`` (the centred scores' mean square less the trace of their
sampling covariance, per degree of freedom; ``strength_prior_ridge``), never below 0.01 and the
ridge never below ``DEFAULT_ALPHA``. Each prediction is then the posterior predictive
probability: the fitted log-odds ``eta`` with variance ``v`` = var(s_a - s_b) (the inverse
Hessian of the fit without the rater) + var(delta), moderated as sigmoid(eta / sqrt(1 + pi v /
8)) (the probit approximation of E[sigmoid] under a normal posterior; MacKay 1992, "The
evidence framework applied to classification networks", Neural Computation 4:720). Without
the shrinkage honest raters' consensus test fired in 7-9% of cases at the 5% level
(``benchmarks/sim_pair_raters.py``, no anomalous raters).

The position fit is checked against the published home-advantage model of Agresti's 1987
baseball data (``tests/analysis/stats/test_pair_raters.py``) and against statsmodels.

Turing
------
The other raters' share of "AI" for the item, smoothed towards their pooled rate pi: q = (a +
m pi) / (n + m), the posterior predictive of a Beta(m pi, m (1 - pi)) prior. The prior's weight
m is estimated from the items (the beta-binomial method of moments, pi (1 - pi) / var_between
- 1, over items judged at least twice), at least ``TURING_PRIOR_WEIGHT`` and at most 1000, so
items that differ little are predicted near the pooled rate and items that differ much by
their own share. An item nobody else judged is predicted at the pooled rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit, log_expit

from apps.analysis.stats.bradley_terry import DEFAULT_ALPHA, bt_fit

TURING_PRIOR_WEIGHT = 2.0

# Elements of a batched (raters x k x k) Newton array.
_CHUNK_ELEMENTS = 2_000_000
# The smallest prior variance of the strengths: items a tenth of a log-odds unit apart.
_MIN_PRIOR_VARIANCE = 0.01

# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def _int_array(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integer indices")
    return array.astype(np.int64, copy=False)


def _order(order: Any, n: int) -> np.ndarray:
    if order is None:
        return np.arange(n, dtype=np.float64)
    values = np.asarray(order, dtype=np.float64)
    if values.shape != (n,):
        raise ValueError("order must have one entry per judgment")
    # A row without a submission time keeps its place after the timed ones.
    return np.where(np.isfinite(values), values, np.inf)


@dataclass(frozen=True)
class PairJudgments:
    """Decisive pair judgments (a tie or "neither" is not one: leave it out)."""

    left: np.ndarray
    right: np.ndarray
    left_won: np.ndarray
    rater: np.ndarray
    n_items: int
    order: np.ndarray | None = None
    item_length: np.ndarray | None = None

    def checked(self, n_raters: int) -> PairJudgments:
        left, right = _int_array(self.left, "left"), _int_array(self.right, "right")
        rater = _int_array(self.rater, "rater")
        won = np.asarray(self.left_won).astype(bool)
        n = left.size
        if right.shape != (n,) or rater.shape != (n,) or won.shape != (n,):
            raise ValueError("left, right, left_won and rater must have the same length")
        if n and (min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= self.n_items):
            raise ValueError("item index out of range [0, n_items)")
        if np.any(left == right):
            raise ValueError("a pair needs two different items")
        if n and (rater.min() < 0 or rater.max() >= n_raters):
            raise ValueError("rater index out of range [0, n_raters)")
        length = None
        if self.item_length is not None:
            length = np.asarray(self.item_length, dtype=np.float64)
            if length.shape != (self.n_items,):
                raise ValueError("item_length must have one entry per item")
        return PairJudgments(left, right, won, rater, self.n_items, _order(self.order, n), length)


@dataclass(frozen=True)
class TuringJudgments:
    item: np.ndarray
    guessed_ai: np.ndarray
    rater: np.ndarray
    n_items: int
    order: np.ndarray | None = None

    def checked(self, n_raters: int) -> TuringJudgments:
        item, rater = _int_array(self.item, "item"), _int_array(self.rater, "rater")
        guess = np.asarray(self.guessed_ai).astype(bool)
        n = item.size
        if rater.shape != (n,) or guess.shape != (n,):
            raise ValueError("item, guessed_ai and rater must have the same length")
        if n and (item.min() < 0 or item.max() >= self.n_items):
            raise ValueError("item index out of range [0, n_items)")
        if n and (rater.min() < 0 or rater.max() >= n_raters):
            raise ValueError("rater index out of range [0, n_raters)")
        return TuringJudgments(item, guess, rater, self.n_items, _order(self.order, n))


# ---------------------------------------------------------------------------------------------
# Bradley-Terry with a position effect, and the leave-one-rater-out consensus
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PositionFit:
    scores: np.ndarray
    offset: float
    # -d2 loglik / d offset2 at the fit: 1 / offset_information is the offset's variance.
    offset_information: float
    component: np.ndarray
    converged: bool


def _objective(
    counts: np.ndarray, wins: np.ndarray, s: np.ndarray, delta: np.ndarray, alpha: float
) -> np.ndarray:
    eta = s[:, :, None] - s[:, None, :] + delta[:, None, None]
    ll = wins * log_expit(eta) + (counts - wins) * log_expit(-eta)
    return np.asarray(ll.sum(axis=(1, 2)) - alpha * np.einsum("ri,ri->r", s, s))


def _hessian(counts: np.ndarray, s: np.ndarray, delta: np.ndarray, alpha: float) -> np.ndarray:
    """-d2 (penalised loglik) / ds2 per batch row: (R, k, k), positive definite."""
    eta = s[:, :, None] - s[:, None, :] + delta[:, None, None]
    p = expit(eta)
    w = counts * p * (1.0 - p)
    sym = w + w.transpose(0, 2, 1)
    hess = -sym
    k = s.shape[1]
    diag = np.arange(k)
    hess[:, diag, diag] += sym.sum(axis=2) + 2.0 * alpha
    return hess


def _newton_given_offset(
    counts: np.ndarray,
    wins: np.ndarray,
    s0: np.ndarray,
    delta: np.ndarray,
    alpha: float,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, bool]:
    """Maximise sum wins log sigmoid(eta) + (counts - wins) log sigmoid(-eta) - alpha |s|^2,
    eta_ij = s_i - s_j + delta, for a batch of (left i, right j) count matrices.

    Damped Newton with Armijo backtracking (the penalised objective is strictly concave)."""
    s = s0.astype(np.float64, copy=True)
    if s.shape[1] == 0:
        return s, True
    for _ in range(max_iter):
        eta = s[:, :, None] - s[:, None, :] + delta[:, None, None]
        resid = wins - counts * expit(eta)
        grad = resid.sum(axis=2) - resid.sum(axis=1) - 2.0 * alpha * s
        step = np.linalg.solve(_hessian(counts, s, delta, alpha), grad[:, :, None])[:, :, 0]
        f0 = _objective(counts, wins, s, delta, alpha)
        rise = np.einsum("ri,ri->r", grad, step)
        t = np.ones(s.shape[0])
        trial = s + step
        f1 = _objective(counts, wins, trial, delta, alpha)
        slack = 1e-12 * np.abs(f0)
        bad = f1 < f0 + 1e-4 * rise - slack
        halvings = 0
        while np.any(bad) and halvings < 60:
            t[bad] *= 0.5
            trial[bad] = s[bad] + t[bad, None] * step[bad]
            f1[bad] = _objective(counts[bad], wins[bad], trial[bad], delta[bad], alpha)
            bad = f1 < f0 + 1e-4 * t * rise - slack
            halvings += 1
        moved = float(np.max(np.abs(trial - s)))
        s = trial
        if moved < tol:
            return s, True
    return s, False


def _joint_value(
    counts: np.ndarray,
    wins: np.ndarray,
    s: np.ndarray,
    delta: np.ndarray,
    alpha: float,
    outside: tuple[np.ndarray, np.ndarray, float],
) -> np.ndarray:
    """The penalised log-likelihood in (s, delta) per batch row (see ``_joint_derivatives``)."""
    g_out, h_out, ref = outside
    eta = s[:, :, None] - s[:, None, :] + delta[:, None, None]
    step = delta - ref
    value = (wins * log_expit(eta) + (counts - wins) * log_expit(-eta)).sum(axis=(1, 2))
    return np.asarray(
        value + g_out * step - 0.5 * h_out * step**2 - alpha * np.einsum("ri,ri->r", s, s)
    )


def _joint_derivatives(
    counts: np.ndarray,
    wins: np.ndarray,
    s: np.ndarray,
    delta: np.ndarray,
    alpha: float,
    outside: tuple[np.ndarray, np.ndarray, float],
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and -Hessian in (s, delta) per batch row, for one component's (left, right)
    counts plus the rest of the study's pull on delta, linearised at ``ref``: ``outside`` =
    (gradient, information, ref) per row, the term g (d - ref) - h (d - ref)**2 / 2."""
    g_out, h_out, ref = outside
    n_batch, k = s.shape
    eta = s[:, :, None] - s[:, None, :] + delta[:, None, None]
    p = expit(eta)
    resid = wins - counts * p
    grad = np.empty((n_batch, k + 1))
    grad[:, :k] = resid.sum(axis=2) - resid.sum(axis=1) - 2.0 * alpha * s
    grad[:, k] = resid.sum(axis=(1, 2)) + g_out - h_out * (delta - ref)
    w = counts * p * (1.0 - p)
    sym = w + w.transpose(0, 2, 1)
    hess = np.zeros((n_batch, k + 1, k + 1))
    diag = np.arange(k)
    hess[:, :k, :k] = -sym
    hess[:, diag, diag] += sym.sum(axis=2) + 2.0 * alpha
    cross = w.sum(axis=2) - w.sum(axis=1)
    hess[:, :k, k] = cross
    hess[:, k, :k] = cross
    # A vanishing ridge keeps delta defined when no other judgment informs it.
    hess[:, k, k] = w.sum(axis=(1, 2)) + h_out + 1e-9
    return grad, hess


def _newton_joint(
    counts: np.ndarray,
    wins: np.ndarray,
    s0: np.ndarray,
    delta0: np.ndarray,
    alpha: float,
    outside: tuple[np.ndarray, np.ndarray, float],
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Damped Newton on (s, delta) for a batch of components; returns s, delta and the
    -Hessian at the solution (its inverse: the estimates' covariance).

    A full step is taken without evaluating the objective when no pair's log-odds moves by
    more than 1 (max step_s - min step_s + |step_delta| <= 1): the logistic loss is generalised
    self-concordant (Bach 2010, "Self-concordant analysis for logistic regression"), so such a
    step passes the Armijo test (as in ``bradley_terry._newton``). Warm-started at the full
    fit, the leave-one-rater-out refits almost never need more; larger steps backtrack."""
    s, delta = s0.astype(np.float64, copy=True), delta0.astype(np.float64, copy=True)
    k = s.shape[1]
    grad, hess = _joint_derivatives(counts, wins, s, delta, alpha, outside)
    for _ in range(max_iter):
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        t = np.ones(s.shape[0])
        reach = step[:, :k].max(axis=1) - step[:, :k].min(axis=1) + np.abs(step[:, k])
        risky = np.flatnonzero(reach > 1.0)
        if risky.size:
            part = (counts[risky], wins[risky])
            out_r = (outside[0][risky], outside[1][risky], outside[2])
            value = _joint_value(*part, s[risky], delta[risky], alpha, out_r)
            rise = np.einsum("ri,ri->r", grad[risky], step[risky])
            t_r = np.ones(risky.size)
            for _halving in range(60):
                trial = _joint_value(
                    *part,
                    s[risky] + t_r[:, None] * step[risky, :k],
                    delta[risky] + t_r * step[risky, k],
                    alpha,
                    out_r,
                )
                bad = trial < value + 1e-4 * t_r * rise - 1e-12 * np.abs(value)
                if not bad.any():
                    break
                t_r[bad] *= 0.5
            t[risky] = t_r
        s = s + t[:, None] * step[:, :k]
        delta = delta + t * step[:, k]
        grad, hess = _joint_derivatives(counts, wins, s, delta, alpha, outside)
        if float(np.max(np.abs(t[:, None] * step))) < tol:
            break
    return s, delta, hess


def _offset_terms(
    left: np.ndarray, right: np.ndarray, won: np.ndarray, s: np.ndarray, delta: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per judgment: d loglik / d delta and -d2 loglik / d delta2."""
    p = expit(s[left] - s[right] + delta)
    return won - p, p * (1.0 - p)


def _component_counts(
    left: np.ndarray, right: np.ndarray, won: np.ndarray, local: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    counts = np.zeros((k, k))
    wins = np.zeros((k, k))
    np.add.at(counts, (local[left], local[right]), 1.0)
    np.add.at(wins, (local[left], local[right]), won.astype(np.float64))
    return counts, wins


def bt_position_fit(
    left: np.ndarray,
    right: np.ndarray,
    left_won: np.ndarray,
    n_items: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    tol: float = 1e-10,
    max_iter: int = 500,
) -> PositionFit:
    """Penalised maximum likelihood of P(left wins) = sigmoid(s_left - s_right + offset).

    The offset is shared by every component of the comparison graph; the scores are fitted per
    component given the offset, the offset given the scores, alternately until neither moves by
    ``tol`` (block coordinate ascent on a concave objective converges to the joint optimum;
    with sides assigned at random the two blocks are nearly orthogonal and it takes a few
    rounds). Scores are centred to mean 0 per component, as ``bradley_terry.bt_fit`` does.
    """
    lf, rt = _int_array(left, "left"), _int_array(right, "right")
    won = np.asarray(left_won).astype(bool)
    if rt.shape != lf.shape or won.shape != lf.shape:
        raise ValueError("left, right and left_won must have the same length")
    winners, losers = np.where(won, lf, rt), np.where(won, rt, lf)
    plain = bt_fit(winners, losers, n_items, alpha=alpha)
    s = plain.scores.copy()
    labels = plain.component
    members = [np.flatnonzero(labels == c) for c in range(plain.n_components)]
    members = [m for m in members if m.size >= 2]
    local = np.zeros(n_items, dtype=np.int64)
    for m in members:
        local[m] = np.arange(m.size)
    comp_rows = [np.flatnonzero(labels[lf] == labels[m[0]]) for m in members]
    tables = [
        _component_counts(lf[rows], rt[rows], won[rows], local, m.size)
        for m, rows in zip(members, comp_rows, strict=True)
    ]
    delta = 0.0
    converged = lf.size == 0
    for _ in range(max_iter if lf.size else 0):
        # The offset given the scores: Newton on a strictly concave function of one variable.
        old_delta = delta
        for _ in range(50):
            g, h = _offset_terms(lf, rt, won, s, delta)
            step = float(g.sum()) / max(float(h.sum()), 1e-300)
            delta += step
            if abs(step) < tol:
                break
        moved = abs(delta - old_delta)
        for m, (counts, wins) in zip(members, tables, strict=True):
            new, _ok = _newton_given_offset(
                counts[None], wins[None], s[m][None], np.array([delta]), alpha, tol, 200
            )
            moved = max(moved, float(np.max(np.abs(new[0] - s[m]))))
            s[m] = new[0]
        if moved < tol:
            converged = True
            break
    for m in members:
        s[m] -= s[m].mean()
    _, h = _offset_terms(lf, rt, won, s, delta)
    return PositionFit(
        scores=s,
        offset=float(delta),
        offset_information=float(h.sum()),
        component=labels,
        converged=converged,
    )


@dataclass(frozen=True)
class PairConsensus:
    # Per judgment (rows of the input): the other raters' moderated log-odds that left wins,
    # and the fitted log-odds and their variance it was moderated from.
    logit: np.ndarray
    eta: np.ndarray
    variance: np.ndarray
    # Per rater: the other raters' pooled share of left choices and of longer-item choices
    # (nan when they have none).
    others_left_share: np.ndarray
    others_longer_share: np.ndarray
    fit: PositionFit
    alpha: float  # the ridge used (see strength_prior_ridge)


def longer_sign(pairs: PairJudgments) -> np.ndarray:
    """+1 when the left item is longer, -1 when the right one is, 0 when equal or unknown."""
    if pairs.item_length is None:
        return np.zeros(pairs.left.size, dtype=np.int64)
    diff = pairs.item_length[pairs.left] - pairs.item_length[pairs.right]
    return np.where(np.isfinite(diff), np.sign(np.nan_to_num(diff)), 0).astype(np.int64)


def _pooled_others(
    hits: np.ndarray, rater: np.ndarray, n_raters: int, counted: np.ndarray
) -> np.ndarray:
    """Per rater, the share of `hits` among everyone else's counted rows (nan: none)."""
    weight = counted.astype(np.float64)
    mine = np.bincount(rater, weights=hits * weight, minlength=n_raters)
    rows = np.bincount(rater, weights=weight, minlength=n_raters)
    others = rows.sum() - rows
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(others > 0, (float((hits * weight).sum()) - mine) / others, np.nan)


def _left_out_rows(rater: np.ndarray, n_raters: int, left_out: np.ndarray | None) -> np.ndarray:
    """Per row, whether it enters the consensus (its rater is not left out)."""
    if left_out is None:
        return np.ones(rater.size, dtype=bool)
    mask = np.asarray(left_out, dtype=bool)
    if mask.shape != (n_raters,):
        raise ValueError("left_out must have one entry per rater")
    return np.asarray(~mask[rater])


def strength_prior_ridge(
    fit: PositionFit, left: np.ndarray, right: np.ndarray, *, alpha: float = DEFAULT_ALPHA
) -> float:
    """The ridge 1 / (2 sigma**2) of a N(0, sigma**2) prior on the items' strengths, sigma**2
    estimated by the method of moments from ``fit`` (made with ridge ``alpha`` on these
    comparisons): the centred scores' mean square less their sampling variance (the trace of
    the centred inverse Hessian), per degree of freedom (k - 1 per component). At least
    ``alpha``; sigma**2 at least ``_MIN_PRIOR_VARIANCE``."""
    lf, rt = _int_array(left, "left"), _int_array(right, "right")
    labels = fit.component
    squares = noise = 0.0
    dof = 0
    for c in np.unique(labels[lf]):
        members = np.flatnonzero(labels == c)
        k = members.size
        local = np.zeros(labels.size, dtype=np.int64)
        local[members] = np.arange(k)
        rows = labels[lf] == c
        counts = np.zeros((1, k, k))
        np.add.at(counts[0], (local[lf[rows]], local[rt[rows]]), 1.0)
        hess = _hessian(counts, fit.scores[members][None], np.array([fit.offset]), alpha)
        cov = np.linalg.inv(hess[0])
        centred = fit.scores[members] - fit.scores[members].mean()
        squares += float(centred @ centred)
        noise += float(np.trace(cov) - cov.sum() / k)
        dof += k - 1
    if dof == 0:
        return alpha
    variance = max((squares - noise) / dof, _MIN_PRIOR_VARIANCE)
    return max(alpha, 1.0 / (2.0 * variance))


def pair_consensus(
    pairs: PairJudgments,
    n_raters: int,
    *,
    alpha: float | None = None,
    left_out: np.ndarray | None = None,
) -> PairConsensus:
    """For every judgment, what the other raters predict (see the module docstring).

    ``alpha`` None: the empirical-Bayes ridge of ``strength_prior_ridge``. ``left_out`` (one
    flag per rater): raters whose judgments do not enter anyone's consensus; their own
    judgments are still predicted, from everyone else's. Two items that no counted judgment
    links (different components) are predicted by the prior alone: the position offset, with
    the prior variance of a difference, 1 / alpha."""
    data = pairs.checked(n_raters)
    lf, rt, won, rater = data.left, data.right, data.left_won, data.rater
    counted = _left_out_rows(rater, n_raters, left_out)
    if alpha is None:
        first = bt_position_fit(lf[counted], rt[counted], won[counted], data.n_items)
        alpha = strength_prior_ridge(first, lf[counted], rt[counted])
    fit = bt_position_fit(lf[counted], rt[counted], won[counted], data.n_items, alpha=alpha)

    # Per judgment, its pull on the offset at the full fit (zero for raters left out).
    g, h = _offset_terms(lf, rt, won, fit.scores, fit.offset)
    g, h = g * counted, h * counted
    # Raters left out (and judgments of items no counted judgment links) are predicted by the
    # fit itself; the prior variance of a difference, 1 / alpha, when the items are unlinked.
    eta = fit.scores[lf] - fit.scores[rt] + fit.offset
    var = np.full(lf.size, 1.0 / alpha + 1.0 / max(float(h.sum()), 1e-9))
    labels = fit.component
    linked = labels[lf] == labels[rt]
    for c in np.unique(labels[lf[linked]]):
        members = np.flatnonzero(labels == c)
        k = members.size
        local = np.zeros(data.n_items, dtype=np.int64)
        local[members] = np.arange(k)
        rows = np.flatnonzero(linked & (labels[lf] == c))
        fitted = rows[counted[rows]]
        counts, wins = _component_counts(lf[fitted], rt[fitted], won[fitted], local, k)
        inside = labels[lf] == c
        # The rest of the study pulls on the offset too: everyone's judgments outside this
        # component, less the rater's own there (their strengths held at the full fit).
        g_rest = float(g[~inside].sum()) - np.bincount(
            rater[~inside], weights=g[~inside], minlength=n_raters
        )
        h_rest = float(h[~inside].sum()) - np.bincount(
            rater[~inside], weights=h[~inside], minlength=n_raters
        )
        raters_here = np.unique(rater[rows])
        chunk = max(1, _CHUNK_ELEMENTS // ((k + 1) * (k + 1)))
        for start in range(0, raters_here.size, chunk):
            batch = raters_here[start : start + chunk]
            position = np.full(n_raters, -1, dtype=np.int64)
            position[batch] = np.arange(batch.size)
            mine = rows[position[rater[rows]] >= 0]
            own = mine[counted[mine]]
            b_own = position[rater[own]]
            own_counts = np.zeros((batch.size, k, k))
            own_wins = np.zeros((batch.size, k, k))
            np.add.at(own_counts, (b_own, local[lf[own]], local[rt[own]]), 1.0)
            np.add.at(own_wins, (b_own, local[lf[own]], local[rt[own]]), won[own].astype(float))
            rest_counts = counts[None] - own_counts
            rest_wins = wins[None] - own_wins
            start_s = np.broadcast_to(fit.scores[members], (batch.size, k))
            start_d = np.full(batch.size, fit.offset)
            outside = (g_rest[batch], h_rest[batch], fit.offset)
            s, d, hess = _newton_joint(
                rest_counts, rest_wins, start_s, start_d, alpha, outside, 1e-7, 100
            )
            cov = np.linalg.inv(hess)
            b = position[rater[mine]]
            la, lb = local[lf[mine]], local[rt[mine]]
            eta[mine] = s[b, la] - s[b, lb] + d[b]
            # var(s_a - s_b + delta) from the joint covariance (delta is index k).
            var[mine] = (
                cov[b, la, la]
                + cov[b, lb, lb]
                - 2.0 * cov[b, la, lb]
                + cov[b, k, k]
                + 2.0 * (cov[b, la, k] - cov[b, lb, k])
            )
    moderated = eta / np.sqrt(1.0 + np.pi * np.maximum(var, 0.0) / 8.0)

    sign = longer_sign(data)
    differs = sign != 0
    longer_won = np.where(sign > 0, won, ~won)
    return PairConsensus(
        logit=moderated,
        eta=eta,
        variance=var,
        others_left_share=_pooled_others(won, rater, n_raters, counted),
        others_longer_share=_pooled_others(longer_won, rater, n_raters, counted & differs),
        fit=fit,
        alpha=alpha,
    )


@dataclass(frozen=True)
class TuringConsensus:
    logit: np.ndarray  # per judgment: the other raters' predicted log-odds of "AI"
    others_ai_share: np.ndarray  # per rater: the other raters' pooled "AI" rate (nan: none)
    prior_weight: float  # m: the prior's weight in judgments


def _beta_prior_weight(ai: np.ndarray, n: np.ndarray) -> float:
    """The beta-binomial prior weight m = pi (1 - pi) / var_between - 1 by the method of
    moments over items judged at least twice; at least TURING_PRIOR_WEIGHT, at most 1000."""
    seen = n >= 2
    if np.count_nonzero(seen) < 3:
        return TURING_PRIOR_WEIGHT
    pooled = float(ai[seen].sum() / n[seen].sum())
    spread = pooled * (1.0 - pooled)
    between = float(np.var(ai[seen] / n[seen], ddof=1)) - spread * float(np.mean(1.0 / n[seen]))
    if spread <= 0 or between <= spread / 1001.0:
        return 1000.0
    return float(np.clip(spread / between - 1.0, TURING_PRIOR_WEIGHT, 1000.0))


def turing_consensus(
    turing: TuringJudgments,
    n_raters: int,
    *,
    prior_weight: float | None = None,
    left_out: np.ndarray | None = None,
) -> TuringConsensus:
    """For every judgment, the other raters' predicted probability of "AI" (module docstring);
    ``prior_weight`` None: estimated from the spread of the items' shares; ``left_out`` as in
    ``pair_consensus``."""
    if prior_weight is not None and prior_weight <= 0:
        raise ValueError("prior_weight must be > 0")
    data = turing.checked(n_raters)
    item, guess, rater = data.item, data.guessed_ai, data.rater
    counted = _left_out_rows(rater, n_raters, left_out)
    hits = (guess & counted).astype(np.float64)
    ai_item = np.bincount(item, weights=hits, minlength=data.n_items)
    n_item = np.bincount(item, weights=counted.astype(np.float64), minlength=data.n_items)
    weight = _beta_prior_weight(ai_item, n_item) if prior_weight is None else float(prior_weight)
    # The same rater may (in imported data) have judged an item twice: take out all their rows.
    key = rater * data.n_items + item
    _, inverse = np.unique(key, return_inverse=True)
    own_ai = np.bincount(inverse, weights=hits)[inverse]
    own_n = np.bincount(inverse, weights=counted.astype(np.float64))[inverse]
    pooled = _pooled_others(guess.astype(np.float64), rater, n_raters, counted)
    prior = np.where(np.isfinite(pooled), pooled, 0.5)[rater]
    q = (ai_item[item] - own_ai + weight * prior) / (n_item[item] - own_n + weight)
    q = np.clip(q, 1e-9, 1.0 - 1e-9)
    return TuringConsensus(
        logit=np.log(q) - np.log1p(-q), others_ai_share=pooled, prior_weight=weight
    )
