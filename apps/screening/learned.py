"""The learned L1: a ridge regression of human mean ratings on an item's sentence embedding,
beside the method's features, and the validation that decides whether a fit may score items.

Pure: numpy and scipy over arrays and dataclasses, no Django. Every random step (fold orders,
bootstrap draws) takes an explicit seed.

The model. For item i with unpenalised columns u_i (an intercept, the method's features
surprise, coherence, −penalty and the coherence-gated surprise surprise × coherence, and, when a
prior is given, the prior's prediction) and its embedding e_i (unit length, 512 numbers for the
multilingual Universal Sentence Encoder),

    ŷ_i = u_i · b + e_i · w,   minimising  Σ (y_i − ŷ_i)² + α ‖w‖²

The features are few and explainable, so they are not shrunk; the embedding is. With a prior in
u, shrinking w pulls the fit towards a rescaled prior, so a study with few ratings stays near the
prior and one with many moves away from it (the prior is refined, not replaced, until the data
say otherwise). α is chosen among a grid by exact leave-one-out error, computed in closed form
from one SVD (the hat matrix of this penalised fit is P_U + Ũ diag(s²/(s²+α)) Ũᵀ, with Ũ S Vᵀ
the SVD of the embeddings after projecting out u).

The embedding is the item text's, followed, in studies with multi-turn replies or scenario
responses, by the embedding of what the item answers (its dialogue or scenario): a good reply
depends on what it replies to.

Missing values: a feature missing for an item takes the training mean (after standardising: 0,
no evidence either way); a missing embedding (language not covered; no context for a single
joke) takes the training mean, number by number.

Validation (`validate`): repeated k-fold cross-validation (20 × 5-fold by default), so the
verdict does not depend on one fold split; each item's held-out predictions are averaged over
the repeats, and the rank correlation of those averages with the human means, and the share of
the humans' top quartile that a top-half sieve keeps, get percentile bootstrap intervals over
items. The estimand: how well a fit of this kind, trained on items like these, ranks new items
from the same pool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.utils.translation import gettext_noop
from numpy.typing import NDArray
from scipy import stats

from apps.core.sentences import Sentence

FEATURE_COLUMNS = ("surprise", "coherence", "neg_penalty", "surprise_x_coherence")
PRIOR_COLUMN = "prior"
# α as multiples of the mean squared singular value of the embedding block: from nearly
# unpenalised to nearly "embeddings off".
ALPHA_GRID = tuple(float(v) for v in np.logspace(-3, 3, 25))
DEFAULT_REPEATS = 20
DEFAULT_FOLDS = 5
DEFAULT_BOOTSTRAP = 1000
CONFIDENCE = 0.95
# The humans' top quartile and a top-half sieve: the audit's and the benchmark's yardstick.
TOP_SHARE = 0.25
KEEP_SHARE = 0.5

Array = NDArray[np.float64]
Floats = Sequence[float] | Array
MaybeFloats = Sequence[float | None] | Array


def feature_block(surprise: MaybeFloats, coherence: MaybeFloats, penalty: MaybeFloats) -> Array:
    """The method's features as unpenalised columns (NaN where missing): surprise, coherence,
    −penalty, and surprise × coherence, so that surprise counts in proportion to how well the
    punchline still links back to the setup ("any surprise must be constrained by coherence")."""
    s = np.array([np.nan if v is None else v for v in surprise], dtype=np.float64)
    h = np.array([np.nan if v is None else v for v in coherence], dtype=np.float64)
    p = np.array([np.nan if v is None else v for v in penalty], dtype=np.float64)
    return np.column_stack([s, h, -p, s * h]) if len(s) else np.zeros((0, 4))


@dataclass(frozen=True)
class RidgeModel:
    """A fitted learned L1. `predict` takes the same blocks it was fitted on."""

    columns: tuple[str, ...]  # names of the unpenalised columns, intercept excluded
    column_mean: tuple[float, ...]  # imputation and centring of those columns
    column_scale: tuple[float, ...]
    coefficients: tuple[float, ...]  # per standardised unpenalised column
    intercept: float
    embedding_mean: tuple[float, ...]
    embedding_weights: tuple[float, ...]
    alpha: float
    n: int

    def predict(self, columns: Array, embeddings: Array | None) -> Array:
        u = _standardise(columns, self.column_mean, self.column_scale)
        prediction = self.intercept + u @ np.asarray(self.coefficients, dtype=np.float64)
        if self.embedding_weights:
            e = _embedding_centred(embeddings, len(prediction), self.embedding_mean)
            prediction = prediction + e @ np.asarray(self.embedding_weights, dtype=np.float64)
        return np.asarray(prediction, dtype=np.float64)

    def to_json(self) -> dict[str, object]:
        return {
            "columns": list(self.columns),
            "column_mean": list(self.column_mean),
            "column_scale": list(self.column_scale),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "embedding_mean": list(self.embedding_mean),
            "embedding_weights": list(self.embedding_weights),
            "alpha": self.alpha,
            "n": self.n,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RidgeModel:
        def floats(name: str) -> tuple[float, ...]:
            values = data.get(name) or []
            assert isinstance(values, list)
            return tuple(float(v) for v in values)

        columns = data.get("columns") or []
        assert isinstance(columns, list)
        return cls(
            columns=tuple(str(c) for c in columns),
            column_mean=floats("column_mean"),
            column_scale=floats("column_scale"),
            coefficients=floats("coefficients"),
            intercept=float(data.get("intercept", 0.0)),  # type: ignore[arg-type]
            embedding_mean=floats("embedding_mean"),
            embedding_weights=floats("embedding_weights"),
            alpha=float(data.get("alpha", 0.0)),  # type: ignore[arg-type]
            n=int(data.get("n", 0)),  # type: ignore[call-overload]
        )


def _standardise(columns: Array, mean: Floats, scale: Floats) -> Array:
    x = np.array(columns, dtype=np.float64).reshape(len(columns), len(mean))
    m = np.asarray(mean, dtype=np.float64)
    x = np.where(np.isnan(x), m, x)
    return (x - m) / np.asarray(scale, dtype=np.float64)


def _embedding_centred(embeddings: Array | None, n: int, mean: Floats) -> Array:
    m = np.asarray(mean, dtype=np.float64)
    if embeddings is None or len(embeddings) == 0:
        return np.zeros((n, len(m)))
    e = np.array(embeddings, dtype=np.float64).reshape(n, len(m))
    # Element by element: a row may lack one block (a single joke has no context embedding)
    # and keep the other.
    e = np.where(np.isnan(e), m, e)
    return np.asarray(e - m, dtype=np.float64)


def _column_stats(columns: Array) -> tuple[Array, Array, list[int]]:
    """Means and scales of the columns, and which ones vary (a constant or all-missing column
    carries nothing the intercept does not)."""
    with np.errstate(all="ignore"):
        mean = np.nanmean(columns, axis=0) if columns.size else np.zeros(columns.shape[1])
        scale = np.nanstd(columns, axis=0) if columns.size else np.ones(columns.shape[1])
    mean = np.where(np.isnan(mean), 0.0, mean)
    usable = [j for j in range(columns.shape[1]) if np.isfinite(scale[j]) and scale[j] > 1e-12]
    scale = np.where(np.isfinite(scale) & (scale > 1e-12), scale, 1.0)
    return mean, scale, usable


def fit_ridge(
    columns: Array,
    embeddings: Array | None,
    y: Array,
    *,
    names: Sequence[str],
    alphas: Sequence[float] = ALPHA_GRID,
) -> RidgeModel:
    """Fit the model of the module's docstring; α by exact leave-one-out error over `alphas`
    (multiples of the embedding block's mean squared singular value)."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    columns = np.array(columns, dtype=np.float64).reshape(n, len(names))
    mean, scale, usable = _column_stats(columns)
    u = _standardise(columns, mean, scale)[:, usable]
    design = np.column_stack([np.ones(n), u])
    if embeddings is None or len(embeddings) == 0 or np.asarray(embeddings).shape[1] == 0:
        beta, *_ = np.linalg.lstsq(design, y, rcond=None)
        e_mean: Array = np.zeros(0)
        w: Array = np.zeros(0)
        alpha = 0.0
    else:
        raw = np.array(embeddings, dtype=np.float64).reshape(n, -1)
        with np.errstate(all="ignore"):
            e_mean = np.nanmean(raw, axis=0) if n else np.zeros(raw.shape[1])
        e_mean = np.where(np.isnan(e_mean), 0.0, e_mean)
        e = _embedding_centred(raw, n, e_mean)
        # Project the unpenalised columns out of y and of the embeddings (Frisch-Waugh).
        q, _ = np.linalg.qr(design)
        my = y - q @ (q.T @ y)
        me = e - q @ (q.T @ e)
        left, s, vt = np.linalg.svd(me, full_matrices=False)
        s2 = s * s
        base = float(s2.mean()) if s2.size and s2.mean() > 0 else 1.0
        h_fixed = np.einsum("ij,ij->i", q, q)
        uty = left.T @ my
        best: tuple[float, float] | None = None
        for multiple in alphas:
            a = multiple * base
            shrink = s2 / (s2 + a)
            fitted = left @ (shrink * uty)
            hat = h_fixed + (left * left) @ shrink
            loo = (my - fitted) / np.clip(1.0 - hat, 1e-9, None)
            error = float(np.mean(loo * loo))
            if best is None or error < best[0]:
                best = (error, a)
        assert best is not None
        alpha = best[1]
        w = vt.T @ ((s / (s2 + alpha)) * uty)
        beta, *_ = np.linalg.lstsq(design, y - e @ w, rcond=None)
    coefficients = np.zeros(len(names))
    coefficients[usable] = beta[1:]
    return RidgeModel(
        columns=tuple(names),
        column_mean=tuple(float(v) for v in mean),
        column_scale=tuple(float(v) for v in scale),
        coefficients=tuple(float(v) for v in coefficients),
        intercept=float(beta[0]),
        embedding_mean=tuple(float(v) for v in e_mean),
        embedding_weights=tuple(float(v) for v in w),
        alpha=float(alpha),
        n=n,
    )


# --- validation ------------------------------------------------------------------------------


def spearman(x: Array, y: Array) -> float | None:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    rho = float(stats.spearmanr(x, y).statistic)
    return None if math.isnan(rho) else rho


def top_kept_share(
    predicted: Array, human: Array, *, top: float = TOP_SHARE, keep: float = KEEP_SHARE
) -> float | None:
    """Of the items in the humans' top `top` share, the share that a sieve keeping the top
    `keep` share by `predicted` keeps. Ties in either order are broken by position, so a
    constant predictor keeps `keep` of them on average, not all or none. None for fewer than
    four items."""
    n = len(human)
    n_top = round(top * n)
    n_keep = round(keep * n)
    if n < 4 or n_top == 0:
        return None
    human_order = np.argsort(-np.asarray(human), kind="stable")
    predicted_order = np.argsort(-np.asarray(predicted), kind="stable")
    best = set(human_order[:n_top].tolist())
    kept = set(predicted_order[:n_keep].tolist())
    return len(best & kept) / n_top


def rmse(predicted: Array, human: Array) -> float:
    return float(np.sqrt(np.mean((np.asarray(predicted) - np.asarray(human)) ** 2)))


@dataclass(frozen=True)
class Estimate:
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    def to_json(self) -> dict[str, float | None]:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}


