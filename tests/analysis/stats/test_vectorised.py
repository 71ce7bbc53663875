"""The batched bootstrap paths against the one-round-at-a-time definitions they replace, and
against independent implementations (the krippendorff package on every resample)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import krippendorff
import numpy as np
import pytest
from scipy import stats

from apps.analysis.stats import bootstrap
from apps.analysis.stats.agreement import (
    _alpha_units,
    fleiss_counts,
    fleiss_kappa,
    fleiss_kappa_ci,
    krippendorff_alpha_ci,
)
from apps.analysis.stats.bootstrap import (
    bootstrap_statistic,
    bootstrap_weighted_statistic,
    bootstrap_weights,
    cluster_draws,
    grouped_mean_ci,
    grouped_mean_ci_many,
    multiplicities,
)


def _ratings(seed: int, n_items: int = 40, n_raters: int = 12, top: int = 3):
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), n_raters)
    rater = np.tile(np.arange(n_raters), n_items)
    latent = rng.normal(0, 1, n_items)[item] + rng.normal(0, 1, item.size)
    value = np.clip(np.rint(latent + top / 2), 0, top)
    keep = rng.random(item.size) < 0.7
    return item[keep], rater[keep], value[keep]


def test_weighted_statistic_draws_the_same_rounds_as_the_index_statistic() -> None:
    values = np.random.default_rng(1).normal(size=57)

    def by_index(idx: np.ndarray) -> float:
        return float(values[idx].mean())

    def by_weights(w: np.ndarray) -> np.ndarray:
        return (w @ values) / w.sum(axis=1)

    plain = bootstrap_statistic(by_index, 57, rounds=500, seed=4)
    batched = bootstrap_weighted_statistic(by_weights, 57, rounds=500, seed=4)
    assert batched == pytest.approx(plain, rel=1e-12)


def test_bootstrap_weights_count_n_draws_per_round_in_batches_of_any_size() -> None:
    whole = np.concatenate(list(bootstrap_weights(9, rounds=25, seed=3, chunk=25)))
    pieces = np.concatenate(list(bootstrap_weights(9, rounds=25, seed=3, chunk=4)))
    assert np.array_equal(whole, pieces)
    assert np.all(whole.sum(axis=1) == 9)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_batched_alpha_equals_the_krippendorff_package_on_each_resample(level: str) -> None:
    item, rater, value = _ratings(2)
    units = _alpha_units(item, rater, value, level)
    rng = np.random.default_rng(5)
    unit_ids = np.unique(item)
    weights = np.stack(
        [
            np.bincount(rng.integers(0, units.n_units, units.n_units), minlength=units.n_units)
            for _ in range(6)
        ]
    ).astype(float)
    batched = units.alphas(weights)
    for w, got in zip(weights, batched, strict=True):
        # The resample as data: unit u repeated w[u] times, each copy its own unit.
        rows = []
        for u, times in enumerate(w.astype(int)):
            mask = item == unit_ids[u]
            for _ in range(times):
                row = np.full(12, np.nan)
                row[rater[mask]] = value[mask]
                rows.append(row)
        expected = krippendorff.alpha(reliability_data=np.array(rows).T, level_of_measurement=level)
        assert got == pytest.approx(expected, abs=1e-10)
        assert got == pytest.approx(units.alpha(w), abs=1e-12)


def test_alpha_and_kappa_intervals_keep_their_values_for_a_seed() -> None:
    item, rater, value = _ratings(3)
    for level in ("nominal", "ordinal", "interval"):
        units = _alpha_units(item, rater, value, level)

        def one(idx: np.ndarray, units=units) -> float:
            return units.alpha(np.bincount(idx, minlength=units.n_units).astype(float))

        low, high = bootstrap_statistic(one, units.n_units, rounds=300, seed=8)
        got = krippendorff_alpha_ci(item, rater, value, level=level, rounds=300, seed=8)
        assert (got.ci_low, got.ci_high) == pytest.approx((low, high), abs=1e-12)
    counts = fleiss_counts(item, value, 40, np.arange(4.0))
    kappa = fleiss_kappa_ci(item, value, 40, np.arange(4.0), rounds=300, seed=8)
    low, high = bootstrap_statistic(lambda idx: fleiss_kappa(counts[idx]), 40, rounds=300, seed=8)
    assert (kappa.ci_low, kappa.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_cluster_draws_are_multinomial_counts() -> None:
    draws = cluster_draws(np.random.default_rng(0), 50, 4000)
    assert draws.shape == (50, 4000)
    assert np.all(draws.sum(axis=0) == 50)
    # Each cluster's count is Binomial(50, 1/50): mean 1, variance 0.98.
    assert draws.mean() == pytest.approx(1.0)
    assert draws.var() == pytest.approx(0.98, rel=0.03)
    # Counts of one column are negatively correlated, as in a multinomial (-1/49).
    corr = np.corrcoef(draws[0], draws[1])[0, 1]
    assert corr == pytest.approx(-1 / 49, abs=0.03)


@pytest.mark.parametrize(
    ("n_clusters", "rounds"), [(1, 1), (7, 3), (1_999, 40), (2_000, 40), (75_000, 2)]
)
def test_cluster_draws_are_the_multiplicities_of_the_same_draws_laid_out_by_cluster(
    n_clusters: int, rounds: int
) -> None:
    """The same resamples as `multiplicities` reads from the same seed, in the order a sparse
    product takes without a copy (a cluster a row)."""
    draws = cluster_draws(np.random.default_rng(3), n_clusters, rounds)
    expected = multiplicities(np.random.default_rng(3), n_clusters, rounds).T
    assert draws.flags.c_contiguous
    assert draws.dtype == np.float64
    np.testing.assert_array_equal(draws, expected)


def test_many_groupings_give_each_grouping_its_clustered_interval() -> None:
    rng = np.random.default_rng(6)
    n_raters, n_items = 80, 30
    rater = np.repeat(np.arange(n_raters), 10)
    item = rng.integers(0, n_items, rater.size)
    value = rng.normal(0, 1, n_items)[item] + rng.normal(0, 0.7, n_raters)[rater]
    by_model = item % 3
    by_level = item % 2
    many = grouped_mean_ci_many(
        value, [(by_model, 3), (by_level, 2)], clusters=rater, rounds=4000, seed=1
    )
    for (est, low, high, n), (groups, k) in zip(many, [(by_model, 3), (by_level, 2)], strict=False):
        one = grouped_mean_ci(value, groups, k, clusters=rater, rounds=4000, seed=2)
        assert np.allclose(est, one[0])
        assert np.array_equal(n, one[3])
        width = one[2] - one[1]
        assert np.all(np.abs(low - one[1]) < 0.08 * width)
        assert np.all(np.abs(high - one[2]) < 0.08 * width)


def test_clustered_group_interval_of_one_grade_raters_is_the_ordinary_bootstrap() -> None:
    # Every grade its own rater (crowd data without rater ids): per group, resampling raters
    # is resampling the group's grades.
    rng = np.random.default_rng(9)
    value = rng.integers(0, 4, 3000).astype(float)
    groups = rng.integers(0, 3, 3000)
    _, low, high, _ = grouped_mean_ci(
        value, groups, 3, clusters=np.arange(3000), rounds=3000, seed=3
    )
    for g in range(3):
        ref = stats.bootstrap(
            (value[groups == g],), np.mean, n_resamples=3000, method="percentile", random_state=1
        ).confidence_interval
        width = ref.high - ref.low
        assert low[g] == pytest.approx(ref.low, abs=0.1 * width)
        assert high[g] == pytest.approx(ref.high, abs=0.1 * width)


def _traced_peak(run: Callable[[], object]) -> int:
    """Bytes allocated at the peak of `run` (numpy reports its arrays to tracemalloc)."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_clustered_bootstrap_holds_per_rater_sums_not_a_copy_of_the_ratings_per_grouping():
    """Five groupings of 400,000 ratings once built a sparse matrix of 2 x 5 x 400,000 entries
    (640 MB of a million-rating study's peak); it needs only one entry per group and rater."""
    rng = np.random.default_rng(4)
    n = 400_000
    rater = rng.integers(0, 2_000, n)
    value = rng.integers(0, 4, n).astype(float)
    groupings = [(rng.integers(0, k, n), k) for k in (3, 2, 5, 8, 4)]
    peak = _traced_peak(
        lambda: grouped_mean_ci_many(value, groupings, clusters=rater, rounds=20, seed=1)
    )
    # What the bootstrap adds: the groupings' indices as int64 (5 columns) and one grouping's
    # cells at a time; it was 72 columns' worth (231 MB), 2 x 5 copies of every rating among them.
    assert peak < 16 * value.nbytes, f"{peak / 1e6:.0f} MB"


