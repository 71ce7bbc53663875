"""Crossed-design variances against a brute-force double sum, statsmodels' crossed
random-effects fit (MixedLM variance components) and statsmodels' multiple-testing code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.multitest import multipletests

from apps.analysis.stats.crossed import (
    CrossedDesign,
    benjamini_hochberg,
    crossed_variance,
    holm,
    one_way_variance,
    t_interval,
)


def _brute_force(psi: np.ndarray, unit_sets: list[set[int]]) -> float:
    total = 0.0
    for o, units_o in enumerate(unit_sets):
        for p, units_p in enumerate(unit_sets):
            if units_o & units_p:
                total += psi[o] * psi[p]
    return total


def test_scorecard_design_equals_the_double_sum_over_observations_sharing_a_unit() -> None:
    rng = np.random.default_rng(3)
    item = rng.integers(0, 6, 40)
    rater = rng.integers(0, 5, 40)
    psi = rng.normal(size=40)
    design = CrossedDesign.build([item, 100 + rater], ["item", "rater"])
    got = design.covariance(psi, small_sample=False)[0, 0]
    expected = _brute_force(psi, [{int(i), 100 + int(r)} for i, r in zip(item, rater, strict=True)])
    assert np.isclose(got, expected)


def test_pair_design_counts_an_observation_in_both_of_its_items() -> None:
    rng = np.random.default_rng(4)
    left = rng.integers(0, 8, 60)
    right = (left + rng.integers(1, 8, 60)) % 8
    rater = rng.integers(0, 6, 60)
    psi = rng.normal(size=(60, 2))
    design = CrossedDesign.build([left, right, 100 + rater], ["item", "item", "rater"])
    got = design.covariance(psi, small_sample=False)
    sets = [{int(a), int(b), 100 + int(r)} for a, b, r in zip(left, right, rater, strict=True)]
    for j in range(2):
        assert np.isclose(got[j, j], _brute_force(psi[:, j], sets))
    # Off-diagonal: the same double sum of psi_o[0] * psi_p[1].
    cross = sum(psi[o, 0] * psi[p, 1] for o in range(60) for p in range(60) if sets[o] & sets[p])
    assert np.isclose(got[0, 1], cross)


def test_one_clustering_is_the_cluster_robust_variance() -> None:
    rng = np.random.default_rng(5)
    cluster = rng.integers(0, 7, 50)
    psi = rng.normal(size=50)
    sums = np.bincount(cluster, weights=psi)
    assert np.isclose(one_way_variance(psi, cluster), 7 / 6 * float(sums @ sums))
    assert np.isclose(crossed_variance(psi, [cluster]), 7 / 6 * float(sums @ sums))


def test_variance_of_a_mean_matches_a_crossed_random_effects_fit() -> None:
    """On a fully crossed design the crossed variance of the grand mean estimates
    sigma_item^2 / I + sigma_rater^2 / R + sigma_e^2 / (I R); statsmodels' MixedLM with crossed
    variance components estimates the same three components independently."""
    rng = np.random.default_rng(6)
    n_items, n_raters = 40, 30
    item = np.repeat(np.arange(n_items), n_raters)
    rater = np.tile(np.arange(n_raters), n_items)
    y = (
        rng.normal(0, 0.8, n_items)[item]
        + rng.normal(0, 0.5, n_raters)[rater]
        + rng.normal(0, 1.0, item.size)
    )
    psi = (y - y.mean()) / y.size
    ours = crossed_variance(psi, [item, 1000 + rater], ["item", "rater"])
    frame = pd.DataFrame({"y": y, "item": item, "rater": rater, "one": 1})
    fit = smf.mixedlm(
        "y ~ 1",
        frame,
        groups="one",
        vc_formula={"item": "0 + C(item)", "rater": "0 + C(rater)"},
        re_formula="0",
    ).fit(reml=True)
    components = dict(zip(fit.model.exog_vc.names, fit.vcomp, strict=True))
    mixed = (
        components["item"] / n_items
        + components["rater"] / n_raters
        + fit.scale / (n_items * n_raters)
    )
    assert np.isclose(np.sqrt(ours), np.sqrt(mixed), rtol=0.1)
    assert np.isclose(np.sqrt(ours), float(fit.bse_fe.iloc[0]), rtol=0.1)


def test_holm_matches_statsmodels() -> None:
    p = [0.01, 0.04, 0.03, 0.2, float("nan"), 0.001]
    finite = [x for x in p if np.isfinite(x)]
    expected = multipletests(finite, method="holm")[1]
    got = [x for x in holm(p) if np.isfinite(x)]
    assert np.allclose(got, expected)
    assert np.isnan(holm(p)[4])


def test_benjamini_hochberg_matches_statsmodels() -> None:
    rng = np.random.default_rng(7)
    p = np.concatenate([rng.uniform(size=30), rng.uniform(0, 0.003, 5)])
    rejected, adjusted = benjamini_hochberg(p, 0.1)
    ref_rejected, ref_adjusted, _, _ = multipletests(p, alpha=0.1, method="fdr_bh")
    assert np.array_equal(rejected, ref_rejected)
    assert np.allclose(adjusted, ref_adjusted)


def test_t_interval_is_undefined_without_a_variance() -> None:
    low, high, p = t_interval(1.0, float("nan"), 10)
    assert np.isnan(low)
    assert np.isnan(high)
    assert np.isnan(p)
    low, high, p = t_interval(0.5, 0.01, 20)
    assert low < 0.5 < high
    assert 0 < p < 1
