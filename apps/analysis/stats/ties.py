"""Strengths from three-way pair judgments (left funnier, right funnier, "about the same").

Public API
----------
``LEFT, RIGHT, TIE = 0, 1, 2``
    The outcome codes: left preferred, right preferred, a tie ("about the same"). Answers of
    "neither is funny / I don't get it" are not judgments of strength and must be left out
    before calling anything here.
``TIE_MODELS = ("davidson", "rao_kupper")``
``TIE_INTERVALS = ("expanded_bc", "expanded")``
    The accepted values of ``tie_bootstrap(tie_interval=...)``.
``TieFit``
    Frozen dataclass: ``model``, ``scores`` (log-strengths, centred to mean 0 within each
    connected component), ``tie_param`` (Davidson's nu >= 0 or Rao-Kupper's theta >= 1, one
    for the whole data), ``component`` (component label per item), ``n_components``,
    ``log_lik`` (unpenalised log-likelihood at the fit), ``n_params``, ``aic``, ``converged``,
    ``iterations``.
``tie_fit(left, right, outcome, n_items, *, model="davidson", alpha=DEFAULT_ALPHA,
weights=None) -> TieFit``
    One row per judgment, or one row per distinct (left, right, outcome) with ``weights`` as
    counts.
``TieModelChoice``
    Frozen dataclass: ``davidson`` and ``rao_kupper`` (the two ``TieFit``), ``log_lik`` and
    ``aic`` (dicts keyed by model name), ``n_params`` (the same for both), ``chosen``.
``choose_tie_model(left, right, outcome, n_items, *, alpha=DEFAULT_ALPHA) -> TieModelChoice``
``TieBootstrap``
    Frozen dataclass: ``fit``, ``ci_low``, ``ci_high`` (per item), ``tie_ci_low``,
    ``tie_ci_high``, ``rank``, ``rounds``, ``seed``, ``level``, ``cluster`` (``"rater"``, or
    ``"none"`` when ``clusters`` is None), ``disconnected_rounds``.
``tie_bootstrap(left, right, outcome, n_items, *, clusters, rounds=1000, seed, level=0.95,
model="davidson", alpha=DEFAULT_ALPHA, tie_interval="expanded_bc") -> TieBootstrap``
``tie_rates(left, right, outcome, n_items) -> (ties, comparisons)``
    Per item: how many of its judgments were ties, and how many judgments it had (int arrays;
    the caller puts Wilson intervals on the ratio).

Models
------
With log-strengths ``s`` and items i, j:

* **Davidson (1970)**, JASA 65:317. P(i over j) = e^{s_i} / D, P(j over i) = e^{s_j} / D,
  P(tie) = nu e^{(s_i + s_j) / 2} / D, D the sum of the three numerators, nu >= 0. Among
  decisive answers the log-odds of i over j are s_i - s_j, exactly as in plain Bradley-Terry,
  so Davidson scores sit on the scale of ``bradley_terry.bt_fit`` and can be shown beside it;
  with no tie in the data the maximum-likelihood nu is 0 and the fit *is* the Bradley-Terry
  fit. A tie is likeliest between equal items (P(tie) = nu / (2 + nu)) and its probability
  falls like e^{-|s_i - s_j| / 2}.
* **Rao and Kupper (1967)**, JASA 62:194. P(i over j) = pi_i / (pi_i + theta pi_j) with
  pi = e^s, theta >= 1, P(tie) = the rest = (theta^2 - 1) P(i over j) P(j over i). Its s are
  log pi; differences of them are not the decisive log-odds (compare Rao-Kupper scores only
  with each other). Ties fall like e^{-|s_i - s_j|}, faster than Davidson's, which is what
  lets the data tell the two apart (``choose_tie_model``).

Fit
---
Penalised maximum likelihood: maximise ``log_lik - alpha * sum(s**2)`` with the ridge and
``DEFAULT_ALPHA`` of ``bradley_terry`` (an undefeated item stays finite; see that module's
"Regularization"); the tie parameter is not penalised. It is estimated jointly with the
strengths on a log scale: lambda = log nu (Davidson), eta = log theta (Rao-Kupper, eta > 0
enforced by the line search). On these scales both log-likelihoods are concave: Davidson is a
multinomial logit whose three linear predictors are (s_i - s_j) / 2, -(s_i - s_j) / 2 and
lambda; Rao-Kupper's terms are log-sigmoids of s_i - s_j - eta plus t log(e^{2 eta} - 1),
concave on eta > 0. So damped Newton (analytic gradient and Hessian, Armijo backtracking)
converges from any start, in ~5-8 iterations from the empirical start used here.

**Why Newton and not scipy.optimize.** Judgments are compressed to counts per unordered pair
and outcome (a study's 100,000 judgments become at most k (k - 1) / 2 pairs x 3 outcomes), and
one Newton iteration is then one dense k x k solve per component; BFGS needs hundreds of
gradient evaluations for a few hundred parameters. The bootstrap decides it, as in
``bradley_terry``: rounds are solved in batches by Newton iterations warm-started at the full
fit, 2-4 iterations each, vectorised across rounds, with the per-pair arithmetic done a few
dozen rounds at a time so that its temporaries stay in cache (2-3x faster than whole arrays).
Measured by ``benchmarks/sim_ties_coverage.py`` (2 shared cores, one BLAS thread): 1,000
rater-clustered rounds for 100 items, 20,000 judgments and 60 raters take 1.9-3.5 s, either
model (see ``benchmarks/README.md``).

**One tie parameter for the whole data.** The tendency to answer "about the same" belongs to
the task and its raters, not to a topic, so nu (theta) is shared by every connected component
of the comparison graph (ties connect items as any judgment does). The strengths of different
components are still fitted on their own and centred to mean 0 each (as in
``bradley_terry``): they are not comparable across components. The shared parameter couples
the components; each Newton step solves the components' blocks separately and eliminates the
tie parameter through its Schur complement, so the cost stays that of the blocks.

**Boundaries.** With no tie in the data the likelihood is largest at the boundary (nu = 0,
theta = 1), where both models are Bradley-Terry: the fit sets it exactly and fits the
strengths alone. With no decisive judgment (only ties) the tie parameter is infinite and every
score 0. With no judgment at all the tie parameter is nan.

**AIC.** ``n_params`` = (items - components) free strengths + 1 tie parameter (one score per
component is fixed by centring; a never-compared item adds nothing). ``aic = 2 n_params -
2 log_lik``. Both models have the same number of parameters, so choosing the lower AIC is the
same as choosing the higher likelihood; an exact draw goes to Davidson (the Bradley-Terry
scale). The log-likelihood is the unpenalised one at the (penalised) fit; the ridge's pull is
negligible at real sample sizes (see ``bradley_terry``).

Bootstrap intervals
-------------------
``tie_bootstrap`` resamples raters (``clusters``: one label per judgment) with replacement and
keeps each drawn rater's judgments, because one rater's judgments share that rater's taste and
tie propensity; judgments resampled iid give intervals that are too narrow when raters differ
(``benchmarks/sim_ties_coverage.py``). ``clusters=None`` resamples judgments iid (reported as
``cluster="none"``). Rounds work on counts: per-rater counts per (pair, outcome) cell summed
with multinomial rater weights, solved in batches warm-started at the full fit.

The strengths' intervals are **expanded percentile** intervals exactly as
``bt_bootstrap(interval="expanded")``: the percentiles at the tail where a normal quantile
equals z = sqrt(G / (G - 1)) t_{G-1}, G the number of resampled units (raters, or judgments
for iid). The tie parameter's interval (``tie_interval="expanded_bc"``, the default) moves
those tails by Efron's bias correction (Efron 1981, "Nonparametric standard errors and
confidence intervals", Can. J. Stat. 9:139; Efron & Tibshirani 1993, ch. 14.3): percentiles
Phi(2 z0 -+ z), z0 = Phi^-1(share of rounds below the estimate). Why: with strengths
estimated from a few dozen judgments each, the fitted strengths spread wider than the true
ones, so the fit puts more of the observed ties down to the tie parameter and overstates it,
and the plain percentile interval repeats that lean instead of undoing it. In the simulation
(500 studies per model) Rao-Kupper's theta was covered 92.0% by the plain expanded interval
and 94.2% with the correction; Davidson's nu 93.6% and 92.8% (Monte Carlo error ~1.1 points
each, so no measurable difference there). ``tie_interval="expanded"`` gives the plain expanded
percentile interval.

When the estimate lies outside the middle 95% of its own resamples (fewer than 2.5% of them
on one side), the bias is larger than the resamples' spread: the correction would move both
percentiles to one end of the distribution and give a narrow interval that misses the
estimate itself (seen on a small demo study with 30 rounds: theta 2.19, "interval" [2.26,
2.28]). The resamples then do not describe the estimate's sampling error, and the tie
parameter gets no interval (nan) with ``tie_interval_reason = "resamples_far_from_estimate"``
rather than a number that cannot mean what an interval means.

Estimands. ``ci_low[i], ci_high[i]``: item i's log-strength minus the mean log-strength of its
component, the centring of ``scores``, for the model fitted, as it would be estimated from
infinitely many raters drawn like these (with raters who differ, that is the pooled model's
population value, not any single rater's). ``tie_ci_low, tie_ci_high``: the shared nu
(Davidson) or theta (Rao-Kupper) in the same sense. A never-compared item has nan bounds.
``rank`` is ``ranks.ci_aware_ranks`` within components. ``disconnected_rounds`` counts rounds
whose resample split a component (the ridge then centres each piece on its own); many of them
mean the design is too sparse to trust. A round whose resample has no tie sets the tie
parameter to its boundary (nu = 0, theta = 1), exactly as the fit would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.special import expit, ndtr, ndtri, stdtrit

from apps.analysis.stats.bradley_terry import (
    _BATCH_ELEMENTS,
    _BOOTSTRAP_TOL,
    DEFAULT_ALPHA,
    _centre,
    _components,
    _compress,
    _split_rounds,
)
from apps.analysis.stats.ranks import ci_aware_ranks

LEFT, RIGHT, TIE = 0, 1, 2
TIE_MODELS = ("davidson", "rao_kupper")
TIE_INTERVALS = ("expanded_bc", "expanded")

# Davidson's log nu at the boundary nu = 0: exp() of it underflows to exactly 0, so every tie
# probability is exactly 0 and the formulas are exactly Bradley-Terry's.
_LOG_NU_ZERO = -1000.0
_FIT_TOL = 1e-8
_MAX_ITER = 200


@dataclass(frozen=True)
class TieFit:
    model: str
    scores: np.ndarray
    tie_param: float
    component: np.ndarray
    n_components: int
    log_lik: float
    n_params: int
    aic: float
    converged: bool
    iterations: int


@dataclass(frozen=True)
class TieModelChoice:
    davidson: TieFit
    rao_kupper: TieFit
    log_lik: dict[str, float]
    aic: dict[str, float]
    # Both models have the same number of parameters, so the AIC comparison is a likelihood
    # comparison.
    n_params: int
    chosen: str


@dataclass(frozen=True)
class TieBootstrap:
    fit: TieFit
    ci_low: np.ndarray
    ci_high: np.ndarray
    tie_ci_low: float
    tie_ci_high: float
    rank: np.ndarray
    rounds: int
    seed: int
    level: float
    cluster: str
    disconnected_rounds: int = 0
    # Why the tie parameter has no interval (see the module docstring), else None.
    tie_interval_reason: str | None = None


# The estimate must lie within the middle 95% of its resamples for its interval to be given.
_TIE_SHARE_LIMIT = 0.025

# ---------------------------------------------------------------------------------------------
# Input handling
# ---------------------------------------------------------------------------------------------


def _check_model(model: str) -> None:
    if model not in TIE_MODELS:
        raise ValueError(f"model must be one of {TIE_MODELS}, not {model!r}")


def _check_alpha(alpha: float) -> float:
    value = float(alpha)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(
            "alpha must be a finite number > 0 (without it an undefeated item has no finite score)"
        )
    return value


def _check_judgments(
    left: np.ndarray, right: np.ndarray, outcome: np.ndarray, n_items: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated judgments as (a, b, kind): a < b the pair, kind 0 = a preferred, 1 = b
    preferred, 2 = tie."""
    if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer):
        raise ValueError("n_items must be an integer")
    if n_items < 0:
        raise ValueError("n_items must be >= 0")
    le, ri, out = np.asarray(left), np.asarray(right), np.asarray(outcome)
    if le.ndim != 1 or ri.shape != le.shape or out.shape != le.shape:
        raise ValueError("left, right and outcome must be 1-D arrays of equal length")
    if le.size:
        for name, arr in (("left", le), ("right", ri), ("outcome", out)):
            if not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"{name} must be an integer array")
    le, ri, out = (x.astype(np.int64, copy=False) for x in (le, ri, out))
    if le.size:
        if min(le.min(), ri.min()) < 0 or max(le.max(), ri.max()) >= n_items:
            raise ValueError("item index out of range [0, n_items)")
        if np.any(le == ri):
            raise ValueError("an item cannot be compared with itself (left == right)")
        if not np.all((out == LEFT) | (out == RIGHT) | (out == TIE)):
            raise ValueError(
                f"outcome must be {LEFT} (left preferred), {RIGHT} (right preferred) or {TIE} (tie)"
            )
    a, b = np.minimum(le, ri), np.maximum(le, ri)
    preferred = np.where(out == LEFT, le, ri)
    kind = np.where(out == TIE, TIE, np.where(preferred == a, 0, 1)).astype(np.int64)
    return a, b, kind


