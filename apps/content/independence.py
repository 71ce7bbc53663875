"""Are the dimensions independent? Correlation matrices with intervals. Pure: numpy and scipy.

Design point 11 asks that fluency, informativeness and originality measure different things:
two dimensions correlated at |r| >= FLAG_R over items are flagged, because a composite that
weights them separately then counts one quality twice.

* Pearson's r with the Fisher z interval: atanh(r) ± z·1/sqrt(n − 3), back-transformed (the
  interval scipy.stats.pearsonr(...).confidencepercentile_interval() gives). Defined from 4 items.
* Spearman's rho with a percentile bootstrap over items (``rounds`` resamples from an explicit
  seed): rank correlations have no exact small-sample interval, and the bootstrap needs no
  normality. Resamples in which one side is constant are skipped.

Units are items: the human side is each item's mean over its raters, the automatic side the
item's metric. Pairs use the items where both values exist (metrics may be missing for some
items, with a reason). Every pair has its own random stream keyed by the two names, so adding a
metric leaves the other pairs' intervals unchanged.

A pair is flagged on either coefficient: |r| >= 0.4 or |rho| >= 0.4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from apps.analysis.stats.correlation import percentile_interval, rowwise_spearman

FLAG_R = 0.4
MIN_ITEMS = 4

FloatArray = npt.NDArray[np.float64]
Numbers = Sequence[float | None] | FloatArray


@dataclass(frozen=True)
class Correlation:
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}


_NONE = Correlation(None, None, None, 0)


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _as_array(values: Numbers) -> FloatArray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def pearson(x: FloatArray, y: FloatArray, *, level: float = 0.95) -> Correlation:
    """Pearson's r and its Fisher z interval; None below MIN_ITEMS items or for a constant side."""
    n = int(x.size)
    if n < MIN_ITEMS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(None, None, None, n)
    xc = x - x.mean()
    yc = y - y.mean()
    r = float(np.clip((xc @ yc) / np.sqrt((xc @ xc) * (yc @ yc)), -1.0, 1.0))
    z = float(ndtri(1.0 - (1.0 - level) / 2.0))
    if abs(r) == 1.0:
        return Correlation(r, r, r, n)
    centre = np.arctanh(r)
    half = z / np.sqrt(n - 3)
    return Correlation(r, float(np.tanh(centre - half)), float(np.tanh(centre + half)), n)


def spearman(
    x: FloatArray, y: FloatArray, *, rng: np.random.Generator, rounds: int, level: float = 0.95
) -> Correlation:
    """Spearman's rho with a percentile bootstrap interval over items."""
    n = int(x.size)
    if n < MIN_ITEMS:
        return Correlation(None, None, None, n)
    rho = _finite(float(rowwise_spearman(x[None, :], y[None, :])[0]))
    if rho is None:
        return Correlation(None, None, None, n)
    idx = rng.integers(0, n, size=(rounds, n))
    low, high = percentile_interval(rowwise_spearman(x[idx], y[idx]), level)
    return Correlation(rho, low, high, n)


def stream(seed: int, *labels: str) -> np.random.Generator:
    """A random stream keyed by labels' bytes, not by position, so pairs share no numbers."""
    key: list[int] = []
    for label in labels:
        data = label.encode("utf-8")
        key.extend([len(data), *data])
    return np.random.default_rng(np.random.SeedSequence([int(seed), *key]))


def _check(rounds: int, level: float) -> None:
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")


def correlate(
    x: Numbers,
    y: Numbers,
    *,
    seed: int,
    labels: tuple[str, str],
    rounds: int = 1000,
    level: float = 0.95,
) -> dict[str, Any]:
    """Both coefficients over the items where x and y are both known, with the |r| flag."""
    _check(rounds, level)
    a = _as_array(x)
    b = _as_array(y)
    if a.shape != b.shape:
        raise ValueError("x and y must have one entry per item")
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    p = pearson(a, b, level=level)
    s = spearman(a, b, rng=stream(seed, *labels), rounds=rounds, level=level)
    flagged = any(c.value is not None and abs(c.value) >= FLAG_R for c in (p, s))
    return {
        "a": labels[0],
        "b": labels[1],
        "n": int(a.size),
        "pearson": p.as_dict(),
        "spearman": s.as_dict(),
        "flag": flagged,
    }


def correlation_matrix(
    columns: Mapping[str, Numbers],
    *,
    seed: int,
    rounds: int = 1000,
    level: float = 0.95,
    prefix: str = "",
) -> dict[str, Any]:
    """Every pair of columns (one value per item, None/nan for missing), in the given order.

    Returns ``{"names": [...], "pairs": [{"a", "b", "n", "pearson", "spearman", "flag"}],
    "flagged": [[a, b], ...]}``; ``prefix`` keeps the streams of two matrices apart when they
    share names (the human and the automatic "fluency")."""
    names = list(columns)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pair = correlate(
                columns[a],
                columns[b],
                seed=seed,
                labels=(f"{prefix}:{a}", f"{prefix}:{b}"),
                rounds=rounds,
                level=level,
            )
            pair["a"], pair["b"] = a, b
            pairs.append(pair)
    return {
        "names": names,
        "pairs": pairs,
        "flagged": [[pair["a"], pair["b"]] for pair in pairs if pair["flag"]],
        "threshold": FLAG_R,
    }


def against_humans(
    automatic: Mapping[str, Numbers],
    human: Mapping[str, Numbers],
    *,
    seed: int,
    rounds: int = 1000,
    level: float = 0.95,
) -> list[dict[str, Any]]:
    """Each automatic score (metrics, their dimension scores, the composite) against each human
    score (the three dimensions' item means and the human composite): one row per automatic
    score, ``{"name", "matching": human name or None, "against": {human name: correlation}}``.
    ``matching`` names the human dimension of the same name (fluency against fluency), the one
    the metric is meant to track."""
    rows = []
    for name, values in automatic.items():
        against = {
            human_name: correlate(
                values,
                human_values,
                seed=seed,
                labels=(f"auto:{name}", f"human:{human_name}"),
                rounds=rounds,
                level=level,
            )
            for human_name, human_values in human.items()
        }
        rows.append({"name": name, "matching": name if name in human else None, "against": against})
    return rows
