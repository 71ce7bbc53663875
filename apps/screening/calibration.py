"""FunnyScore: a linear screen over an item's features, and its calibration against humans.

    FunnyScore = intercept + a·Surprise + b·Coherence − c·ValencePenalty

Pure: numpy and scipy over arrays and dataclasses, no Django. The only random step (the order of
the cross-validation folds) takes an explicit seed.

Units: Surprise in nats (mean per-token surprisal of the punchline minus the setup's), Coherence
a cosine in [-1, 1], ValencePenalty in [0, 1]. Fitted coefficients are in human scale points per
unit of each feature, so a fitted FunnyScore reads as a predicted mean funniness rating.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.utils.translation import gettext_noop
from numpy.typing import NDArray
from scipy import stats

from apps.core.sentences import Sentence

FEATURES = ("surprise", "coherence", "penalty")
COEFFICIENT_NAMES = ("a", "b", "c")
# A fit is applied over the documented defaults only with at least this many items with features
# and human ratings: below ~30 the three slopes and the intercept are mostly noise, and each of
# the five cross-validation folds would hold fewer than six items. A humor type or level with
# fewer is not fitted at all (its items use a broader scope's fit); "all" is fitted with fewer,
# down to what cross-validation needs, so the researcher sees how little it says.
MIN_ITEMS_PER_SCOPE = 30
# Fewer than this and even the overall fit is refused: 5 folds of 2 items, 4 parameters.
MIN_ITEMS_TO_FIT = 10
DEFAULT_FOLDS = 5
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Coefficients:
    a: float
    b: float
    c: float
    intercept: float = 0.0


# Documented defaults, used before any calibration. They only have to order items sensibly, not
# predict a rating:
# - a = 1 per nat: a punchline one nat more surprising than its setup scores one point higher
#   (incongruity is the first ingredient of a joke);
# - b = 1 per unit of cosine: surprise without a link back to the setup is noise, not a joke, and
#   the cosine range (about 0 to 1 for real text) is comparable to typical surprise gaps;
# - c = 2 per unit of penalty: a clearly mean-spirited item (penalty near 1) loses more than the
#   best coherence can win back, so the screen prefers kind jokes, as raters do;
# - intercept 0: a constant does not change any ranking.
DEFAULT_COEFFICIENTS = Coefficients(a=1.0, b=1.0, c=2.0, intercept=0.0)


def funny_score(
    surprise: float | None,
    coherence: float | None,
    penalty: float | None,
    coeffs: Coefficients,
) -> float | None:
    """The FunnyScore of one item, or None when every feature is missing.

    A missing feature contributes 0, the neutral value of each feature (no surprise gap, an
    unrelated punchline, no penalty): the item is ranked on what is known about it instead of
    being dropped. Within one screening run a feature is usually missing for every item alike
    (no language model configured), which then leaves the ranking unchanged.
    """
    values = (surprise, coherence, penalty)
    if all(value is None for value in values):
        return None
    s, h, p = (0.0 if value is None else float(value) for value in values)
    return coeffs.intercept + coeffs.a * s + coeffs.b * h - coeffs.c * p


@dataclass(frozen=True)
class Fit:
    a: float
    b: float
    c: float
    intercept: float
    # In-sample coefficient of determination; None when the human means do not vary.
    r2: float | None
    # Spearman rho between held-out predictions (k-fold) and human means; None if undefined.
    cv_spearman: float | None
    n: int
    # Which features the fit used; a feature left out has coefficient 0 (see `fit`).
    columns: tuple[str, ...] = FEATURES
    folds: int = DEFAULT_FOLDS
    seed: int = 0
    # 95% interval of the cross-validated rho (see `spearman_interval`); None if undefined.
    cv_spearman_ci: tuple[float, float] | None = None
    # 95% t intervals of the OLS coefficients {"a": (low, high), ..., "intercept": (...)}; a
    # feature the fit left out has none. Empty when the residual degrees of freedom are 0.
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def coefficients(self) -> Coefficients:
        return Coefficients(a=self.a, b=self.b, c=self.c, intercept=self.intercept)


def spearman_interval(
    rho: float | None, n: int, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Interval for the population Spearman correlation between cross-validated predictions and
    human means, from the Fisher z transform with Bonett and Wright's (2000) variance for
    Spearman's rho, (1 + rho²/2) / (n − 3). The held-out predictions are not quite independent
    (their folds share training items), so it is an approximation that errs a little narrow.
    None when rho is undefined or n ≤ 3."""
    if rho is None or n <= 3:
        return None
    r = min(max(rho, -0.999999), 0.999999)
    z = math.atanh(r)
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * math.sqrt((1 + r * r / 2) / (n - 3))
    return (math.tanh(z - half), math.tanh(z + half))


