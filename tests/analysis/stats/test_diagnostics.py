from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from apps.analysis.stats.diagnostics import (
    agreement_flags,
    fatigue,
    group_coverage,
    position_bias,
    position_bias_p_value,
    sample_size_warnings,
)


def test_sample_size_warnings_flag_models_under_30_items_and_items_under_15_raters():
    warnings = sample_size_warnings(
        {"model-a": 29, "model-b": 30, "human": 0}, {"j001": 14, "j002": 15}
    )
    assert [(w["code"], w["subject"], w["value"], w["threshold"]) for w in warnings] == [
        ("too_few_items", "model-a", 29, 30),
        ("too_few_items", "human", 0, 30),
        ("too_few_raters", "j001", 14, 15),
    ]
    assert "model-a" in warnings[0]["message"]
    assert "30" in warnings[0]["message"]


def test_sample_size_warnings_follow_custom_thresholds():
    assert (
        sample_size_warnings({"m": 10}, {"i": 3}, min_items_per_model=10, min_raters_per_item=3)
        == []
    )


def test_agreement_flags_mark_controversial_questions_and_culture_dependent_items():
    flags = agreement_flags(
        kappa={"funniness": 0.35, "surprise": 0.4, "coherence": float("nan")},
        cross_group={"j001": 0.29, "j002": 0.3, "j003": float("nan")},
    )
    assert [(f["code"], f["subject"], f["value"], f["threshold"]) for f in flags] == [
        ("controversial", "funniness", 0.35, 0.4),
        ("culture_dependent", "j001", 0.29, 0.3),
    ]


def test_group_coverage_counts_ratings_per_item_and_background_group():
    item = np.array([0, 0, 0, 2, 2, 1])
    group = np.array([0, 1, 1, 3, 0, 2])
    np.testing.assert_array_equal(
        group_coverage(item, group, 3, 4), [[1, 2, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]]
    )
    with pytest.raises(ValueError, match="group"):
        group_coverage(item, group, 3, 3)


def test_position_bias_recovers_a_left_preference_and_rejects_no_bias():
    rng = np.random.default_rng(1)
    left = rng.random(2000) < 0.6
    raters = np.repeat(np.arange(100), 20)
    interval = position_bias(left, clusters=raters, rounds=500, seed=2)
    assert interval.estimate == pytest.approx(left.mean())
    assert 0.5 < interval.ci_low < 0.6 < interval.ci_high
    assert interval.n == 2000
    assert position_bias_p_value(left, clusters=raters) < 1e-6
    assert position_bias_p_value(left, clusters=None) < 1e-6


def test_position_bias_p_value_is_one_for_exactly_balanced_choices():
    left = np.array([True, False] * 50)
    assert position_bias_p_value(left, clusters=None) == pytest.approx(1.0)
    assert position_bias(left, clusters=None, rounds=300, seed=1).estimate == 0.5


def test_position_bias_p_value_without_clusters_is_the_exact_binomial_test():
    left = np.array([True] * 16 + [False] * 9)
    assert position_bias_p_value(left, clusters=None) == pytest.approx(
        stats.binomtest(16, 25).pvalue
    )


def test_position_bias_p_value_accounts_for_raters_who_always_click_one_side():
    # 60% of raters always choose left, 40% always right: 1,000 judgments but only 20 raters.
    raters = np.repeat(np.arange(20), 50)
    left = raters < 12
    naive = position_bias_p_value(left, clusters=None)
    clustered = position_bias_p_value(left, clusters=raters)
    assert naive < 1e-8
    assert clustered > 0.2
    # By hand: p_hat = 0.6, e_g = +-25, sum e_g^2 = 20 * 625, se = sqrt(20/19 * 12500) / 1000,
    # t = 0.1 / se with 19 degrees of freedom.
    se = np.sqrt(20 / 19 * 12500) / 1000
    assert clustered == pytest.approx(2 * stats.t.sf(0.1 / se, df=19))


def test_fatigue_slope_recovers_a_known_downward_drift():
    rng = np.random.default_rng(3)
    n_raters, per_rater = 150, 40
    raters = np.repeat(np.arange(n_raters), per_rater)
    minutes = np.tile(np.linspace(0, 45, per_rater), n_raters) + rng.uniform(0, 0.5, raters.size)
    rater_effect = rng.normal(0, 0.8, n_raters)[raters]
    scores = 5.0 - 0.04 * minutes + rater_effect + rng.normal(0, 1.0, raters.size)
    minutes[:25] = np.nan  # no timing recorded: ignored
    result = fatigue(minutes, scores, clusters=raters, rounds=400, seed=4)
    slope = result["slope"]
    assert slope["ci_low"] < -0.04 < slope["ci_high"]
    assert slope["ci_high"] < 0
    assert slope["value"] == pytest.approx(-0.04, abs=0.006)
    assert result["n"] == raters.size - 25
    bins = result["bins"]
    assert sum(b["n"] for b in bins) == result["n"]
    assert bins[0]["start"] == 0.0
    assert bins[0]["mean"] > bins[-1]["mean"]
    assert all(b["ci_low"] <= b["mean"] <= b["ci_high"] for b in bins)


def test_fatigue_bins_hold_the_mean_score_of_their_minutes():
    minutes = np.array([0.2, 0.9, 1.5, 4.0, 4.9, np.nan])
    scores = np.array([6.0, 4.0, 5.0, 2.0, 3.0, 7.0])
    result = fatigue(minutes, scores, clusters=None, rounds=200, seed=1, bin_minutes=2.0)
    assert [(b["start"], b["end"], b["n"], b["mean"]) for b in result["bins"]] == [
        (0.0, 2.0, 3, 5.0),
        (4.0, 6.0, 2, 2.5),
    ]
    slope = np.polyfit(minutes[:5], scores[:5], 1)[0]
    assert result["slope"]["value"] == pytest.approx(slope)


def test_fatigue_has_no_slope_when_every_judgment_is_at_the_same_minute():
    result = fatigue(np.full(5, 3.0), np.arange(5.0), clusters=None, rounds=100, seed=1)
    assert result["slope"]["value"] is None
    assert result["bins"][0]["n"] == 5


def test_fatigue_rejects_negative_minutes():
    with pytest.raises(ValueError, match="negative"):
        fatigue(np.array([-1.0, 2.0]), np.array([3.0, 4.0]), clusters=None, seed=1)
