"""FunnyScore calibration: recovering known coefficients, and the statistics it reports."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_predict

from apps.screening.calibration import (
    DEFAULT_COEFFICIENTS,
    MIN_ITEMS_PER_SCOPE,
    CalibrationRow,
    Coefficients,
    data_hash,
    fit,
    fit_scopes,
    funny_score,
    spearman_interval,
    verdict,
)

TRUE = Coefficients(a=0.8, b=1.5, c=2.5, intercept=2.0)


def synthetic(n: int, seed: int, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    surprise = rng.normal(1.0, 0.7, n)
    coherence = rng.uniform(0.0, 1.0, n)
    penalty = rng.uniform(0.0, 1.0, n)
    human = (
        TRUE.intercept
        + TRUE.a * surprise
        + TRUE.b * coherence
        - TRUE.c * penalty
        + rng.normal(0.0, noise, n)
    )
    return np.column_stack([surprise, coherence, penalty]), human


def test_calibration_recovers_known_coefficients_from_noisy_synthetic_data():
    features, human = synthetic(400, seed=11)
    result = fit(features, human, seed=3)
    assert result.n == 400
    assert result.a == pytest.approx(TRUE.a, abs=0.03)
    assert result.b == pytest.approx(TRUE.b, abs=0.06)
    assert result.c == pytest.approx(TRUE.c, abs=0.06)
    assert result.intercept == pytest.approx(TRUE.intercept, abs=0.06)
    assert result.columns == ("surprise", "coherence", "penalty")


def test_a_penalised_item_gets_a_positive_c_because_penalty_enters_negatively():
    features, human = synthetic(200, seed=5)
    assert fit(features, human, seed=1).c > 0


def test_r2_and_cross_validated_rho_match_sklearn_and_scipy():
    features, human = synthetic(97, seed=2, noise=1.0)
    result = fit(features, human, seed=42, folds=5)
    design = features * np.array([1.0, 1.0, -1.0])
    model = LinearRegression().fit(design, human)
    assert result.r2 == pytest.approx(r2_score(human, model.predict(design)), rel=1e-9)
    assert [result.a, result.b, result.c] == pytest.approx(list(model.coef_), rel=1e-9)
    assert result.intercept == pytest.approx(model.intercept_, rel=1e-9)
    held_out = cross_val_predict(
        LinearRegression(), design, human, cv=KFold(5, shuffle=True, random_state=42)
    )
    expected = stats.spearmanr(held_out, human).statistic
    assert result.cv_spearman == pytest.approx(expected, rel=1e-12)


def test_cross_validated_rho_depends_on_the_seed_only_through_the_folds():
    features, human = synthetic(80, seed=9, noise=2.0)
    first = fit(features, human, seed=1)
    again = fit(features, human, seed=1)
    other = fit(features, human, seed=2)
    assert first.cv_spearman == again.cv_spearman
    assert first.cv_spearman != other.cv_spearman
    assert (first.a, first.r2) == (other.a, other.r2)


def test_a_feature_missing_for_most_items_is_left_out_with_coefficient_zero():
    features, human = synthetic(120, seed=4)
    human = human - TRUE.a * features[:, 0]  # the surprise term is not in the data
    features[:, 0] = np.nan  # and no language model computed surprise
    features[:3, 0] = 1.0
    result = fit(features, human, seed=0)
    assert result.columns == ("coherence", "penalty")
    assert result.a == 0.0
    assert result.n == 120
    assert result.b == pytest.approx(TRUE.b, abs=0.1)


def test_items_missing_a_used_feature_are_left_out_of_the_fit():
    features, human = synthetic(100, seed=6)
    features[:10, 1] = np.nan
    assert fit(features, human, seed=0).n == 90


def test_too_few_items_for_cross_validation_are_refused():
    features, human = synthetic(6, seed=1)
    with pytest.raises(ValueError, match="too few"):
        fit(features, human, seed=0)


def test_defaults_before_calibration_score_as_documented():
    assert Coefficients(a=1.0, b=1.0, c=2.0, intercept=0.0) == DEFAULT_COEFFICIENTS
    assert funny_score(0.5, 0.75, 0.25, DEFAULT_COEFFICIENTS) == pytest.approx(0.75)


def test_a_missing_feature_contributes_nothing_and_all_missing_gives_no_score():
    assert funny_score(None, 0.6, None, DEFAULT_COEFFICIENTS) == pytest.approx(0.6)
    assert funny_score(None, None, None, DEFAULT_COEFFICIENTS) is None
    assert funny_score(None, None, 0.0, TRUE) == pytest.approx(TRUE.intercept)


def rows_for(n: int, humor_type: str, level: str, start: int, seed: int) -> list[CalibrationRow]:
    features, human = synthetic(n, seed=seed)
    return [
        CalibrationRow(
            key=start + i,
            surprise=float(features[i, 0]),
            coherence=float(features[i, 1]),
            penalty=float(features[i, 2]),
            human_mean=float(human[i]),
            humor_type=humor_type,
            level=level,
        )
        for i in range(n)
    ]


def test_scopes_with_too_few_items_are_skipped():
    rows = rows_for(MIN_ITEMS_PER_SCOPE, "pun", "single", 0, seed=1)
    rows += rows_for(MIN_ITEMS_PER_SCOPE - 1, "irony", "single", 1000, seed=2)
    scopes = {f.scope: f for f in fit_scopes(rows, seed=0)}
    assert set(scopes) == {"all", "humor_type:pun", "level:single"}
    assert scopes["all"].fit.n == 2 * MIN_ITEMS_PER_SCOPE - 1
    assert scopes["humor_type:pun"].fit.n == MIN_ITEMS_PER_SCOPE
    assert scopes["humor_type:pun"].keys == tuple(range(MIN_ITEMS_PER_SCOPE))


def test_below_the_minimum_only_the_overall_fit_is_made_and_it_is_not_applicable():
    fits = fit_scopes(rows_for(MIN_ITEMS_PER_SCOPE - 1, "pun", "single", 0, seed=1), seed=0)
    assert [f.scope for f in fits] == ["all"]
    judged = verdict(fits[0].fit)
    assert not judged.applicable
    assert (
        judged.reasons[0].english()
        == f"only {MIN_ITEMS_PER_SCOPE - 1} items; at least 30 are needed"
    )


def test_coefficient_intervals_match_statsmodels_ols():
    import statsmodels.api as sm

    features, human = synthetic(60, seed=4, noise=1.5)
    result = fit(features, human, seed=0)
    design = sm.add_constant(features * np.array([1.0, 1.0, -1.0]))
    reference = sm.OLS(human, design).fit().conf_int(alpha=0.05)
    for name, row in zip(("intercept", "a", "b", "c"), reference, strict=True):
        assert result.intervals[name] == pytest.approx(tuple(row), rel=1e-9)


def test_the_cv_rho_interval_is_fisher_z_with_the_bonett_wright_variance():
    # Bonett & Wright (2000): var(atanh(rho_s)) = (1 + rho_s^2 / 2) / (n - 3). For rho = 0.5,
    # n = 50: atanh 0.5493, se sqrt(1.125 / 47) = 0.1547, so
    # tanh(0.5493 -/+ 1.95996 x 0.1547) = tanh(0.2461), tanh(0.8525) = (0.2412, 0.6924).
    low, high = spearman_interval(0.5, 50)
    assert (low, high) == pytest.approx((0.2412, 0.6924), abs=5e-4)
    assert spearman_interval(None, 50) is None
    assert spearman_interval(0.5, 3) is None


def test_a_fit_whose_rho_interval_includes_zero_is_not_applicable():
    # Pure noise: nothing to predict, so the held-out rho sits near 0.
    rng = np.random.default_rng(8)
    result = fit(rng.normal(size=(40, 3)), rng.normal(size=40), seed=0)
    assert result.cv_spearman_ci is not None
    assert result.cv_spearman_ci[0] <= 0
    judged = verdict(result)
    assert not judged.applicable
    assert "includes 0" in judged.reasons[-1].english()
    strong = fit(*synthetic(40, seed=8, noise=0.3), seed=0)
    assert verdict(strong).applicable
    assert verdict(strong).reasons == ()


def test_the_data_hash_changes_with_any_value_and_not_with_row_order():
    rows = rows_for(40, "pun", "single", 0, seed=1)
    digest = data_hash(rows)
    assert len(digest) == 64
    assert data_hash(list(reversed(rows))) == digest
    changed = [*rows[:-1], CalibrationRow(**{**rows[-1].__dict__, "human_mean": 3.0})]
    assert data_hash(changed) != digest


def test_an_undefined_rho_is_reported_as_none():
    features, _ = synthetic(40, seed=1)
    result = fit(features, np.full(40, 3.0), seed=0)
    assert result.r2 is None
    assert result.cv_spearman is None
