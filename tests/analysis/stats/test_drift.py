"""Drift within sessions, each rater their own baseline: checked against statsmodels, and its
false alarms and power measured in simulation (benchmarks/sim_session_drift.py runs the full
grid; this runs a smaller one)."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from apps.analysis.stats.drift import (
    drift_warnings,
    positions_in_session,
    session_drift,
    within_rater_slope,
)
from tests.benchmark_modules import benchmark_module


def _simulation():  # type: ignore[no-untyped-def]
    return benchmark_module("sim_session_drift.py")


def test_slope_and_clustered_error_match_statsmodels_with_rater_dummies() -> None:
    rng = np.random.default_rng(4)
    minutes, score, rater = _simulation().simulate_study(rng, raters=25, cards=12, delta=-0.03)
    found = within_rater_slope(minutes, score, rater, seed=1, rounds=199)
    dummies = (rater[:, None] == np.arange(25)[None, :]).astype(float)
    fit = sm.OLS(score, np.column_stack([minutes, dummies])).fit(
        cov_type="cluster", cov_kwds={"groups": rater, "use_correction": False}
    )
    assert found["value"] == pytest.approx(fit.params[0], abs=1e-10)
    # CR1 with the fixed effects nested in the clusters: G/(G-1) and nothing else.
    assert found["se"] == pytest.approx(float(np.sqrt(25 / 24 * fit.cov_params()[0, 0])), rel=1e-9)
    assert found["ci_low"] < found["value"] < found["ci_high"]
    assert found["raters"] == 25


def test_positions_count_each_raters_cards_in_time_order() -> None:
    minutes = np.array([3.0, 1.0, np.nan, 2.0, 0.5, 9.0])
    raters = np.array([1, 1, 1, 2, 2, 1])
    got = positions_in_session(minutes, raters)
    assert np.isnan(got[2])
    assert got[[0, 1, 3, 4, 5]].tolist() == [2.0, 1.0, 2.0, 1.0, 3.0]


def test_raters_who_reach_late_minutes_being_harsher_is_no_drift() -> None:
    # Slow raters score 3 points lower but no session drifts: the pooled slope is steep, the
    # within-rater slope is flat.
    rater = np.repeat(np.arange(30), 10)
    slow = rater % 2 == 1
    minutes = np.tile(np.arange(10.0), 30) * np.where(slow, 4.0, 1.0)
    score = 6.0 - 3.0 * slow + np.random.default_rng(0).normal(0, 0.5, rater.size)
    pooled = np.polyfit(minutes, score, 1)[0]
    assert pooled < -0.05
    drift = session_drift(minutes, score, rater, np.array(["L1"] * rater.size), seed=2, rounds=199)
    slope = drift["per_minute"]
    assert slope["ci_low"] < 0 < slope["ci_high"]
    assert drift["drifts"] is False
    assert drift_warnings(drift) == []


def test_too_few_raters_have_no_estimate_and_say_why() -> None:
    got = within_rater_slope(
        np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 2.0]), np.zeros(3), seed=0
    )
    assert got["value"] is None
    assert got["reason"] == "too_few_raters"


@pytest.mark.slow
def test_false_alarms_stay_at_five_percent_and_planted_drift_is_found() -> None:
    sim = _simulation()
    rng = np.random.default_rng(11)
    alarms = found = 0
    studies = 400
    for k in range(studies):
        minutes, score, rater = sim.simulate_study(rng, raters=40, cards=20, delta=0.0)
        p = within_rater_slope(minutes, score, rater, seed=k, rounds=399, interval=False)
        alarms += p["p_value"] < 0.05
    for k in range(100):
        minutes, score, rater = sim.simulate_study(rng, raters=40, cards=20, delta=-0.05)
        p = within_rater_slope(minutes, score, rater, seed=k, rounds=399, interval=False)
        found += p["p_value"] < 0.05
    # 5% of 400 is 20; its binomial standard deviation is 4.4.
    assert alarms / studies <= 0.05 + 2.5 * (0.05 * 0.95 / studies) ** 0.5
    assert found / 100 >= 0.9


def test_a_planted_drift_raises_the_warning_with_its_size_in_both_languages() -> None:
    from django.utils import translation

    from apps.analysis.labels import warning_text

    rng = np.random.default_rng(5)
    minutes, score, rater = _simulation().simulate_study(rng, raters=40, cards=30, delta=-0.06)
    levels = np.where(rater % 2 == 0, "L1", "L2")
    drift = {
        "question": "funniness",
        **session_drift(minutes, score, rater, levels, seed=3, rounds=199),
    }
    assert drift["drifts"] is True
    assert set(drift["by_level"]) == {"L1", "L2"}
    [warning] = drift_warnings(drift)
    assert warning["code"] == "session_drift"
    assert warning["params"]["size"] == pytest.approx(10 * drift["per_minute"]["value"], abs=1e-3)
    with translation.override("en"):
        assert "per 10 minutes" in warning_text(warning)
    with translation.override("zh-hans"):
        text = warning_text(warning)
    assert "每 10 分钟" in text
    assert str(warning["params"]["size"])[:4] in text