def _ols_intervals(
    design: NDArray[np.float64], y: NDArray[np.float64], beta: NDArray[np.float64]
) -> list[tuple[float, float]] | None:
    """Classical 95% t intervals of OLS coefficients (homoscedastic errors), as statsmodels'
    OLS(...).fit().conf_int() gives; None without residual degrees of freedom."""
    n, p = design.shape
    dof = n - p
    if dof <= 0:
        return None
    residual = y - design @ beta
    sigma2 = float(residual @ residual) / dof
    covariance = sigma2 * np.linalg.pinv(design.T @ design)
    t = float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof))
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    return [(float(b - t * e), float(b + t * e)) for b, e in zip(beta, se, strict=True)]


@dataclass(frozen=True)
class Verdict:
    """Whether a fit may replace the documented defaults without the researcher's say-so."""

    applicable: bool
    reasons: tuple[Sentence, ...]


def too_few_items(n: int, minimum: int) -> Sentence:
    return Sentence(
        gettext_noop("only %(n)s items; at least %(min)s are needed"), {"n": n, "min": minimum}
    )


def verdict(fit: Fit, *, min_items: int = MIN_ITEMS_PER_SCOPE) -> Verdict:
    """A fit is applicable when it has at least `min_items` items and its cross-validated rho
    interval lies above 0 (the fit ranks held-out items better than chance). Otherwise the
    reasons say what fails; such a fit is stored and shown, but the defaults keep scoring."""
    reasons = []
    if fit.n < min_items:
        reasons.append(too_few_items(fit.n, min_items))
    if fit.cv_spearman_ci is None:
        reasons.append(Sentence(gettext_noop("the cross-validated rho is undefined")))
    elif fit.cv_spearman_ci[0] <= 0:
        low, high = fit.cv_spearman_ci
        reasons.append(
            Sentence(
                gettext_noop(
                    "the cross-validated rho interval [%(low)s, %(high)s] includes 0: "
                    "no evidence that the fit ranks items better than chance"
                ),
                {"low": f"{low:.2f}", "high": f"{high:.2f}"},
            )
        )
    return Verdict(applicable=not reasons, reasons=tuple(reasons))


def _design(features: NDArray[np.float64], columns: Sequence[int]) -> NDArray[np.float64]:
    # The penalty enters as −penalty so that c comes out positive when penalised items are less
    # funny, matching the sign convention of the formula.
    signs = np.array([1.0, 1.0, -1.0])[list(columns)]
    x = features[:, list(columns)] * signs
    return np.column_stack([np.ones(len(features)), x])