def bootstrap_figures(
    predicted: Array, human: Array, *, seed: int, rounds: int = DEFAULT_BOOTSTRAP
) -> tuple[Estimate, Estimate]:
    """Spearman rho and the top-quartile share kept by a top-half sieve, each with a 95%
    percentile bootstrap interval over items (pairs resampled)."""
    predicted = np.asarray(predicted, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64)
    n = len(human)
    rho = spearman(predicted, human)
    kept = top_kept_share(predicted, human)
    if n < 4:
        return Estimate(rho), Estimate(kept)
    rng = np.random.default_rng(seed)
    rhos: list[float] = []
    shares: list[float] = []
    for _ in range(rounds):
        draw = rng.integers(0, n, n)
        r = spearman(predicted[draw], human[draw])
        if r is not None:
            rhos.append(r)
        share = top_kept_share(predicted[draw], human[draw])
        if share is not None:
            shares.append(share)
    tail = (1 - CONFIDENCE) / 2

    def interval(value: float | None, draws: list[float]) -> Estimate:
        if value is None or len(draws) < rounds // 2:
            return Estimate(value)
        low, high = np.quantile(draws, [tail, 1 - tail])
        return Estimate(value, float(low), float(high))

    return interval(rho, rhos), interval(kept, shares)


def fold_orders(n: int, *, repeats: int, folds: int, seed: int) -> list[list[NDArray[np.int64]]]:
    """`repeats` shuffled k-fold partitions of range(n), each from its own child seed."""
    children = np.random.SeedSequence(seed).spawn(repeats)
    partitions = []
    for child in children:
        order = np.random.default_rng(child).permutation(n)
        partitions.append(
            [np.asarray(part, dtype=np.int64) for part in np.array_split(order, folds)]
        )
    return partitions


