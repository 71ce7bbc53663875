from __future__ import annotations

import csv
import json
from pathlib import Path

import choix
import numpy as np
import pytest

from apps.analysis.stats.bradley_terry import (
    DEFAULT_ALPHA,
    bt_bootstrap,
    bt_fit,
    bt_fit_matrix,
    win_matrix,
)
from apps.analysis.stats.ranks import ci_aware_ranks

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "stats"


def load_baseball() -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, dict[str, object]]:
    """Teams, (winner, loser, count) rows, and the published reference block."""
    with (FIXTURES / "bt_baseball_agresti1987.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    teams = sorted({r["home.team"] for r in rows} | {r["away.team"] for r in rows})
    index = {t: i for i, t in enumerate(teams)}
    winners, losers, counts = [], [], []
    for r in rows:
        home, away = index[r["home.team"]], index[r["away.team"]]
        # A home win is a win of home over away, an away win the reverse: no home advantage.
        winners += [home, away]
        losers += [away, home]
        counts += [int(r["home.wins"]), int(r["away.wins"])]
    expected = json.loads((FIXTURES / "expected.json").read_text())["bt_baseball_agresti1987"]
    return teams, np.array(winners), np.array(losers), np.array(counts, dtype=float), expected


def baseball_games() -> tuple[list[str], np.ndarray, np.ndarray]:
    teams, w, lo, c, _ = load_baseball()
    reps = c.astype(int)
    return teams, np.repeat(w, reps), np.repeat(lo, reps)


def relative_to(scores: np.ndarray, teams: list[str], reference: str) -> dict[str, float]:
    base = scores[teams.index(reference)]
    return {t: float(scores[i] - base) for i, t in enumerate(teams)}


def random_comparisons(
    n_items: int, n: int, seed: int, spread: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.0, spread, n_items)
    a = rng.integers(0, n_items, n)
    b = (a + rng.integers(1, n_items, n)) % n_items
    a_wins = rng.random(n) < 1.0 / (1.0 + np.exp(-(truth[a] - truth[b])))
    return np.where(a_wins, a, b), np.where(a_wins, b, a), truth


# --- the fit against published and independent values ----------------------------------------


def test_baseball_scores_match_published_log_abilities() -> None:
    teams, w, lo, c, expected = load_baseball()
    fit = bt_fit(w, lo, len(teams), weights=c, alpha=1e-9)
    got = relative_to(fit.scores, teams, expected["reference_item"])
    for team, value in expected["log_ability"].items():
        assert got[team] == pytest.approx(value, abs=expected["tol"]), team


def test_default_regularization_moves_baseball_scores_by_less_than_1e_3() -> None:
    teams, w, lo, c, expected = load_baseball()
    fit = bt_fit(w, lo, len(teams), weights=c)
    got = relative_to(fit.scores, teams, expected["reference_item"])
    for team, value in expected["log_ability"].items():
        assert got[team] == pytest.approx(value, abs=1e-3), team
    published_2dp = sorted(round(v, 2) for t, v in got.items() if t != "Baltimore")
    assert published_2dp == expected["agresti_table_10_11_sorted_2dp"]


def test_fisher_information_standard_errors_match_published_ones() -> None:
    # The Newton solver's Hessian is the observed information; its inverse must reproduce
    # BradleyTerry2's standard errors (Baltimore = 0 parametrisation).
    teams, w, lo, c, expected = load_baseball()
    fit = bt_fit(w, lo, len(teams), weights=c, alpha=1e-9)
    total = win_matrix(w, lo, len(teams), weights=c)
    total = total + total.T
    s = fit.scores
    p = 1.0 / (1.0 + np.exp(-(s[:, None] - s[None, :])))
    q = total * p * (1.0 - p)
    info = np.diag(q.sum(axis=1)) - q
    keep = [i for i, t in enumerate(teams) if t != "Baltimore"]
    cov = np.linalg.inv(info[np.ix_(keep, keep)])
    for pos, i in enumerate(keep):
        se = np.sqrt(cov[pos, pos])
        assert se == pytest.approx(expected["std_error"][teams[i]], abs=1e-4), teams[i]


def test_scores_match_choix_ilsr_on_connected_data() -> None:
    winners, losers, _ = random_comparisons(12, 600, seed=3)
    fit = bt_fit(winners, losers, 12, alpha=1e-10)
    reference = choix.ilsr_pairwise(12, np.column_stack([winners, losers]), tol=1e-12)
    np.testing.assert_allclose(fit.scores, reference - reference.mean(), atol=1e-6)


def test_ridge_fit_matches_choix_opt_pairwise_with_the_same_alpha() -> None:
    # Same penalty convention as choix.opt_pairwise: alpha * sum(s ** 2).
    winners, losers, _ = random_comparisons(8, 60, seed=4)
    fit = bt_fit(winners, losers, 8, alpha=0.05)
    reference = choix.opt_pairwise(8, np.column_stack([winners, losers]), alpha=0.05)
    np.testing.assert_allclose(fit.scores, reference - reference.mean(), atol=1e-6)


# --- properties --------------------------------------------------------------------------------


def test_scores_are_centred_to_mean_zero() -> None:
    winners, losers, _ = random_comparisons(10, 300, seed=5)
    fit = bt_fit(winners, losers, 10)
    assert fit.scores.mean() == pytest.approx(0.0, abs=1e-12)
    assert fit.converged
    assert fit.n_components == 1


def test_undefeated_item_gets_finite_score() -> None:
    # Item 0 wins all three of its games: the unpenalised estimate would be +inf (and
    # choix.ilsr_pairwise raises); the ridge keeps it finite but clearly on top.
    winners = np.array([0, 0, 0, 1, 2, 1, 2])
    losers = np.array([1, 2, 1, 2, 1, 2, 1])
    fit = bt_fit(winners, losers, 3)
    assert fit.converged
    assert np.all(np.isfinite(fit.scores))
    assert fit.scores[0] == fit.scores.max()
    assert 3.0 < fit.scores[0] - fit.scores[1:].mean() < 10.0


def test_item_that_never_wins_gets_finite_lowest_score() -> None:
    fit = bt_fit(np.array([0, 1, 0, 1]), np.array([2, 2, 1, 0]), 3)
    assert np.all(np.isfinite(fit.scores))
    assert fit.scores[2] == fit.scores.min()


def test_disconnected_graph_is_scored_and_centred_per_component() -> None:
    # Items {0, 1, 2} and {3, 4} are never compared with each other; 5 never at all.
    winners = np.array([0, 0, 1, 2, 3, 3, 4])
    losers = np.array([1, 2, 2, 1, 4, 4, 3])
    fit = bt_fit(winners, losers, 6)
    assert fit.n_components == 3
    comp = fit.component
    assert comp[0] == comp[1] == comp[2]
    assert comp[3] == comp[4]
    assert len({comp[0], comp[3], comp[5]}) == 3
    assert fit.scores[[0, 1, 2]].sum() == pytest.approx(0.0, abs=1e-12)
    assert fit.scores[[3, 4]].sum() == pytest.approx(0.0, abs=1e-12)
    assert fit.scores[5] == 0.0
    # Each component is exactly the fit of that component alone.
    alone = bt_fit(winners[:4], losers[:4], 3)
    np.testing.assert_allclose(fit.scores[:3], alone.scores, atol=1e-10)
    pair = bt_fit(winners[4:] - 3, losers[4:] - 3, 2)
    np.testing.assert_allclose(fit.scores[3:5], pair.scores, atol=1e-10)


def test_weights_equal_repeated_rows() -> None:
    winners = np.array([0, 1, 2, 2, 3])
    losers = np.array([1, 2, 0, 3, 1])
    counts = np.array([3, 1, 2, 5, 4])
    weighted = bt_fit(winners, losers, 4, weights=counts)
    repeated = bt_fit(np.repeat(winners, counts), np.repeat(losers, counts), 4)
    np.testing.assert_allclose(weighted.scores, repeated.scores, atol=1e-10)


def test_order_of_comparisons_does_not_change_scores() -> None:
    winners, losers, _ = random_comparisons(9, 200, seed=6)
    order = np.random.default_rng(0).permutation(winners.size)
    a = bt_fit(winners, losers, 9)
    b = bt_fit(winners[order], losers[order], 9)
    np.testing.assert_allclose(a.scores, b.scores, atol=1e-12)


def test_matrix_fit_equals_list_fit() -> None:
    winners, losers, _ = random_comparisons(7, 150, seed=7)
    from_list = bt_fit(winners, losers, 7)
    from_matrix = bt_fit_matrix(win_matrix(winners, losers, 7))
    np.testing.assert_allclose(from_list.scores, from_matrix.scores, atol=1e-12)


def test_warm_start_converges_to_the_same_scores_in_fewer_iterations() -> None:
    winners, losers, _ = random_comparisons(20, 2000, seed=8)
    cold = bt_fit(winners, losers, 20)
    warm = bt_fit(winners, losers, 20, init=cold.scores + 0.01)
    np.testing.assert_allclose(warm.scores, cold.scores, atol=1e-9)
    assert warm.iterations < cold.iterations


def test_fit_reports_non_convergence_when_iterations_run_out() -> None:
    winners, losers, _ = random_comparisons(10, 300, seed=9, spread=2.0)
    fit = bt_fit(winners, losers, 10, max_iter=1)
    assert not fit.converged
    assert fit.iterations == 1


@pytest.mark.parametrize(
    ("winners", "losers", "n_items", "message"),
    [
        ([0, 1], [1, 1], 2, "itself"),
        ([0, 2], [1, 0], 2, "out of range"),
        ([0, 1], [1], 2, "equal length"),
        ([0.0], [1.0], 2, "integer"),
    ],
)
def test_malformed_comparisons_are_rejected(
    winners: list[float], losers: list[float], n_items: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        bt_fit(np.array(winners), np.array(losers), n_items)


def test_zero_alpha_is_rejected() -> None:
    with pytest.raises(ValueError, match="alpha"):
        bt_fit(np.array([0]), np.array([1]), 2, alpha=0.0)


def test_default_alpha_is_small() -> None:
    assert 0 < DEFAULT_ALPHA <= 0.01


# --- bootstrap ---------------------------------------------------------------------------------


def rated_comparisons(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    winners, losers, _ = random_comparisons(10, 1500, seed=seed)
    raters = np.random.default_rng(seed + 1).integers(0, 50, winners.size)
    return winners, losers, raters


@pytest.mark.parametrize("cluster", ["rater", "none", "item"])
def test_bootstrap_interval_contains_the_estimate(cluster: str) -> None:
    winners, losers, raters = rated_comparisons(10)
    boot = bt_bootstrap(winners, losers, 10, clusters=raters, rounds=300, seed=1, cluster=cluster)
    assert np.all(boot.ci_low < boot.fit.scores)
    assert np.all(boot.fit.scores < boot.ci_high)
    assert boot.cluster == cluster
    assert boot.rounds == 300
    assert boot.seed == 1
    assert boot.level == 0.95


def test_bootstrap_with_the_same_seed_gives_the_same_result() -> None:
    winners, losers, raters = rated_comparisons(11)
    a = bt_bootstrap(winners, losers, 10, clusters=raters, rounds=200, seed=42)
    b = bt_bootstrap(winners, losers, 10, clusters=raters, rounds=200, seed=42)
    np.testing.assert_array_equal(a.ci_low, b.ci_low)
    np.testing.assert_array_equal(a.ci_high, b.ci_high)
    np.testing.assert_array_equal(a.rank, b.rank)


def test_bootstrap_with_a_different_seed_gives_a_different_interval() -> None:
    winners, losers, raters = rated_comparisons(11)
    a = bt_bootstrap(winners, losers, 10, clusters=raters, rounds=200, seed=42)
    b = bt_bootstrap(winners, losers, 10, clusters=raters, rounds=200, seed=43)
    assert not np.array_equal(a.ci_low, b.ci_low)
    np.testing.assert_array_equal(a.fit.scores, b.fit.scores)


def test_iid_bootstrap_agrees_with_refitting_resampled_game_lists_with_choix() -> None:
    # The naive bootstrap, done independently: resample the 546 games themselves and refit
    # with choix. Interval widths must agree within Monte Carlo error (~4% per width here).
    teams, winners, losers = baseball_games()
    n = len(teams)
    boot = bt_bootstrap(winners, losers, n, clusters=None, rounds=4000, seed=0, cluster="none")
    rng = np.random.default_rng(1)
    naive = []
    for _ in range(2000):
        idx = rng.integers(0, winners.size, winners.size)
        counts = np.bincount(winners[idx] * n + losers[idx], minlength=n * n).reshape(n, n)
        params = choix.ilsr_pairwise_dense(counts.astype(float))
        naive.append(params - params.mean())
    low, high = np.quantile(np.array(naive), [0.025, 0.975], axis=0)
    np.testing.assert_allclose(boot.ci_high - boot.ci_low, high - low, rtol=0.12)
    np.testing.assert_allclose(boot.ci_low, low, atol=0.06)
    np.testing.assert_allclose(boot.ci_high, high, atol=0.06)


def test_rater_bootstrap_needs_cluster_labels() -> None:
    winners, losers, _ = rated_comparisons(12)
    with pytest.raises(ValueError, match="clusters"):
        bt_bootstrap(winners, losers, 10, clusters=None, rounds=10, seed=0)


def test_unknown_cluster_mode_is_rejected() -> None:
    winners, losers, raters = rated_comparisons(12)
    with pytest.raises(ValueError, match="cluster"):
        bt_bootstrap(winners, losers, 10, clusters=raters, rounds=10, seed=0, cluster="judge")


def test_bootstrap_leaves_never_compared_item_without_interval() -> None:
    winners, losers, raters = rated_comparisons(13)
    boot = bt_bootstrap(winners, losers, 11, clusters=raters, rounds=100, seed=0)
    assert boot.fit.n_components == 2
    assert boot.fit.scores[10] == 0.0
    assert np.isnan(boot.ci_low[10])
    assert np.isnan(boot.ci_high[10])
    assert np.all(np.isfinite(boot.ci_low[:10]))


def test_bootstrap_ranks_follow_the_ci_rule_within_components() -> None:
    winners, losers, raters = rated_comparisons(14)
    # A second, disconnected topic whose items all look better than the first topic's.
    extra_w = np.array([10, 10, 11, 10, 12, 11] * 20)
    extra_l = np.array([11, 12, 12, 12, 11, 10] * 20)
    w = np.concatenate([winners, extra_w])
    lo = np.concatenate([losers, extra_l])
    r = np.concatenate([raters, np.arange(extra_w.size) % 7])
    boot = bt_bootstrap(w, lo, 13, clusters=r, rounds=200, seed=3)
    expected = ci_aware_ranks(
        boot.fit.scores, boot.ci_low, boot.ci_high, component=boot.fit.component
    )
    np.testing.assert_array_equal(boot.rank, expected)
    assert boot.rank[:10].min() == 1
    assert boot.rank[10:].min() == 1


def test_bootstrap_without_comparisons_leaves_every_interval_undefined() -> None:
    empty = np.array([], dtype=np.int64)
    boot = bt_bootstrap(empty, empty, 3, clusters=empty, rounds=50, seed=0)
    assert boot.fit.n_components == 3
    np.testing.assert_array_equal(boot.fit.scores, np.zeros(3))
    assert np.all(np.isnan(boot.ci_low))
    np.testing.assert_array_equal(boot.rank, [1, 1, 1])


def test_undefeated_item_has_finite_bootstrap_interval() -> None:
    winners = np.array([0, 0, 0, 1, 2, 1, 2, 0, 1, 2])
    losers = np.array([1, 2, 1, 2, 1, 2, 1, 2, 2, 1])
    raters = np.arange(winners.size) % 4
    boot = bt_bootstrap(winners, losers, 3, clusters=raters, rounds=200, seed=0)
    assert np.all(np.isfinite(boot.ci_low))
    assert np.all(np.isfinite(boot.ci_high))


def test_resamples_that_split_a_sparse_design_are_counted() -> None:
    # A chain 0-1-2-3 where each link comes from a single rater: a resample missing one rater
    # cuts the chain.
    winners = np.array([0, 1, 2, 1, 2, 3])
    losers = np.array([1, 2, 3, 0, 1, 2])
    raters = np.array([0, 1, 2, 0, 1, 2])
    boot = bt_bootstrap(winners, losers, 4, clusters=raters, rounds=200, seed=0)
    assert boot.fit.n_components == 1
    assert 100 < boot.disconnected_rounds < 200
    dense_w, dense_l, dense_r = rated_comparisons(15)
    dense = bt_bootstrap(dense_w, dense_l, 10, clusters=dense_r, rounds=100, seed=0)
    assert dense.disconnected_rounds == 0


# --- ranks -------------------------------------------------------------------------------------


def test_overlapping_intervals_share_a_rank() -> None:
    scores = np.array([3.0, 2.0, 1.0, 0.0])
    low = np.array([2.5, 1.8, 0.5, -0.5])
    high = np.array([3.5, 2.6, 1.5, 0.6])
    # 0 and 1 overlap -> both 1; item 2 is clearly below both -> 3; item 3 overlaps 2 only,
    # and 0 and 1 are clearly above it -> 3.
    np.testing.assert_array_equal(ci_aware_ranks(scores, low, high), [1, 1, 3, 3])


def test_rank_counts_only_clearly_better_items() -> None:
    scores = np.array([0.0, 1.0, 2.0])
    low = np.array([-0.1, 0.9, 1.9])
    high = np.array([0.1, 1.1, 2.1])
    np.testing.assert_array_equal(ci_aware_ranks(scores, low, high), [3, 2, 1])


def test_ranks_ignore_items_of_other_components() -> None:
    scores = np.array([5.0, 4.0, 0.0, -1.0])
    low = np.array([4.5, 3.5, -0.5, -1.5])
    high = np.array([5.5, 4.4, 0.5, -0.6])
    component = np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(
        ci_aware_ranks(scores, low, high, component=component), [1, 2, 1, 2]
    )
    np.testing.assert_array_equal(ci_aware_ranks(scores, low, high), [1, 2, 3, 4])


def test_item_with_undefined_interval_ranks_first_and_pushes_no_one_down() -> None:
    scores = np.array([1.0, 0.0, 0.0])
    low = np.array([0.5, -0.5, np.nan])
    high = np.array([1.5, 0.4, np.nan])
    np.testing.assert_array_equal(ci_aware_ranks(scores, low, high), [1, 2, 1])
