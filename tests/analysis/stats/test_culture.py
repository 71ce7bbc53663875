"""The culture-dependence test: a permutation test of group labels with Benjamini-Hochberg
across items. Without a group effect few studies flag anything; planted effects are found."""

from __future__ import annotations

import numpy as np

from apps.analysis.stats.culture import culture_dependence_test
from apps.analysis.stats.culture_sim import simulate_culture_study


def test_low_agreement_without_any_group_effect_is_rarely_flagged() -> None:
    rng = np.random.default_rng(17)
    studies_with_a_flag = 0
    below_line = []
    for _ in range(30):
        test, cross, _ = simulate_culture_study(rng, planted=0, permutations=199)
        below_line.append(float(np.mean(cross < 0.3)))
        studies_with_a_flag += bool(test.discovery.any())
    # The line alone would flag a large share of these items (agreement is low everywhere).
    assert np.mean(below_line) > 0.3
    assert studies_with_a_flag / 30 <= 0.1


def test_planted_group_effects_are_found() -> None:
    rng = np.random.default_rng(18)
    found, false = [], []
    for _ in range(10):
        test, _, planted = simulate_culture_study(rng, planted=5, permutations=499)
        found.append(test.discovery[planted].mean())
        false.append(test.discovery[~planted].sum())
    assert np.mean(found) > 0.8
    assert np.mean(false) < 1.0


def test_permutation_p_value_matches_a_brute_force_count_on_one_item() -> None:
    """Two groups of three raters: all 20 relabellings enumerated by hand."""
    from itertools import combinations

    value = np.array([1.0, 2.0, 1.0, 6.0, 7.0, 5.0])
    group = np.array([0, 0, 0, 1, 1, 1])

    def within(labels: np.ndarray) -> float:
        return sum(
            (value[a] - value[b]) ** 2
            for a in range(6)
            for b in range(6)
            if a != b and labels[a] == labels[b]
        )

    observed = within(group)
    relabellings = []
    for chosen in combinations(range(6), 3):
        labels = np.ones(6, dtype=int)
        labels[list(chosen)] = 0
        relabellings.append(within(labels))
    exact = float(np.mean(np.array(relabellings) <= observed + 1e-9))
    test = culture_dependence_test(
        np.zeros(6, dtype=np.int64),
        value,
        group,
        1,
        candidates=np.array([True]),
        nominal=False,
        permutations=4000,
        seed=5,
    )
    # 2 of 20 relabellings (this one and its mirror) are as extreme: p = 0.1.
    assert exact == 0.1
    assert abs(test.p_value[0] - exact) < 0.015


def test_items_above_the_line_or_with_one_group_are_not_tested() -> None:
    test = culture_dependence_test(
        np.array([0, 0, 1, 1]),
        np.array([1.0, 7.0, 2.0, 6.0]),
        np.array([0, 0, 0, 1]),
        2,
        candidates=np.array([True, False]),
        nominal=False,
        seed=1,
    )
    assert np.isnan(test.p_value).all()
    assert not test.discovery.any()
