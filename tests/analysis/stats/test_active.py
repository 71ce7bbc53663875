from __future__ import annotations

import numpy as np
import pytest

from apps.analysis.stats.active import choose_pair, pair_values


def judged(n_items: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A win matrix and appearance counts from ``n`` random judgments of known strengths."""
    rng = np.random.default_rng(seed)
    truth = np.linspace(-2.0, 2.0, n_items)
    wins = np.zeros((n_items, n_items))
    for _ in range(n):
        a, b = rng.choice(n_items, size=2, replace=False)
        if rng.random() < 1.0 / (1.0 + np.exp(-(truth[a] - truth[b]))):
            wins[a, b] += 1
        else:
            wins[b, a] += 1
    appearances = (wins + wins.T).sum(axis=1).astype(np.int64)
    return wins, appearances, truth


def test_choice_is_deterministic_for_a_seed() -> None:
    wins, appearances, _ = judged(12, 200, seed=1)
    picks = {
        choose_pair(wins, 12, appearances=appearances, min_appearances=3, candidates=None, seed=5)
        for _ in range(3)
    }
    assert len(picks) == 1
    (pair,) = picks
    assert pair[0] != pair[1]


def test_different_seeds_vary_the_warm_up_pairs() -> None:
    wins = np.zeros((10, 10))
    appearances = np.zeros(10, dtype=np.int64)
    picks = {
        choose_pair(wins, 10, appearances=appearances, min_appearances=0, candidates=None, seed=s)
        for s in range(20)
    }
    assert len(picks) > 5


def test_items_below_min_appearances_come_first() -> None:
    wins, appearances, _ = judged(12, 300, seed=2)
    appearances[[4, 9]] = [1, 2]
    for seed in range(10):
        pair = choose_pair(
            wins, 12, appearances=appearances, min_appearances=3, candidates=None, seed=seed
        )
        # Both needy items can be paired with each other, so that pair takes precedence.
        assert set(pair) == {4, 9}


def test_a_single_needy_item_meets_its_most_valuable_opponent() -> None:
    wins, appearances, _ = judged(12, 300, seed=3)
    appearances[7] = 0
    others = np.array([j for j in range(12) if j != 7])
    values = pair_values(wins, np.column_stack([np.minimum(others, 7), np.maximum(others, 7)]))
    pairs = {
        frozenset(
            choose_pair(
                wins, 12, appearances=appearances, min_appearances=1, candidates=None, seed=s
            )
        )
        for s in range(5)
    }
    assert pairs == {frozenset({7, int(others[np.argmax(values)])})}


def test_only_allowed_candidate_pairs_are_chosen() -> None:
    wins, appearances, _ = judged(10, 300, seed=4)
    allowed = np.zeros((10, 10), dtype=bool)
    for a, b in [(0, 5), (2, 3), (7, 8)]:
        allowed[a, b] = allowed[b, a] = True
    for seed in range(15):
        pair = choose_pair(
            wins, 10, appearances=appearances, min_appearances=0, candidates=allowed, seed=seed
        )
        assert allowed[pair]


def test_candidates_override_min_appearances() -> None:
    # Item 1 needs exposure but cannot be paired with anything allowed for this rater.
    wins, appearances, _ = judged(6, 100, seed=5)
    appearances[1] = 0
    allowed = np.ones((6, 6), dtype=bool)
    allowed[1, :] = allowed[:, 1] = False
    pair = choose_pair(
        wins, 6, appearances=appearances, min_appearances=3, candidates=allowed, seed=0
    )
    assert 1 not in pair
    assert allowed[pair]


def test_no_allowed_pair_is_an_error() -> None:
    wins = np.zeros((4, 4))
    with pytest.raises(ValueError, match="no allowed pair"):
        choose_pair(
            wins,
            4,
            appearances=np.zeros(4),
            min_appearances=0,
            candidates=np.eye(4, dtype=bool),
            seed=0,
        )


def test_asymmetric_candidate_mask_is_refused() -> None:
    mask = np.triu(np.ones((4, 4), dtype=bool), 1)
    with pytest.raises(ValueError, match="symmetric"):
        choose_pair(
            np.zeros((4, 4)), 4, appearances=np.zeros(4), min_appearances=0, candidates=mask, seed=0
        )


def test_after_warm_up_the_most_valuable_pair_is_chosen() -> None:
    wins, appearances, _ = judged(10, 150, seed=6)
    rows, cols = np.triu_indices(10, 1)
    values = pair_values(wins, np.column_stack([rows, cols]))
    best = {int(rows[np.argmax(values)]), int(cols[np.argmax(values)])}
    pair = choose_pair(
        wins, 10, appearances=appearances, min_appearances=0, candidates=None, seed=0
    )
    assert set(pair) == best


def test_during_warm_up_the_choice_ignores_the_estimates() -> None:
    wins, appearances, _ = judged(10, 150, seed=7)
    picks = {
        frozenset(
            choose_pair(
                wins,
                10,
                appearances=appearances,
                min_appearances=0,
                candidates=None,
                seed=s,
                warmup=10_000,
            )
        )
        for s in range(30)
    }
    assert len(picks) > 10


def test_clearly_ordered_pairs_are_worth_less_than_close_uncertain_ones() -> None:
    wins, _, _ = judged(10, 400, seed=8)
    values = pair_values(wins, np.array([[0, 9], [4, 5]]))
    # Items 0 and 9 are 4 log-strength units apart: their order is settled.
    assert values[1] > 10 * values[0]
    assert np.all(values >= 0)
