"""The Turing judgment ("written by an AI or by a person?"): accuracy, judged-human rate, d'.

One row per judgment: ``guess_ai`` (the rater said "AI") and ``is_ai`` (the item really was
written by a model). Intervals resample raters (``clusters``) because one rater's guesses share
that rater's bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

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
    # scipy.stats.norm.ppf is ndtri; scipy.stats itself costs about half a second to import.
    return float(ndtri(hit_rate) - ndtri(fa_rate))


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
    verdict: str  # "passes" | "above_chance" | "detectable" | "inconclusive"
    p_chance: float  # two-sided p-value of accuracy against 50%
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
            "vs_chance": {"p_value": None if np.isnan(self.p_chance) else self.p_chance},
            "threshold": self.threshold,
            "rounds": self.rounds,
            "seed": self.seed,
            "level": self.level,
        }


def accuracy_vs_chance(correct: np.ndarray, *, clusters: np.ndarray | None) -> float:
    """Two-sided p-value for "raters cannot tell at all": accuracy = 50%.

    Exact binomial test without clusters; with clusters (raters) the cluster-robust score test
    of ``diagnostics.position_bias_p_value`` (one rater's guesses share that rater's bias).
    """
    from apps.analysis.stats.diagnostics import position_bias_p_value

    return position_bias_p_value(np.asarray(correct, dtype=np.float64), clusters=clusters)


def turing_verdict(
    accuracy: Interval,
    *,
    threshold: float = DETECTABLE_ACCURACY,
    p_chance: float | None = None,
    alpha: float = 0.05,
) -> str:
    """The verdict follows the two tests the method implies, in this order:

    - "detectable": the whole interval is at or above ``threshold`` (0.7): machine-like by the
      method's line;
    - "above_chance": raters tell it apart better than chance (accuracy above 50%, p < 0.05
      against 50%) and the interval lies below the 70% line: 0.64 [0.63, 0.65] is not a pass;
    - "passes": raters do no better than chance and the interval lies below the line;
    - "inconclusive": otherwise (the interval straddles the line, or is undefined).

    Without ``p_chance`` the interval answers the chance question (its lower end above 0.5).
    """
    low, high = accuracy.ci_low, accuracy.ci_high
    if not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    if low >= threshold:
        return "detectable"
    if p_chance is None or not np.isfinite(p_chance):
        beats_chance = low > 0.5
    else:
        beats_chance = p_chance < alpha and accuracy.estimate > 0.5
    if high >= threshold:
        return "inconclusive"
    return "above_chance" if beats_chance else "passes"


def model_turing_verdict(
    hit_rate: object,
    vs_human: object,
    *,
    threshold: float = DETECTABLE_ACCURACY,
    alpha: float = 0.05,
) -> str:
    """One model's verdict. Its own items alone give only a hit rate (the share judged AI), which
    cannot say whether raters tell it from people's jokes: a rater who calls everything AI hits
    every time. So the verdict follows the test against the human-written items, the model's
    judged-human rate minus theirs (``vs_human``: items and raters random, p adjusted by Holm
    across the models):

    - "as_human": no difference shown (p >= alpha): judged human as often as people's items;
    - "more_human": judged human more often than the human-written items (p < alpha);
    - "detectable": judged human less often (p < alpha) and its hit rate's interval lies at or
      above the method's line: machine-like;
    - "told_apart": judged human less often (p < alpha), below the line;
    - "inconclusive": no comparison (no human-written items were judged).
    """
    if not isinstance(vs_human, dict) or not vs_human:
        return "inconclusive"
    value = vs_human.get("value")
    p = vs_human.get("p_holm")
    if p is None:
        p = vs_human.get("p_value")
    if not isinstance(value, int | float) or not isinstance(p, int | float):
        return "inconclusive"
    if not (np.isfinite(value) and np.isfinite(p)):
        return "inconclusive"
    if p >= alpha:
        return "as_human"
    if value > 0:
        return "more_human"
    low = hit_rate.get("ci_low") if isinstance(hit_rate, dict) else None
    if isinstance(low, int | float) and np.isfinite(low) and low >= threshold:
        return "detectable"
    return "told_apart"


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
    p_chance = accuracy_vs_chance(correct, clusters=clusters) if correct.size else float("nan")
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
        verdict=turing_verdict(accuracy, threshold=threshold, p_chance=p_chance),
        p_chance=p_chance,
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
    "accuracy_vs_chance",
    "compute_turing_summary",
    "d_prime",
    "model_turing_verdict",
    "turing_summary",
    "turing_verdict",
]
