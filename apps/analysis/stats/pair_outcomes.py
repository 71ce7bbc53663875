"""How often A/B pairs were answered "about the same" (a tie) or "neither", where offered.

The estimand of each rate is the share of pair judgments with that answer: overall (of all the
study's pair judgments), and per item, per model (source) and per rater background as the
share of the *pairings* an item, a model's items or a group's raters took part in. A judgment
of items a and b counts once for a and once for b, so a model's rate is over its items'
appearances, and a pair of two of its own items counts twice, as two appearances.

"Neither" (neither is funny, or the rater does not get them) says nothing about the order of
the two and never enters a strength; a tie does, through the tie model, and its rate is the
evidence that items are close (draws are more frequent between close or easy items).

Intervals, as "I don't get it" (not_understood.py): per item Wilson's score interval (an item
is judged once per rater); overall, per model and per background the rater-clustered
bootstrap of the group shares, with Wilson's interval on the raters where every judgment in
the group is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.stats.crossed import grouped_wilson_interval
from apps.analysis.stats.inputs import UNDECIDED_NEITHER, UNDECIDED_TIE, StudyInputs
from apps.analysis.stats.not_understood import _interval, rate_groups_table
from apps.analysis.stats.shares import ShareGroups

OUTCOMES = {"tie": UNDECIDED_TIE, "neither": UNDECIDED_NEITHER}


def pair_outcome_rates(
    inputs: StudyInputs, *, seed: int, rounds: int, level: float
) -> dict[str, Any]:
    """``{"judgments": n, "tie": {...}, "neither": {...}}``; a kind nobody answered is left out
    (a study that offers neither has no such rate, not a rate of 0)."""
    left = np.concatenate([inputs.pair_left, inputs.undecided_left])
    right = np.concatenate([inputs.pair_right, inputs.undecided_right])
    rater = np.concatenate([inputs.pair_rater, inputs.undecided_rater])
    kind = np.concatenate([np.zeros(inputs.pair_left.size, dtype=np.int64), inputs.undecided_kind])
    out: dict[str, Any] = {"judgments": int(left.size)}
    if left.size == 0:
        return out
    grouping = ShareGroups.of(inputs)
    # Each judgment as two appearances, one per item shown.
    item = np.concatenate([left, right])
    rater2 = np.concatenate([rater, rater])
    for offset, (name, code) in enumerate(OUTCOMES.items()):
        said = (kind == code).astype(np.float64)
        if not said.any():
            continue
        said2 = np.concatenate([said, said])
        overall, by_source, by_background = grouping.shares(
            said2, item, rater2, seed=seed + offset, rounds=rounds, level=level
        )
        zeros = np.zeros(said2.size, dtype=np.int64)
        entry: dict[str, Any] = {"count": int(said.sum())}
        entry["overall"] = {
            **rate_groups_table(said2, zeros, rater2, ["all"], overall, level)["all"],
            # Over judgments, not appearances: each judgment counted once.
            "n": int(said.size),
            "count": int(said.sum()),
        }
        entry["by_source"] = rate_groups_table(
            said2, grouping.item_source[item], rater2, grouping.sources, by_source, level
        )
        entry["by_background"] = rate_groups_table(
            said2,
            grouping.rater_group[rater2],
            rater2,
            grouping.groups,
            by_background,
            level,
        )
        share, low, high, n = grouped_wilson_interval(said2, item, inputs.n_items, level=level)
        counts = np.bincount(item, weights=said2, minlength=inputs.n_items)
        entry["items"] = [
            {
                "item": inputs.item_ids[i],
                "rate": _interval(share[i], low[i], high[i], int(n[i])),
                "count": int(counts[i]),
            }
            for i in range(inputs.n_items)
            if n[i] > 0
        ]
        out[name] = entry
    return out
