"""Weights per content type: the logistic fit recovers known weights, agrees with statsmodels,
and falls back to the documented defaults when there is too little to fit."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from apps.content.weights import (
    DEFAULT_WEIGHTS,
    MIN_ITEMS,
    auc,
    composite,
    fit_weights,
    logit_fit,
)


def synthetic_ratings(
    slopes: tuple[float, float, float], *, n_items: int, per_item: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item means uniform on the 1..5 scale; each scorecard is good with the logistic chance."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(1.0, 5.0, size=(n_items, 3))
    beta = np.asarray(slopes)
    intercept = -float(beta @ np.full(3, 3.0))
    chance = 1.0 / (1.0 + np.exp(-(intercept + means @ beta)))
    items = np.repeat(np.arange(n_items), per_item)
    y = (rng.random(items.size) < chance[items]).astype(float)
    return means[items], y, items


def test_the_fit_recovers_known_weights_from_synthetic_ratings():
    slopes = (1.2, 0.6, 0.2)
    x, y, items = synthetic_ratings(slopes, n_items=400, per_item=10, seed=1)
    fit = fit_weights(content_type="analysis", x=x, y=y, items=items, seed=7)
    assert not fit.is_default
    expected = np.asarray(slopes) / sum(slopes)
    assert np.allclose(fit.weights, expected, atol=0.04)
    assert sum(fit.weights) == pytest.approx(1.0)
    assert fit.quality["slopes"]["fluency"] == pytest.approx(1.2, abs=0.15)


@pytest.mark.parametrize("slopes", [(0.2, 0.2, 1.0), (0.5, 1.0, 0.5)])
def test_different_true_weights_give_different_fitted_weights(slopes):
    x, y, items = synthetic_ratings(slopes, n_items=400, per_item=10, seed=2)
    fit = fit_weights(content_type="creative", x=x, y=y, items=items, seed=7)
    assert np.allclose(fit.weights, np.asarray(slopes) / sum(slopes), atol=0.05)


def test_the_maximum_likelihood_fit_matches_statsmodels_logit():
    x, y, _ = synthetic_ratings((0.9, 0.4, 0.3), n_items=60, per_item=5, seed=3)
    ours = logit_fit(x, y)
    reference = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
    assert ours.converged
    assert np.allclose(ours.params, reference.params, atol=1e-6)
    assert np.allclose(ours.std_errors, reference.bse, rtol=1e-5)
    assert ours.log_likelihood == pytest.approx(reference.llf, abs=1e-8)
    assert ours.null_log_likelihood == pytest.approx(reference.llnull, abs=1e-6)
    assert ours.pseudo_r2 == pytest.approx(reference.prsquared, abs=1e-7)


def test_the_fit_quality_is_stored_with_cross_validation_from_the_seed():
    x, y, items = synthetic_ratings((1.0, 1.0, 0.5), n_items=80, per_item=6, seed=4)
    first = fit_weights(content_type="news", x=x, y=y, items=items, seed=11)
    again = fit_weights(content_type="news", x=x, y=y, items=items, seed=11)
    quality = first.quality
    assert quality == again.quality
    assert quality["n_rows"] == 480
    assert 0.0 < quality["pseudo_r2"] < 1.0
    assert quality["log_likelihood"] > quality["null_log_likelihood"]
    # Informative scores predict held-out verdicts better than chance.
    assert quality["cv_auc"] > 0.7
    assert quality["cv_accuracy"] > 0.6
    assert quality["cv_folds"] == 5


def test_too_few_items_keep_the_documented_defaults_with_the_reason():
    x, y, items = synthetic_ratings((1.0, 1.0, 1.0), n_items=MIN_ITEMS - 1, per_item=10, seed=5)
    fit = fit_weights(content_type="news", x=x, y=y, items=items, seed=1)
    assert fit.is_default
    assert fit.weights == DEFAULT_WEIGHTS["news"] == (0.4, 0.4, 0.2)
    assert "at least 10" in fit.quality["reason"]


def test_no_variation_in_good_keeps_the_defaults():
    x, _, items = synthetic_ratings((1.0, 1.0, 1.0), n_items=30, per_item=3, seed=6)
    fit = fit_weights(content_type="creative", x=x, y=np.ones(items.size), items=items, seed=1)
    assert fit.is_default
    assert fit.weights == (0.2, 0.2, 0.6)
    assert "same verdict" in fit.quality["reason"]


def test_perfectly_separated_verdicts_keep_the_defaults():
    rng = np.random.default_rng(8)
    x = rng.uniform(1, 5, size=(40, 3))
    y = (x[:, 0] > 3).astype(float)
    fit = fit_weights(content_type="analysis", x=x, y=y, items=np.arange(40), seed=1)
    assert fit.is_default
    assert fit.weights == (0.25, 0.5, 0.25)
    assert "separated" in fit.quality["reason"]


def test_a_negative_slope_is_clipped_to_zero_with_a_warning():
    x, y, items = synthetic_ratings((1.0, 0.8, -0.8), n_items=300, per_item=8, seed=9)
    fit = fit_weights(content_type="news", x=x, y=y, items=items, seed=1)
    assert not fit.is_default
    assert fit.weights[2] == 0.0
    assert fit.quality["slopes"]["originality"] < 0
    assert fit.quality["warnings"] == ["negative slope for originality clipped to 0"]
    assert sum(fit.weights) == pytest.approx(1.0)


def test_the_composite_is_the_weighted_sum_and_unknown_when_a_dimension_is_missing():
    scores = {"fluency": 4.0, "informativeness": 2.0, "originality": 5.0}
    assert composite(scores, DEFAULT_WEIGHTS["news"]) == pytest.approx(0.4 * 4 + 0.4 * 2 + 0.2 * 5)
    weights = {"fluency": 0.2, "informativeness": 0.2, "originality": 0.6}
    assert composite(scores, weights) == pytest.approx(0.8 + 0.4 + 3.0)
    assert composite({"fluency": 4.0, "informativeness": 2.0}, weights) is None


def test_auc_matches_the_pairwise_definition():
    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.4])
    y = np.array([0.0, 0.0, 1.0, 1.0, 1.0])
    # Pairs (positive above negative): 0.35>0.1, 0.35<0.4, 0.8>both, 0.4>0.1, 0.4=0.4 (half).
    assert auc(scores, y) == pytest.approx((1 + 0 + 2 + 1 + 0.5) / 6)
    assert np.isnan(auc(scores, np.ones(5)))
