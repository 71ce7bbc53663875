"""Simulated ratings with or without a background-group effect, for the culture-dependence
test's error rate and power (tests and benchmarks/sim_model_coverage.py)."""

from __future__ import annotations

import numpy as np

from apps.analysis.stats.agreement import CROSS_GROUP_MIN_RATERS, cross_group_agreement
from apps.analysis.stats.culture import CultureTest, culture_dependence_test


def simulate_culture_study(
    rng: np.random.Generator,
    *,
    n_items: int = 40,
    raters_per_group: int = 8,
    n_groups: int = 4,
    planted: int = 0,
    effect: float = 1.5,
    noise_sd: float = 1.4,
    permutations: int = 499,
    fdr: float = 0.1,
    line: float = 0.3,
) -> tuple[CultureTest, np.ndarray, np.ndarray]:
    """(test, cross-group agreement, planted mask): every rater answers every item on 1-7;
    the first ``planted`` items move up by ``effect`` for half the groups, down for the rest."""
    n_raters = raters_per_group * n_groups
    group_of_rater = np.repeat(np.arange(n_groups), raters_per_group)
    item = np.repeat(np.arange(n_items), n_raters)
    rater = np.tile(np.arange(n_raters), n_items)
    shift = np.where(group_of_rater < n_groups // 2, effect, -effect)
    planted_mask = np.arange(n_items) < planted
    latent = (
        rng.normal(4.0, 0.6, n_items)[item]
        + np.where(planted_mask[item], shift[rater], 0.0)
        + rng.normal(0.0, noise_sd, item.size)
    )
    value = np.clip(np.round(latent), 1, 7)
    cross = cross_group_agreement(
        item,
        rater,
        value,
        group_of_rater,
        n_items,
        scale_min=1,
        scale_max=7,
        min_raters_per_group=CROSS_GROUP_MIN_RATERS,
    )
    test = culture_dependence_test(
        item,
        value,
        group_of_rater[rater],
        n_items,
        candidates=cross < line,
        nominal=False,
        permutations=permutations,
        seed=int(rng.integers(0, 2**31)),
        fdr=fdr,
    )
    return test, cross, planted_mask


__all__ = ["simulate_culture_study"]
