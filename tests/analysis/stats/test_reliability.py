"""Reliability of the board: split-half ranking correlation and k-rater reliability, against
published values (Shrout & Fleiss 1979), independent code (statsmodels OLS ANOVA and MixedLM,
scipy's Spearman) and data whose answer is known by construction."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

from apps.analysis.stats import reliability
from apps.analysis.stats.reliability import (
    _grouped_spearman,
    by_group,
    k_rater_reliability,
    spearman_brown,
    split_half_ranking_pairs,
    split_half_ranking_scores,
)

# Shrout & Fleiss (1979), Table 2: 6 targets (rows) rated by 4 judges (columns).
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    dtype=np.float64,
)


def _long(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_items, n_raters = table.shape
    item = np.repeat(np.arange(n_items), n_raters)
    rater = np.tile(np.arange(n_raters), n_items)
    return item, rater, table.ravel()


def _scores(
    seed: int,
    *,
    n_items: int = 40,
    n_raters: int = 60,
    share: float = 0.5,
    item_sd: float = 1.0,
    leniency_sd: float = 0.0,
    noise_sd: float = 1.5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-way ratings: each rater rates each item with probability ``share``."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, item_sd, n_items)
    leniency = rng.normal(0.0, leniency_sd, n_raters)
    item, rater = np.nonzero(rng.random((n_items, n_raters)) < share)
    value = effect[item] + leniency[rater] + rng.normal(0.0, noise_sd, item.size)
    return item, rater, value


def _pairs(
    seed: int,
    *,
    strengths: np.ndarray,
    n_raters: int = 40,
    per_rater: int = 80,
    topic_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bradley-Terry judgments; with ``topic_size`` only items of the same topic are paired."""
    rng = np.random.default_rng(seed)
    n_items = strengths.size
    rater = np.repeat(np.arange(n_raters), per_rater)
    if topic_size is None:
        left = rng.integers(0, n_items, rater.size)
        right = (left + rng.integers(1, n_items, rater.size)) % n_items
    else:
        topic = rng.integers(0, n_items // topic_size, rater.size)
        a = rng.integers(0, topic_size, rater.size)
        b = (a + rng.integers(1, topic_size, rater.size)) % topic_size
        left, right = topic * topic_size + a, topic * topic_size + b
    p_left = 1.0 / (1.0 + np.exp(-(strengths[left] - strengths[right])))
    return left, right, rng.random(rater.size) < p_left, rater


def _mixedlm_icc(item: np.ndarray, value: np.ndarray) -> float:
    frame = pd.DataFrame({"y": value, "item": item})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter on near-boundary fits
        fit = smf.mixedlm("y ~ 1", frame, groups=frame["item"]).fit(reml=True)
    var_u = float(fit.cov_re.iloc[0, 0])
    return var_u / (var_u + float(fit.scale))


# --- k-rater reliability: published values and independent code ---------------------------------


def test_shrout_fleiss_table_2_gives_their_icc_1_1_and_icc_1_4() -> None:
    item, rater, value = _long(SHROUT_FLEISS)
    res = k_rater_reliability(item, rater, value, 6, ks=(1, 4), rounds=200, seed=1)
    assert res.reason is None
    assert res.icc is not None
    assert round(res.icc, 2) == 0.17
    # Their Table 3 mean squares: BMS = 11.24, WMS = 6.26.
    assert res.ms_between == pytest.approx(11.24, abs=0.005)
    assert res.ms_within == pytest.approx(6.26, abs=0.005)
    assert res.k0 == pytest.approx(4.0)
    assert res.k_mean == pytest.approx(4.0)
    assert res.at_mean is not None
    assert res.at_mean.value is not None
    assert round(res.at_mean.value, 2) == 0.44
    by_k = {k.k: k.value for k in res.by_k}
    assert by_k[1.0] is not None
    assert by_k[4.0] is not None
    assert round(by_k[1.0], 2) == 0.17
    assert round(by_k[4.0], 2) == 0.44


def test_mean_squares_match_statsmodels_one_way_anova_on_unbalanced_data() -> None:
    item, rater, value = _scores(3, share=0.3)
    res = k_rater_reliability(item, rater, value, 40, rounds=10, seed=0)
    frame = pd.DataFrame({"y": value, "item": item.astype(str)})
    table = sm.stats.anova_lm(smf.ols("y ~ C(item)", frame).fit())
    assert res.ms_between == pytest.approx(table["mean_sq"].iloc[0], rel=1e-10)
    assert res.ms_within == pytest.approx(table["mean_sq"].iloc[1], rel=1e-10)
    counts = np.bincount(item, minlength=40)
    n, total = int((counts > 0).sum()), counts.sum()
    assert res.k0 == pytest.approx((total - (counts**2).sum() / total) / (n - 1))
    assert res.k_mean == pytest.approx(total / n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icc_equals_mixedlm_reml_on_balanced_data(seed: int) -> None:
    # With balanced data and a positive estimate, REML variance components are the ANOVA ones:
    # the two differ only by the optimiser's tolerance (~1e-6 seen), hence 1e-4.
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, 1.0, 30)
    item, rater, _ = _long(np.zeros((30, 8)))
    value = effect[item] + rng.normal(0.0, 1.5, item.size)
    res = k_rater_reliability(item, rater, value, 30, rounds=10, seed=0)
    assert res.icc == pytest.approx(_mixedlm_icc(item, value), abs=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icc_is_close_to_mixedlm_reml_on_unbalanced_data(seed: int) -> None:
    # Unbalanced, the estimators weigh items differently (ANOVA's MSB by n_i, REML by
    # 1 / (s2_u + s2_e / n_i)); both are consistent, so on 300 items with 3-36 ratings each
    # they differ by sampling noise, 0.001-0.005 seen. 0.02 is four times the largest.
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, 1.0, 300)
    share = rng.uniform(0.05, 0.6, 300)
    item, rater = np.nonzero(rng.random((300, 60)) < share[:, None])
    value = effect[item] + rng.normal(0.0, 1.5, item.size)
    res = k_rater_reliability(item, rater, value, 300, rounds=10, seed=0)
    assert res.icc == pytest.approx(_mixedlm_icc(item, value), abs=0.02)


# --- k-rater reliability: the step-up, the interval and the empirical cross-check --------------


def test_k_rater_values_and_intervals_are_the_step_up_of_the_icc() -> None:
    item, rater, value = _scores(5)
    res = k_rater_reliability(item, rater, value, 40, rounds=300, seed=7)
    assert res.reason is None
    assert res.icc is not None
    assert res.icc_ci_low is not None
    assert res.icc_ci_high is not None
    assert res.icc_ci_low < res.icc < res.icc_ci_high
    assert [k.k for k in res.by_k] == [1, 3, 5, 10, 15, 20]
    for at_k in res.by_k:
        assert at_k.value == pytest.approx(at_k.k * res.icc / (1 + (at_k.k - 1) * res.icc))
        assert at_k.ci_low == pytest.approx(spearman_brown(res.icc_ci_low, at_k.k))
        assert at_k.ci_high == pytest.approx(spearman_brown(res.icc_ci_high, at_k.k))
    values = [at_k.value for at_k in res.by_k]
    assert values == sorted(values)


def test_the_interval_is_reproducible_and_follows_the_seed() -> None:
    item, rater, value = _scores(6)
    first = k_rater_reliability(item, rater, value, 40, rounds=200, seed=3)
    again = k_rater_reliability(item, rater, value, 40, rounds=200, seed=3)
    other = k_rater_reliability(item, rater, value, 40, rounds=200, seed=4)
    assert first == again
    assert first.icc == other.icc
    assert first.icc_ci_low != other.icc_ci_low


def test_expanded_interval_is_wider_than_the_plain_percentile_one() -> None:
    item, rater, value = _scores(8, n_raters=12, share=0.8)
    plain = k_rater_reliability(item, rater, value, 40, rounds=400, seed=1, interval="percentile")
    wide = k_rater_reliability(item, rater, value, 40, rounds=400, seed=1, interval="expanded")
    assert plain.icc_ci_low is not None
    assert plain.icc_ci_high is not None
    assert wide.icc_ci_low is not None
    assert wide.icc_ci_high is not None
    assert wide.icc_ci_low < plain.icc_ci_low
    assert wide.icc_ci_high > plain.icc_ci_high


def test_empirical_k_rater_reliability_agrees_with_the_spearman_brown_prediction() -> None:
    # 200 items with ~32 ratings each: every k up to 15 has 2k ratings on most items.
    item, rater, value = _scores(9, n_items=200, n_raters=80, share=0.4)
    res = k_rater_reliability(item, rater, value, 200, ks=(1, 3, 5, 10), rounds=50, seed=2)
    for at_k in res.by_k:
        assert at_k.empirical is not None
        assert at_k.value is not None
        assert at_k.empirical_items >= 100
        assert at_k.empirical == pytest.approx(at_k.value, abs=0.04)


def test_empirical_value_is_none_where_too_few_items_have_2k_ratings() -> None:
    item, rater, value = _scores(10, n_raters=20, share=0.5)
    res = k_rater_reliability(item, rater, value, 40, ks=(3, 20), rounds=50, seed=2)
    small, large = res.by_k
    assert small.empirical is not None
    assert large.empirical is None
    assert large.empirical_items == 0
    assert large.value is not None


def test_negative_icc_is_reported_and_the_step_up_is_truncated_at_zero() -> None:
    # Item means that vary less than chance: every item has the same values, in rotation.
    table = np.array([[1.0, 5.0, 3.0, 4.0], [5.0, 3.0, 1.0, 4.0], [3.0, 1.0, 5.0, 4.0]] * 3)
    item, rater, value = _long(table)
    res = k_rater_reliability(item, rater, value, 9, ks=(1, 5), rounds=100, seed=0)
    assert res.icc is not None
    assert res.icc < 0
    assert all(at_k.value == 0.0 for at_k in res.by_k)
    assert res.at_mean is not None
    assert res.at_mean.value == 0.0


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("three_raters", "too_few_raters"),
        ("one_item", "too_few_items"),
        ("one_rating_each", "too_few_ratings_per_item"),
        ("constant", "zero_variance"),
    ],
)
def test_undefined_reliability_returns_none_with_the_reason(case: str, reason: str) -> None:
    if case == "three_raters":
        item, rater, value = _long(SHROUT_FLEISS[:, :3])
    elif case == "one_item":
        item, rater, value = _long(SHROUT_FLEISS[:1])
    elif case == "one_rating_each":
        item, rater, value = np.arange(10), np.arange(10), np.arange(10.0)
    else:
        item, rater, value = _long(np.full((6, 4), 3.0))
    res = k_rater_reliability(item, rater, value, 10, rounds=50, seed=0)
    assert res.reason == reason
    assert res.icc is None
    assert res.icc_ci_low is None
    assert res.icc_ci_high is None
    assert res.at_mean is None
    assert res.by_k == ()


