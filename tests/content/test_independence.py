"""Independence of the dimensions: coefficients and intervals against scipy, and the flags."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from apps.content.independence import FLAG_R, against_humans, correlate, correlation_matrix


def correlated(n: int, r: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = r * x + np.sqrt(1 - r * r) * rng.normal(size=n)
    return x, y


def test_pearson_and_its_fisher_interval_match_scipy():
    x, y = correlated(50, 0.5, seed=1)
    result = correlate(x, y, seed=3, labels=("a", "b"))
    reference = stats.pearsonr(x, y)
    interval = reference.confidence_interval(0.95)
    assert result["pearson"]["value"] == pytest.approx(reference.statistic, abs=1e-12)
    assert result["pearson"]["ci_low"] == pytest.approx(interval.low, abs=1e-12)
    assert result["pearson"]["ci_high"] == pytest.approx(interval.high, abs=1e-12)
    assert result["pearson"]["n"] == 50


def test_spearman_matches_scipy_and_its_bootstrap_interval_agrees_with_scipy_bootstrap():
    x, y = correlated(80, 0.3, seed=2)
    x = np.round(x, 1)  # ties, handled by average ranks as in scipy
    result = correlate(x, y, seed=5, labels=("a", "b"), rounds=2000)
    assert result["spearman"]["value"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    reference = stats.bootstrap(
        (x, y),
        lambda a, b: stats.spearmanr(a, b).statistic,
        paired=True,
        vectorized=False,
        n_resamples=2000,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    assert result["spearman"]["ci_low"] == pytest.approx(reference.low, abs=0.05)
    assert result["spearman"]["ci_high"] == pytest.approx(reference.high, abs=0.05)
    assert (
        result["spearman"]["ci_low"] < result["spearman"]["value"] < result["spearman"]["ci_high"]
    )


def test_the_same_seed_gives_the_same_intervals_and_another_seed_others():
    x, y = correlated(40, 0.2, seed=3)
    first = correlate(x, y, seed=9, labels=("a", "b"))
    assert correlate(x, y, seed=9, labels=("a", "b")) == first
    assert correlate(x, y, seed=10, labels=("a", "b"))["spearman"] != first["spearman"]


def test_pairs_at_or_above_the_threshold_are_flagged_and_independent_ones_are_not():
    rng = np.random.default_rng(4)
    n = 300
    fluency = rng.normal(size=n)
    informativeness = 0.8 * fluency + 0.6 * rng.normal(size=n)
    originality = rng.normal(size=n)
    matrix = correlation_matrix(
        {"fluency": fluency, "informativeness": informativeness, "originality": originality},
        seed=1,
        rounds=200,
    )
    assert matrix["names"] == ["fluency", "informativeness", "originality"]
    assert [(p["a"], p["b"]) for p in matrix["pairs"]] == [
        ("fluency", "informativeness"),
        ("fluency", "originality"),
        ("informativeness", "originality"),
    ]
    assert matrix["flagged"] == [["fluency", "informativeness"]]
    assert matrix["threshold"] == FLAG_R == 0.4
    strong = matrix["pairs"][0]
    assert strong["pearson"]["value"] >= 0.4


def test_missing_values_are_left_out_pair_by_pair():
    x = [1.0, 2.0, None, 4.0, 5.0, 6.0]
    y = [2.0, 1.0, 3.0, float("nan"), 5.0, 7.0]
    result = correlate(x, y, seed=1, labels=("a", "b"), rounds=50)
    kept_x, kept_y = [1.0, 2.0, 5.0, 6.0], [2.0, 1.0, 5.0, 7.0]
    assert result["n"] == 4
    assert result["pearson"]["value"] == pytest.approx(stats.pearsonr(kept_x, kept_y).statistic)


def test_too_few_items_or_a_constant_side_give_no_coefficient_and_no_flag():
    few = correlate([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], seed=1, labels=("a", "b"))
    assert few["pearson"]["value"] is None
    assert few["spearman"]["value"] is None
    assert few["flag"] is False
    constant = correlate([1.0, 2.0, 3.0, 4.0, 5.0], [3.0] * 5, seed=1, labels=("a", "b"))
    assert constant["pearson"]["value"] is None
    assert constant["flag"] is False


def test_each_automatic_score_is_set_against_every_human_score_with_the_matching_one_named():
    rng = np.random.default_rng(6)
    human = {"fluency": rng.normal(size=30), "composite": rng.normal(size=30)}
    automatic = {
        "fluency": human["fluency"] + 0.1 * rng.normal(size=30),
        "distinct_2": rng.normal(size=30),
    }
    rows = against_humans(automatic, human, seed=2, rounds=100)
    assert [row["name"] for row in rows] == ["fluency", "distinct_2"]
    assert rows[0]["matching"] == "fluency"
    assert rows[1]["matching"] is None
    assert set(rows[0]["against"]) == {"fluency", "composite"}
    assert rows[0]["against"]["fluency"]["spearman"]["value"] > 0.9
