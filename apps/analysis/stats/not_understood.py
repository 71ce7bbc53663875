"""How often raters said "I don't get it", on the questions that offer it.

The estimand is the share of a question's answers that were "I don't get it" (of the
scorecards that answered the question either way): per item, per model (source) and per
background group, and overall. A joke nobody gets is a finding, and whether a group gets it is
the method's culture question, so the rate is reported beside the means it was left out of.

Intervals: per item, Wilson's score interval (each rater answers an item once, so an item's
answers are independent); per model, per background and overall, the rater-clustered bootstrap
the group means use (one rater answers many items), with Wilson's interval on the number of
raters in place of a degenerate bootstrap when every answer in the group is the same (0 of
120 would otherwise read as [0, 0]).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.stats.bootstrap import _wilson
from apps.analysis.stats.crossed import grouped_wilson_interval
from apps.analysis.stats.inputs import StudyInputs
from apps.analysis.stats.shares import ShareGroups

RULE = (
    '"I don\'t get it" is its own outcome, never a number: it is left out of every mean and '
    "agreement figure of its question, and reported as the share of that question's answers "
    "that said it"
)


def _num(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)


def _interval(estimate: float, low: float, high: float, n: int) -> dict[str, Any]:
    return {"value": _num(estimate), "ci_low": _num(low), "ci_high": _num(high), "n": int(n)}


def rate_groups_table(
    said: np.ndarray,
    group: np.ndarray,
    rater: np.ndarray,
    names: list[str],
    stats: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    level: float,
) -> dict[str, dict[str, Any]]:
    estimate, low, high, n = stats
    table: dict[str, dict[str, Any]] = {}
    for g, name in enumerate(names):
        members = group == g
        if not members.any():
            continue
        k = float(said[members].sum())
        count = int(members.sum())
        lo, hi = float(low[g]), float(high[g])
        if k in (0.0, float(count)):
            # Every answer the same: the bootstrap has nothing to resample; Wilson on the
            # raters (the clusters) says how little 0 of n rules out.
            raters = int(np.unique(rater[members]).size)
            lo, hi = _wilson(k / count * raters, raters, level)
        table[name] = {**_interval(float(estimate[g]), lo, hi, int(n[g])), "count": int(k)}
    return table


def not_understood_rates(
    inputs: StudyInputs, *, seed: int, rounds: int, level: float
) -> dict[str, Any]:
    """Per question that offers it: the rate overall, per model, per background group and per
    item, each with its interval and the number of answers it rests on."""
    out: dict[str, Any] = {}
    grouping = ShareGroups.of(inputs)
    sources, item_source = grouping.sources, grouping.item_source
    rater_group_names, rater_group = grouping.groups, grouping.rater_group
    for q, question in enumerate(inputs.questions):
        if not question.not_understood:
            continue
        answered = inputs.score_question == q
        said_rows = inputs.not_understood_question == q
        item = np.concatenate([inputs.score_item[answered], inputs.not_understood_item[said_rows]])
        rater = np.concatenate(
            [inputs.score_rater[answered], inputs.not_understood_rater[said_rows]]
        )
        said = np.concatenate(
            [np.zeros(int(answered.sum())), np.ones(int(said_rows.sum()))]
        ).astype(np.float64)
        entry: dict[str, Any] = {"count": int(said.sum()), "answers": int(said.size)}
        if said.size == 0:
            out[question.name] = entry
            continue
        overall, by_source, by_background = grouping.shares(
            said, item, rater, seed=seed + q, rounds=rounds, level=level
        )
        zeros = np.zeros(said.size, dtype=np.int64)
        entry["overall"] = rate_groups_table(said, zeros, rater, ["all"], overall, level)["all"]
        entry["by_source"] = rate_groups_table(
            said, item_source[item], rater, sources, by_source, level
        )
        # Raters of unknown background are counted overall, never as a group of their own.
        entry["by_background"] = rate_groups_table(
            said, rater_group[rater], rater, rater_group_names, by_background, level
        )
        share, low, high, n = grouped_wilson_interval(said, item, inputs.n_items, level=level)
        counts = np.bincount(item, weights=said, minlength=inputs.n_items)
        entry["items"] = [
            {
                "item": inputs.item_ids[i],
                "rate": _interval(share[i], low[i], high[i], int(n[i])),
                "count": int(counts[i]),
            }
            for i in range(inputs.n_items)
            if n[i] > 0
        ]
        out[question.name] = entry
    return out
