"""The model comparison (`models`): estimates against independent code (statsmodels'
two-way cluster-robust OLS and fixed-effects least squares, the BT fit), flags and ranks, and a
small coverage simulation with item and rater variation (benchmarks/sim_model_coverage.py runs
the full one)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from apps.analysis.stats.bradley_terry import bt_fit
from apps.analysis.stats.model_comparison import compare_models
from apps.analysis.stats.simulation import simulate_crossed_study


def _study(seed: int = 11, **kwargs: object):  # type: ignore[no-untyped-def]
    return simulate_crossed_study(np.random.default_rng(seed), **kwargs)  # type: ignore[arg-type]


def test_source_means_and_their_crossed_standard_errors_match_statsmodels_two_way_clusters() -> (
    None
):
    inputs, _ = _study()
    result = compare_models(inputs)
    source = np.array(inputs.item_source)[inputs.score_item]
    for name in ("model-a", "human"):
        rows = source == name
        y = inputs.score_value[rows]
        groups = np.column_stack([inputs.score_item[rows], inputs.score_rater[rows]])
        ols = sm.OLS(y, np.ones((y.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
        entry = result["by_model"][name]["questions"]["funniness"]
        assert np.isclose(entry["value"], y.mean())
        # statsmodels' small-sample factors differ slightly from ours (G/(G-1) per term).
        assert np.isclose(entry["se"], float(ols.bse[0]), rtol=0.05)
        one_way = sm.OLS(y, np.ones((y.size, 1))).fit(
            cov_type="cluster", cov_kwds={"groups": inputs.score_rater[rows]}
        )
        fixed = result["by_model"][name]["fixed_items"]["funniness"]
        assert np.isclose(fixed["se"], float(one_way.bse[0]), rtol=0.03)


def test_differences_use_the_same_raters_on_both_sides() -> None:
    inputs, _ = _study()
    result = compare_models(inputs)
    row = next(
        d
        for d in result["differences"]
        if d["question"] == "funniness" and d["a"] == "model-a" and d["b"] == "model-b"
    )
    means = result["by_model"]
    assert np.isclose(
        row["value"],
        means["model-a"]["questions"]["funniness"]["value"]
        - means["model-b"]["questions"]["funniness"]["value"],
    )
    assert row["ci_low"] < row["value"] < row["ci_high"]
    assert 0 <= row["p_value"] <= row["p_holm"] <= 1


def test_leniency_adjusted_means_are_least_squares_item_plus_rater_fits() -> None:
    inputs, _ = _study(seed=12)
    result = compare_models(inputs)
    frame = pd.DataFrame(
        {
            "y": inputs.score_value,
            "item": inputs.score_item,
            "rater": inputs.score_rater,
        }
    )
    design = pd.get_dummies(frame[["item", "rater"]].astype(str), drop_first=False).astype(float)
    coef, *_ = np.linalg.lstsq(design.to_numpy(), frame["y"].to_numpy(), rcond=None)
    rater_cols = [c.startswith("rater_") for c in design.columns]
    rater_effect = design.to_numpy()[:, rater_cols] @ coef[rater_cols]
    # The identification: rater effects average 0 over the answers.
    rater_effect -= rater_effect.mean()
    adjusted = frame["y"].to_numpy() - rater_effect
    source = np.array(inputs.item_source)[inputs.score_item]
    for name in ("model-a", "model-b", "human"):
        got = result["by_model"][name]["adjusted"]["funniness"]["value"]
        assert np.isclose(got, adjusted[source == name].mean())


def test_lenient_raters_on_one_model_move_its_raw_mean_but_not_its_adjusted_mean() -> None:
    inputs, truth = _study(seed=13, leniency_sd=0.1, rate_share=0.9)
    source = np.array(inputs.item_source)[inputs.score_item]
    # The first ten raters are very lenient and rate only model-a's items.
    lenient = inputs.score_rater < 10
    keep = ~lenient | (source == "model-a")
    value = inputs.score_value + np.where(lenient, 2.0, 0.0)
    skewed = replace(
        inputs,
        score_item=inputs.score_item[keep],
        score_rater=inputs.score_rater[keep],
        score_question=inputs.score_question[keep],
        score_value=value[keep],
        score_seconds=inputs.score_seconds[keep],
    )
    # Leniency has no absolute zero (only raters' differences are identified), so the claim is
    # about comparisons: the lenient raters must not make model-a look better than model-b.
    target = truth.mean[0] - truth.mean[1]
    result = compare_models(skewed)
    row = next(
        d
        for d in result["differences"]
        if d["question"] == "funniness" and (d["a"], d["b"]) == ("model-a", "model-b")
    )
    unskewed = next(
        d
        for d in compare_models(inputs)["differences"]
        if d["question"] == "funniness" and (d["a"], d["b"]) == ("model-a", "model-b")
    )
    assert row["value"] - unskewed["value"] > 0.4
    assert abs(row["adjusted"]["value"] - unskewed["value"]) < 0.15
    assert row["adjusted"]["ci_low"] <= target <= row["adjusted"]["ci_high"]


def test_model_bradley_terry_strengths_are_the_fit_of_sources_as_competitors() -> None:
    inputs, _ = _study()
    result = compare_models(inputs)
    source = np.array(inputs.item_source)
    order = ["model-a", "model-b", "human"]
    code = {name: k for k, name in enumerate(order)}
    left = np.array([code[s] for s in source[inputs.pair_left]])
    right = np.array([code[s] for s in source[inputs.pair_right]])
    winners = np.where(inputs.pair_winner_is_left, left, right)
    losers = np.where(inputs.pair_winner_is_left, right, left)
    fit = bt_fit(winners, losers, 3)
    for name, k in code.items():
        entry = result["by_model"][name]["bt"]
        assert np.isclose(entry["value"], fit.scores[k])
        assert entry["ci_low"] < entry["value"] < entry["ci_high"]
    row = next(d for d in result["differences"] if d["question"] == "bt")
    met = ((left == code[row["a"]]) & (right == code[row["b"]])) | (
        (left == code[row["b"]]) & (right == code[row["a"]])
    )
    a_won = np.where(
        left[met] == code[row["a"]],
        inputs.pair_winner_is_left[met],
        ~inputs.pair_winner_is_left[met],
    )
    assert np.isclose(row["p_a_beats_b"]["value"], a_won.mean())
    assert row["p_a_beats_b"]["basis"] == "direct"


def test_an_undefeated_model_has_no_ridge_driven_strength() -> None:
    inputs, _ = _study()
    source = np.array(inputs.item_source)
    # model-a's items win every judgment they take part in.
    left_a = source[inputs.pair_left] == "model-a"
    right_a = source[inputs.pair_right] == "model-a"
    won = np.where(left_a, True, np.where(right_a, False, inputs.pair_winner_is_left))
    result = compare_models(replace(inputs, pair_winner_is_left=won))
    entry = result["by_model"]["model-a"]["bt"]
    assert entry["flag"] == "undefeated"
    assert entry["value"] is None
    assert entry["ci_low"] is None
    assert entry["ci_high"] is None
    # Nor a ridge-driven difference with any other model; the pairs between the others stand.
    bt_rows = [row for row in result["differences"] if row["question"] == "bt"]
    with_a = [row for row in bt_rows if "model-a" in (row["a"], row["b"])]
    others = [row for row in bt_rows if "model-a" not in (row["a"], row["b"])]
    assert with_a
    assert others
    for row in with_a:
        assert row["flag"] == "no_finite_strength"
        assert (row["value"], row["ci_low"], row["ci_high"], row["p_holm"]) == (None,) * 4
    for row in others:
        assert "flag" not in row
        assert None not in (row["value"], row["ci_low"], row["ci_high"], row["p_holm"])


def test_rank_ranges_hold_jointly_and_separate_only_clear_differences() -> None:
    clear, _ = _study(seed=14, source_strengths=(0.0, 2.0, 4.0), pairs_per_rater=60)
    ranks = {name: e["rank"] for name, e in compare_models(clear)["by_model"].items()}
    assert ranks == {
        "human": {"low": 1, "high": 1},
        "model-b": {"low": 2, "high": 2},
        "model-a": {"low": 3, "high": 3},
    }
    tied, _ = _study(seed=15, source_strengths=(0.0, 0.0, 0.0))
    ranks = {name: e["rank"] for name, e in compare_models(tied)["by_model"].items()}
    assert all(r["low"] == 1 and r["high"] == 3 for r in ranks.values())


def test_views_split_by_level_and_count_rated_items() -> None:
    inputs, _ = _study()
    levels = ["single" if i % 2 else "scenario" for i in range(inputs.n_items)]
    result = compare_models(
        replace(inputs, item_level=levels, item_language=["en"] * inputs.n_items)
    )
    assert set(result["by_level"]) == {"single", "scenario"}
    assert set(result["by_language"]) == {"en"}
    assert result["by_level"]["single"]["by_model"]["model-a"]["n_items"] == 10
    assert result["estimand"] == "items_and_raters"


def test_intervals_cover_means_differences_and_strengths_in_a_crossed_simulation() -> None:
    """Items and raters both vary; 95% intervals must cover their estimands about 95% of the
    time (the plain two-way bootstrap gives ~99%, the fixed-items interval far less)."""
    rng = np.random.default_rng(2026)
    hits: dict[str, list[bool]] = {"mean": [], "difference": [], "bt": []}
    # Every difference of a study inside its simultaneous interval; and each one inside it.
    joint: list[bool] = []
    each: list[bool] = []
    for _ in range(50):
        inputs, truth = simulate_crossed_study(rng)
        result = compare_models(inputs)
        k = {name: i for i, name in enumerate(truth.sources)}
        for name, entry in result["by_model"].items():
            q = entry["questions"]["funniness"]
            hits["mean"].append(q["ci_low"] <= truth.mean[k[name]] <= q["ci_high"])
            b = entry["bt"]
            hits["bt"].append(b["ci_low"] <= truth.bt[k[name]] <= b["ci_high"])
        for row in result["differences"]:
            if row["question"] == "funniness":
                target = truth.mean[k[row["a"]]] - truth.mean[k[row["b"]]]
                hits["difference"].append(row["ci_low"] <= target <= row["ci_high"])
        inside = [
            row["simultaneous"]["ci_low"]
            <= truth.mean[k[row["a"]]] - truth.mean[k[row["b"]]]
            <= row["simultaneous"]["ci_high"]
            for row in result["differences"]
            if row["question"] == "funniness"
        ]
        joint.append(all(inside))
        each.extend(inside)
    # Three sources, three differences: each at 1 - 0.05/3 = 98.3%, all three together >= 95%
    # (150 studies gave 94.7% jointly, as the plain intervals' 94.7% marginally; 50 studies
    # have a binomial error of about 3 points).
    assert np.mean(each) >= 0.94, np.mean(each)
    assert np.mean(joint) >= 0.86, np.mean(joint)
    pooled = np.mean(hits["mean"] + hits["difference"] + hits["bt"])
    assert 0.93 <= pooled <= 0.97, {key: np.mean(v) for key, v in hits.items()}
    for values in hits.values():
        assert 0.90 <= np.mean(values) <= 0.99


def test_differences_carry_bonferroni_intervals_that_hold_for_their_family_together() -> None:
    """The simultaneous interval of each difference is the t interval at level 1 - 0.05 / m,
    m the comparisons in its family (one view, one measure), computed here with scipy; p_holm is
    statsmodels' Holm; an interval that excludes 0 always goes with p_holm < 0.05."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    inputs, _ = simulate_crossed_study(
        np.random.default_rng(8),
        source_means=(4.0, 4.5, 4.2, 3.6),
        source_strengths=(0, 0.6, 0.3, -0.4),
        source_human_rates=(0.3, 0.4, 0.5, 0.6),
    )
    result = compare_models(inputs)
    families: dict[str, list[dict]] = {}
    for row in result["differences"]:
        families.setdefault(row["question"], []).append(row)
    assert {"funniness", "bt", "judged_human"} <= set(families)
    for question, rows in families.items():
        m = len(rows)
        assert m == 6, question
        _, holm, _, _ = multipletests([r["p_value"] for r in rows], method="holm")
        for row, p_holm in zip(rows, holm, strict=True):
            joint = row["simultaneous"]
            crit = stats.t.ppf(1 - 0.05 / (2 * m), row["df"])
            assert joint["family"] == m
            assert joint["method"] == "bonferroni"
            assert joint["ci_low"] == pytest.approx(row["value"] - crit * row["se"], rel=1e-9)
            assert joint["ci_high"] == pytest.approx(row["value"] + crit * row["se"], rel=1e-9)
            assert joint["ci_low"] <= row["ci_low"] <= row["ci_high"] <= joint["ci_high"]
            assert row["p_holm"] == pytest.approx(p_holm)
            if joint["ci_low"] > 0 or joint["ci_high"] < 0:
                assert row["p_holm"] < 0.05
            if question == "bt":
                beats = row["p_a_beats_b"]["simultaneous"]
                assert beats["ci_low"] <= row["p_a_beats_b"]["ci_low"]
                assert row["p_a_beats_b"]["ci_high"] <= beats["ci_high"]
                assert 0 <= beats["ci_low"] <= beats["value"] <= beats["ci_high"] <= 1