def test_a_rater_rating_an_item_twice_is_refused() -> None:
    item, rater, value = _long(SHROUT_FLEISS)
    with pytest.raises(ValueError, match="more than once"):
        k_rater_reliability(
            np.append(item, 0), np.append(rater, 0), np.append(value, 1.0), 6, seed=0
        )


def test_missing_answers_are_dropped() -> None:
    item, rater, value = _long(SHROUT_FLEISS)
    with_gap = k_rater_reliability(
        np.append(item, 0), np.append(rater, 9), np.append(value, np.nan), 6, rounds=50, seed=0
    )
    plain = k_rater_reliability(item, rater, value, 6, rounds=50, seed=0)
    assert with_gap.icc == plain.icc
    assert with_gap.n_ratings == plain.n_ratings == 24


# --- Split-half ranking correlation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "groups"),
    [
        ([3.0, 1.0, 2.0, 5.0, 4.0], [2.0, 1.0, 3.0, 5.0, 5.0], [0, 0, 0, 0, 0]),
        (
            [0.1, 0.5, 0.2, 0.9, 1.0, 1.0, 0.3, 0.2, 0.4, 7.0],
            [1.0, 2.0, 2.0, 0.5, 0.1, 0.3, 0.2, 0.2, 0.9, 1.0],
            [4, 4, 4, 4, 9, 9, 9, 9, 9, 2],
        ),
    ],
)
def test_grouped_spearman_is_the_item_weighted_mean_of_scipy_spearman_per_group(
    a: list[float], b: list[float], groups: list[int]
) -> None:
    av, bv, gv = np.array(a), np.array(b), np.array(groups)
    rho, used, why = _grouped_spearman(av, bv, gv, 3)
    assert why is None
    # Groups of fewer than 3 items (group 2 here) are left out.
    expected, weights = [], []
    for g in np.unique(gv):
        members = gv == g
        if members.sum() >= 3:
            expected.append(stats.spearmanr(av[members], bv[members]).statistic)
            weights.append(members.sum())
    assert used == sum(weights)
    assert rho == pytest.approx(np.average(expected, weights=weights), abs=1e-12)