Fitter = Callable[[NDArray[np.int64]], Callable[[NDArray[np.int64]], Array]]


@dataclass(frozen=True)
class Validation:
    """Repeated cross-validation of one kind of fit, and the comparison with the scorer it would
    replace on the same items."""

    n: int
    repeats: int
    folds: int
    seed: int
    rho: Estimate
    top_quartile_kept: Estimate
    rmse: float | None
    rmse_mean_baseline: float | None
    # The spread of the rho of single repeats: what one k-fold split alone would have said.
    rho_repeat_range: tuple[float, float] | None
    # The scorer in place now, on the same items (fixed, so the same on every fold).
    current_rho: float | None
    beats_current: bool
    held_out: tuple[float, ...] = field(default=(), repr=False)

    @property
    def applicable(self) -> bool:
        return self.reasons == ()

    @property
    def reasons(self) -> tuple[Sentence, ...]:
        """Why the fit may not replace the current scorer on its own (none: it may)."""
        reasons: list[Sentence] = []
        if self.rho.ci_low is None:
            reasons.append(Sentence(gettext_noop("the held-out rho is undefined")))
        elif self.rho.ci_high is not None and self.rho.ci_high < 0:
            reasons.append(
                Sentence(
                    gettext_noop(
                        "the held-out rho interval [%(low)s, %(high)s] lies below 0: the fit "
                        "ranks new items worse than chance"
                    ),
                    {"low": f"{self.rho.ci_low:.2f}", "high": f"{self.rho.ci_high:.2f}"},
                )
            )
        elif self.rho.ci_low <= 0:
            reasons.append(
                Sentence(
                    gettext_noop(
                        "the held-out rho interval [%(low)s, %(high)s] includes 0: no evidence "
                        "that the fit ranks new items better than chance"
                    ),
                    {"low": f"{self.rho.ci_low:.2f}", "high": f"{self.rho.ci_high:.2f}"},
                )
            )
        if not self.beats_current:
            undefined = Sentence(gettext_noop("undefined"))
            current = undefined if self.current_rho is None else f"{self.current_rho:.2f}"
            value = undefined if self.rho.value is None else f"{self.rho.value:.2f}"
            reasons.append(
                Sentence(
                    gettext_noop(
                        "its held-out rho %(value)s does not beat the current scorer's "
                        "%(current)s on the same items"
                    ),
                    {"value": value, "current": current},
                )
            )
        return tuple(reasons)

    def to_json(self) -> dict[str, object]:
        return {
            "estimand": "rank correlation with the human means of items the fit did not see",
            "n": self.n,
            "repeats": self.repeats,
            "folds": self.folds,
            "seed": self.seed,
            "rho": self.rho.to_json(),
            "top_quartile_kept": self.top_quartile_kept.to_json(),
            "rmse": self.rmse,
            "rmse_mean_baseline": self.rmse_mean_baseline,
            "rho_repeat_range": list(self.rho_repeat_range) if self.rho_repeat_range else None,
            "current_rho": self.current_rho,
            "beats_current": self.beats_current,
        }


