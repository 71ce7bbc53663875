"""The LLM judge against the humans, per humor type and overall. Pure: numpy and scipy only.

For each item with both a judge score and a human mean (same question, same scale):

* mean difference = mean over items of (judge − human mean), with a percentile bootstrap
  interval over items. An interval above 0 means the judge over-rates that kind of humor, below
  0 that it under-rates it; the known biases of LLM judges (safe puns rated too high, absurd and
  self-deprecating jokes too low) show up as these flags.
* Spearman's rho between the judge's scores and the human means, with a percentile bootstrap
  interval over the same resampled items. A judge can be offset (mean difference) and still
  order the jokes as people do (rho near 1), or the reverse; the two answer different questions.

Resampling items, not ratings: the human mean of an item is already an average over its raters,
and the question is whether the judge's bias holds across jokes of that type. Both statistics use
the same resampled items in each round, so their intervals describe one bootstrap world.

Rho is undefined (None) with fewer than MIN_ITEMS items or when either side is constant; rounds
where a resample is constant on one side are skipped, as in `apps.analysis.stats.bootstrap`.
Intervals are left undefined below MIN_ITEMS items: a percentile bootstrap over one or two items
gives a degenerate interval that would exclude 0 and raise a flag on no evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from apps.analysis.stats.correlation import percentile_interval, rowwise_spearman

MIN_ITEMS = 3
OVERALL = "overall"
# One entry per item: a list, or a 1-D numpy array.
Numbers = Sequence[float] | np.ndarray
OVER = "over-rates"
UNDER = "under-rates"


@dataclass(frozen=True)
class Estimate:
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}


@dataclass(frozen=True)
class GroupComparison:
    humor_type: str
    n: int
    judge_mean: float | None
    human_mean: float | None
    mean_diff: Estimate
    rho: Estimate
    flag: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "humor_type": self.humor_type,
            "n": self.n,
            "judge_mean": self.judge_mean,
            "human_mean": self.human_mean,
            "mean_diff": self.mean_diff.as_dict(),
            "rho": self.rho.as_dict(),
            "flag": self.flag,
        }


@dataclass(frozen=True)
class JudgeHumanComparison:
    overall: GroupComparison
    by_humor_type: list[GroupComparison]
    seed: int
    rounds: int
    level: float

    def as_payload(self) -> dict[str, Any]:
        return {
            "overall": self.overall.as_dict(),
            "by_humor_type": [group.as_dict() for group in self.by_humor_type],
            "seed": self.seed,
            "rounds": self.rounds,
            "level": self.level,
        }


def _clean(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def spearman_rho(judge: Numbers, human: Numbers) -> float | None:
    """Spearman's rho, or None with fewer than MIN_ITEMS items or a constant side."""
    j = np.asarray(judge, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    if j.shape != h.shape or j.ndim != 1:
        raise ValueError("judge and human must be 1-D arrays of the same length")
    if j.size < MIN_ITEMS:
        return None
    return _clean(float(rowwise_spearman(j[None, :], h[None, :])[0]))


def compare_group(
    judge: np.ndarray,
    human: np.ndarray,
    *,
    humor_type: str,
    rng: np.random.Generator,
    rounds: int,
    level: float,
) -> GroupComparison:
    n = int(judge.size)
    if n == 0:
        empty = Estimate(None, None, None, 0)
        return GroupComparison(humor_type, 0, None, None, empty, empty, None)
    diff = judge - human
    diff_value = float(diff.mean())
    rho_value = spearman_rho(judge, human)
    diff_low = diff_high = rho_low = rho_high = None
    if n >= MIN_ITEMS:
        idx = rng.integers(0, n, size=(rounds, n))
        diff_low, diff_high = percentile_interval(diff[idx].mean(axis=1), level)
        if rho_value is not None:
            rho_low, rho_high = percentile_interval(rowwise_spearman(judge[idx], human[idx]), level)
    flag = None
    if diff_low is not None and diff_low > 0:
        flag = OVER
    elif diff_high is not None and diff_high < 0:
        flag = UNDER
    return GroupComparison(
        humor_type=humor_type,
        n=n,
        judge_mean=float(judge.mean()),
        human_mean=float(human.mean()),
        mean_diff=Estimate(diff_value, diff_low, diff_high, n),
        rho=Estimate(rho_value, rho_low, rho_high, n),
        flag=flag,
    )


def compare_judge_with_humans(
    *,
    judge: Numbers,
    human: Numbers,
    humor_types: Sequence[str],
    seed: int,
    rounds: int = 1000,
    level: float = 0.95,
) -> JudgeHumanComparison:
    """One entry per item in each sequence. Groups are sorted by humor type; each group (and the
    overall comparison) draws from its own stream spawned from `seed`, so adding items of one
    type leaves the intervals of the other types unchanged."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be in (0, 1)")
    j = np.asarray(judge, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    types = np.asarray([str(t) for t in humor_types], dtype=object)
    if not (j.ndim == h.ndim == 1 and j.shape == h.shape == types.shape):
        raise ValueError("judge, human and humor_types must have one entry per item")
    if not (np.all(np.isfinite(j)) and np.all(np.isfinite(h))):
        raise ValueError("scores must be finite numbers")

    def stream(label: str) -> np.random.Generator:
        # Keyed by the label's bytes, not its position, so groups do not share random numbers.
        key = [int(b) for b in label.encode("utf-8")]
        return np.random.default_rng(np.random.SeedSequence([int(seed), len(key), *key]))

    overall = compare_group(
        j, h, humor_type=OVERALL, rng=stream("\x00" + OVERALL), rounds=rounds, level=level
    )
    groups = []
    for humor_type in sorted(set(types.tolist())):
        mask = types == humor_type
        groups.append(
            compare_group(
                j[mask],
                h[mask],
                humor_type=humor_type,
                rng=stream(humor_type),
                rounds=rounds,
                level=level,
            )
        )
    return JudgeHumanComparison(
        overall=overall, by_humor_type=groups, seed=int(seed), rounds=rounds, level=level
    )