def test_a_repeated_grouping_takes_the_rows_of_the_first_and_costs_no_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every dimension with one group (a study of one model, one level, ...) groups all the
    ratings alike: the crowd set's seven groupings were two distinct ones, and the products of
    the other five took 1.1 s of its aggregation."""
    item, rater, value = _ratings(5, n_items=40, n_raters=30)
    by_model = (item % 3, 3)
    everything = (np.zeros_like(item), 1)
    computed: list[list[int]] = []
    real = bootstrap._clustered_group_means

    def counting(v, gs, cl, sizes, rounds, rng):  # type: ignore[no-untyped-def]
        computed.append(list(sizes))
        return real(v, gs, cl, sizes, rounds, rng)

    monkeypatch.setattr(bootstrap, "_clustered_group_means", counting)
    repeated = grouped_mean_ci_many(
        value,
        [everything, by_model, everything, (item % 3, 3), everything],
        clusters=rater,
        rounds=300,
        seed=4,
    )
    assert computed == [[1, 3]]
    distinct = grouped_mean_ci_many(
        value, [everything, by_model], clusters=rater, rounds=300, seed=4
    )
    for got, want in zip(repeated, [*distinct, distinct[0], distinct[1], distinct[0]], strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_per_rater_sums_give_the_same_intervals_as_the_ratings_themselves():
    item, rater, value = _ratings(7, n_items=60, n_raters=25)
    groupings = [(item % 3, 3), (item % 4, 4)]
    many = grouped_mean_ci_many(value, groupings, clusters=rater, rounds=500, seed=8)
    # The same rounds, from ratings duplicated in order: sums per rater double, means do not.
    doubled = grouped_mean_ci_many(
        np.repeat(value, 2),
        [(np.repeat(g, 2), k) for g, k in groupings],
        clusters=np.repeat(rater, 2),
        rounds=500,
        seed=8,
    )
    for (est, low, high, n), (est2, low2, high2, n2) in zip(many, doubled, strict=True):
        assert np.allclose(est, est2)
        assert np.allclose(low, low2)
        assert np.allclose(high, high2)
        assert np.array_equal(2 * n, n2)


def test_item_intervals_in_one_pass_equal_one_by_one() -> None:
    """The per-item loop reads intervals converted in one pass: the same JSON as `_interval`
    of each row, nan and infinities as None, counts as integers."""
    from apps.analysis.stats.report import _interval, _intervals

    estimate = np.array([0.5, np.nan, 2.0, np.inf], dtype=np.float32)
    low = np.array([0.1, np.nan, -np.inf, 1.0])
    high = np.array([0.9, np.nan, 3.0, 2.0])
    n = np.array([4.0, 0.0, 7.0, 2.0])
    rows = _intervals(estimate, low, high, n)
    assert rows == [_interval(estimate[i], low[i], high[i], int(n[i])) for i in range(4)]
    assert rows[1] == {"value": None, "ci_low": None, "ci_high": None, "n": 0}
    assert all(type(row["n"]) is int for row in rows)
