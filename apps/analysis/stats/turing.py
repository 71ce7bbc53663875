"""The Turing judgment ("written by an AI or by a person?"): accuracy, judged-human rate, d'.

One row per judgment: ``guess_ai`` (the rater said "AI") and ``is_ai`` (the item really was
written by a model). Intervals resample raters (``clusters``) because one rater's guesses share
that rater's bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from apps.analysis.stats.bootstrap import Interval, proportion_ci

# Turing (1950, "Computing Machinery and Intelligence", Mind 59:433-460, sec. 6) predicted that
# "an average interrogator will not have more than 70 per cent chance of making the right
# identification"; the method adopts the same line: accuracy >= 0.7 means the text still reads as
# machine-made, below it the machine passes.
DETECTABLE_ACCURACY = 0.7


def d_prime(hits: int, misses: int, false_alarms: int, correct_rejections: int) -> float:
    """Sensitivity d' of telling AI from human text (signal detection theory).

    A hit is an AI item judged AI, a false alarm a human item judged AI. With the log-linear
    correction (Hautus 1995, Behav. Res. Methods 27:46-51: add 0.5 to every cell) so that rates of
    0 or 1 stay finite::

        H  = (hits + 0.5) / (hits + misses + 1)
        FA = (false_alarms + 0.5) / (false_alarms + correct_rejections + 1)
        d' = z(H) - z(FA),   z = inverse standard normal CDF

    0 means the rater cannot tell them apart; nan when there are no AI or no human items.
    """
    cells = (hits, misses, false_alarms, correct_rejections)
    if any(c < 0 for c in cells):
        raise ValueError("counts must be non-negative")
    if hits + misses == 0 or false_alarms + correct_rejections == 0:
        return float("nan")
    hit_rate = (hits + 0.5) / (hits + misses + 1.0)
    fa_rate = (false_alarms + 0.5) / (false_alarms + correct_rejections + 1.0)
    return float(stats.norm.ppf(hit_rate) - stats.norm.ppf(fa_rate))


@dataclass(frozen=True)
class TuringSummary:
    """Turing-judgment results for a set of judgments (a model's items, a level, a study)."""

    n: int
    accuracy: Interval  # share of correct guesses
    judged_human: Interval  # share of judgments saying "written by a person"
    d_prime: float
    hits: int
    misses: int
    false_alarms: int
    correct_rejections: int
    verdict: str  # "passes" | "detectable" | "inconclusive"
    threshold: float
    rounds: int
    seed: int
    level: float

    def as_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "accuracy": self.accuracy.as_dict(),
            "judged_human": self.judged_human.as_dict(),
            # nan is not a JSON value; same convention as Interval.as_dict.
            "d_prime": None if np.isnan(self.d_prime) else self.d_prime,
            "hits": self.hits,
            "misses": self.misses,
            "false_alarms": self.false_alarms,
            "correct_rejections": self.correct_rejections,
            "verdict": self.verdict,
            "threshold": self.threshold,
            "rounds": self.rounds,
            "seed": self.seed,
            "level": self.level,
        }


def turing_verdict(accuracy: Interval, *, threshold: float = DETECTABLE_ACCURACY) -> str:
    """ "detectable" if the whole interval is at or above ``threshold`` (0.7), "passes" if it is
    entirely below, "inconclusive" if it straddles the line or is undefined.

    The interval, not the point estimate, decides: 0.72 from twenty judgments is not evidence
    that the text is recognisably machine-made.
    """
    low, high = accuracy.ci_low, accuracy.ci_high
    if not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    if low >= threshold:
        return "detectable"
    if high < threshold:
        return "passes"
    return "inconclusive"


def compute_turing_summary(
    guess_ai: np.ndarray,
    is_ai: np.ndarray,
    *,
    clusters: np.ndarray | None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
    threshold: float = DETECTABLE_ACCURACY,
) -> TuringSummary:
    """Accuracy = mean(guess_ai == is_ai) and judged-human rate = mean(not guess_ai), each with a
    percentile bootstrap interval (``bootstrap.proportion_ci``: resamples ``clusters``, normally
    raters; Wilson interval when every outcome is the same; both use the same seed, so the same
    resamples), the counts of the 2 x 2 table, d' (:func:`d_prime`) and the verdict
    (:func:`turing_verdict`).

    The judged-human rate is over the rows passed in: pass one model's items to get the share of
    its jokes taken for human work.
    """
    guess = np.asarray(guess_ai, dtype=bool)
    truth = np.asarray(is_ai, dtype=bool)
    if guess.ndim != 1 or guess.shape != truth.shape:
        raise ValueError("guess_ai and is_ai must be 1-D arrays of the same length")
    correct = (guess == truth).astype(np.float64)
    accuracy = proportion_ci(correct, clusters=clusters, rounds=rounds, seed=seed, level=level)
    judged_human = proportion_ci(
        (~guess).astype(np.float64), clusters=clusters, rounds=rounds, seed=seed, level=level
    )
    hits = int((guess & truth).sum())
    misses = int((~guess & truth).sum())
    false_alarms = int((guess & ~truth).sum())
    correct_rejections = int((~guess & ~truth).sum())
    return TuringSummary(
        n=len(guess),
        accuracy=accuracy,
        judged_human=judged_human,
        d_prime=d_prime(hits, misses, false_alarms, correct_rejections),
        hits=hits,
        misses=misses,
        false_alarms=false_alarms,
        correct_rejections=correct_rejections,
        verdict=turing_verdict(accuracy, threshold=threshold),
        threshold=threshold,
        rounds=rounds,
        seed=seed,
        level=level,
    )


def turing_summary(
    guess_ai: np.ndarray,
    is_ai: np.ndarray,
    *,
    clusters: np.ndarray | None,
    rounds: int = 1000,
    seed: int,
    level: float = 0.95,
    threshold: float = DETECTABLE_ACCURACY,
) -> dict[str, object]:
    """:func:`compute_turing_summary` as a plain dict (``TuringSummary.as_dict()``)."""
    return compute_turing_summary(
        guess_ai,
        is_ai,
        clusters=clusters,
        rounds=rounds,
        seed=seed,
        level=level,
        threshold=threshold,
    ).as_dict()


__all__ = [
    "DETECTABLE_ACCURACY",
    "TuringSummary",
    "compute_turing_summary",
    "d_prime",
    "turing_summary",
    "turing_verdict",
]