def validate(
    fitter: Fitter,
    human: Array,
    *,
    seed: int,
    current: Array | None = None,
    repeats: int = DEFAULT_REPEATS,
    folds: int = DEFAULT_FOLDS,
    rounds: int = DEFAULT_BOOTSTRAP,
) -> Validation:
    """Repeated k-fold validation of `fitter` (train indices -> a predictor of test indices)
    against the human means; `current` is the score each item has under the scorer in place now
    (the documented defaults or the prior), compared on the same items."""
    human = np.asarray(human, dtype=np.float64)
    n = len(human)
    if n < 2 * folds:
        raise ValueError(f"{n} items are too few for {folds}-fold cross-validation")
    sums = np.zeros(n)
    squared: list[float] = []
    baseline: list[float] = []
    repeat_rhos: list[float] = []
    for partition in fold_orders(n, repeats=repeats, folds=folds, seed=seed):
        held = np.empty(n)
        mean_only = np.empty(n)
        for test in partition:
            train = np.setdiff1d(np.arange(n), test, assume_unique=True)
            held[test] = fitter(train)(test)
            mean_only[test] = human[train].mean()
        sums += held
        squared.append(rmse(held, human))
        baseline.append(rmse(mean_only, human))
        r = spearman(held, human)
        if r is not None:
            repeat_rhos.append(r)
    averaged = sums / repeats
    rho, kept = bootstrap_figures(averaged, human, seed=seed, rounds=rounds)
    current_rho = (
        spearman(np.asarray(current, dtype=np.float64), human) if current is not None else None
    )
    beats = rho.value is not None and (current_rho is None or rho.value > current_rho)
    return Validation(
        n=n,
        repeats=repeats,
        folds=folds,
        seed=seed,
        rho=rho,
        top_quartile_kept=kept,
        rmse=float(np.mean(squared)),
        rmse_mean_baseline=float(np.mean(baseline)),
        rho_repeat_range=(min(repeat_rhos), max(repeat_rhos)) if repeat_rhos else None,
        current_rho=current_rho,
        beats_current=beats,
        held_out=tuple(float(v) for v in averaged),
    )