@dataclass(frozen=True)
class _Block:
    """One connected component of >= 2 items: its members, its pairs (rows of ``_Data``), their
    local item indices, and the (P_c, k) incidence matrix (+1 at a, -1 at b) that turns
    per-pair derivatives into per-item ones."""

    members: np.ndarray
    pairs: np.ndarray
    la: np.ndarray
    lb: np.ndarray
    incidence: sparse.csr_matrix


@dataclass(frozen=True)
class _Data:
    """Judgments compressed to distinct unordered pairs (pa < pb) with (P, 3) counts (a
    preferred, b preferred, tie)."""

    n_items: int
    pa: np.ndarray
    pb: np.ndarray
    cells: np.ndarray
    cell_of_row: np.ndarray
    labels: np.ndarray
    n_comp: int
    blocks: list[_Block] = field(default_factory=list)


def _prepare(
    a: np.ndarray, b: np.ndarray, kind: np.ndarray, n_items: int, weights: np.ndarray | None
) -> _Data:
    pa, pb, _, inverse = _compress(a, b, n_items, None)
    cell_of_row = inverse * 3 + kind
    flat: np.ndarray
    if weights is None:
        flat = np.bincount(cell_of_row, minlength=3 * pa.size).astype(np.float64)
    else:
        wt = np.asarray(weights, dtype=np.float64)
        if wt.shape != a.shape:
            raise ValueError("weights must have one entry per judgment")
        if np.any(~np.isfinite(wt)) or np.any(wt < 0):
            raise ValueError("weights must be finite and >= 0")
        flat = np.bincount(cell_of_row, weights=wt, minlength=3 * pa.size)
    cells = flat.reshape(pa.size, 3)
    n_comp, labels = _components(pa, pb, cells.sum(axis=1), n_items)
    data = _Data(n_items, pa, pb, cells, cell_of_row, labels, n_comp)
    pair_comp = labels[pa]
    local = np.zeros(n_items, dtype=np.int64)
    for c in range(n_comp):
        members = np.flatnonzero(labels == c)
        if members.size < 2:
            continue
        local[members] = np.arange(members.size)
        sel = np.flatnonzero(pair_comp == c)
        la, lb = local[pa[sel]], local[pb[sel]]
        rows = np.arange(sel.size)
        incidence = sparse.csr_matrix(
            (
                np.concatenate([np.ones(sel.size), -np.ones(sel.size)]),
                (np.concatenate([rows, rows]), np.concatenate([la, lb])),
            ),
            shape=(sel.size, members.size),
        )
        data.blocks.append(_Block(members, sel, la, lb, incidence))
    return data


