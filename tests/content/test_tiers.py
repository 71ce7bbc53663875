"""Tiers against the humans: agreement, the split-half ceiling, and cost."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from apps.content.tiers import agreement, evaluate_tiers, items_per_second, split_half


def panel(n_items: int, n_raters: int, noise: float, seed: int):
    """Every rater scores every item: the item's true quality plus the rater's noise."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=n_items)
    item = np.repeat(np.arange(n_items), n_raters)
    rater = np.tile(np.arange(n_raters), n_items)
    value = truth[item] + noise * rng.normal(size=item.size)
    return truth, item, rater, value


def test_agreement_is_spearman_over_the_items_both_sides_scored():
    human = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, None]
    tier = [0.1, 0.3, 0.2, 0.5, None, 0.9, 0.4]
    result = agreement(tier, human, seed=1, label="L1", rounds=200)
    assert result.n == 5
    expected = stats.spearmanr([0.1, 0.3, 0.2, 0.5, 0.9], [1, 2, 3, 4, 6]).statistic
    assert result.value == pytest.approx(expected)
    assert result.ci_low is not None
    assert result.ci_low <= result.value <= result.ci_high


def test_split_half_reliability_is_high_for_consistent_raters_and_low_for_noise():
    _, item, rater, value = panel(40, 10, noise=0.3, seed=1)
    consistent = split_half(item, rater, value, seed=3, rounds=50)
    assert consistent["value"] > 0.9
    assert consistent["spearman_brown"] > consistent["value"]
    assert consistent["n"] == 40
    assert consistent["splits"] == 50
    _, item, rater, value = panel(40, 10, noise=20.0, seed=1)
    noisy = split_half(item, rater, value, seed=3, rounds=50)
    assert noisy["value"] < 0.5
    assert noisy["ci_low"] <= noisy["value"] <= noisy["ci_high"]


def test_split_half_depends_only_on_the_seed():
    _, item, rater, value = panel(20, 6, noise=1.0, seed=2)
    assert split_half(item, rater, value, seed=5) == split_half(item, rater, value, seed=5)


def test_split_half_needs_two_raters():
    result = split_half([0, 1, 2, 3], [0, 0, 0, 0], [1.0, 2.0, 3.0, 4.0], seed=1)
    assert result["value"] is None
    assert result["splits"] == 0


def test_items_per_second_is_unknown_without_a_measured_time():
    assert items_per_second(10, 2.0) == 5.0
    assert items_per_second(10, None) is None
    assert items_per_second(10, 0.0) is None


def test_the_tiers_table_has_agreement_and_cost_for_each_tier():
    truth, item, rater, value = panel(30, 6, noise=0.5, seed=4)
    human = [float(value[item == i].mean()) for i in range(30)]
    rng = np.random.default_rng(5)
    automatic = list(truth + 2.0 * rng.normal(size=30))
    judge = list(truth + 0.2 * rng.normal(size=30))
    rows = evaluate_tiers(
        human=human,
        automatic=automatic,
        automatic_seconds=1.5,
        automatic_items=30,
        judge=judge,
        judge_model="judge-x",
        judge_latency_seconds=60.0,
        judge_items=30,
        scorecard_item=item,
        scorecard_rater=rater,
        scorecard_value=value,
        active_seconds=180 * 20.0,
        seed=7,
        rounds=200,
    )
    l1, l2, l3 = rows
    assert [r["tier"] for r in rows] == ["L1", "L2", "L3"]
    assert l1["items_per_second"] == pytest.approx(20.0)
    assert l2["items_per_second"] == pytest.approx(0.5)
    assert l3["items_per_second"] == pytest.approx(30 / 3600.0)
    assert (l1["human_minutes"], l2["human_minutes"]) == (0.0, 0.0)
    assert l3["human_minutes"] == pytest.approx(60.0)
    # A close judge agrees with the humans better than noisy metrics.
    assert l2["agreement"]["value"] > l1["agreement"]["value"]
    assert l2["label"] == "LLM judge (judge-x)"
    assert l3["agreement"]["value"] > 0.8


def test_without_judge_verdicts_the_l2_row_says_so():
    _, item, rater, value = panel(10, 4, noise=0.5, seed=6)
    rows = evaluate_tiers(
        human=[0.0] * 10,
        automatic=[None] * 10,
        automatic_seconds=None,
        automatic_items=0,
        judge=None,
        judge_model=None,
        judge_latency_seconds=None,
        judge_items=0,
        scorecard_item=item,
        scorecard_rater=rater,
        scorecard_value=value,
        active_seconds=0.0,
        seed=1,
        rounds=50,
    )
    assert rows[1]["agreement"]["value"] is None
    assert rows[1]["items_per_second"] is None
    assert rows[0]["items_per_second"] is None
    assert rows[2]["items_per_second"] is None