def ridge_fitter(
    columns: Array, embeddings: Array | None, human: Array, *, names: Sequence[str]
) -> Fitter:
    """A `validate` fitter for `fit_ridge` over these rows."""

    def fit_on(train: NDArray[np.int64]) -> Callable[[NDArray[np.int64]], Array]:
        model = fit_ridge(
            columns[train],
            None if embeddings is None else embeddings[train],
            human[train],
            names=names,
        )
        return lambda test: model.predict(
            columns[test], None if embeddings is None else embeddings[test]
        )

    return fit_on


# --- the sieve audit -------------------------------------------------------------------------

AUDIT_TARGET = 0.8
AUDIT_SHARES = tuple(round(0.1 * k, 1) for k in range(1, 10))
AUDIT_MIN_ITEMS = 20


def sieve_audit(
    scores: Array, human: Array, *, seed: int, rounds: int = DEFAULT_BOOTSTRAP
) -> dict[str, object]:
    """What the sieve would have done to items people rated: of the humans' top quartile, the
    share a top-half sieve by `scores` keeps (95% percentile bootstrap interval over items;
    chance keeps half), whether that is better than chance (the interval's lower end above
    one half), and the smallest pass share (of 10%, 20%, … 90%) that keeps at least 80% of the
    top quartile here — the suggested "L1 passes" setting — or None when no share short of
    all does (let every candidate through)."""
    scores = np.asarray(scores, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64)
    n = len(human)
    result: dict[str, object] = {
        "n": n,
        "top_share": TOP_SHARE,
        "keep_share": KEEP_SHARE,
        "chance": KEEP_SHARE,
        "target": AUDIT_TARGET,
    }
    if n < AUDIT_MIN_ITEMS:
        too_few = Sentence(
            gettext_noop("only %(n)s rated items with an L1 score; the audit needs %(min)s"),
            {"n": n, "min": AUDIT_MIN_ITEMS},
        )
        result.update(
            top_quartile_kept=Estimate(None).to_json(),
            rho=Estimate(None).to_json(),
            better_than_chance=None,
            suggested_keep_share=None,
            reason=too_few.english(),
            reason_message=too_few.as_dict(),
        )
        return result
    rho, kept = bootstrap_figures(scores, human, seed=seed, rounds=rounds)
    better = kept.ci_low is not None and kept.ci_low > KEEP_SHARE
    suggested = None
    if better:
        suggested = next(
            (
                share
                for share in AUDIT_SHARES
                if (top_kept_share(scores, human, keep=share) or 0.0) >= AUDIT_TARGET
            ),
            None,
        )
    result.update(
        top_quartile_kept=kept.to_json(),
        rho=rho.to_json(),
        better_than_chance=better,
        suggested_keep_share=suggested,
        reason="",
    )
    return result
