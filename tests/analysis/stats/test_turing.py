from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from apps.analysis.stats.bootstrap import Interval
from apps.analysis.stats.report import compute_results
from apps.analysis.stats.simulation import simulate_crossed_study
from apps.analysis.stats.turing import (
    compute_turing_summary,
    d_prime,
    model_turing_verdict,
    turing_summary,
    turing_verdict,
)


def _judgments(
    rng: np.random.Generator, n_raters: int, per_rater: int, p_correct: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each rater judges per_rater items, half AI, and is right with probability p_correct."""
    is_ai = np.tile(np.arange(per_rater) % 2 == 0, n_raters)
    correct = rng.random(is_ai.size) < p_correct
    guess_ai = np.where(correct, is_ai, ~is_ai)
    raters = np.repeat(np.arange(n_raters), per_rater)
    return guess_ai, is_ai, raters


def test_d_prime_with_the_log_linear_correction_matches_an_independent_normal_quantile():
    # H = 20.5/26 = 0.7885, FA = 10.5/26 = 0.4038 (0.5 added to each cell);
    # z(0.7885) = 0.8011, z(0.4038) = -0.2434, d' = 1.0445
    expected = NormalDist().inv_cdf(20.5 / 26) - NormalDist().inv_cdf(10.5 / 26)
    assert d_prime(20, 5, 10, 15) == pytest.approx(expected, abs=1e-12)
    assert d_prime(20, 5, 10, 15) == pytest.approx(1.0445, abs=1e-4)


def test_d_prime_stays_finite_for_a_perfect_judge():
    # H = 10.5/11, FA = 0.5/11 = 1 - H, so d' = 2 z(10.5/11)
    assert d_prime(10, 0, 0, 10) == pytest.approx(2 * NormalDist().inv_cdf(10.5 / 11), abs=1e-12)


def test_d_prime_is_zero_when_ai_and_human_texts_are_called_ai_equally_often():
    assert d_prime(6, 4, 6, 4) == pytest.approx(0.0, abs=1e-12)
    # The correction depends on cell sizes: equal raw rates with unequal n are only near 0.
    assert d_prime(6, 4, 12, 8) == pytest.approx(0.0, abs=0.02)


def test_d_prime_is_nan_without_human_or_without_ai_items():
    assert np.isnan(d_prime(5, 5, 0, 0))
    assert np.isnan(d_prime(0, 0, 5, 5))


def test_d_prime_rejects_negative_counts():
    with pytest.raises(ValueError, match="non-negative"):
        d_prime(-1, 2, 3, 4)


def test_turing_summary_counts_the_two_by_two_table_on_crafted_judgments():
    # 4 AI items judged AI, 1 AI judged human, 2 human judged AI, 3 human judged human.
    is_ai = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], dtype=bool)
    guess_ai = np.array([1, 1, 1, 1, 0, 1, 1, 0, 0, 0], dtype=bool)
    summary = compute_turing_summary(guess_ai, is_ai, clusters=None, rounds=200, seed=1)
    assert (summary.hits, summary.misses, summary.false_alarms, summary.correct_rejections) == (
        4,
        1,
        2,
        3,
    )
    assert summary.n == 10
    assert summary.accuracy.estimate == pytest.approx(0.7)
    assert summary.judged_human.estimate == pytest.approx(0.4)
    assert summary.d_prime == pytest.approx(d_prime(4, 1, 2, 3))
    assert summary.verdict == "inconclusive"  # 10 judgments cannot place 0.7 on either side


def test_machine_text_that_raters_spot_nine_times_in_ten_is_detectable():
    guess, truth, raters = _judgments(np.random.default_rng(2), 40, 20, 0.9)
    summary = compute_turing_summary(guess, truth, clusters=raters, rounds=500, seed=3)
    assert summary.accuracy.ci_low >= 0.7
    assert summary.verdict == "detectable"
    assert summary.d_prime > 2


def test_machine_text_that_raters_cannot_tell_from_human_passes():
    guess, truth, raters = _judgments(np.random.default_rng(4), 40, 20, 0.5)
    summary = compute_turing_summary(guess, truth, clusters=raters, rounds=500, seed=5)
    assert summary.accuracy.ci_low < 0.5 < summary.accuracy.ci_high
    assert summary.verdict == "passes"
    assert abs(summary.d_prime) < 0.3


def test_turing_verdict_is_decided_by_the_interval_not_the_point_estimate():
    assert turing_verdict(Interval(0.75, 0.71, 0.80, 400)) == "detectable"
    assert turing_verdict(Interval(0.75, 0.62, 0.86, 40)) == "inconclusive"
    assert turing_verdict(Interval(0.52, 0.45, 0.60, 400)) == "passes"
    assert turing_verdict(Interval(float("nan"), float("nan"), float("nan"), 0)) == "inconclusive"


def test_accuracy_clearly_above_chance_but_below_the_line_is_not_a_pass():
    # 0.64 [0.63, 0.65]: raters tell the machine apart, only not by the 70% line.
    assert turing_verdict(Interval(0.64, 0.63, 0.65, 8000), p_chance=2e-15) == "above_chance"
    assert turing_verdict(Interval(0.52, 0.45, 0.60, 400), p_chance=0.4) == "passes"
    # A model judged human 41.8% of the time (hit rate 58.2%) by many raters is told apart.
    guess, truth, raters = _judgments(np.random.default_rng(11), 200, 20, 0.582)
    summary = compute_turing_summary(guess, truth, clusters=raters, rounds=300, seed=12)
    assert summary.p_chance < 0.05
    assert summary.verdict == "above_chance"
    assert summary.as_dict()["vs_chance"]["p_value"] == summary.p_chance


def test_turing_summary_interval_is_wider_when_raters_are_resampled_as_clusters():
    # Half the raters always say "AI", half always "human": rows within a rater move together.
    raters = np.repeat(np.arange(30), 20)
    is_ai = np.tile(np.arange(20) % 2 == 0, 30)
    guess_ai = raters % 2 == 0
    clustered = compute_turing_summary(guess_ai, is_ai, clusters=raters, rounds=500, seed=6)
    rows = compute_turing_summary(guess_ai, is_ai, clusters=None, rounds=500, seed=6)
    width = clustered.judged_human.ci_high - clustered.judged_human.ci_low
    assert width > 2 * (rows.judged_human.ci_high - rows.judged_human.ci_low)


def test_turing_summary_repeats_with_the_same_seed_and_serializes():
    guess, truth, raters = _judgments(np.random.default_rng(7), 20, 10, 0.7)
    first = turing_summary(guess, truth, clusters=raters, rounds=300, seed=8)
    assert turing_summary(guess, truth, clusters=raters, rounds=300, seed=8) == first
    assert turing_summary(guess, truth, clusters=raters, rounds=300, seed=9) != first
    assert set(first) >= {"n", "accuracy", "judged_human", "d_prime", "verdict", "seed", "rounds"}
    assert set(first["accuracy"]) == {"value", "ci_low", "ci_high", "n"}
    assert first["seed"] == 8


def test_turing_summary_of_only_ai_items_has_no_d_prime():
    guess = np.array([True, False, True, True])
    summary = compute_turing_summary(
        guess, np.ones(4, dtype=bool), clusters=None, rounds=100, seed=1
    )
    assert np.isnan(summary.d_prime)
    assert summary.accuracy.estimate == pytest.approx(0.75)
    assert summary.judged_human.estimate == pytest.approx(0.25)


def test_turing_summary_of_no_judgments_is_empty_and_inconclusive():
    result = turing_summary(
        np.array([], dtype=bool), np.array([], dtype=bool), clusters=None, seed=1
    )
    assert result["n"] == 0
    assert result["accuracy"]["value"] is None
    assert result["d_prime"] is None
    assert result["verdict"] == "inconclusive"


def test_a_models_verdict_follows_its_difference_from_the_human_written_items() -> None:
    hit_rate = {"value": 0.8, "ci_low": 0.75, "ci_high": 0.85}
    low_hits = {"value": 0.6, "ci_low": 0.55, "ci_high": 0.65}
    same = {"value": -0.01, "ci_low": -0.08, "ci_high": 0.06, "p_value": 0.7, "p_holm": 1.0}
    less = {"value": -0.3, "ci_low": -0.4, "ci_high": -0.2, "p_value": 1e-6, "p_holm": 2e-6}
    more = {"value": 0.2, "ci_low": 0.1, "ci_high": 0.3, "p_value": 1e-4, "p_holm": 2e-4}
    assert model_turing_verdict(hit_rate, same) == "as_human"
    assert model_turing_verdict(hit_rate, less) == "detectable"
    assert model_turing_verdict(low_hits, less) == "told_apart"
    assert model_turing_verdict(low_hits, more) == "more_human"
    assert model_turing_verdict(hit_rate, None) == "inconclusive"
    assert model_turing_verdict(hit_rate, {**same, "value": None}) == "inconclusive"
    # Holm's p decides; the unadjusted one only where Holm's is missing.
    assert model_turing_verdict(low_hits, {**less, "p_holm": 0.2}) == "as_human"
    assert model_turing_verdict(low_hits, {**less, "p_holm": None}) == "told_apart"


def test_a_model_judged_human_as_often_as_people_passes_whatever_its_hit_rate() -> None:
    """The finding: a model judged human 41.8% of the time read "passes (reads as human)" or
    "told apart" from its hit rate alone. What decides is the human-written items' rate: here
    they too are judged human about 42% of the time, so raters cannot tell the model from
    people, while a model judged human 10% of the time is machine-like."""
    inputs, _ = simulate_crossed_study(
        np.random.default_rng(5),
        source_human_rates=(0.418, 0.1, 0.42),
        items_per_source=20,
        n_raters=80,
        turing_share=0.6,
        discrete=True,
    )
    turing = compute_results(inputs, seed=6, rounds=100)["turing"]
    a, b, human = (turing["by_source"][s] for s in ("model-a", "model-b", "human"))
    # Independently: each source's share of "person" answers, and their differences.
    said_human = ~inputs.turing_guess_ai
    source = np.array(inputs.item_source)[inputs.turing_item]
    share = {s: said_human[source == s].mean() for s in ("model-a", "model-b", "human")}
    assert a["vs_human"]["value"] == pytest.approx(share["model-a"] - share["human"], abs=0.03)
    assert b["vs_human"]["value"] == pytest.approx(share["model-b"] - share["human"], abs=0.03)
    assert a["vs_human"]["ci_low"] < 0 < a["vs_human"]["ci_high"]
    assert a["verdict"] == "as_human"
    assert b["vs_human"]["ci_high"] < 0
    assert b["accuracy"]["ci_low"] >= 0.7
    assert b["verdict"] == "detectable"
    assert human["verdict"] is None
    # d' per model: its items as signal, the human items as noise.
    hits = int(inputs.turing_guess_ai[source == "model-b"].sum())
    misses = int((source == "model-b").sum()) - hits
    false_alarms = int(inputs.turing_guess_ai[source == "human"].sum())
    rejections = int((source == "human").sum()) - false_alarms
    assert b["d_prime"] == pytest.approx(d_prime(hits, misses, false_alarms, rejections))