def test_pairs_from_raters_who_share_the_true_order_give_a_correlation_near_1() -> None:
    left, right, winner_is_left, rater = _pairs(1, strengths=np.linspace(-6.0, 6.0, 30))
    res = split_half_ranking_pairs(left, right, winner_is_left, rater, 30, splits=100, seed=4)
    assert res.reason is None
    assert res.n_splits_used == 100
    assert res.n_items_mean == 30
    assert res.mean is not None
    assert res.q025 is not None
    assert res.q975 is not None
    assert res.median is not None
    assert res.mean > 0.95
    assert res.q025 <= res.median <= res.q975
    assert res.spearman_brown == pytest.approx(2 * res.mean / (1 + res.mean))


def test_pairs_of_pure_noise_give_a_mean_near_0() -> None:
    # Split-half means of one noise data set scatter with sd ~0.09 (60 items, measured over 20
    # data sets); the mean of five is within 0.12 (three standard errors) of 0.
    means = []
    for seed in range(5):
        left, right, _, rater = _pairs(seed, strengths=np.zeros(60), per_rater=75)
        noise = np.random.default_rng(100 + seed).random(left.size) < 0.5
        res = split_half_ranking_pairs(left, right, noise, rater, 60, splits=60, seed=seed)
        assert res.mean is not None
        means.append(res.mean)
    assert abs(np.mean(means)) < 0.12
    assert max(abs(m) for m in means) < 0.35


