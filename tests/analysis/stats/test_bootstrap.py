from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from apps.analysis.stats.bootstrap import (
    Interval,
    bootstrap_statistic,
    grouped_mean_ci,
    mean_ci,
    proportion_ci,
)
from apps.analysis.stats.bradley_terry import bt_bootstrap, bt_fit_matrix


def rated_scores(
    seed: int, n_raters: int = 30, n_items: int = 20, leniency_sd: float = 0.8
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores = item effect + rater leniency + noise; returns (scores, raters, items)."""
    rng = np.random.default_rng(seed)
    item_effect = rng.normal(4.0, 1.0, n_items)
    leniency = rng.normal(0.0, leniency_sd, n_raters)
    scores = item_effect[None, :] + leniency[:, None] + rng.normal(0.0, 1.0, (n_raters, n_items))
    raters = np.repeat(np.arange(n_raters), n_items)
    items = np.tile(np.arange(n_items), n_raters)
    return scores.ravel(), raters, items


# --- mean_ci against scipy.stats.bootstrap ------------------------------------------------------


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("kind", ["skewed", "likert"])
def test_mean_ci_matches_scipy_bootstrap(method: str, kind: str) -> None:
    rng = np.random.default_rng(11)
    if kind == "skewed":
        values = rng.exponential(size=60)
    else:  # a 1-7 scale piled up at the bottom: the discrete fast path
        values = rng.choice(np.arange(1.0, 8.0), p=[0.4, 0.2, 0.15, 0.1, 0.08, 0.05, 0.02], size=80)
    ours = mean_ci(values, rounds=20_000, seed=1, method=method)
    ref = stats.bootstrap(
        (values,), np.mean, method=method, n_resamples=20_000, rng=2
    ).confidence_interval
    # Monte Carlo error of a 2.5% quantile with 20,000 rounds is ~1% of the interval width.
    width = ref.high - ref.low
    assert ours.estimate == pytest.approx(values.mean())
    assert ours.ci_low == pytest.approx(ref.low, abs=0.04 * width)
    assert ours.ci_high == pytest.approx(ref.high, abs=0.04 * width)
    assert ours.n == values.size


def test_bca_shifts_the_interval_towards_the_long_tail() -> None:
    values = np.random.default_rng(12).lognormal(0.0, 1.0, size=40)
    pct = mean_ci(values, rounds=4000, seed=3)
    bca = mean_ci(values, rounds=4000, seed=3, method="bca")
    assert bca.ci_low > pct.ci_low
    assert bca.ci_high > pct.ci_high


def test_mean_ci_with_the_same_seed_is_reproducible() -> None:
    values, raters, _ = rated_scores(1)
    a = mean_ci(values, clusters=raters, seed=7)
    b = mean_ci(values, clusters=raters, seed=7)
    c = mean_ci(values, clusters=raters, seed=8)
    assert a == b
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)


def test_mean_ci_interval_contains_the_estimate() -> None:
    values, raters, _ = rated_scores(2)
    for clusters in (None, raters):
        ci = mean_ci(values, clusters=clusters, seed=0)
        assert ci.ci_low < ci.estimate < ci.ci_high


def test_rater_clusters_widen_the_interval_when_raters_differ_in_leniency() -> None:
    values, raters, _ = rated_scores(3)
    iid = mean_ci(values, seed=0)
    clustered = mean_ci(values, clusters=raters, seed=0)
    # 20 values per rater and an intra-rater correlation of ~0.4: design effect ~8.
    assert (clustered.ci_high - clustered.ci_low) > 2.0 * (iid.ci_high - iid.ci_low)


def test_one_value_per_cluster_is_the_ordinary_bootstrap() -> None:
    values = np.random.default_rng(4).normal(size=50)
    plain = mean_ci(values, rounds=8000, seed=0)
    clustered = mean_ci(values, clusters=np.arange(50) * 7, rounds=8000, seed=1)
    width = plain.ci_high - plain.ci_low
    assert clustered.ci_low == pytest.approx(plain.ci_low, abs=0.05 * width)
    assert clustered.ci_high == pytest.approx(plain.ci_high, abs=0.05 * width)


def test_missing_values_are_dropped() -> None:
    values = np.array([1.0, np.nan, 3.0, 5.0, np.nan])
    raters = np.array([0, 1, 1, 2, 3])
    ci = mean_ci(values, clusters=raters, seed=0)
    assert ci.n == 3
    assert ci.estimate == pytest.approx(3.0)


def test_empty_input_gives_an_undefined_interval() -> None:
    ci = mean_ci(np.array([np.nan]), seed=0)
    assert ci.n == 0
    assert np.isnan(ci.estimate)
    assert ci.as_dict() == {"value": None, "ci_low": None, "ci_high": None, "n": 0}


def test_single_value_gives_a_degenerate_interval() -> None:
    ci = mean_ci(np.array([4.0]), seed=0, method="bca")
    assert (ci.estimate, ci.ci_low, ci.ci_high, ci.n) == (4.0, 4.0, 4.0, 1)


def test_interval_as_dict_is_json_safe() -> None:
    d = Interval(estimate=0.5, ci_low=0.25, ci_high=0.75, n=np.int64(10)).as_dict()  # type: ignore[arg-type]
    assert d == {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "n": 10}
    assert type(d["n"]) is int


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"level": 1.0}, "level"), ({"rounds": 0}, "rounds"), ({"method": "basic"}, "method")],
)
def test_mean_ci_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mean_ci(np.ones(3), seed=0, **kwargs)  # type: ignore[arg-type]


# --- proportion_ci -----------------------------------------------------------------------------


def test_proportion_ci_accepts_booleans_and_matches_mean_ci() -> None:
    hits = np.random.default_rng(5).random(40) < 0.3
    prop = proportion_ci(hits, seed=2)
    mean = mean_ci(hits.astype(float), seed=2)
    assert prop == mean
    assert 0.0 <= prop.ci_low < prop.estimate < prop.ci_high <= 1.0


def test_all_successes_get_a_wilson_interval_instead_of_a_point() -> None:
    ci = proportion_ci(np.ones(15, dtype=bool), seed=0)
    assert ci.estimate == 1.0
    assert ci.ci_high == 1.0
    # Wilson 95% lower bound for 15/15: 15 / (15 + 1.96^2) = 0.796.
    assert ci.ci_low == pytest.approx(15 / (15 + 1.959964**2), abs=1e-6)


def test_all_failures_from_few_raters_use_the_number_of_raters() -> None:
    outcomes = np.zeros(12)
    raters = np.repeat(np.arange(3), 4)
    clustered = proportion_ci(outcomes, clusters=raters, seed=0)
    plain = proportion_ci(outcomes, seed=0)
    assert clustered.ci_low == 0.0
    assert clustered.ci_high > plain.ci_high


def test_proportion_ci_rejects_non_binary_outcomes() -> None:
    with pytest.raises(ValueError, match="0/1"):
        proportion_ci(np.array([0, 1, 2]), seed=0)


# --- grouped_mean_ci -------------------------------------------------------------------------


def test_grouped_mean_ci_equals_per_group_mean_ci_in_distribution() -> None:
    values, _, items = rated_scores(6, n_raters=40, n_items=5)
    est, low, high, n = grouped_mean_ci(values, items, 5, rounds=6000, seed=1)
    for g in range(5):
        one = mean_ci(values[items == g], rounds=6000, seed=2 + g)
        width = one.ci_high - one.ci_low
        assert est[g] == pytest.approx(one.estimate)
        assert n[g] == one.n == 40
        assert low[g] == pytest.approx(one.ci_low, abs=0.06 * width)
        assert high[g] == pytest.approx(one.ci_high, abs=0.06 * width)


def test_grouped_mean_ci_on_a_rating_scale_matches_scipy_per_group() -> None:
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 4, 2000)
    values = rng.integers(1, 8, 2000).astype(float)  # few distinct values: multinomial path
    _, low, high, _ = grouped_mean_ci(values, groups, 4, rounds=8000, seed=3)
    for g in range(4):
        ref = stats.bootstrap(
            (values[groups == g],), np.mean, method="percentile", n_resamples=8000, rng=4
        ).confidence_interval
        width = ref.high - ref.low
        assert low[g] == pytest.approx(ref.low, abs=0.06 * width)
        assert high[g] == pytest.approx(ref.high, abs=0.06 * width)


def test_grouped_mean_ci_with_raters_matches_per_group_cluster_bootstrap() -> None:
    # Each rater gives one value per item: jointly resampling raters is, per item, the
    # ordinary bootstrap of that item's values.
    values, raters, items = rated_scores(8, n_raters=40, n_items=4)
    _, low, high, _ = grouped_mean_ci(values, items, 4, clusters=raters, rounds=6000, seed=1)
    for g in range(4):
        one = mean_ci(values[items == g], clusters=raters[items == g], rounds=6000, seed=9)
        width = one.ci_high - one.ci_low
        assert low[g] == pytest.approx(one.ci_low, abs=0.06 * width)
        assert high[g] == pytest.approx(one.ci_high, abs=0.06 * width)


def test_grouped_mean_ci_reports_empty_groups_as_undefined() -> None:
    est, low, high, n = grouped_mean_ci(
        np.array([1.0, 2.0, 3.0, np.nan]), np.array([0, 0, 2, 1]), 3, seed=0
    )
    assert list(n) == [2, 0, 1]
    assert np.isnan(est[1])
    assert np.isnan(low[1])
    assert np.isnan(high[1])
    assert (low[2], high[2]) == (3.0, 3.0)


def test_grouped_mean_ci_is_reproducible_for_a_seed() -> None:
    values, raters, items = rated_scores(9)
    a = grouped_mean_ci(values, items, 20, clusters=raters, rounds=200, seed=5)
    b = grouped_mean_ci(values, items, 20, clusters=raters, rounds=200, seed=5)
    c = grouped_mean_ci(values, items, 20, clusters=raters, rounds=200, seed=6)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], c[1])


def test_grouped_mean_ci_rejects_out_of_range_groups() -> None:
    with pytest.raises(ValueError, match="out of range"):
        grouped_mean_ci(np.ones(3), np.array([0, 1, 3]), 3, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["likert", "continuous", "raters"])
def test_grouped_mean_ci_handles_2000_groups_and_200000_values(kind: str) -> None:
    # Its speed is measured by benchmarks/bench_aggregate.py, not timed here.
    rng = np.random.default_rng(10)
    groups = rng.integers(0, 2000, 200_000)
    if kind == "continuous":
        values = rng.normal(size=200_000)
    else:
        values = rng.integers(1, 8, 200_000).astype(float)
    clusters = rng.integers(0, 600, 200_000) if kind == "raters" else None
    est, low, high, n = grouped_mean_ci(values, groups, 2000, clusters=clusters, seed=0)
    assert np.all(low <= est)
    assert np.all(est <= high)
    assert n.sum() == 200_000


# --- bootstrap_statistic -------------------------------------------------------------------------


def test_bootstrap_statistic_of_the_mean_matches_mean_ci() -> None:
    values = np.random.default_rng(13).normal(size=80)
    low, high = bootstrap_statistic(lambda idx: float(values[idx].mean()), 80, rounds=4000, seed=0)
    ref = mean_ci(values, rounds=4000, seed=1)
    width = ref.ci_high - ref.ci_low
    assert low == pytest.approx(ref.ci_low, abs=0.06 * width)
    assert high == pytest.approx(ref.ci_high, abs=0.06 * width)


def test_bootstrap_statistic_skips_rounds_where_the_statistic_is_undefined() -> None:
    calls = []

    def statistic(idx: np.ndarray) -> float:
        calls.append(idx)
        return float("nan") if len(calls) % 2 else float(idx.mean())

    low, high = bootstrap_statistic(statistic, 10, rounds=100, seed=0)
    assert len(calls) == 100
    assert np.isfinite(low)
    assert low <= high
    assert bootstrap_statistic(lambda idx: float("nan"), 10, rounds=5, seed=0) == pytest.approx(
        (np.nan, np.nan), nan_ok=True
    )


def test_bootstrap_statistic_is_reproducible_for_a_seed() -> None:
    values = np.random.default_rng(14).normal(size=30)

    def stat(idx: np.ndarray) -> float:
        return float(np.median(values[idx]))

    assert bootstrap_statistic(stat, 30, rounds=300, seed=3) == bootstrap_statistic(
        stat, 30, rounds=300, seed=3
    )


# --- coverage (reduced sim_coverage.py) -------------------------------------------------------


@pytest.mark.slow
def test_rater_clustered_intervals_for_a_mean_cover_and_iid_ones_do_not() -> None:
    truth_rng = np.random.default_rng(20)
    item_effect = truth_rng.normal(4.0, 1.0, 20)
    truth = item_effect.mean()
    hits = {"rater": 0, "iid": 0}
    reps = 300
    for rep in range(reps):
        rng = np.random.default_rng(1000 + rep)
        leniency = rng.normal(0.0, 0.8, 30)
        scores = (item_effect[None, :] + leniency[:, None] + rng.normal(0.0, 1.0, (30, 20))).ravel()
        raters = np.repeat(np.arange(30), 20)
        for name, clusters in (("rater", raters), ("iid", None)):
            ci = mean_ci(scores, clusters=clusters, rounds=400, seed=rep)
            hits[name] += ci.ci_low <= truth <= ci.ci_high
    # Expected ~0.93-0.95 against ~0.6; the Monte Carlo standard error is ~0.013.
    assert 0.89 < hits["rater"] / reps < 0.99
    assert hits["iid"] / reps < 0.75


@pytest.mark.slow
def test_rater_clustered_bt_intervals_cover_and_iid_ones_do_not() -> None:
    n_items, n_raters, per_rater, taste_sd = 6, 30, 30, 1.5
    true_scores = np.linspace(-1.0, 1.0, n_items)
    # Population estimand under rater taste: BT fit to E[sigmoid(d + taste difference)].
    nodes, weights = np.polynomial.hermite_e.hermegauss(64)
    weights = weights / weights.sum()
    diff = true_scores[:, None] - true_scores[None, :]
    prob = (weights / (1.0 + np.exp(-(diff[:, :, None] + taste_sd * np.sqrt(2.0) * nodes)))).sum(
        axis=2
    )
    np.fill_diagonal(prob, 0.0)
    truth = bt_fit_matrix(prob * 1e6, alpha=1e-9).scores
    cover = {"rater": 0.0, "none": 0.0}
    reps = 150
    for rep in range(reps):
        rng = np.random.default_rng(5000 + rep)
        taste = rng.normal(0.0, taste_sd, (n_raters, n_items))
        raters = np.repeat(np.arange(n_raters), per_rater)
        a = rng.integers(0, n_items, raters.size)
        b = (a + rng.integers(1, n_items, raters.size)) % n_items
        strength = true_scores[None, :] + taste
        a_wins = rng.random(raters.size) < 1.0 / (
            1.0 + np.exp(-(strength[raters, a] - strength[raters, b]))
        )
        winners, losers = np.where(a_wins, a, b), np.where(a_wins, b, a)
        for name in cover:
            boot = bt_bootstrap(
                winners, losers, n_items, clusters=raters, rounds=400, seed=rep, cluster=name
            )
            cover[name] += float(np.mean((boot.ci_low <= truth) & (truth <= boot.ci_high)))
    # Measured: 0.94 against 0.73.
    assert 0.89 < cover["rater"] / reps < 0.99
    assert cover["none"] / reps < 0.85


def test_grouped_proportions_of_unanimous_groups_get_wilson_intervals_not_a_point():
    from apps.analysis.stats.bootstrap import grouped_proportion_ci

    outcomes = np.array([1, 1, 1, 0, 1, 0, 1, 0], dtype=float)
    groups = np.array([0, 0, 0, 1, 1, 1, 1, 1])
    estimate, low, high, n = grouped_proportion_ci(outcomes, groups, 2, rounds=200, seed=3)
    assert list(n) == [3, 5]
    assert estimate[0] == 1.0
    assert high[0] == 1.0
    # Wilson's 95% lower bound for 3 of 3 is 0.4385 (z = 1.96): far from the degenerate 1.0.
    assert low[0] == pytest.approx(0.4385, abs=1e-3)
    assert low[1] < estimate[1] < high[1]