def _ols(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    return np.asarray(beta, dtype=np.float64)


def kfold_indices(n: int, folds: int, seed: int) -> list[NDArray[np.int64]]:
    """Shuffled k-fold test sets: the same folds as sklearn's KFold(folds, shuffle=True,
    random_state=seed), so a fit can be checked against sklearn's cross_val_predict."""
    order = np.random.RandomState(seed).permutation(n)
    return [np.asarray(part, dtype=np.int64) for part in np.array_split(order, folds)]


def _spearman(x: NDArray[np.float64], y: NDArray[np.float64]) -> float | None:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    rho = float(stats.spearmanr(x, y).statistic)
    return None if math.isnan(rho) else rho


def _columns_and_rows(x: NDArray[np.float64]) -> tuple[list[int], NDArray[np.bool_]]:
    """The features present for at least half of the rows, and the rows that have all of them."""
    present = ~np.isnan(x)
    columns = [j for j in range(len(FEATURES)) if present[:, j].sum() * 2 >= len(x)]
    return columns, np.asarray(present[:, columns].all(axis=1), dtype=np.bool_)


def fit(
    features: NDArray[np.float64] | Sequence[Sequence[float | None]],
    human: NDArray[np.float64] | Sequence[float],
    *,
    seed: int,
    folds: int = DEFAULT_FOLDS,
) -> Fit:
    """Ordinary least squares of human mean funniness on [surprise, coherence, −penalty] with an
    intercept.

    `features` has one row per item and the columns surprise, coherence, penalty; None or NaN
    marks a missing feature. Which rows and columns are used:
    - a feature missing for more than half of the items is left out (coefficient 0, as a missing
      feature scores 0), since keeping it would discard more than half of the items; so is a
      feature with one value for every item, whose effect the intercept already carries;
    - then only items that have every remaining feature are used.

    R² is in-sample. The cross-validated rho pools the held-out predictions of `folds` shuffled
    folds (shuffled with `seed`) and compares them with the human means by Spearman's rho.
    """
    x_all = np.array(features, dtype=np.float64).reshape(-1, len(FEATURES))
    y_all = np.asarray(human, dtype=np.float64).reshape(-1)
    if len(x_all) != len(y_all):
        raise ValueError(f"{len(x_all)} feature rows but {len(y_all)} human means")
    if folds < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    columns, rows = _columns_and_rows(x_all)
    rows &= ~np.isnan(y_all)
    columns = [j for j in columns if np.ptp(x_all[rows, j]) > 0] if rows.any() else []
    x, y = x_all[rows], y_all[rows]
    n = len(y)
    parameters = len(columns) + 1
    # Every training set must keep more items than parameters, or the held-out predictions are
    # extrapolations from an exact fit.
    if n < folds or n - math.ceil(n / folds) <= parameters:
        raise ValueError(
            f"{n} items with features and human ratings are too few for {folds}-fold "
            f"cross-validation of {parameters} parameters"
        )
    design = _design(x, columns)
    beta = _ols(design, y)
    predicted = design @ beta
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = None if total == 0 else 1.0 - float(np.sum((y - predicted) ** 2)) / total

    held_out = np.empty(n)
    for test in kfold_indices(n, folds, seed):
        train = np.ones(n, dtype=bool)
        train[test] = False
        held_out[test] = design[test] @ _ols(design[train], y[train])
    coefficient = dict.fromkeys(range(len(FEATURES)), 0.0)
    coefficient.update({j: float(value) for j, value in zip(columns, beta[1:], strict=True)})
    cv_rho = _spearman(held_out, y)
    bounds = _ols_intervals(design, y, beta)
    intervals: dict[str, tuple[float, float]] = {}
    if bounds is not None:
        intervals["intercept"] = bounds[0]
        for j, bound in zip(columns, bounds[1:], strict=True):
            intervals[COEFFICIENT_NAMES[j]] = bound
    return Fit(
        a=coefficient[0],
        b=coefficient[1],
        c=coefficient[2],
        intercept=float(beta[0]),
        r2=r2,
        cv_spearman=cv_rho,
        n=n,
        columns=tuple(FEATURES[j] for j in columns),
        folds=folds,
        seed=seed,
        cv_spearman_ci=spearman_interval(cv_rho, n),
        intervals=intervals,
    )


def ols_fitter(
    features: NDArray[np.float64], human: NDArray[np.float64]
) -> Callable[[NDArray[np.int64]], Callable[[NDArray[np.int64]], NDArray[np.float64]]]:
    """A fitter for `learned.validate`: the same OLS as `fit` (same column rule), trained on the
    given rows and scoring others as `funny_score` would (a missing feature counts 0)."""
    x_all = np.array(features, dtype=np.float64).reshape(-1, len(FEATURES))
    y_all = np.asarray(human, dtype=np.float64)

    def fit_on(train: NDArray[np.int64]) -> Callable[[NDArray[np.int64]], NDArray[np.float64]]:
        columns, rows = _columns_and_rows(x_all[train])
        x, y = x_all[train][rows], y_all[train][rows]
        columns = [j for j in columns if len(x) and np.ptp(x[:, j]) > 0]
        beta = _ols(_design(x, columns), y) if len(y) else np.array([float(y_all[train].mean())])

        def predict(test: NDArray[np.int64]) -> NDArray[np.float64]:
            x_test = np.nan_to_num(x_all[test], nan=0.0)
            return np.asarray(_design(x_test, columns) @ beta, dtype=np.float64)

        return predict

    return fit_on


@dataclass(frozen=True)
class CalibrationRow:
    """One item's features and human mean funniness, with what scopes it belongs to."""

    key: int
    surprise: float | None
    coherence: float | None
    penalty: float | None
    human_mean: float
    humor_type: str = ""
    level: str = ""


def data_hash(rows: Sequence[CalibrationRow]) -> str:
    """sha256 of the rows, in key order; floats written exactly (repr), so any change shows."""
    payload = [
        [
            row.key,
            row.surprise,
            row.coherence,
            row.penalty,
            row.human_mean,
            row.humor_type,
            row.level,
        ]
        for row in sorted(rows, key=lambda row: row.key)
    ]
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ScopeFit:
    scope: str
    fit: Fit
    data_hash: str
    keys: tuple[int, ...] = field(default=())


def usable_rows(rows: Sequence[CalibrationRow]) -> list[CalibrationRow]:
    """The rows `fit` keeps (same column rule), so scope sizes count items that are really used."""
    if not rows:
        return []
    matrix = np.array(
        [[np.nan if v is None else v for v in (r.surprise, r.coherence, r.penalty)] for r in rows],
        dtype=np.float64,
    )
    _, keep = _columns_and_rows(matrix)
    return [row for row, ok in zip(rows, keep.tolist(), strict=True) if ok]


def scope_names(rows: Sequence[CalibrationRow]) -> list[str]:
    """ "all", then "humor_type:<t>" and "level:<l>" for every non-empty value, sorted."""
    types = sorted({row.humor_type for row in rows if row.humor_type})
    levels = sorted({row.level for row in rows if row.level})
    return ["all", *(f"humor_type:{t}" for t in types), *(f"level:{v}" for v in levels)]


def _in_scope(row: CalibrationRow, scope: str) -> bool:
    if scope == "all":
        return True
    kind, _, value = scope.partition(":")
    return (row.humor_type if kind == "humor_type" else row.level) == value


def fit_scopes(
    rows: Sequence[CalibrationRow],
    *,
    seed: int,
    folds: int = DEFAULT_FOLDS,
    min_items: int = MIN_ITEMS_PER_SCOPE,
) -> list[ScopeFit]:
    """Fit "all" with whatever items cross-validation allows, and every humor type and level that
    has at least `min_items` usable items; scopes with fewer are skipped (their items fall back to
    a broader scope's fit). Whether a fit may be applied is `verdict`'s question."""
    fits: list[ScopeFit] = []
    for scope in scope_names(rows):
        members = sorted((row for row in rows if _in_scope(row, scope)), key=lambda r: r.key)
        used = usable_rows(members)
        if len(used) < (MIN_ITEMS_TO_FIT if scope == "all" else min_items):
            continue
        matrix = [[row.surprise, row.coherence, row.penalty] for row in used]
        matrix_nan = [[np.nan if v is None else v for v in values] for values in matrix]
        try:
            result = fit(matrix_nan, [row.human_mean for row in used], seed=seed, folds=folds)
        except ValueError:
            continue
        fits.append(
            ScopeFit(
                scope=scope,
                fit=result,
                data_hash=data_hash(used),
                keys=tuple(row.key for row in used),
            )
        )
    return fits