def test_pairs_within_disconnected_topics_are_correlated_topic_by_topic() -> None:
    # Three topics of 10 items; pairs never cross a topic, so each fit has three components.
    strengths = np.tile(np.linspace(-5.0, 5.0, 10), 3)
    left, right, winner_is_left, rater = _pairs(2, strengths=strengths, topic_size=10)
    res = split_half_ranking_pairs(left, right, winner_is_left, rater, 30, splits=50, seed=1)
    assert res.reason is None
    assert res.n_items_mean == 30
    assert res.mean is not None
    assert res.mean > 0.9


def test_scores_from_raters_who_share_the_true_order_give_a_correlation_near_1() -> None:
    item, rater, value = _scores(11, item_sd=3.0, noise_sd=0.3)
    res = split_half_ranking_scores(item, rater, value, 40, splits=100, seed=2)
    assert res.reason is None
    assert res.mean is not None
    assert res.mean > 0.98
    assert res.n_items_mean == 40


def test_scores_of_pure_noise_give_a_mean_near_0() -> None:
    means = []
    for seed in range(5):
        item, rater, value = _scores(seed, n_items=60, item_sd=0.0)
        res = split_half_ranking_scores(np.asarray(item), rater, value, 60, splits=60, seed=seed)
        assert res.mean is not None
        means.append(res.mean)
    assert abs(np.mean(means)) < 0.12
    assert max(abs(m) for m in means) < 0.35


def test_too_few_raters_gives_none_with_the_reason() -> None:
    item, rater, value = _long(SHROUT_FLEISS[:, :3])
    scores = split_half_ranking_scores(item, rater, value, 6, seed=0)
    left, right, winner_is_left, _ = _pairs(3, strengths=np.linspace(-1.0, 1.0, 10))
    pairs = split_half_ranking_pairs(
        left, right, winner_is_left, np.arange(left.size) % 3, 10, seed=0
    )
    for res in (scores, pairs):
        assert res.reason == "too_few_raters"
        assert res.n_raters == 3
        assert res.n_splits_used == 0
        assert res.as_dict()["mean"] is None
        for field in ("mean", "median", "q025", "q975", "n_items_mean", "spearman_brown"):
            assert getattr(res, field) is None


def test_too_few_common_items_gives_none_with_the_reason() -> None:
    # Every rater rates only items 0 or 1: at most two common items in any split.
    item, rater, value = _long(SHROUT_FLEISS[:2])
    res = split_half_ranking_scores(item, rater, value, 6, splits=20, seed=0)
    assert res.reason == "too_few_items"
    assert res.mean is None
    assert res.n_splits_used == 0


def test_constant_boards_give_none_with_the_reason() -> None:
    item, rater, value = _long(np.full((6, 8), 4.0))
    res = split_half_ranking_scores(item, rater, value, 6, splits=20, seed=0)
    assert res.reason == "no_variation"
    assert res.mean is None


# --- Per group ------------------------------------------------------------------------------------


def test_by_group_scores_are_the_statistics_of_each_groups_answers() -> None:
    item, rater, value = _scores(12, share=0.6)
    codes = np.array(["model-a", "human"])[np.arange(40) % 2]
    result = by_group(codes, scores=(item, rater, value), splits=40, rounds=100, seed=5)
    assert sorted(result) == ["human", "model-a"]
    for code, group in result.items():
        rows = codes[item] == code
        assert group.n_items == 20
        assert group.pairs is None
        assert group.scores == split_half_ranking_scores(
            item[rows], rater[rows], value[rows], 40, splits=40, seed=5
        )
        assert group.k_rater == k_rater_reliability(
            item[rows], rater[rows], value[rows], 40, rounds=100, seed=5
        )


