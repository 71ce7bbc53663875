"""One-sided bounds and ranks of undefeated and never-winning items (apps/analysis/stats/ends.py).

Bounds are checked against profile likelihoods written out by hand and maximised by scipy, the
exact cut against the Clopper-Pearson bound, the inner fits against choix, the scale against the
full-data fit and the bootstrap of the finite comparisons, and the ranks on small hand-made
boards. A reduced coverage simulation (benchmarks/sim_end_bounds.py) is marked slow.
"""

from __future__ import annotations

import choix
import numpy as np
import pytest
from scipy import optimize, stats
from scipy.special import expit, log_expit, logit

from apps.analysis.stats.bradley_terry import bt_bootstrap, bt_fit
from apps.analysis.stats.ends import (
    EndBounds,
    end_ranks,
    finite_comparison_mask,
    one_sided_bounds,
    profile_loglik,
    shift_to_finite_centre,
)

EXACT_95 = -2.0 * np.log(0.05)  # 5.991
CHI2_95 = stats.norm.ppf(0.95) ** 2  # 2.706


def comparisons(*rows: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(winner, loser, times) rows -> winners, losers arrays."""
    winners = np.concatenate([np.full(n, w) for w, _, n in rows])
    losers = np.concatenate([np.full(n, lo) for _, lo, n in rows])
    return winners, losers


def random_design(
    n_items: int, per_item: int, spread: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every item in ``per_item`` random perfect matchings; (winners, losers, truth)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.0, spread, n_items)
    perms = [rng.permutation(n_items) for _ in range(per_item)]
    a = np.concatenate([p[0::2] for p in perms])
    b = np.concatenate([p[1::2] for p in perms])
    a_wins = rng.random(a.size) < expit(truth[a] - truth[b])
    return np.where(a_wins, a, b), np.where(a_wins, b, a), truth


# --- the bound against hand-written profile likelihoods ---------------------------------------

# A (0) beats B (1) three times; B and C (2) split 5-5. A is undefeated, B and C are finite.
HAND = comparisons((0, 1, 3), (1, 2, 5), (2, 1, 5))


def hand_profile(t: float) -> float:
    """l_p(t) for t = s_A - (s_B + s_C) / 2, written out: s_B = x, s_C = -x, s_A = t."""

    def negative(x: float) -> float:
        return -(5 * log_expit(2 * x) + 5 * log_expit(-2 * x) + 3 * log_expit(t - x))

    res = optimize.minimize_scalar(
        negative, bounds=(-50.0, 50.0), method="bounded", options={"xatol": 1e-12}
    )
    return -float(res.fun)


@pytest.mark.parametrize(("cut", "c"), [("exact", EXACT_95), ("chi2", CHI2_95)])
def test_undefeated_bound_is_the_root_of_the_hand_written_profile(cut: str, c: float) -> None:
    # sup l_p is the B-C log-likelihood at its maximum (s_B = s_C): 10 log(1/2).
    sup = 10 * np.log(0.5)
    expected = optimize.brentq(lambda t: 2 * (sup - hand_profile(t)) - c, -20, 20, xtol=1e-12)
    ends = one_sided_bounds(*HAND, 3, cut=cut, simultaneous=False)
    assert ends.end.tolist() == [1, 0, 0]
    assert ends.bound[0] == pytest.approx(expected, abs=1e-6)
    assert np.isnan(ends.bound[1:]).all()
    # The profile itself, not just its root.
    profile = profile_loglik(*HAND, 3, 0)
    for t in (-2.0, 0.0, 1.5, 6.0):
        assert profile(t) == pytest.approx(hand_profile(t), abs=1e-8)


def test_never_won_bound_is_the_mirror_image() -> None:
    winners, losers = HAND
    up = one_sided_bounds(winners, losers, 3)
    down = one_sided_bounds(losers, winners, 3)
    assert down.end.tolist() == [-1, 0, 0]
    assert down.bound[0] == pytest.approx(-up.bound[0], abs=1e-9)


def test_supremum_of_the_profile_is_the_likelihood_without_the_items_comparisons() -> None:
    profile = profile_loglik(*HAND, 3, 0)
    values = [profile(t) for t in (0.0, 2.0, 5.0, 10.0, 30.0)]
    assert np.all(np.diff(values) > 0)  # non-decreasing in t, as an undefeated item's must be
    assert values[-1] == pytest.approx(10 * np.log(0.5), abs=1e-9)


@pytest.mark.parametrize("n", [1, 3, 12])
def test_exact_cut_gives_the_clopper_pearson_bound_against_a_single_finite_item(n: int) -> None:
    # A beats B n times, B beats V once: F = {B}, so t_A = s_A - s_B and the profile is exact:
    # n log sigmoid(t) = -c / 2. With the exact cut, sigmoid(bound) is the Clopper-Pearson lower
    # bound of a win probability after n wins in n; V's upper bound is the mirror image.
    winners, losers = comparisons((0, 1, n), (1, 2, 1))
    ends = one_sided_bounds(winners, losers, 3, simultaneous=False)
    assert ends.end.tolist() == [1, 0, -1]
    clopper_pearson = stats.beta.ppf(0.05, n, 1)
    assert expit(ends.bound[0]) == pytest.approx(clopper_pearson, rel=1e-8)
    assert ends.bound[2] == pytest.approx(-logit(stats.beta.ppf(0.05, 1, 1)), rel=1e-8)
    chi2 = one_sided_bounds(winners, losers, 3, cut="chi2", simultaneous=False)
    assert chi2.bound[0] == pytest.approx(logit(np.exp(-CHI2_95 / (2 * n))), rel=1e-8)
    assert chi2.bound[0] > ends.bound[0]  # the chi-square cut claims more


def test_bounds_are_simultaneous_by_default_with_bonferroni_over_every_item_and_side() -> None:
    winners, losers = comparisons((0, 1, 3), (1, 2, 1))
    ends = one_sided_bounds(winners, losers, 5)  # items 3 and 4 never compared: not counted
    assert ends.simultaneous
    error = 0.05 / (2 * 3)
    assert expit(ends.bound[0]) == pytest.approx(error ** (1 / 3), rel=1e-8)
    assert expit(-ends.bound[2]) == pytest.approx(error, rel=1e-8)


def test_tiny_profile_ridge_moves_the_bound_by_less_than_1e_3() -> None:
    winners, losers, _ = random_design(16, 12, 1.5, seed=2)
    free = one_sided_bounds(winners, losers, 16, profile_ridge=0.0)
    ridged = one_sided_bounds(winners, losers, 16)  # PROFILE_RIDGE = 1e-9
    heavier = one_sided_bounds(winners, losers, 16, profile_ridge=1e-6)
    has = np.isfinite(free.bound)
    assert has.sum() == 2  # the design produced two bounded end items
    assert np.abs(ridged.bound[has] - free.bound[has]).max() < 1e-6
    assert np.abs(heavier.bound[has] - free.bound[has]).max() < 1e-3


# --- inner fits against choix -------------------------------------------------------------------


def test_inner_fits_reproduce_choix_maximum_likelihood_where_no_item_is_at_an_end() -> None:
    winners, losers, _ = random_design(8, 30, 0.8, seed=7)
    assert np.all(np.bincount(winners, minlength=8) > 0)
    assert np.all(np.bincount(losers, minlength=8) > 0)
    data = list(zip(winners.tolist(), losers.tolist(), strict=True))
    ref = choix.opt_pairwise(8, data, alpha=1e-12, tol=1e-12)
    ref = ref - ref.mean()
    loglik = float(np.sum(log_expit(ref[winners] - ref[losers])))
    for item in (0, 5):
        profile = profile_loglik(winners, losers, 8, item)
        t_hat = ref[item] - np.delete(ref, item).mean()
        # At the MLE's value of t the constrained fit is the unconstrained one...
        assert profile(t_hat) == pytest.approx(loglik, abs=1e-8)
        fitted = profile.offset(t_hat) + profile.basis @ profile.z
        assert fitted[0] - fitted[1:].mean() == pytest.approx(t_hat, abs=1e-10)
        order = np.concatenate([[item], np.delete(np.arange(8), item)])
        assert fitted - fitted.mean() == pytest.approx(ref[order], abs=1e-5)
        # ...and anywhere else it is lower.
        assert profile(t_hat + 0.3) < loglik - 1e-4
        assert profile(t_hat - 0.3) < loglik - 1e-4


# --- the scale ---------------------------------------------------------------------------------


def test_scores_are_the_finite_only_fit_centred_on_the_finite_items() -> None:
    winners, losers, _ = random_design(20, 8, 1.5, seed=4)
    ends = one_sided_bounds(winners, losers, 20)
    assert (ends.end != 0).sum() == 4
    assert ends.identified.all()
    assert np.isnan(ends.scores[ends.end != 0]).all()
    for label in np.unique(ends.component):
        fin = (ends.component == label) & (ends.end == 0)
        if fin.any():
            assert ends.scores[fin].mean() == pytest.approx(0.0, abs=1e-12)
    fin = ends.end == 0
    # bt_fit's centring on all items, ridge-held ends included, drags the finite items.
    full = bt_fit(winners, losers, 20)
    assert np.abs(full.scores[fin] - ends.scores[fin]).max() > 0.5
    # The full data's ML fit with end items at their limits: a full-data fit with a vanishing
    # ridge, moved to the finite centre, is the fit to the finite comparisons (the ends'
    # residual pull on their opponents vanishes with the ridge).
    tiny = one_sided_bounds(winners, losers, 20, alpha=1e-9)
    full = bt_fit(winners, losers, 20, alpha=1e-9)
    shifted, shift = shift_to_finite_centre(full.scores, full.component, ends.end)
    assert shifted[fin] == pytest.approx(tiny.scores[fin], abs=1e-6)
    assert np.isnan(shifted[~fin]).all()
    assert np.isfinite(shift).all()


def test_bootstrap_of_the_finite_comparisons_is_on_the_same_scale() -> None:
    winners, losers, _ = random_design(20, 10, 1.5, seed=8)
    raters = np.arange(winners.size) % 9
    ends = one_sided_bounds(winners, losers, 20)
    mask = finite_comparison_mask(winners, losers, ends.end)
    assert not mask.all()
    assert (ends.end[winners[mask]] == 0).all()
    assert (ends.end[losers[mask]] == 0).all()
    boot = bt_bootstrap(winners[mask], losers[mask], 20, clusters=raters[mask], rounds=200, seed=3)
    fin = ends.end == 0
    assert boot.fit.scores[fin] == pytest.approx(ends.scores[fin], abs=1e-9)
    assert np.all(boot.ci_low[fin] <= ends.scores[fin])
    assert np.all(ends.scores[fin] <= boot.ci_high[fin])


def test_shift_of_a_full_data_fit_is_the_mean_of_its_finite_items() -> None:
    scores = np.array([6.0, 1.0, -1.0, 2.0, -5.0, 0.5])
    component = np.array([0, 0, 0, 1, 1, 1])
    end = np.array([1, 0, 0, 0, -1, -1])
    shifted, shift = shift_to_finite_centre(scores, component, end)
    assert shift.tolist() == [0.0, 0.0, 0.0, 2.0, 2.0, 2.0]
    assert shifted[[1, 2, 3]].tolist() == [1.0, -1.0, 0.0]
    assert np.isnan(shifted[[0, 4, 5]]).all()


# --- several ends, all ends, no comparisons, unidentified scales --------------------------------


def test_two_undefeated_items_are_each_bounded_with_the_other_at_its_limit() -> None:
    # A (0) and D (3) never met and never lost; B (1) and C (2) split 4-4 and each lost to both.
    winners, losers = comparisons((0, 1, 2), (0, 2, 1), (3, 2, 3), (1, 2, 4), (2, 1, 4))
    ends = one_sided_bounds(winners, losers, 4, simultaneous=False)
    assert ends.end.tolist() == [1, 0, 0, 1]
    # With D at its limit its comparisons contribute 0: A's bound is the bound in the data
    # without D's comparisons, and vice versa.
    keep_a = (winners != 3) & (losers != 3)
    keep_d = (winners != 0) & (losers != 0)
    alone_a = one_sided_bounds(winners[keep_a], losers[keep_a], 4, simultaneous=False)
    alone_d = one_sided_bounds(winners[keep_d], losers[keep_d], 4, simultaneous=False)
    assert ends.bound[0] == pytest.approx(alone_a.bound[0], abs=1e-9)
    assert ends.bound[3] == pytest.approx(alone_d.bound[3], abs=1e-9)
    # Beating both finite items says more than beating one of them as often: C alone can sit
    # lower relative to the finite mean (at a cost in the B-C games) than B and C together.
    assert ends.bound[0] > ends.bound[3]


def test_component_of_only_end_items_has_no_scale_and_no_bound() -> None:
    # A beat B: no finite item, no centre to put a bound on. C, D, E form a normal component.
    winners, losers = comparisons((0, 1, 1), (2, 3, 2), (3, 2, 1), (3, 4, 1), (4, 3, 1), (2, 4, 1))
    ends = one_sided_bounds(winners, losers, 5)
    assert ends.end[:2].tolist() == [1, -1]
    assert np.isnan(ends.bound[:2]).all()
    assert np.isnan(ends.scores[:2]).all()
    assert not ends.identified[:2].any()
    assert ends.identified[2:].all()
    ranks = end_ranks(ends.scores, np.full(5, -1.0), np.full(5, 1.0), ends)
    assert ranks[:2].tolist() == [1, 1]  # no claim either way


def test_item_never_compared_has_no_score_and_no_bound() -> None:
    ends = one_sided_bounds(*HAND, 4)
    assert ends.end[3] == 0
    assert np.isnan(ends.bound[3])
    assert np.isnan(ends.scores[3])
    assert not ends.identified[3]


def test_finite_items_joined_only_through_end_items_leave_the_scale_unidentified() -> None:
    # B-C and D-E are two pairs that split their games; A beat B and D, V lost to C and E.
    # Without A and V the finite items fall apart: their mean is not determined by the data.
    winners, losers = comparisons(
        (1, 2, 2), (2, 1, 2), (3, 4, 2), (4, 3, 2), (0, 1, 1), (0, 3, 1), (2, 5, 1), (4, 5, 1)
    )
    ends = one_sided_bounds(winners, losers, 6)
    assert ends.end.tolist() == [1, 0, 0, 0, 0, -1]
    assert not ends.identified.any()
    assert np.isnan(ends.bound).all()


def test_finite_item_that_lost_only_to_an_undefeated_item_leaves_the_scale_unidentified() -> None:
    # A > B > C > D: B never lost to a finite item, so B - C has no finite ML estimate.
    winners, losers = comparisons((0, 1, 1), (1, 2, 1), (2, 3, 1))
    ends = one_sided_bounds(winners, losers, 4)
    assert ends.end.tolist() == [1, 0, 0, -1]
    assert not ends.identified.any()
    assert np.isnan(ends.bound).all()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="cut"):
        one_sided_bounds(*HAND, 3, cut="wald")
    with pytest.raises(ValueError, match="level"):
        one_sided_bounds(*HAND, 3, level=1.0)
    with pytest.raises(ValueError, match="out of range"):
        one_sided_bounds(*HAND, 2)
    ends = one_sided_bounds(*HAND, 3)
    with pytest.raises(ValueError, match="one entry per item"):
        end_ranks(np.zeros(2), np.zeros(2), np.zeros(2), ends)


# --- ranks ---------------------------------------------------------------------------------------


def board(end: list[int], bound: list[float]) -> EndBounds:
    n = len(end)
    return EndBounds(
        end=np.array(end),
        bound=np.array(bound),
        scores=np.where(np.array(end) == 0, 0.0, np.nan),
        component=np.zeros(n, dtype=np.int64),
        identified=np.ones(n, dtype=bool),
        level=0.95,
        cut="exact",
        simultaneous=False,
    )


def test_ranks_of_undefeated_never_won_and_finite_items() -> None:
    nan = np.nan
    # 0, 1: undefeated (never met), bounds 0.5 and 1.5; 2: finite, interval reaches 0.9 (above
    # item 0's bound, below item 1's); 3: finite, far below both; 4: never won, below 3's lower
    # end; 5: finite, overlaps everything.
    ends = board([1, 1, 0, 0, -1, 0], [0.5, 1.5, nan, nan, -2.5, nan])
    ci_low = np.array([nan, nan, 0.2, -2.0, nan, -3.0])
    ci_high = np.array([nan, nan, 0.9, -1.0, nan, 2.0])
    scores = np.array([nan, nan, 0.5, -1.5, nan, 0.0])
    ranks = end_ranks(scores, ci_low, ci_high, ends)
    assert ranks[0] == 1  # undefeated: nothing can be clearly above them
    assert ranks[1] == 1
    assert ranks[2] == 2  # overlaps item 0's bound, but lies below item 1's
    assert ranks[3] == 4  # below both bounds and below item 2
    assert ranks[4] == 5  # the bottom rank that follows: items 0, 1, 2, 3 are clearly above
    assert ranks[5] == 1  # its interval reaches past every bound


def test_strong_finite_item_overlapping_the_bound_shares_rank_one() -> None:
    ends = board([1, 0, 0], [1.0, np.nan, np.nan])
    ranks = end_ranks(
        np.array([np.nan, 0.8, -0.8]),
        np.array([np.nan, 0.4, -1.2]),
        np.array([np.nan, 1.3, -0.4]),
        ends,
    )
    # Item 1 reaches past the bound: it may be the best, rank 1 beside the undefeated item.
    # Item 2 lies below the bound and below item 1.
    assert ranks.tolist() == [1, 1, 3]


def test_ranks_from_real_bounds_put_the_undefeated_item_first() -> None:
    # A beat B, C, D twice each; B, C, D play a round robin with upsets; E lost to everyone.
    rows = [(0, 1, 2), (0, 2, 2), (0, 3, 2)]
    rows += [(1, 2, 3), (2, 1, 2), (1, 3, 4), (3, 1, 1), (2, 3, 3), (3, 2, 2)]
    rows += [(1, 4, 2), (2, 4, 2), (3, 4, 2)]
    winners, losers = comparisons(*rows)
    ends = one_sided_bounds(winners, losers, 5)
    assert ends.end.tolist() == [1, 0, 0, 0, -1]
    assert ends.identified.all()
    mask = finite_comparison_mask(winners, losers, ends.end)
    boot = bt_bootstrap(
        winners[mask], losers[mask], 5, clusters=None, rounds=500, seed=1, cluster="none"
    )
    ranks = end_ranks(ends.scores, boot.ci_low, boot.ci_high, ends)
    assert ranks[0] == 1
    assert ranks[4] == ranks.max()
    expected_bottom = 1 + np.sum(
        np.where(ends.end == 1, ends.bound, boot.ci_low)[:4] > ends.bound[4]
    )
    assert ranks[4] == expected_bottom


# --- coverage (reduced sim_end_bounds.py) ---------------------------------------------------------


def simulated_coverage(studies: int, seed: int) -> dict[str, tuple[float, float]]:
    """Per kind of bound: (share of bounded end items whose bound holds, misses per item)."""
    kinds = {"simultaneous": ("exact", True), "exact": ("exact", False), "chi2": ("chi2", False)}
    hits = dict.fromkeys(kinds, 0)
    bounded = dict.fromkeys(kinds, 0)
    misses_up = dict.fromkeys(kinds, 0)
    for study in range(studies):
        winners, losers, truth = random_design(30, 12, 2.0, seed=seed + study)
        for name, (cut, simultaneous) in kinds.items():
            ends = one_sided_bounds(winners, losers, 30, cut=cut, simultaneous=simultaneous)
            has = (ends.end != 0) & ~np.isnan(ends.bound)
            for i in np.flatnonzero(has):
                fin = (ends.component == ends.component[i]) & (ends.end == 0)
                t = truth[i] - truth[fin].mean()
                held = t >= ends.bound[i] if ends.end[i] == 1 else t <= ends.bound[i]
                hits[name] += int(held)
                misses_up[name] += int(not held and ends.end[i] == 1)
            bounded[name] += int(has.sum())
    return {name: (hits[name] / bounded[name], misses_up[name] / (30 * studies)) for name in kinds}


@pytest.mark.slow
def test_default_bounds_hold_for_the_items_that_ended_at_an_end() -> None:
    # benchmarks/sim_end_bounds.py, stratum spread 2, 12 comparisons per item (200 studies):
    # share of bounded end items whose bound held 1.000 (simultaneous), 0.942 +- 0.019 (exact,
    # per item), 0.674 +- 0.042 (chi-square); misses per item 0.000, 0.001, 0.004.
    # This run (30 items, 150 studies, ~7 s) has 117 bounded end items among 378 and measured
    # 1.000, 0.872 and 0.598; misses per item 0.000, 0.002, 0.004.
    got = simulated_coverage(studies=150, seed=500)
    # With 117 items a true coverage of 0.99 falls below 0.93 with probability well under 1%.
    assert got["simultaneous"][0] >= 0.93
    # The per-item exact cut keeps its guarantee, P(undefeated and missed) <= 5% per item...
    assert got["exact"][1] <= 0.05
    # ...but not coverage given "ended at an end"; the chi-square cut is far below it (its
    # standard error here is ~0.05, so 0.85 is about five above the measured 0.598).
    assert got["chi2"][0] < 0.85
    assert got["chi2"][0] < got["exact"][0] <= got["simultaneous"][0]
