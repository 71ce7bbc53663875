"""Active choice of the next A/B pair to show.

Public API
----------
``DEFAULT_WARMUP``, ``SELECTION_ALPHA``
    Defaults described below.
``choose_pair(wins, n_items, *, appearances, min_appearances, candidates, seed,
warmup=DEFAULT_WARMUP) -> tuple[int, int]``
    The next pair (i, j); the order is random, so it can be used directly as (left, right).
``pair_information(wins, *, alpha=SELECTION_ALPHA) -> np.ndarray``
    The (n_items, n_items) informativeness matrix that ``choose_pair`` maximises.

Rule, in order of precedence
----------------------------
1. Only allowed pairs: ``candidates`` (a symmetric boolean mask, e.g. same topic and not yet
   shown to this rater) and never an item against itself. No allowed pair -> ``ValueError``.
2. Minimum exposure first: if some allowed pair contains an item with fewer than
   ``min_appearances`` appearances, only pairs with the largest number (2, else 1) of such
   items are considered, so every item reaches its minimum before the design concentrates.
3. Warm-up: until ``wins`` holds ``warmup`` judgments, a uniformly random pair among those left.
4. Otherwise the most informative pair: the one maximising ``p (1 - p) var(s_i - s_j)``, with
   ``p`` the current Bradley-Terry win probability and ``var`` from the inverse Fisher
   information (Laplace approximation). The expected information one more judgment brings
   about the scores is 0.5 log(1 + p (1 - p) var) under that approximation: it favours pairs
   that are close (p near 1/2, the order most in doubt) and poorly known (large variance).
   Ties break at random.

The fit used for selection has a firmer ridge (``SELECTION_ALPHA = 0.1``, a prior standard
deviation of ~2.2 log-strength units, the spread real items have) than the published fit:
early on one lucky win would otherwise make an item look decided and starve it of
comparisons. It only steers the design; published scores come from ``bt_fit``.

``benchmarks/sim_active_pairs.py`` compares this rule with uniform random pairing.
"""

from __future__ import annotations

import numpy as np

from apps.analysis.stats.bradley_terry import bt_fit_matrix

DEFAULT_WARMUP = 0
SELECTION_ALPHA = 0.1


def pair_information(wins: np.ndarray, *, alpha: float = SELECTION_ALPHA) -> np.ndarray:
    """``p (1 - p) var(s_i - s_j)`` for every pair (diagonal 0); see the module docstring."""
    mat = np.asarray(wins, dtype=np.float64)
    fit = bt_fit_matrix(mat, alpha=alpha, tol=1e-6, max_iter=200)
    s = fit.scores
    p = 1.0 / (1.0 + np.exp(-(s[:, None] - s[None, :])))
    total = mat + mat.T
    np.fill_diagonal(total, 0.0)
    q = total * p * (1.0 - p)
    # Negative Hessian of the penalised log-likelihood; the ridge makes it positive definite
    # even across components, so it inverts without a gauge constraint.
    hess = -q
    hess[np.diag_indices_from(hess)] += q.sum(axis=1) + 2.0 * alpha
    cov = np.linalg.inv(hess)
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2.0 * cov
    info = p * (1.0 - p) * var
    np.fill_diagonal(info, 0.0)
    return np.asarray(info)


def choose_pair(
    wins: np.ndarray,
    n_items: int,
    *,
    appearances: np.ndarray,
    min_appearances: int,
    candidates: np.ndarray | None,
    seed: int,
    warmup: int = DEFAULT_WARMUP,
) -> tuple[int, int]:
    """Next pair to judge (see the module docstring for the rule); deterministic per seed."""
    mat = np.asarray(wins, dtype=np.float64)
    if mat.shape != (n_items, n_items):
        raise ValueError("wins must be an (n_items, n_items) matrix")
    app = np.asarray(appearances)
    if app.shape != (n_items,):
        raise ValueError("appearances must have one entry per item")
    allowed = ~np.eye(n_items, dtype=bool)
    if candidates is not None:
        cand = np.asarray(candidates, dtype=bool)
        if cand.shape != (n_items, n_items):
            raise ValueError("candidates must be an (n_items, n_items) boolean mask")
        # Pairs are unordered; an asymmetric mask is ambiguous, so refuse it rather than guess.
        if not np.array_equal(cand, cand.T):
            raise ValueError("candidates must be symmetric (pairs are unordered)")
        allowed &= cand
    allowed = np.triu(allowed)
    if not allowed.any():
        raise ValueError("no allowed pair")
    rng = np.random.default_rng(seed)

    needy = (app < min_appearances).astype(np.int64)
    priority = np.where(allowed, needy[:, None] + needy[None, :], -1)
    allowed &= priority == priority.max()

    rows, cols = np.nonzero(allowed)
    if mat.sum() < warmup:
        pick = int(rng.integers(rows.size))
    else:
        info = pair_information(mat)[rows, cols]
        best = np.flatnonzero(info >= info.max() * (1.0 - 1e-9))
        pick = int(best[rng.integers(best.size)])
    i, j = int(rows[pick]), int(cols[pick])
    # Random order so the caller can show (first, second) as (left, right) without a position
    # bias tied to item index.
    return (i, j) if rng.random() < 0.5 else (j, i)