def test_groups_counted_together_equal_each_groups_answers_alone() -> None:
    """The split halves of the groups every rater answered in are counted once for all of
    them; a group only some raters answered in is dealt on its own. Both equal one call per
    group's answers exactly, unanswered questions (nan) included."""
    item, rater, value = _scores(14, n_raters=30, share=0.7)
    value[::17] = np.nan
    codes = np.array(["a", "b", "c"])[np.arange(40) % 3]
    # Group "c" only from the first ten raters: its halves are dealt from its own raters.
    keep = (codes[item] != "c") | (rater < 10)
    item, rater, value = item[keep], rater[keep], value[keep]
    result = by_group(
        codes, scores=(item, rater, value), splits=30, rounds=20, seed=3, draws=5, whole="all"
    )
    for label, items in (("a", codes == "a"), ("b", codes == "b"), ("c", codes == "c")):
        rows = items[item]
        assert result[label].scores == split_half_ranking_scores(
            item[rows], rater[rows], value[rows], 40, splits=30, seed=3
        )
    assert result["c"].scores is not None
    assert result["c"].scores.n_raters == 10
    assert result["all"].scores == split_half_ranking_scores(
        item, rater, value, 40, splits=30, seed=3
    )


def test_groups_no_rater_answered_all_of_deal_only_their_own_halves(monkeypatch) -> None:
    """Raters who each rated one group's items (a crowd's one-grade raters): no group is
    counted with the others, so no halves of all the raters are dealt for them, only each
    group's own. The groups' figures are those of their answers alone."""
    item, rater, value = _scores(15, n_raters=40, share=0.6)
    codes = np.array(["a", "b"])[np.arange(40) % 2]
    # Raters 0-19 rated only group a's items, raters 20-39 only group b's.
    keep = (codes[item] == "a") == (rater < 20)
    item, rater, value = item[keep], rater[keep], value[keep]
    dealt: list[int] = []
    real = reliability._half_masks

    def counted(rng: np.random.Generator, n_raters: int, splits: int) -> np.ndarray:
        dealt.append(n_raters)
        return real(rng, n_raters, splits)

    monkeypatch.setattr(reliability, "_half_masks", counted)
    result = by_group(codes, scores=(item, rater, value), splits=20, rounds=20, seed=4)
    assert sorted(dealt) == [20, 20]
    for label in ("a", "b"):
        rows = codes[item] == label
        assert result[label].scores == split_half_ranking_scores(
            item[rows], rater[rows], value[rows], 40, splits=20, seed=4
        )


def test_beside_the_study_the_groups_read_its_random_orders(monkeypatch) -> None:
    """With the whole study asked for, the ratings are shuffled once per draw for the study
    and all its groups. Each group's ICC and interval are still those of its answers alone;
    its empirical k-rater reliability is another Monte Carlo draw of the same estimand (within
    its Monte Carlo error of the group's own draws); the study's equals a call on all answers."""
    from apps.analysis.stats import reliability

    item, rater, value = _scores(21, n_items=90, n_raters=40, share=0.5)
    codes = np.array(["a", "b", "c"])[np.arange(90) % 3]
    shuffles = []
    real = reliability._shuffled_blocks

    def counted(*args, **kwargs):
        shuffles.append(args[3])
        yield from real(*args, **kwargs)

    monkeypatch.setattr(reliability, "_shuffled_blocks", counted)
    options = {"splits": 10, "rounds": 50, "seed": 8, "ks": (1, 3, 5)}
    found = by_group(codes, scores=(item, rater, value), whole="all", **options)
    assert len(shuffles) == 1
    study = k_rater_reliability(item, rater, value, 90, rounds=50, seed=8, ks=(1, 3, 5))
    assert found["all"].k_rater == study
    for code in "abc":
        rows = codes[item] == code
        alone = k_rater_reliability(
            item[rows], rater[rows], value[rows], 90, rounds=50, seed=8, ks=(1, 3, 5)
        )
        group = found[code].k_rater
        assert group is not None
        assert group.icc == alone.icc
        assert (group.icc_ci_low, group.icc_ci_high) == (alone.icc_ci_low, alone.icc_ci_high)
        for mine, theirs in zip(group.by_k, alone.by_k, strict=True):
            assert mine.value == theirs.value
            assert mine.empirical_items == theirs.empirical_items == 30
            assert mine.empirical is not None
            assert theirs.empirical is not None
            # 200 draws of a correlation over 30 items: Monte Carlo sd below 0.015 each.
            assert mine.empirical != theirs.empirical
            assert abs(mine.empirical - theirs.empirical) < 0.07