@dataclass(frozen=True)
class _Counts:
    """A batch of R rounds' counts: per block two contiguous (R, P_c) arrays (Davidson:
    wins minus losses of a, and all judgments; Rao-Kupper: a preferred + ties, b preferred +
    ties), and per round the number of ties and of decisive judgments."""

    first: list[np.ndarray]
    second: list[np.ndarray]
    ties: np.ndarray
    decisive: np.ndarray

    def rows(self, idx: np.ndarray) -> _Counts:
        return _Counts(
            [x[idx] for x in self.first],
            [x[idx] for x in self.second],
            self.ties[idx],
            self.decisive[idx],
        )


def _batch_counts(model: str, data: _Data, flat: np.ndarray) -> _Counts:
    """(R, 3P) cell counts -> the model's per-block count arrays."""
    cube = flat.reshape(flat.shape[0], data.pa.size, 3)
    first, second = [], []
    for block in data.blocks:
        w, lo, t = (np.ascontiguousarray(cube[:, block.pairs, j]) for j in range(3))
        if model == "davidson":
            first.append(w - lo)
            second.append(w + lo + t)
        else:
            first.append(w + t)
            second.append(lo + t)
    ties = cube[:, :, 2].sum(axis=1)
    decisive = cube[:, :, :2].sum(axis=(1, 2))
    return _Counts(first, second, ties, decisive)


