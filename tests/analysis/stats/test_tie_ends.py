"""One-sided bounds of end items on boards fitted with ties (apps/analysis/stats/tie_ends.py).

The bound is checked against a profile likelihood written out by hand from the models'
probabilities and maximised by scipy over every free parameter, the Davidson bound without
ties against ends.one_sided_bounds, the finite scores against tie_fit, and the ranks.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from apps.analysis.stats import tie_ends
from apps.analysis.stats.ends import end_ranks, one_sided_bounds
from apps.analysis.stats.tie_ends import tie_one_sided_bounds
from apps.analysis.stats.ties import LEFT, RIGHT, TIE, tie_fit

# Item 0 beat 1, 2 and 3 (only wins: undefeated); item 4 lost to 1, 2 and 3 twice (never won);
# 1, 2, 3 won, lost and tied among themselves (finite).
ROWS = [
    (0, 1, LEFT),
    (0, 2, LEFT),
    (0, 3, LEFT),
    (1, 2, LEFT),
    (2, 1, LEFT),
    (1, 3, LEFT),
    (2, 3, LEFT),
    (3, 1, LEFT),
    (1, 2, TIE),
    (3, 2, TIE),
    (2, 3, TIE),
    (3, 4, LEFT),
    (3, 4, LEFT),
    (1, 4, LEFT),
    (2, 4, LEFT),
]
LEFT_, RIGHT_, OUT = (np.array(col) for col in zip(*ROWS, strict=True))
N = 5
FINITE = [1, 2, 3]
# Exact simultaneous cut: error 5% over both sides of the 5 compared items.
CUT = -2.0 * np.log(0.05 / 10)


def log_prob(model: str, si: float, sj: float, tie: float, outcome: int) -> float:
    """log P(outcome) for left i, right j; ``tie`` is nu (Davidson) or theta (Rao-Kupper)."""
    if model == "davidson":
        num = [np.exp(si), np.exp(sj), tie * np.exp((si + sj) / 2)]
        return float(np.log(num[outcome]) - np.log(sum(num)))
    pij = np.exp(si) / (np.exp(si) + tie * np.exp(sj))
    pji = np.exp(sj) / (np.exp(sj) + tie * np.exp(si))
    return float(np.log([pij, pji, (tie**2 - 1) * pij * pji][outcome]))


def brute_bound(model: str, item: int, side: int) -> float:
    """Profile bound of ``item`` by brute force: the other end item's comparisons dropped, free
    parameters s_2, s_3 (s_1 = 0) and the tie parameter, t = s_item - mean(s_1, s_2, s_3)."""
    rows = [r for r in ROWS if {r[0], r[1]} <= set(FINITE) | {item}]

    def loglik(params: np.ndarray, t: float | None) -> float:
        s = {1: 0.0, 2: params[0], 3: params[1]}
        tie = np.exp(params[2]) if model == "davidson" else 1.0 + np.exp(params[2])
        if t is not None:
            s[item] = np.mean([s[f] for f in FINITE]) + t
        total = 0.0
        for i, j, o in rows:
            if i in s and j in s:
                total += log_prob(model, s[i], s[j], tie, o)
        return total

    def sup(t: float | None) -> float:
        best = -np.inf
        for start in ([0.0, 0.0, 0.0], [0.5, -0.5, -1.0], [-0.5, 0.5, 0.5]):
            res = optimize.minimize(
                lambda p: -loglik(p, t), start, method="BFGS", options={"gtol": 1e-10}
            )
            best = max(best, -res.fun)
        return best

    top = sup(None)
    return float(optimize.brentq(lambda t: side * (2 * (top - sup(t)) - CUT), -20, 20, xtol=1e-8))


@pytest.mark.parametrize("model", ["davidson", "rao_kupper"])
def test_bound_equals_brute_force_profile(model: str) -> None:
    tb = tie_one_sided_bounds(LEFT_, RIGHT_, OUT, N, model=model)
    assert list(tb.end) == [1, 0, 0, 0, -1]
    assert tb.identified.all()
    assert tb.cut == "exact"
    assert tb.simultaneous
    assert tb.level == 0.95
    assert tb.bound[0] == pytest.approx(brute_bound(model, 0, 1), abs=1e-4)
    assert tb.bound[4] == pytest.approx(brute_bound(model, 4, -1), abs=1e-4)
    assert np.isnan(tb.bound[FINITE]).all()


def test_davidson_without_ties_is_bradley_terry() -> None:
    decided = OUT != TIE
    winners, losers = LEFT_[decided], RIGHT_[decided]
    tb = tie_one_sided_bounds(winners, losers, np.full(winners.size, LEFT), N, model="davidson")
    eb = one_sided_bounds(winners, losers, N)
    # With no tie the tie parameter sits at nu = 0, where Davidson is Bradley-Terry exactly; what
    # remains are the two inner Newton solvers and their stopping rules.
    np.testing.assert_allclose(tb.bound, eb.bound, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(tb.scores, eb.scores, atol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(tb.identified, eb.identified)


@pytest.mark.parametrize("model", ["davidson", "rao_kupper"])
def test_the_quasi_newton_fallback_reaches_the_same_bound(model: str, monkeypatch) -> None:
    """Newton gives way to L-BFGS-B where it cannot step; both find the same profile."""
    newton = tie_one_sided_bounds(LEFT_, RIGHT_, OUT, N, model=model)
    monkeypatch.setattr(tie_ends, "_newton_max", lambda *args: None)
    fallback = tie_one_sided_bounds(LEFT_, RIGHT_, OUT, N, model=model)
    np.testing.assert_allclose(newton.bound, fallback.bound, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("model", ["davidson", "rao_kupper"])
def test_finite_scores_are_the_fit_to_finite_comparisons(model: str) -> None:
    tb = tie_one_sided_bounds(LEFT_, RIGHT_, OUT, N, model=model)
    keep = np.isin(LEFT_, FINITE) & np.isin(RIGHT_, FINITE)
    fit = tie_fit(LEFT_[keep], RIGHT_[keep], OUT[keep], N, model=model)
    np.testing.assert_allclose(tb.scores[FINITE], fit.scores[FINITE], atol=1e-10)
    assert tb.scores[FINITE].sum() == pytest.approx(0.0, abs=1e-10)  # the finite centre
    assert np.isnan(tb.scores[[0, 4]]).all()


def test_ranks_put_the_undefeated_item_first() -> None:
    # Item 0's wins repeated eight times: a bound high enough to rank finite items below it.
    extra = [r for r in ROWS if r[0] == 0] * 7
    left, right, out = (np.array(col) for col in zip(*(ROWS + extra), strict=True))
    tb = tie_one_sided_bounds(left, right, out, N, model="davidson")
    width = np.full(N, 0.3)
    rank = end_ranks(tb.scores, tb.scores - width, tb.scores + width, tb)
    assert rank[0] == 1
    # Its bound lies above every finite item's upper end here, so they all rank below it.
    assert tb.bound[0] > np.nanmax(tb.scores + width)
    assert (rank[FINITE] > 1).all()
    assert rank[4] > 1


def test_a_tie_keeps_an_item_finite_and_rules_of_identification() -> None:
    # 0 beat 1 (undefeated), 1 beat 4 (never won), 1 tied 2, 2 and 3 beat each other: among the
    # finite items 1, 2, 3 the tie gives 1 a way to each side, so the scale is identified.
    left, right = np.array([0, 1, 1, 3, 2]), np.array([1, 4, 2, 2, 3])
    out = np.array([LEFT, LEFT, TIE, LEFT, LEFT])
    tb = tie_one_sided_bounds(left, right, out, 5, model="davidson")
    assert list(tb.end) == [1, 0, 0, 0, -1]
    assert tb.identified.all()
    assert np.isfinite(tb.bound[[0, 4]]).all()
    # With a loss to 2 instead of the tie, 1 never won among the finite items: not identified
    # (at the limit 1 runs to -inf too), no bound.
    out2 = np.array([LEFT, LEFT, RIGHT, LEFT, LEFT])
    tb2 = tie_one_sided_bounds(left, right, out2, 5, model="davidson")
    assert list(tb2.end) == [1, 0, 0, 0, -1]
    assert not tb2.identified.any()
    assert np.isnan(tb2.bound).all()
    # Two items, one beat the other: no finite centre.
    tb3 = tie_one_sided_bounds(
        np.array([0]), np.array([1]), np.array([LEFT]), 2, model="rao_kupper"
    )
    assert list(tb3.end) == [1, -1]
    assert not tb3.identified.any()