def test_a_group_of_every_item_reads_the_studys_empirical_value_exactly() -> None:
    item, rater, value = _scores(22, n_items=30, n_raters=40, share=0.6)
    found = by_group(
        np.array(["only"] * 30), scores=(item, rater, value), whole="all", rounds=30, seed=4
    )
    assert found["only"].k_rater == found["all"].k_rater


def test_by_group_pairs_fit_every_pair_and_correlate_the_groups_items() -> None:
    # Every pair is one model's item against the other's: within-group pairs do not exist, so
    # only fits on all pairs can score a group.
    strengths = np.linspace(-6.0, 6.0, 20)
    rng = np.random.default_rng(3)
    rater = np.repeat(np.arange(30), 60)
    left = 2 * rng.integers(0, 10, rater.size)
    right = 2 * rng.integers(0, 10, rater.size) + 1
    p_left = 1.0 / (1.0 + np.exp(-(strengths[left] - strengths[right])))
    winner_is_left = rng.random(rater.size) < p_left
    codes = np.array(["even", "odd"])[np.arange(20) % 2]
    result = by_group(codes, pairs=(left, right, winner_is_left, rater), splits=30, seed=1)
    for group in result.values():
        assert group.scores is None
        assert group.k_rater is None
        assert group.pairs is not None
        assert group.pairs.reason is None
        assert group.pairs.n_items_mean == 10
        assert group.pairs.mean is not None
        assert group.pairs.mean > 0.9
    whole = by_group(["all"] * 20, pairs=(left, right, winner_is_left, rater), splits=30, seed=1)
    assert whole["all"].pairs == split_half_ranking_pairs(
        left, right, winner_is_left, rater, 20, splits=30, seed=1
    )


# --- Coverage (slow) ------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_k_rater_interval_covers_the_planted_reliability_at_about_95_percent() -> None:
    # 40 items whose effects have sample variance exactly 1 ("these items"), 60 raters with
    # leniency sd 0.7 and noise sd 1.3, each rating half the items: ICC(1) = 1 / 3.18.
    # benchmarks/sim_reliability.py measures 94-96% in designs like this one.
    rng = np.random.default_rng(2027)
    truth = 1.0 / (1.0 + 0.7**2 + 1.3**2)
    covered = 0
    studies = 150
    for study in range(studies):
        effect = rng.normal(0.0, 1.0, 40)
        effect = (effect - effect.mean()) / effect.std(ddof=1)
        leniency = rng.normal(0.0, 0.7, 60)
        item, rater = np.nonzero(rng.random((40, 60)) < 0.5)
        value = effect[item] + leniency[rater] + rng.normal(0.0, 1.3, item.size)
        res = k_rater_reliability(item, rater, value, 40, ks=(5,), rounds=400, seed=study)
        at_5 = res.by_k[0]
        assert at_5.ci_low is not None
        assert at_5.ci_high is not None
        covered += at_5.ci_low <= spearman_brown(truth, 5) <= at_5.ci_high
    # Measured 0.933 (140 of 150) with these seeds; Monte Carlo standard error ~0.02.
    assert 0.9 <= covered / studies <= 0.99