# ---------------------------------------------------------------------------------------------
# Likelihood terms
# ---------------------------------------------------------------------------------------------

# Larger nu only arise at trial points far out on a line search; capping keeps 0 * inf out.
_NU_CAP = 1e300
# Capped before exponentiating, so a trial step far out never overflows.
_LOG_NU_CAP = float(np.log(_NU_CAP))


# Rows of a batch handled at a time in the per-pair arithmetic: with ~16k elements every
# temporary stays in cache; whole (R, P) arrays make each of the ~20 operations memory-bound
# (measured 2-3x slower at 100 items and 134 rounds).
_SLICE_ELEMENTS = 16_384


def _row_slices(rows: int, width: int) -> list[slice]:
    step = max(1, _SLICE_ELEMENTS // max(width, 1))
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)]


def _log_sigmoid(u: np.ndarray) -> np.ndarray:
    return np.asarray(np.minimum(u, 0.0) - np.log1p(np.exp(-np.abs(u))))


def _pair_loglik(
    model: str, d: np.ndarray, tau: np.ndarray, first: np.ndarray, second: np.ndarray
) -> np.ndarray:
    """Per pair log-likelihood without the tie-only term; d = s_a - s_b (R, P), tau (R, 1)."""
    if model == "davidson":
        # Numerators divided by e^{(s_a + s_b) / 2}: e^x, e^-x, nu with x = d / 2; then
        # factor e^|x| out of the denominator: one exp and one log per pair.
        x = 0.5 * d
        ax = np.abs(x)
        q = np.exp(-ax)
        nu = np.exp(np.minimum(tau, _LOG_NU_CAP))
        den = 1.0 + q * q + nu * q
        return np.asarray(first * x - second * (ax + np.log(den)))
    return np.asarray(first * _log_sigmoid(d - tau) + second * _log_sigmoid(-d - tau))


