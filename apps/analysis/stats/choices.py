"""Choice questions as what they are: a share of answers per option, never a mean of indices.

Per choice question: the share of answers choosing each option overall, per model (source) and
per background group, each with the rater-clustered bootstrap interval the group means use
(one rater answers many items); and each item's count per option. The options are reported by
index here; pages, reports and exports name them from the rubric in the reader's language.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.stats.inputs import StudyInputs
from apps.analysis.stats.shares import ShareGroups


def _cell(stats: tuple[np.ndarray, ...], g: int) -> dict[str, Any]:
    """Group g of a grouped_mean_ci_many result as a stored interval."""
    estimate, low, high, n = stats

    def num(value: float) -> float | None:
        return float(value) if np.isfinite(value) else None

    return {
        "value": num(estimate[g]),
        "ci_low": num(low[g]),
        "ci_high": num(high[g]),
        "n": int(n[g]),
    }


def choice_shares(inputs: StudyInputs, *, seed: int, rounds: int, level: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    grouping = ShareGroups.of(inputs)
    sources, groups = grouping.sources, grouping.groups
    for q, question in enumerate(inputs.questions):
        if question.kind != "choice":
            continue
        rows = np.flatnonzero(inputs.score_question == q)
        options = question.max_value - question.min_value + 1
        item, rater = inputs.score_item[rows], inputs.score_rater[rows]
        index = (inputs.score_value[rows] - question.min_value).astype(np.int64)
        entry: dict[str, Any] = {
            "options": options,
            "names": list(question.choices) or [str(k) for k in range(options)],
            "answers": int(rows.size),
            "overall": [],
            "by_source": {name: [] for name in sources},
            "by_background": {name: [] for name in groups},
        }
        for option in range(options):
            chose = (index == option).astype(np.float64)
            if not chose.size:
                continue
            overall, by_source, by_group = grouping.shares(
                chose, item, rater, seed=seed + 100 * q + option, rounds=rounds, level=level
            )
            entry["overall"].append(_cell(overall, 0))
            for table, names, stats in (
                (entry["by_source"], sources, by_source),
                (entry["by_background"], groups, by_group),
            ):
                for g, name in enumerate(names):
                    table[name].append(_cell(stats, g))
        counts = np.zeros((inputs.n_items, options), dtype=np.int64)
        np.add.at(counts, (item, index), 1)
        entry["items"] = [
            {"item": inputs.item_ids[i], "counts": counts[i].tolist()}
            for i in range(inputs.n_items)
            if counts[i].sum()
        ]
        out[question.name] = entry
    return out