def test_the_whole_study_beside_its_groups_equals_the_whole_study_alone() -> None:
    rng = np.random.default_rng(31)
    n_items, n_raters = 24, 12
    quality = rng.normal(0, 1, n_items)
    left = rng.integers(0, n_items, 600)
    right = (left + rng.integers(1, n_items, 600)) % n_items
    winner_is_left = rng.random(600) < 1 / (1 + np.exp(quality[right] - quality[left]))
    rater = rng.integers(0, n_raters, 600)
    item = np.repeat(np.arange(n_items), n_raters)
    who = np.tile(np.arange(n_raters), n_items)
    value = np.round(quality[item] + rng.normal(0, 1, item.size))
    kwargs = {
        "scores": (item, who, value),
        "pairs": (left, right, winner_is_left, rater),
        "splits": 20,
        "rounds": 50,
        "seed": 5,
    }
    groups = np.array(["a", "b"] * (n_items // 2))
    both = by_group(groups, whole="all", **kwargs)
    alone = by_group(np.array(["all"] * n_items), **kwargs)
    assert set(both) == {"a", "b", "all"}
    assert both["all"].pairs == alone["all"].pairs
    assert both["all"].scores == alone["all"].scores
    assert both["all"].k_rater == alone["all"].k_rater
    with pytest.raises(ValueError, match="also a group code"):
        by_group(groups, whole="a", **kwargs)


def test_the_batched_half_fits_equal_one_bt_fit_per_half() -> None:
    """Many small topics, as a real study's pairs: the batched solve gives bt_fit's scores."""
    from apps.analysis.stats.bradley_terry import bt_fit
    from apps.analysis.stats.reliability import _half_components, _half_fits, _half_masks

    rng = np.random.default_rng(41)
    n_items, n_raters, n = 60, 16, 900
    topic = np.arange(n_items) // 4  # 15 topics of 4
    quality = rng.normal(0, 1, n_items)
    left = rng.integers(0, n_items, n)
    right = topic[left] * 4 + (left % 4 + rng.integers(1, 4, n)) % 4
    left_won = rng.random(n) < 1 / (1 + np.exp(quality[right] - quality[left]))
    winners, losers = np.where(left_won, left, right), np.where(left_won, right, left)
    rater = rng.integers(0, n_raters, n)
    halves = _half_masks(np.random.default_rng(3), n_raters, 7)
    scores_a, scores_b = _half_fits(winners, losers, rater, n_items, halves, alpha=1e-3)
    for s in range(7):
        for side, batched in ((halves[s][rater], scores_a[s]), (~halves[s][rater], scores_b[s])):
            alone = bt_fit(winners[side], losers[side], n_items, alpha=1e-3)
            _, labels = _half_components(winners[side], losers[side], n_items)
            np.testing.assert_array_equal(labels, alone.component)
            np.testing.assert_allclose(batched, alone.scores, atol=1e-5)


def test_each_shuffle_draws_the_items_own_ratings_in_every_order_equally_often() -> None:
    """The empirical k-rater reliability's random orders (items grouped by their number of
    ratings, each row shuffled): each item's own ratings, each once, every one first equally
    often."""
    from apps.analysis.stats.reliability import _shuffled_blocks

    counts = np.array([2, 5, 3, 7, 4, 5, 1])
    it = np.repeat(np.arange(counts.size), counts)
    rng = np.random.default_rng(1)
    it = it[rng.permutation(it.size)]  # ratings stored in any order
    va = (1000 * it + np.arange(it.size)).astype(float)  # item and a unique rating id
    firsts = []
    for blocks in _shuffled_blocks(it, va, counts, 2, 3000, rng):
        # One block per number of ratings (the item with one rating is left out), in order.
        assert [block.shape[1:] for block in blocks] == [(1, 2), (1, 3), (1, 4), (2, 5), (1, 7)]
        for block in blocks:
            items = block // 1000
            assert np.all(items == items[:, :, :1])
            assert all(
                len(set(row)) == block.shape[2]
                for row in block.reshape(-1, block.shape[2]).tolist()
            )
        firsts.append(blocks[-1][:, 0, 0])  # item 3's first rating in each draw
    first = np.concatenate(firsts)
    assert first.size == 3000
    # Each of item 3's seven ratings comes first in about 1/7 of 3,000 draws (sd about 19).
    _, times = np.unique(first, return_counts=True)
    assert times.size == 7
    assert np.all(np.abs(times - 3000 / 7) < 5 * 19)


def test_with_its_ks_a_shuffle_draws_only_the_places_they_read_in_every_order_equally() -> None:
    """With the k's it serves, each item's random order is drawn only as deep as the largest
    k with 2k ratings reads (2k places): for k = 1 only, two places, drawn without shuffling
    the rest of a row (`_random_prefix`). The two are two of the item's own ratings, never the
    same one, every ordered pair equally often: the first places of a uniform shuffle."""
    from apps.analysis.stats.reliability import _shuffled_blocks

    counts = np.array([2, 5, 3, 7, 4, 5, 1, 13])
    it = np.repeat(np.arange(counts.size), counts)
    rng = np.random.default_rng(4)
    it = it[rng.permutation(it.size)]
    va = (1000 * it + np.arange(it.size)).astype(float)
    pairs: dict[int, list[np.ndarray]] = {3: [], 7: []}
    for blocks in _shuffled_blocks(it, va, counts, 2, 4000, rng, (1, 3)):
        # k = 3 reads six places of the rows of 7 and 13 ratings, k = 1 two of the others.
        assert [block.shape[1:] for block in blocks] == [
            (1, 2),
            (1, 2),
            (1, 2),
            (2, 2),
            (1, 6),
            (1, 6),
        ]
        for block in blocks:
            items = block // 1000
            assert np.all(items == items[:, :, :1])
            rows = block.reshape(-1, block.shape[2]).tolist()
            assert all(len(set(row)) == len(row) for row in rows)
        pairs[3].append(blocks[3][:, 1, :])  # item 5: 5 ratings, two places
        pairs[7].append(blocks[5][:, 0, :])  # item 7: 13 ratings, six places
    five = np.concatenate(pairs[3])
    assert five.shape == (4000, 2)
    ids = np.unique(five)
    assert ids.size == 5
    first, second = np.searchsorted(ids, five[:, 0]), np.searchsorted(ids, five[:, 1])
    table = np.bincount(5 * first + second, minlength=25).reshape(5, 5)
    assert np.all(np.diag(table) == 0)
    # 20 ordered pairs, each about 4000 / 20 = 200 times (sd about 14).
    off = table[~np.eye(5, dtype=bool)]
    assert np.all(np.abs(off - 200) < 5 * 14)
    # The 13-rating item's six places: each of its ratings first about 1/13 of the time.
    thirteen = np.concatenate(pairs[7])
    _, times = np.unique(thirteen[:, 0], return_counts=True)
    assert times.size == 13
    assert np.all(np.abs(times - 4000 / 13) < 5 * 17)


def test_prefix_draws_give_each_place_every_rating_left_equally_often() -> None:
    """`_random_prefix` on its own, three places of rows of nine: the joint law of a
    shuffle's first three places (9 x 8 x 7 ordered triples, each equally likely)."""
    from apps.analysis.stats.reliability import _random_prefix

    table = np.arange(18, dtype=float).reshape(2, 9)
    drawn = _random_prefix(table, 60_000, 3, np.random.default_rng(6))
    assert drawn.shape == (60_000, 2, 3)
    assert np.all(drawn[:, 1] >= 9)
    assert np.all(drawn[:, 0] < 9)
    places = drawn[:, 0, :].astype(int)
    assert np.all(
        (places[:, 0] != places[:, 1])
        & (places[:, 0] != places[:, 2])
        & (places[:, 1] != places[:, 2])
    )
    # Each place: each of the nine ratings 1/9 of the time (sd about 77 of 6,667).
    for j in range(3):
        assert np.all(np.abs(np.bincount(places[:, j], minlength=9) - 60_000 / 9) < 5 * 77)
    # Each ordered triple: 60,000 / 504, about 119 times (sd about 11).
    triples = np.bincount(81 * places[:, 0] + 9 * places[:, 1] + places[:, 2], minlength=729)
    seen = triples[triples > 0]
    assert seen.size == 504
    assert np.all(np.abs(seen - 60_000 / 504) < 5.5 * 11)


def test_a_crowd_of_one_grade_raters_reads_k_1_from_two_drawn_places() -> None:
    """The crowd shape (five one-grade raters per item): only k = 1 has 2k ratings, and its
    empirical value, read from two drawn places per item, agrees with ICC(1) as the
    Spearman-Brown prediction says."""
    rng = np.random.default_rng(12)
    n_items = 3000
    item = np.repeat(np.arange(n_items), 5)
    rater = np.arange(item.size)
    value = rng.normal(0.0, 1.0, n_items)[item] + rng.normal(0.0, 1.5, item.size)
    res = k_rater_reliability(item, rater, value, n_items, rounds=50, seed=3)
    one = next(at_k for at_k in res.by_k if at_k.k == 1)
    assert one.empirical_items == n_items
    assert one.empirical is not None
    assert one.value is not None
    assert one.empirical == pytest.approx(one.value, abs=0.03)
    assert all(at_k.empirical is None for at_k in res.by_k if at_k.k > 2)


def test_a_groups_icc_bootstrap_is_that_of_its_items_alone():
    """by_group gives a group's bootstrap every item of the study; the unrated ones are left
    out of its products and sums, which changes nothing but the time (to rounding)."""
    rng = np.random.default_rng(21)
    n_items, n_raters = 90, 60
    it = np.repeat(np.arange(0, n_items, 3), 8)  # a third of the items, 8 ratings each
    ra = np.concatenate([rng.choice(n_raters, 8, replace=False) for _ in range(n_items // 3)])
    va = rng.normal(size=it.size) + 0.4 * (it % 5)
    given_all = reliability._bootstrap_icc(
        it, ra, va, n_items, n_raters, 300, np.random.default_rng(4)
    )
    # The same rounds per batch as with every item, so the same draws.
    alone = reliability._bootstrap_icc(
        it // 3, ra, va, n_items // 3, n_raters, 300, np.random.default_rng(4)
    )
    assert np.isfinite(given_all).all()
    np.testing.assert_allclose(given_all, alone, rtol=0, atol=1e-12)
