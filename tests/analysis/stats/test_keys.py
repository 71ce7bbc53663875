"""The sort-based distinct pairs and repeat check give what np.unique gives."""

from __future__ import annotations

import numpy as np
import pytest

from apps.analysis.stats.keys import distinct_pairs, has_repeated_pairs, has_repeats


@pytest.mark.parametrize("seed", range(5))
def test_distinct_pairs_equal_numpys_unique_of_the_stacked_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 40, 500)
    b = rng.integers(0, 7 + seed * 100, 500)
    expected = np.unique(np.stack([a, b]), axis=1)
    found = distinct_pairs(a, b)
    np.testing.assert_array_equal(found, expected)
    assert found.dtype == np.int64


def test_distinct_pairs_of_nothing_negative_or_wide_indices() -> None:
    assert distinct_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (2, 0)
    a = np.array([3, -1, 3, -1, 2])
    b = np.array([0, 5, 0, 4, -2])
    np.testing.assert_array_equal(distinct_pairs(a, b), np.unique(np.stack([a, b]), axis=1))
    wide = np.array([2**40, 2**40, 1])
    other = np.array([2**30, 2**30, 0])
    np.testing.assert_array_equal(
        distinct_pairs(wide, other), np.unique(np.stack([wide, other]), axis=1)
    )


def test_has_repeats_is_whether_a_key_occurs_twice() -> None:
    assert not has_repeats(np.array([5, 1, 9, 2]))
    assert has_repeats(np.array([5, 1, 9, 1]))
    assert not has_repeats(np.zeros(0, np.int64))
    assert not has_repeats(np.array([7]))


def test_has_repeated_pairs_is_whether_a_pair_occurs_twice() -> None:
    items = np.array([0, 1, 0, 2])
    assert not has_repeated_pairs(items, np.array([3, 3, 4, 3]))
    assert has_repeated_pairs(items, np.array([3, 3, 3, 4]))
    assert not has_repeated_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert not has_repeated_pairs(np.array([1]), np.array([1]))
    # Negative or wide indices, which one combined key cannot hold, are compared as pairs.
    assert has_repeated_pairs(np.array([-1, 2, -1]), np.array([0, 0, 0]))
    assert not has_repeated_pairs(np.array([-1, 2, 1]), np.array([0, 0, 0]))
    wide = np.array([2**40, 2**40, 1])
    assert has_repeated_pairs(wide, np.array([2**30, 2**30, 0]))
    assert not has_repeated_pairs(wide, np.array([2**30, 2**30 - 1, 0]))
