"""The method's behavioural signals of humor: besides the scores, whether the rater would retell
the joke to a friend and whether they would reply to it or ask a follow-up
("是否主动追问、是否复述给朋友"). The built-in rubric `humor-signals` asks both as yes/no
questions after funniness; a custom rubric may ask them (by these names) after its own primary
question.

Their rates per item, model, level and background are the question means of the results'
item and group tables, and the model comparison takes them as questions like any other. This
module adds what those tables do not say: each signal's overall rate and how it goes with the
study's primary question (``against``: funniness in the humor scorecard), on the scorecards that
answered both:

- ``primary_if_yes``, ``primary_if_no``: the primary question's mean when the answer is yes, no;
- ``difference``: the first minus the second;
- ``correlation``: Pearson's r between the answer (0/1) and the primary question (the
  point-biserial r).

Intervals are percentile bootstraps that resample raters (one rater's scorecards share their
scale), the same draws for both statistics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.stats.bootstrap import bootstrap_weighted_statistic, proportion_ci
from apps.analysis.stats.inputs import StudyInputs

# The signals' question names in the built-in rubric (apps/studies/builtin_rubrics.py).
SIGNALS = ("retell", "follow_up")


def _answers(inputs: StudyInputs, q: int) -> dict[tuple[int, int], float]:
    rows = np.flatnonzero(inputs.score_question == q)
    return {
        (int(item), int(rater)): float(value)
        for item, rater, value in zip(
            inputs.score_item[rows], inputs.score_rater[rows], inputs.score_value[rows], strict=True
        )
        if np.isfinite(value)
    }


def _association(
    signal: np.ndarray,
    primary: np.ndarray,
    raters: np.ndarray,
    *,
    seed: int,
    rounds: int,
    level: float,
) -> dict[str, Any]:
    _, cluster = np.unique(raters, return_inverse=True)
    g = int(cluster.max()) + 1
    yes = signal == 1

    def sums(weights: np.ndarray) -> np.ndarray:
        return np.bincount(cluster, weights=weights, minlength=g)

    # Per rater: counts and sums for the two means and for Pearson's r.
    per_rater = np.vstack(
        [
            sums(yes.astype(float)),
            sums(primary * yes),
            sums((~yes).astype(float)),
            sums(primary * ~yes),
            sums(np.ones(signal.size)),
            sums(signal),
            sums(primary),
            sums(signal * signal),
            sums(primary * primary),
            sums(signal * primary),
        ]
    )

    def statistics(totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n_yes, f_yes, n_no, f_no, n, sx, sy, sxx, syy, sxy = totals
        with np.errstate(divide="ignore", invalid="ignore"):
            difference = f_yes / n_yes - f_no / n_no
            cov = sxy / n - (sx / n) * (sy / n)
            var_x = sxx / n - (sx / n) ** 2
            var_y = syy / n - (sy / n) ** 2
            r = cov / np.sqrt(var_x * var_y)
        return difference, r

    difference, r = (float(v) for v in statistics(per_rater.sum(axis=1)))
    out: dict[str, Any] = {}
    for k, (name, estimate) in enumerate((("difference", difference), ("correlation", r))):
        low = high = float("nan")
        if np.isfinite(estimate) and g >= 2:

            def statistic(w: np.ndarray, k: int = k) -> np.ndarray:
                return statistics(per_rater @ w.T)[k]

            low, high = bootstrap_weighted_statistic(
                statistic, g, rounds=rounds, seed=seed, level=level
            )
        out[name] = {
            "value": estimate if np.isfinite(estimate) else None,
            "ci_low": low if np.isfinite(low) else None,
            "ci_high": high if np.isfinite(high) else None,
            "n": int(signal.size),
        }
    with np.errstate(invalid="ignore"):
        out["primary_if_yes"] = float(primary[yes].mean()) if yes.any() else None
        out["primary_if_no"] = float(primary[~yes].mean()) if (~yes).any() else None
    return out


def signals_section(inputs: StudyInputs, *, seed: int, rounds: int, level: float) -> dict[str, Any]:
    """Each behavioural signal the rubric asks: its rate and its association with the primary
    question; empty when the rubric asks none."""
    names = [question.name for question in inputs.questions]
    if inputs.primary_question not in names:
        return {}
    primary = _answers(inputs, names.index(inputs.primary_question))
    out: dict[str, Any] = {}
    for k, name in enumerate(SIGNALS):
        if name not in names:
            continue
        answers = _answers(inputs, names.index(name))
        keys = sorted(answers)
        signal = np.array([answers[key] for key in keys], dtype=np.float64)
        raters = np.array([key[1] for key in keys], dtype=np.int64)
        both = [key for key in keys if key in primary]
        entry: dict[str, Any] = {
            "question": name,
            "against": inputs.primary_question,
            "rate": proportion_ci(
                signal, clusters=raters, rounds=rounds, seed=seed + 10 * k, level=level
            ).as_dict()
            if signal.size
            else None,
            "association": None,
        }
        if len(both) >= 3:
            entry["association"] = _association(
                np.array([answers[key] for key in both]),
                np.array([primary[key] for key in both]),
                np.array([key[1] for key in both]),
                seed=seed + 10 * k + 1,
                rounds=rounds,
                level=level,
            )
        out[name] = entry
    return out
