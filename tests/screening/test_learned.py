"""The learned L1's pure parts: the ridge fit against independent implementations, the repeated
cross-validation and its applicability rule (with its false-alarm rate under no signal), and
the sieve audit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge, RidgeCV

from apps.screening import learned


def _data(n: int, d: int, *, signal: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    embeddings = rng.normal(size=(n, d))
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    features = rng.normal(size=(n, 2))
    truth = embeddings @ rng.normal(size=d) * 3 + features @ np.array([0.5, -0.3])
    y = signal * truth + rng.normal(size=n)
    return features, embeddings, y


def test_without_unpenalised_columns_the_fit_is_sklearns_ridge_cv_with_the_same_alpha():
    _, embeddings, y = _data(120, 30, signal=1.0, seed=1)
    model = learned.fit_ridge(np.zeros((120, 0)), embeddings, y, names=())
    centred = embeddings - embeddings.mean(axis=0)
    base = float(np.mean(np.linalg.svd(centred, compute_uv=False) ** 2))
    alphas = [m * base for m in learned.ALPHA_GRID]
    reference = RidgeCV(alphas=alphas, fit_intercept=True).fit(embeddings, y)
    assert model.alpha == pytest.approx(reference.alpha_, rel=1e-9)
    np.testing.assert_allclose(model.embedding_weights, reference.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(
        model.predict(np.zeros((120, 0)), embeddings), reference.predict(embeddings), atol=1e-8
    )


def test_unpenalised_columns_match_the_penalised_normal_equations():
    features, embeddings, y = _data(150, 25, signal=1.0, seed=2)
    model = learned.fit_ridge(features, embeddings, y, names=("f1", "f2"))
    # Independent solve: standardised features and an intercept unpenalised, embeddings (centred
    # on their mean) penalised by the chosen alpha.
    standard = (features - features.mean(axis=0)) / features.std(axis=0)
    centred = embeddings - embeddings.mean(axis=0)
    design = np.column_stack([np.ones(150), standard, centred])
    penalty = np.diag([0.0, 0.0, 0.0] + [model.alpha] * 25)
    beta = np.linalg.solve(design.T @ design + penalty, design.T @ y)
    assert model.intercept == pytest.approx(beta[0], abs=1e-8)
    np.testing.assert_allclose(model.coefficients, beta[1:3], atol=1e-8)
    np.testing.assert_allclose(model.embedding_weights, beta[3:], atol=1e-8)
    # And with alpha fixed, sklearn's Ridge agrees once the features' columns are free: with a
    # tiny penalty on them the difference vanishes.
    scaled = np.column_stack([standard * 1e4, centred])
    reference = Ridge(alpha=model.alpha, fit_intercept=True).fit(scaled, y)
    np.testing.assert_allclose(reference.coef_[2:], beta[3:], atol=1e-5)


def test_a_model_survives_its_json_and_imputes_what_is_missing():
    features, embeddings, y = _data(80, 10, signal=1.0, seed=3)
    model = learned.fit_ridge(features, embeddings, y, names=("f1", "f2"))
    again = learned.RidgeModel.from_json(model.to_json())
    np.testing.assert_allclose(
        again.predict(features, embeddings), model.predict(features, embeddings)
    )
    holes = features.copy()
    holes[0, 0] = np.nan
    gaps = embeddings.copy()
    gaps[1] = np.nan
    predicted = model.predict(holes, gaps)
    assert np.isfinite(predicted).all()
    # A missing feature counts as the training mean, a missing embedding as the mean embedding.
    at_mean = features[0].copy()
    at_mean[0] = np.mean(features[:, 0])
    assert predicted[0] == pytest.approx(model.predict(at_mean[None], embeddings[:1])[0])
    assert predicted[1] == pytest.approx(
        model.predict(features[1:2], np.mean(embeddings, axis=0)[None])[0]
    )


def test_the_coherence_gated_surprise_is_the_product_and_missing_stays_missing():
    block = learned.feature_block([1.5, None], [0.4, 0.9], [0.2, 0.0])
    np.testing.assert_allclose(block[0], [1.5, 0.4, -0.2, 0.6])
    assert np.isnan(block[1, 0])
    assert np.isnan(block[1, 3])


def test_top_kept_share_counts_the_human_top_quartile_inside_the_top_half():
    human = np.arange(8, dtype=float)  # top quartile: items 6 and 7
    assert learned.top_kept_share(human, human) == 1.0
    assert learned.top_kept_share(-human, human) == 0.0
    assert learned.top_kept_share(np.array([0, 0, 0, 0, 0, 0, 9, 0.0]), human) == 0.5


def _verdict(signal: float, seed: int, n: int = 60, d: int = 12) -> learned.Validation:
    features, embeddings, y = _data(n, d, signal=signal, seed=seed)
    return learned.validate(
        learned.ridge_fitter(features, embeddings, y, names=("f1", "f2")),
        y,
        seed=seed,
        current=np.random.default_rng(seed + 1).normal(size=n),
        repeats=5,
        rounds=200,
    )


def test_a_fit_with_signal_applies_and_says_nothing_against_it():
    check = _verdict(signal=1.0, seed=11)
    assert check.rho.ci_low is not None
    assert check.rho.ci_low > 0.3
    assert check.beats_current
    assert check.applicable
    assert check.reasons == ()
    assert len(check.held_out) == 60
    payload = check.to_json()
    assert payload["repeats"] == 5
    assert payload["folds"] == 5
    assert payload["rho"]["value"] == check.rho.value


def test_a_fit_that_does_not_beat_the_scorer_in_place_is_not_applied():
    features, embeddings, y = _data(60, 12, signal=1.0, seed=12)
    check = learned.validate(
        learned.ridge_fitter(features, embeddings, y, names=("f1", "f2")),
        y,
        seed=1,
        current=y,  # a scorer in place that ranks perfectly
        repeats=5,
        rounds=200,
    )
    assert not check.beats_current
    assert any("does not beat the current scorer" in reason.english() for reason in check.reasons)


def test_a_fit_that_ranks_worse_than_chance_is_called_so():
    features, embeddings, y = _data(60, 12, signal=1.0, seed=13)
    fitter = learned.ridge_fitter(features, embeddings, y, names=("f1", "f2"))

    def backwards(train):  # type: ignore[no-untyped-def]
        predict = fitter(train)
        return lambda test: -predict(test)

    check = learned.validate(backwards, y, seed=1, repeats=5, rounds=200)
    assert check.rho.ci_high is not None
    assert check.rho.ci_high < 0
    assert any("lies below 0" in reason.english() for reason in check.reasons)
    assert not any("includes 0" in reason.english() for reason in check.reasons)


def test_the_verdict_does_not_hang_on_one_fold_split():
    # Moderate signal: a single 5-fold split may or may not call it; twenty repeats agree.
    features, embeddings, y = _data(80, 12, signal=0.5, seed=21)
    fitter = learned.ridge_fitter(features, embeddings, y, names=("f1", "f2"))
    rhos = [
        learned.validate(fitter, y, seed=seed, repeats=20, rounds=100).rho.value
        for seed in range(5)
    ]
    assert max(rhos) - min(rhos) < 0.05
    single = [
        learned.validate(fitter, y, seed=seed, repeats=1, rounds=100).rho.value for seed in range(5)
    ]
    assert max(single) - min(single) > max(rhos) - min(rhos)


@pytest.mark.slow
def test_with_no_signal_the_rule_applies_a_fit_at_most_5_percent_of_the_time():
    applied = sum(_verdict(signal=0.0, seed=1000 + k).applicable for k in range(200))
    assert applied / 200 <= 0.05


def test_the_audit_says_chance_for_a_coin_and_suggests_a_pass_for_a_good_sieve():
    rng = np.random.default_rng(5)
    human = rng.normal(size=200)
    coin = learned.sieve_audit(rng.normal(size=200), human, seed=1, rounds=300)
    assert coin["better_than_chance"] is False
    assert coin["suggested_keep_share"] is None
    kept = coin["top_quartile_kept"]
    assert isinstance(kept, dict)
    assert kept["ci_low"] < 0.5 < kept["ci_high"]
    good = learned.sieve_audit(human + rng.normal(0, 0.3, 200), human, seed=1, rounds=300)
    assert good["better_than_chance"] is True
    share = good["suggested_keep_share"]
    assert isinstance(share, float)
    assert 0.1 <= share <= 0.5
    assert learned.top_kept_share(human + 0, human, keep=share) >= 0.8
    few = learned.sieve_audit(human[:10], human[:10], seed=1)
    assert few["better_than_chance"] is None
    assert "only 10" in str(few["reason"])
