"""Shares of answers (0/1 outcomes) overall, per model and per rater background, with the
rater-clustered bootstrap the group means use: one rater answers many items, so raters are
resampled as clusters. Choice questions (each option's share) and "I don't get it" (its rate)
are both read this way."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apps.analysis.stats.bootstrap import GroupStats, grouped_mean_ci_many
from apps.analysis.stats.inputs import StudyInputs


@dataclass(frozen=True)
class ShareGroups:
    """Each item's model and each rater's background group as indices into sorted names;
    raters of unknown background get one extra index, computed and never reported."""

    sources: list[str]
    item_source: np.ndarray
    groups: list[str]
    rater_group: np.ndarray

    @classmethod
    def of(cls, inputs: StudyInputs) -> ShareGroups:
        sources = sorted(set(inputs.item_source))
        source_index = {name: k for k, name in enumerate(sources)}
        groups = sorted({group for group in inputs.rater_group if group})
        group_index = {name: k for k, name in enumerate(groups)}
        return cls(
            sources=sources,
            item_source=np.array([source_index[s] for s in inputs.item_source], dtype=np.int64),
            groups=groups,
            rater_group=np.array(
                [group_index.get(group, len(groups)) for group in inputs.rater_group],
                dtype=np.int64,
            ),
        )

    def shares(
        self,
        outcome: np.ndarray,
        item: np.ndarray,
        rater: np.ndarray,
        *,
        seed: int,
        rounds: int,
        level: float,
    ) -> tuple[GroupStats, GroupStats, GroupStats]:
        """(overall, per model, per background) share of 1s in `outcome`, one row per answer
        of `item` by `rater`."""
        overall, by_source, by_group = grouped_mean_ci_many(
            outcome,
            [
                (np.zeros(outcome.size, dtype=np.int64), 1),
                (self.item_source[item], len(self.sources)),
                (self.rater_group[rater], len(self.groups) + 1),
            ],
            clusters=rater,
            rounds=rounds,
            seed=seed,
            level=level,
        )
        return overall, by_source, by_group