def _pair_derivatives(
    model: str, d: np.ndarray, tau: np.ndarray, first: np.ndarray, second: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pair derivatives of the log-likelihood: d/dd, d/dtau, d2/dd2, d2/dd dtau, d2/dtau2,
    with d = s_a - s_b and tau = log nu (Davidson) or log theta (Rao-Kupper)."""
    if model == "davidson":
        # P(a) + P(b) = (1 + q^2) / den, P(a) - P(b) = sign(x) (1 - q^2) / den,
        # P(tie) = nu q / den; the derivatives are those of a multinomial logit.
        x = 0.5 * d
        q = np.exp(-np.abs(x))
        q2 = q * q
        nu = np.exp(np.minimum(tau, _LOG_NU_CAP))
        inv = 1.0 / (1.0 + q2 + nu * q)
        diff = np.sign(x) * (1.0 - q2) * inv
        pt = nu * q * inv
        gd = 0.5 * (first - second * diff)
        gt = -second * pt
        hdd = -0.25 * second * ((1.0 + q2) * inv - diff * diff)
        hdt = 0.5 * second * diff * pt
        htt = gt * (1.0 - pt)
        return gd, gt, hdd, hdt, htt
    # Rao-Kupper: log P(a over b) = log sigmoid(d - eta), log P(b over a) = log sigmoid(-d -
    # eta); a tie counts in both (P(tie) = (e^{2 eta} - 1) P(a over b) P(b over a)).
    q1, q2 = expit(tau - d), expit(tau + d)
    v1, v2 = first * q1 * (1.0 - q1), second * q2 * (1.0 - q2)
    gd = first * q1 - second * q2
    gt = -first * q1 - second * q2
    hdd = -v1 - v2
    return gd, gt, hdd, v1 - v2, hdd


def _block_loglik(
    model: str,
    block: _Block,
    s: np.ndarray,
    tau: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
) -> np.ndarray:
    """Sum over the block's pairs of ``_pair_loglik`` per round: (R,)."""
    out = np.empty(s.shape[0])
    for sl in _row_slices(s.shape[0], block.la.size):
        rows = s[sl]
        d = rows[:, block.la] - rows[:, block.lb]
        out[sl] = _pair_loglik(model, d, tau[sl, None], first[sl], second[sl]).sum(axis=1)
    return out


def _block_derivatives(
    model: str,
    block: _Block,
    s: np.ndarray,
    tau: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pair d/dd stacked on d2/dd dtau (2, R, P), d2/dd2 (R, P), and per round the sums
    of d/dtau and d2/dtau2 (R,)."""
    r, p = s.shape[0], block.la.size
    g_h = np.empty((2, r, p))
    hdd = np.empty((r, p))
    gt_sum, htt_sum = np.empty(r), np.empty(r)
    for sl in _row_slices(r, p):
        rows = s[sl]
        d = rows[:, block.la] - rows[:, block.lb]
        gd, gt, h2, hdt, htt = _pair_derivatives(model, d, tau[sl, None], first[sl], second[sl])
        g_h[0, sl], g_h[1, sl], hdd[sl] = gd, hdt, h2
        gt_sum[sl], htt_sum[sl] = gt.sum(axis=1), htt.sum(axis=1)
    return g_h, hdd, gt_sum, htt_sum


def _tie_term(
    model: str, tau: np.ndarray, ties: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The part of the log-likelihood that depends on the tie parameter only, summed over the
    round's ties ``ties`` (R,): value, first and second derivative in tau."""
    if model == "davidson":
        return ties * tau, ties.astype(np.float64), np.zeros_like(tau)
    has = ties > 0
    # Only rows with ties and eta > 0 evaluate log(e^{2 eta} - 1); eta <= 0 there is outside
    # the model (-inf, so the line search rejects it).
    ok = has & (tau > 0)
    eta = np.where(ok, tau, 1.0)
    em1 = -np.expm1(-2.0 * eta)  # 1 - e^{-2 eta}
    value = np.where(ok, ties * (2.0 * eta + np.log(em1)), np.where(has, -np.inf, 0.0))
    grad = np.where(has, ties * 2.0 / em1, 0.0)
    hess = np.where(has, -4.0 * ties * np.exp(-2.0 * eta) / (em1 * em1), 0.0)
    return value, grad, hess


def _objective(
    model: str,
    blocks: list[_Block],
    counts: _Counts,
    s: list[np.ndarray],
    tau: np.ndarray,
    alpha: float,
) -> np.ndarray:
    """Negative penalised log-likelihood per round."""
    f = -_tie_term(model, tau, counts.ties)[0]
    for block, c1, c2, sc in zip(blocks, counts.first, counts.second, s, strict=True):
        f = f - _block_loglik(model, block, sc, tau, c1, c2) + alpha * np.einsum("ri,ri->r", sc, sc)
    return np.asarray(f)


# ---------------------------------------------------------------------------------------------
# Batched damped Newton solver with a shared tie parameter
# ---------------------------------------------------------------------------------------------


def _newton(
    model: str,
    blocks: list[_Block],
    counts: _Counts,
    s0: list[np.ndarray],
    tau0: np.ndarray,
    alpha: float,
    tol: float,
    max_iter: int,
) -> tuple[list[np.ndarray], np.ndarray, int, np.ndarray]:
    """Minimise the penalised negative log-likelihood for a batch of R rounds.

    ``s0[c]``: (R, k_c) starts per block, ``tau0``: (R,) start of the log tie parameter.
    Returns (scores per block, tau, iterations, converged). Rounds without a tie keep tau at
    its boundary; rounds without a decisive judgment get tau = +inf and scores 0; rounds
    without any judgment tau = nan and scores 0.
    """
    n_rounds = tau0.shape[0]
    s = [x.astype(np.float64, copy=True) for x in s0]
    tau = tau0.astype(np.float64, copy=True)
    free = counts.ties > 0
    tau[~free] = _LOG_NU_ZERO if model == "davidson" else 0.0
    only_ties = free & (counts.decisive == 0)
    empty = ~free & (counts.decisive == 0)
    tau[only_ties] = np.inf
    tau[empty] = np.nan
    for sc in s:
        sc[only_ties | empty] = 0.0
    converged = only_ties | empty
    active = np.flatnonzero(~converged)
    f_cur = np.full(n_rounds, np.nan)
    if active.size:
        f_cur[active] = _objective(
            model, blocks, counts.rows(active), [x[active] for x in s], tau[active], alpha
        )
    iterations = 0
    while active.size and iterations < max_iter:
        iterations += 1
        every = active.size == n_rounds
        cnt = counts if every else counts.rows(active)
        s_a = s if every else [x[active] for x in s]
        tau_a, free_a, f_old = tau[active], free[active], f_cur[active]
        _, tg, th = _tie_term(model, tau_a, cnt.ties)
        g_tau, c_tau = -tg, -th
        grads, solved = [], []
        for block, c1, c2, sc in zip(blocks, cnt.first, cnt.second, s_a, strict=True):
            r, k = sc.shape
            g_h, hdd, gt_sum, htt_sum = _block_derivatives(model, block, sc, tau_a, c1, c2)
            # Per-item sums of the per-pair derivatives, both at once: (P, k)^T @ (P, 2R).
            per_item = np.asarray(block.incidence.T @ g_h.reshape(2 * r, -1).T)
            g_s = 2.0 * alpha * sc - per_item[:, :r].T
            cross = -per_item[:, r:].T
            g_tau -= gt_sum
            c_tau -= htt_sum
            hess = np.zeros((r, k, k))
            flat = hess.reshape(r, k * k)
            flat[:, block.la * k + block.lb] = hdd
            flat[:, block.lb * k + block.la] = hdd
            diag = np.arange(k)
            hess[:, diag, diag] = 2.0 * alpha - hess.sum(axis=2)
            grads.append((g_s, cross))
            solved.append(np.linalg.solve(hess, np.stack([g_s, cross], axis=2)))
        # Schur complement of the strength blocks: the tie step first, then each block's.
        schur, rhs = c_tau.copy(), g_tau.copy()
        for (_, cross), sol in zip(grads, solved, strict=True):
            schur -= np.einsum("ri,ri->r", cross, sol[:, :, 1])
            rhs -= np.einsum("ri,ri->r", cross, sol[:, :, 0])
        d_tau = np.where(free_a, -rhs / np.where(free_a, schur, 1.0), 0.0)
        steps = [-sol[:, :, 0] - sol[:, :, 1] * d_tau[:, None] for sol in solved]
        slope = g_tau * d_tau
        for (g_s, _), st in zip(grads, steps, strict=True):
            slope = slope + np.einsum("ri,ri->r", g_s, st)
        # Armijo backtracking. The objective is convex on these scales, so the full Newton step
        # passes near the optimum and halvings act only far from it (or when a Rao-Kupper step
        # would cross eta = 0).
        t = np.ones(active.size)
        slack = 1e-12 * np.abs(f_old)
        new_s = [x + st for x, st in zip(s_a, steps, strict=True)]
        new_tau = tau_a + d_tau
        f_new = _objective(model, blocks, cnt, new_s, new_tau, alpha)
        bad = ~(f_new <= f_old + 1e-4 * slope + slack)
        halvings = 0
        while np.any(bad) and halvings < 60:
            idx = np.flatnonzero(bad)
            t[idx] *= 0.5
            for x, st, ns in zip(s_a, steps, new_s, strict=True):
                ns[idx] = x[idx] + t[idx, None] * st[idx]
            new_tau[idx] = tau_a[idx] + t[idx] * d_tau[idx]
            f_new[idx] = _objective(
                model, blocks, cnt.rows(idx), [ns[idx] for ns in new_s], new_tau[idx], alpha
            )
            bad[idx] = ~(f_new[idx] <= f_old[idx] + 1e-4 * t[idx] * slope[idx] + slack[idx])
            halvings += 1
        moved = t * np.abs(d_tau)
        for st in steps:
            moved = np.maximum(moved, t * np.abs(st).max(axis=1, initial=0.0))
        for x, ns in zip(s, new_s, strict=True):
            x[active] = ns
        tau[active] = new_tau
        f_cur[active] = f_new
        done = moved < tol
        converged[active[done]] = True
        active = active[~done]
    return s, tau, iterations, converged


def _tie_value(model: str, tau: np.ndarray) -> np.ndarray:
    """nu = e^lambda (0 at the boundary) or theta = e^eta."""
    with np.errstate(over="ignore"):
        value = np.exp(tau)
    if model == "davidson":
        value = np.where(tau <= _LOG_NU_ZERO, 0.0, value)
    return np.asarray(value)


def _fit_prepared(data: _Data, model: str, alpha: float) -> tuple[TieFit, np.ndarray]:
    """The fit and its log tie parameter (as an array of one, for warm starts)."""
    n_items = data.n_items
    cells = data.cells
    won = np.bincount(data.pa, weights=cells[:, 0], minlength=n_items)
    won += np.bincount(data.pb, weights=cells[:, 1], minlength=n_items)
    lost = np.bincount(data.pa, weights=cells[:, 1], minlength=n_items)
    lost += np.bincount(data.pb, weights=cells[:, 0], minlength=n_items)
    tied = np.bincount(data.pa, weights=cells[:, 2], minlength=n_items)
    tied += np.bincount(data.pb, weights=cells[:, 2], minlength=n_items)
    # Each item's empirical log-odds, a tie counting half each way: a start a few Newton
    # steps from the optimum.
    start = np.log((won + 0.5 * tied + 0.5) / (lost + 0.5 * tied + 0.5))
    total = float(cells.sum())
    rate = float(cells[:, 2].sum()) / total if total > 0 else 0.0
    rate = min(max(rate, 1e-6), 1.0 - 1e-6)
    # At equal strengths P(tie) = nu / (2 + nu) (Davidson) and (theta - 1) / (theta + 1)
    # (Rao-Kupper): the observed tie rate inverted.
    tau0 = (
        np.log(2.0 * rate / (1.0 - rate))
        if model == "davidson"
        else np.log1p(rate) - np.log1p(-rate)
    )
    counts = _batch_counts(model, data, cells.reshape(1, -1))
    s0 = [start[block.members][None, :] for block in data.blocks]
    s, tau, iterations, conv = _newton(
        model, data.blocks, counts, s0, np.array([tau0]), alpha, _FIT_TOL, _MAX_ITER
    )
    scores = np.zeros(n_items)
    for block, sc in zip(data.blocks, s, strict=True):
        scores[block.members] = sc[0]
    scores = _centre(scores, data.labels, data.n_comp)
    if np.isfinite(tau[0]):
        centred = [scores[block.members][None, :] for block in data.blocks]
        log_lik = -float(_objective(model, data.blocks, counts, centred, tau, 0.0)[0])
    else:
        # Only ties (each has probability 1 at nu = inf) or no judgment at all.
        log_lik = 0.0
    n_params = n_items - data.n_comp + 1
    fit = TieFit(
        model=model,
        scores=scores,
        tie_param=float(_tie_value(model, tau)[0]),
        component=data.labels,
        n_components=data.n_comp,
        log_lik=log_lik,
        n_params=n_params,
        aic=2.0 * n_params - 2.0 * log_lik,
        converged=bool(conv[0]),
        iterations=iterations,
    )
    return fit, tau


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def tie_fit(
    left: np.ndarray,
    right: np.ndarray,
    outcome: np.ndarray,
    n_items: int,
    *,
    model: str = "davidson",
    alpha: float = DEFAULT_ALPHA,
    weights: np.ndarray | None = None,
) -> TieFit:
    """Penalised maximum-likelihood Davidson or Rao-Kupper fit (see the module docstring)."""
    _check_model(model)
    alpha = _check_alpha(alpha)
    a, b, kind = _check_judgments(left, right, outcome, n_items)
    return _fit_prepared(_prepare(a, b, kind, n_items, weights), model, alpha)[0]


# AICs closer than this (relative) are a draw: far above the fits' rounding, far below any
# difference the data could make (the AIC is twice a log-likelihood of many judgments).
_AIC_DRAW = 1e-9


def choose_tie_model(
    left: np.ndarray,
    right: np.ndarray,
    outcome: np.ndarray,
    n_items: int,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> TieModelChoice:
    """Fit both tie models and choose the one with the lower AIC.

    Both have the same number of parameters (the strengths and one tie parameter), so the AIC
    comparison is the comparison of their log-likelihoods; a draw (e.g. no tie in the data,
    where both are Bradley-Terry) goes to Davidson. A draw is a difference within the fits'
    own precision: two fits of one model reach the same likelihood only to the last few bits,
    which differ from one processor's vector instructions to another's.
    """
    alpha = _check_alpha(alpha)
    a, b, kind = _check_judgments(left, right, outcome, n_items)
    data = _prepare(a, b, kind, n_items, None)
    dav = _fit_prepared(data, "davidson", alpha)[0]
    rk = _fit_prepared(data, "rao_kupper", alpha)[0]
    return TieModelChoice(
        davidson=dav,
        rao_kupper=rk,
        log_lik={"davidson": dav.log_lik, "rao_kupper": rk.log_lik},
        aic={"davidson": dav.aic, "rao_kupper": rk.aic},
        n_params=dav.n_params,
        chosen="rao_kupper"
        if rk.aic < dav.aic - _AIC_DRAW * max(1.0, abs(dav.aic))
        else "davidson",
    )


def tie_rates(
    left: np.ndarray, right: np.ndarray, outcome: np.ndarray, n_items: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: number of its judgments that were ties, and number of its judgments."""
    a, b, kind = _check_judgments(left, right, outcome, n_items)
    is_tie = (kind == TIE).astype(np.int64)
    ties = np.bincount(a, weights=is_tie, minlength=n_items) + np.bincount(
        b, weights=is_tie, minlength=n_items
    )
    comparisons = np.bincount(a, minlength=n_items) + np.bincount(b, minlength=n_items)
    return ties.astype(np.int64), comparisons.astype(np.int64)


def _expanded_tail(level: float, units: int) -> float:
    """The percentile tail of ``bt_bootstrap(interval="expanded")`` for G = ``units``."""
    tail = (1.0 - level) / 2.0
    if units > 1:
        z = np.sqrt(units / (units - 1.0)) * float(stdtrit(units - 1, 1.0 - tail))
        tail = float(ndtr(-z))
    return tail


def _bootstrap_rounds(
    data: _Data,
    model: str,
    alpha: float,
    fit: TieFit,
    fit_tau: np.ndarray,
    clusters: np.ndarray | None,
    rounds: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Every round's centred scores (rounds, n_items) and tie parameter (rounds,), the number
    of resampled units, and which rounds split a component."""
    rng = np.random.default_rng(seed)
    n_items = data.n_items
    n_cells = 3 * data.pa.size
    per_cluster: sparse.csr_matrix | None = None
    if clusters is not None:
        _, cl_idx = np.unique(clusters, return_inverse=True)
        n_units = int(cl_idx.max()) + 1 if cl_idx.size else 1
        # Rows: (pair, outcome) cells; columns: raters; entries: that rater's count.
        per_cluster = sparse.csr_matrix(
            (np.ones(cl_idx.size), (data.cell_of_row, cl_idx.ravel())), shape=(n_cells, n_units)
        )
        per_cluster.sum_duplicates()
    else:
        n_units = int(data.cell_of_row.size)
    cell_counts = data.cells.ravel()

    largest = max((block.members.size for block in data.blocks), default=1)
    chunk = int(
        max(
            1,
            min(
                rounds,
                _BATCH_ELEMENTS // (largest * largest),
                _BATCH_ELEMENTS // max(n_units, 1),
                _BATCH_ELEMENTS // max(n_cells, 1),
            ),
        )
    )
    boot = np.full((rounds, n_items), np.nan)
    boot_tie = np.full(rounds, np.nan)
    disconnected = np.zeros(rounds, dtype=bool)
    for start in range(0, rounds if data.blocks else 0, chunk):
        r = min(chunk, rounds - start)
        if per_cluster is not None:
            draw = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=r).T
            flat = np.asarray((per_cluster @ draw.astype(np.float64)).T)
        else:
            flat = rng.multinomial(n_units, cell_counts / n_units, size=r).astype(np.float64)
        counts = _batch_counts(model, data, flat)
        s0 = [
            np.broadcast_to(fit.scores[block.members], (r, block.members.size))
            for block in data.blocks
        ]
        s, tau, _, _ = _newton(
            model,
            data.blocks,
            counts,
            s0,
            np.full(r, fit_tau[0]),
            alpha,
            _BOOTSTRAP_TOL,
            _MAX_ITER,
        )
        boot_tie[start : start + r] = _tie_value(model, tau)
        cube = flat.reshape(r, data.pa.size, 3)
        for block, sc in zip(data.blocks, s, strict=True):
            k = block.members.size
            boot[start : start + r, block.members] = sc - sc.mean(axis=1, keepdims=True)
            totals = np.zeros((r, k, k))
            totals.reshape(r, k * k)[:, block.la * k + block.lb] = cube[:, block.pairs, :].sum(
                axis=2
            )
            disconnected[start : start + r] |= _split_rounds(totals, np.ones((r, k), dtype=bool))

    return boot, boot_tie, n_units, disconnected


def _bias_corrected_tails(values: np.ndarray, estimate: float, tail: float) -> tuple[float, float]:
    """Efron's bias-corrected percentiles around the expanded tail: Phi(2 z0 -+ z), z the
    normal quantile of the expanded tail, z0 = Phi^-1(share of rounds below the estimate, ties
    counted half). The share is kept within half a round of 0 and 1 so z0 stays finite."""
    b = values.size
    below = (np.sum(values < estimate) + 0.5 * np.sum(values == estimate)) / b
    z0 = float(ndtri(min(max(below, 0.5 / b), 1.0 - 0.5 / b)))
    z = float(-ndtri(tail))
    return float(ndtr(2.0 * z0 - z)), float(ndtr(2.0 * z0 + z))


def tie_bootstrap(
    left: np.ndarray,
    right: np.ndarray,
    outcome: np.ndarray,
    n_items: int,
    *,
    clusters: np.ndarray | None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
    model: str = "davidson",
    alpha: float = DEFAULT_ALPHA,
    tie_interval: str = "expanded_bc",
) -> TieBootstrap:
    """Tie-model fit with rater-clustered bootstrap intervals and CI-aware ranks.

    ``clusters``: one rater label per judgment (None: resample judgments iid). Strengths get
    expanded percentile intervals; the tie parameter the bias-corrected expanded interval
    (``tie_interval="expanded_bc"``) or the plain one (``"expanded"``). See the module
    docstring for the resampling, the intervals and their estimands.
    """
    _check_model(model)
    alpha = _check_alpha(alpha)
    if tie_interval not in TIE_INTERVALS:
        raise ValueError(f"tie_interval must be one of {TIE_INTERVALS}, not {tie_interval!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int | np.integer) or rounds < 1:
        raise ValueError("rounds must be an integer >= 1")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError("seed must be an integer")
    if not 0.0 < float(level) < 1.0:
        raise ValueError("level must be in (0, 1)")
    a, b, kind = _check_judgments(left, right, outcome, n_items)
    cl: np.ndarray | None = None
    if clusters is not None:
        cl = np.asarray(clusters)
        if cl.shape != a.shape:
            raise ValueError("clusters must have one rater label per judgment")
    data = _prepare(a, b, kind, n_items, None)
    fit, fit_tau = _fit_prepared(data, model, alpha)
    boot, boot_tie, n_units, disconnected = _bootstrap_rounds(
        data, model, alpha, fit, fit_tau, cl, int(rounds), int(seed)
    )
    n_items = data.n_items
    tail = _expanded_tail(float(level), n_units)
    compared = np.zeros(n_items, dtype=bool)
    for block in data.blocks:
        compared[block.members] = True
    ci_low = np.full(n_items, np.nan)
    ci_high = np.full(n_items, np.nan)
    tie_lo = tie_hi = float("nan")
    tie_reason: str | None = None
    if data.blocks:
        lo_hi = np.quantile(boot[:, compared], [tail, 1.0 - tail], axis=0)
        ci_low[compared], ci_high[compared] = lo_hi[0], lo_hi[1]
        tie_tails = (tail, 1.0 - tail)
        if tie_interval == "expanded_bc":
            tie_tails = _bias_corrected_tails(boot_tie, fit.tie_param, tail)
        # Rounds with only ties (nu or theta infinite) can occur with a handful of raters;
        # order statistics stay defined where interpolation between infinities would not.
        if np.all(np.isfinite(boot_tie)):
            tie_q = np.quantile(boot_tie, tie_tails)
        else:
            tie_q = np.quantile(boot_tie, tie_tails, method="inverted_cdf")
        tie_lo, tie_hi = float(tie_q[0]), float(tie_q[1])
        finite = boot_tie[~np.isnan(boot_tie)]
        if finite.size and np.isfinite(fit.tie_param):
            below = (
                np.sum(finite < fit.tie_param) + 0.5 * np.sum(finite == fit.tie_param)
            ) / finite.size
            if not _TIE_SHARE_LIMIT <= below <= 1.0 - _TIE_SHARE_LIMIT:
                tie_lo = tie_hi = float("nan")
                tie_reason = "resamples_far_from_estimate"
    rank = ci_aware_ranks(fit.scores, ci_low, ci_high, component=fit.component)
    return TieBootstrap(
        fit=fit,
        ci_low=ci_low,
        ci_high=ci_high,
        tie_ci_low=tie_lo,
        tie_ci_high=tie_hi,
        tie_interval_reason=tie_reason,
        rank=rank,
        rounds=int(rounds),
        seed=int(seed),
        level=float(level),
        cluster="rater" if clusters is not None else "none",
        disconnected_rounds=int(disconnected.sum()),
    )
