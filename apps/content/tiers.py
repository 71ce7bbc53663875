"""The three evaluation tiers against the humans, and what each costs. Pure: numpy and scipy.

* L1, automatic: the metric dimension scores (0..1) combined with the content type's weights.
* L2, the LLM judge: the judge's fluency, informativeness and originality (the rubric's 1..5
  scale) combined with the same weights.
* L3, a human sample: the human raters themselves.

Agreement with the humans is Spearman's rho between the tier's composite per item and the human
composite per item (each item's mean answers combined with its content type's weights), with a
percentile bootstrap interval over items (`apps.content.independence.spearman`). Ranks, not
values: the tiers live on different scales and only their ordering of the articles is compared.

L3 cannot be compared with itself, so its row is the ceiling the other tiers aim at: split-half
reliability. Raters are split at random into two halves; each half's mean composite per item is
computed, and Spearman's rho between the halves is taken over the items both halves rated. The
value is the mean rho over ``rounds`` random splits and its interval the 2.5/97.5 percentiles
of those splits (it shows how much the answer depends on the split, not a sampling interval).
The Spearman–Brown step-up 2r/(1 + r) estimates the reliability of the full panel; it is stored
beside the half-panel value.

Cost:

* items per second: items scored divided by the seconds spent: L1 the measured compute time of
  the metrics run, L2 the sum of the judge's latencies (one request at a time), L3 the sum of the
  scorecards' active seconds (all raters of an item together handle it once).
* human minutes: L3 the total active minutes of the scorecards; L1 and L2 use none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.analysis.stats.correlation import rowwise_spearman
from apps.content.independence import MIN_ITEMS, Correlation, spearman, stream

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

L1 = "L1"
L2 = "L2"
L3 = "L3"


def _as_float(values: Sequence[float | None] | FloatArray) -> FloatArray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def agreement(
    tier: Sequence[float | None] | FloatArray,
    human: Sequence[float | None] | FloatArray,
    *,
    seed: int,
    label: str,
    rounds: int = 1000,
    level: float = 0.95,
) -> Correlation:
    """Spearman's rho between a tier's per-item composite and the human one, items with both."""
    a = _as_float(tier)
    b = _as_float(human)
    if a.shape != b.shape:
        raise ValueError("tier and human must have one entry per item")
    keep = np.isfinite(a) & np.isfinite(b)
    return spearman(a[keep], b[keep], rng=stream(seed, "tier", label), rounds=rounds, level=level)


def split_half(
    item: Sequence[int] | IntArray,
    rater: Sequence[int] | IntArray,
    value: Sequence[float] | FloatArray,
    *,
    seed: int,
    rounds: int = 200,
    level: float = 0.95,
) -> dict[str, Any]:
    """Split-half reliability of the raters' per-scorecard composites (long form: one row per
    scorecard). Returns ``{"value", "ci_low", "ci_high", "n", "spearman_brown", "splits"}``;
    ``n`` is the mean number of items both halves rated."""
    items = np.asarray(item, dtype=np.int64)
    raters = np.asarray(rater, dtype=np.int64)
    values = np.asarray(value, dtype=np.float64)
    if not (items.shape == raters.shape == values.shape) or items.ndim != 1:
        raise ValueError("item, rater and value must be 1-D with one entry per scorecard")
    keep = np.isfinite(values)
    items, raters, values = items[keep], raters[keep], values[keep]
    empty = {
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "n": 0,
        "spearman_brown": None,
        "splits": 0,
    }
    rater_ids = np.unique(raters)
    if rater_ids.size < 2 or items.size == 0:
        return empty
    rater_pos = np.searchsorted(rater_ids, raters)
    item_ids, item_pos = np.unique(items, return_inverse=True)
    n_items = item_ids.size
    rng = stream(seed, "split-half")
    rhos: list[float] = []
    shared: list[int] = []
    for _ in range(rounds):
        first_half = rng.permutation(rater_ids.size) < rater_ids.size // 2
        side = first_half[rater_pos]
        means = []
        for half in (side, ~side):
            counts = np.bincount(item_pos[half], minlength=n_items)
            sums = np.bincount(item_pos[half], weights=values[half], minlength=n_items)
            with np.errstate(invalid="ignore", divide="ignore"):
                means.append(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan))
        both = np.isfinite(means[0]) & np.isfinite(means[1])
        if int(both.sum()) < MIN_ITEMS:
            continue
        rho = float(rowwise_spearman(means[0][both][None, :], means[1][both][None, :])[0])
        if np.isfinite(rho):
            rhos.append(rho)
            shared.append(int(both.sum()))
    if not rhos:
        return empty
    stats = np.asarray(rhos)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [tail, 1.0 - tail])
    r = float(stats.mean())
    brown = 2.0 * r / (1.0 + r) if r > -1.0 else None
    return {
        "value": r,
        "ci_low": float(low),
        "ci_high": float(high),
        "n": round(float(np.mean(shared))),
        "spearman_brown": brown,
        "splits": len(rhos),
    }


def items_per_second(n_items: int, seconds: float | None) -> float | None:
    if seconds is None or not np.isfinite(seconds) or seconds <= 0 or n_items <= 0:
        return None
    return float(n_items / seconds)


def tier_row(
    *,
    tier: str,
    label: str,
    agreement_with_humans: dict[str, Any],
    n_items: int,
    seconds: float | None,
    human_minutes: float,
) -> dict[str, Any]:
    return {
        "tier": tier,
        "label": label,
        "agreement": agreement_with_humans,
        "n_items": int(n_items),
        "seconds": None if seconds is None else float(seconds),
        "items_per_second": items_per_second(n_items, seconds),
        "human_minutes": float(human_minutes),
    }


def evaluate_tiers(
    *,
    human: Sequence[float | None] | FloatArray,
    automatic: Sequence[float | None] | FloatArray,
    automatic_seconds: float | None,
    automatic_items: int,
    judge: Sequence[float | None] | FloatArray | None,
    judge_model: str | None,
    judge_latency_seconds: float | None,
    judge_items: int,
    scorecard_item: Sequence[int] | IntArray,
    scorecard_rater: Sequence[int] | IntArray,
    scorecard_value: Sequence[float] | FloatArray,
    active_seconds: float,
    seed: int,
    rounds: int = 1000,
) -> list[dict[str, Any]]:
    """The tiers table. ``human``, ``automatic`` and ``judge`` hold one composite per item (None
    where unknown) in the same item order; ``scorecard_*`` one row per human scorecard."""
    rows = [
        tier_row(
            tier=L1,
            label="automatic metrics",
            agreement_with_humans=agreement(
                automatic, human, seed=seed, label=L1, rounds=rounds
            ).as_dict(),
            n_items=automatic_items,
            seconds=automatic_seconds,
            human_minutes=0.0,
        )
    ]
    if judge is not None:
        rows.append(
            tier_row(
                tier=L2,
                label=f"LLM judge ({judge_model})" if judge_model else "LLM judge",
                agreement_with_humans=agreement(
                    judge, human, seed=seed, label=L2, rounds=rounds
                ).as_dict(),
                n_items=judge_items,
                seconds=judge_latency_seconds,
                human_minutes=0.0,
            )
        )
    else:
        rows.append(
            tier_row(
                tier=L2,
                label="LLM judge (no verdicts)",
                agreement_with_humans=Correlation(None, None, None, 0).as_dict(),
                n_items=0,
                seconds=None,
                human_minutes=0.0,
            )
        )
    halves = split_half(
        scorecard_item,
        scorecard_rater,
        scorecard_value,
        seed=seed,
        # The mean over random splits settles long before 200; more splits only cost time.
        rounds=max(1, min(rounds, 200)),
    )
    rated_items = int(np.unique(np.asarray(scorecard_item)).size)
    rows.append(
        tier_row(
            tier=L3,
            label="human raters (split-half ceiling)",
            agreement_with_humans=halves,
            n_items=rated_items,
            seconds=active_seconds if active_seconds > 0 else None,
            human_minutes=active_seconds / 60.0,
        )
    )
    return rows
