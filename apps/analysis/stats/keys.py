"""Distinct pairs and repeated keys of integer indices, by one sort of a combined key.

``np.unique`` of a (2, n) array with ``axis=1`` sorts the columns as structured rows, and
``np.unique`` of a 1-D integer array takes numpy's hash path: each took 0.4-0.7 s on the
million ratings of ``benchmarks/bench_import.py``'s large set, where one ``np.sort`` of an int64
key takes about 10 ms (numpy's vectorised sort). Both functions give what ``np.unique`` gives.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def distinct_pairs(a: np.ndarray, b: np.ndarray) -> IntArray:
    """``np.unique(np.stack([a, b]), axis=1)`` for integer arrays: the distinct (a, b) pairs,
    as a (2, m) array in lexicographic order."""
    first = np.asarray(a).astype(np.int64, copy=False)
    second = np.asarray(b).astype(np.int64, copy=False)
    if first.size == 0:
        return np.zeros((2, 0), dtype=np.int64)
    width = int(second.max()) + 1
    if first.min() < 0 or second.min() < 0 or int(first.max()) >= np.iinfo(np.int64).max // width:
        # Not plain indices (or too wide for one int64): numpy's own way.
        return np.unique(np.stack([first, second]), axis=1)
    key = np.sort(first * width + second)
    key = key[_run_starts(key)]
    return np.stack([key // width, key % width])


def has_repeats(key: np.ndarray) -> bool:
    """Whether any value of ``key`` occurs more than once (``np.unique(key).size != key.size``)."""
    ordered = np.sort(np.asarray(key))
    return bool((ordered[1:] == ordered[:-1]).any())


def has_repeated_pairs(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether any (a, b) pair of integer indices occurs more than once: a rater who rated an
    item twice, where the statistics take one rating per rater and item."""
    first = np.asarray(a).astype(np.int64, copy=False)
    second = np.asarray(b).astype(np.int64, copy=False)
    if first.size < 2:
        return False
    width = int(second.max()) + 1
    if first.min() < 0 or second.min() < 0 or int(first.max()) >= np.iinfo(np.int64).max // width:
        return distinct_pairs(first, second).shape[1] != first.size
    return has_repeats(first * width + second)


def _run_starts(ordered: np.ndarray) -> npt.NDArray[np.bool_]:
    starts = np.ones(ordered.size, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    return starts
