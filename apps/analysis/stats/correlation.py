"""Rank correlation for many resamples at once, and percentile intervals over resamples.

Shared by the judge-versus-humans comparison (screening) and the content evaluation's
independence check and tiers: every bootstrap there draws item indices and needs Spearman's rho
of each drawn row pair without a Python loop.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.stats import rankdata

FloatArray = NDArray[np.float64]


def rowwise_spearman(a: FloatArray, b: FloatArray) -> FloatArray:
    """Spearman's rho of each row pair (average ranks for ties); nan where a row is constant."""
    ra = rankdata(a, axis=-1)
    rb = rankdata(b, axis=-1)
    ra = ra - ra.mean(axis=-1, keepdims=True)
    rb = rb - rb.mean(axis=-1, keepdims=True)
    num = (ra * rb).sum(axis=-1)
    den = np.sqrt((ra * ra).sum(axis=-1) * (rb * rb).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return np.asarray(np.clip(rho, -1.0, 1.0), dtype=np.float64)


def percentile_interval(stats: FloatArray, level: float) -> tuple[float | None, float | None]:
    """The central `level` interval of the finite resampled statistics (None when none is)."""
    stats = stats[np.isfinite(stats)]
    if stats.size == 0:
        return None, None
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [tail, 1.0 - tail])
    return float(low), float(high)
