"""Ranks that respect confidence intervals.

Public API
----------
``ci_aware_ranks(scores, ci_low, ci_high, *, component=None) -> np.ndarray``
    Integer ranks, 1 = best.

The rule (Chatbot Arena's): an item's rank is 1 + the number of items that are *clearly* better
than it, where j is clearly better than i when j's interval lies entirely above i's, i.e.
``ci_low[j] > ci_high[i]``. Items whose intervals overlap therefore do not push each other down
and can share a rank, and a rank never claims more precision than the intervals support. Ranks
need not be consecutive (three items at rank 1 can be followed by rank 4) and are not forced to
follow the order of the point scores.

``component`` (labels from ``BTFit.component``) restricts the comparison to items of the same
connected component: Bradley-Terry scores of different components are on unrelated scales. An
item whose interval is undefined (nan, e.g. never compared) is clearly better or worse than
nothing, so it gets rank 1 among its component and pushes no one down.
"""

from __future__ import annotations

import numpy as np


def ci_aware_ranks(
    scores: np.ndarray,
    ci_low: np.ndarray,
    ci_high: np.ndarray,
    *,
    component: np.ndarray | None = None,
) -> np.ndarray:
    """Rank = 1 + #{j in the same component : ci_low[j] > ci_high[i]} (1 = best)."""
    s = np.asarray(scores, dtype=np.float64)
    lo = np.asarray(ci_low, dtype=np.float64)
    hi = np.asarray(ci_high, dtype=np.float64)
    if s.ndim != 1 or lo.shape != s.shape or hi.shape != s.shape:
        raise ValueError("scores, ci_low and ci_high must be 1-D arrays of equal length")
    if np.any(lo > hi):
        raise ValueError("ci_low must not exceed ci_high")
    comp = np.zeros(s.shape, dtype=np.int64) if component is None else np.asarray(component)
    if comp.shape != s.shape:
        raise ValueError("component must have one label per item")
    rank = np.ones(s.shape, dtype=np.int64)
    # Sorting the lower bounds makes this O(n log n) per component instead of an n x n table.
    for label in np.unique(comp):
        idx = np.flatnonzero(comp == label)
        lows = np.sort(lo[idx][~np.isnan(lo[idx])])
        # A nan upper bound searches past the end (nan sorts last), so it counts no one as
        # clearly better: exactly "undefined interval, rank 1".
        rank[idx] += lows.size - np.searchsorted(lows, hi[idx], side="right")
    return rank
