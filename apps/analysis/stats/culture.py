"""Is an item culture-dependent? A permutation test of the raters' background groups.

The method's line (cross-group agreement below 0.3) alone flags any item raters disagree on,
culture or not: with no group effect at all, cross-group agreement equals within-group
agreement and about half the items of a noisy study fall below the line. The evidence the line
implies is that raters of *different* groups disagree more than raters of the *same* group.

Per item, with the item's raters' group labels fixed in number per group, the statistic is the
summed disagreement over pairs of raters in the same group (W: quadratic weights on scales,
0/1 on flags, as ``agreement.cross_group_agreement``). The sum over all pairs does not change
when labels are permuted, so a small within-group sum is the same as a large cross-group one.
The p-value counts permutations of the labels among the item's raters with a within-group sum
at most the observed one: p = (1 + #{perm <= observed}) / (1 + permutations) (Phipson & Smyth
2010: never 0). Across items, the false-discovery rate is held by Benjamini-Hochberg at q.

An item is culture-dependent only when it is below the agreement line *and* its test is a
discovery; the family of the test is the items below the line (the only ones the flag can
apply to). Items below the line that are not discoveries are controversial: raters disagree,
but not along group lines, so they stay in as evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apps.analysis.stats.crossed import benjamini_hochberg


@dataclass(frozen=True)
class CultureTest:
    p_value: np.ndarray  # (n_items,), nan where not tested
    q_value: np.ndarray  # (n_items,) BH-adjusted, nan where not tested
    discovery: np.ndarray  # (n_items,) bool
    permutations: int
    seed: int
    fdr: float


def _within_sums(
    item: np.ndarray,
    group: np.ndarray,
    x: np.ndarray,
    x2: np.ndarray,
    n_items: int,
    n_groups: int,
) -> np.ndarray:
    """Per item: sum over ordered pairs of raters in one group of (x_r - x_r')^2.

    For a group of m answers: sum_{r != r'} (x_r - x_r')^2 = 2 (m sum x^2 - (sum x)^2);
    with x a one-hot code (flags), (x_r - x_r')^2 summed over codes is twice the 0/1
    disagreement, so the same formula serves both, up to a constant factor.
    """
    key = item * n_groups + group
    size = n_items * n_groups
    m = np.bincount(key, minlength=size).astype(np.float64)
    total = np.zeros(n_items)
    for col in range(x.shape[1]):
        s1 = np.bincount(key, weights=x[:, col], minlength=size)
        s2 = np.bincount(key, weights=x2[:, col], minlength=size)
        total += (2.0 * (m * s2 - s1 * s1)).reshape(n_items, n_groups).sum(axis=1)
    return total


def culture_dependence_test(
    item: np.ndarray,
    value: np.ndarray,
    group: np.ndarray,
    n_items: int,
    *,
    candidates: np.ndarray,
    nominal: bool,
    permutations: int = 999,
    seed: int,
    fdr: float = 0.1,
) -> CultureTest:
    """Permutation p-values for the ``candidates`` (items below the agreement line), and their
    Benjamini-Hochberg discoveries at false-discovery rate ``fdr``.

    ``item``, ``value``, ``group``: one row per rating (group: the rater's group code, < 0 for
    unknown, left out). Items with raters from fewer than two groups are not tested.
    """
    if permutations < 1:
        raise ValueError("permutations must be >= 1")
    if not 0.0 < fdr < 1.0:
        raise ValueError("the false-discovery rate must be in (0, 1)")
    item = np.asarray(item, dtype=np.int64)
    value = np.asarray(value, dtype=np.float64)
    group = np.asarray(group, dtype=np.int64)
    keep = (group >= 0) & ~np.isnan(value) & np.asarray(candidates, dtype=bool)[item]
    item, value, group = item[keep], value[keep], group[keep]
    p_value = np.full(n_items, np.nan)
    q_value = np.full(n_items, np.nan)
    discovery = np.zeros(n_items, dtype=bool)
    if item.size == 0:
        return CultureTest(p_value, q_value, discovery, permutations, seed, fdr)
    n_groups = int(group.max()) + 1
    groups_per_item = np.bincount(np.unique(item * n_groups + group) // n_groups, minlength=n_items)
    testable = groups_per_item >= 2
    rows = testable[item]
    item, value, group = item[rows], value[rows], group[rows]
    if item.size == 0:
        return CultureTest(p_value, q_value, discovery, permutations, seed, fdr)
    if nominal:
        codes, x_code = np.unique(value, return_inverse=True)
        x = np.eye(codes.size)[x_code]
    else:
        x = value[:, None]
    x2 = x * x
    # Rows sorted by item, so a permutation of labels within items is a sort of random keys.
    order = np.argsort(item, kind="stable")
    item, group, x, x2 = item[order], group[order], x[order], x2[order]
    observed = _within_sums(item, group, x, x2, n_items, n_groups)
    # Round-off: equal sums computed in another order may differ in the last bits.
    tol = 1e-9 * np.maximum(np.abs(observed), 1.0)
    rng = np.random.default_rng(seed)
    at_most = np.zeros(n_items)
    done = np.zeros(n_items)
    # Two stages (cost): every item gets a first fifth of the permutations; only items whose
    # p-value is still small go on to the rest. An item stopped early keeps the p-value of its
    # own permutations, which is valid, only coarser, and far above any BH threshold.
    first = max(1, min(permutations, permutations // 5))
    live_items = np.ones(n_items, dtype=bool)
    for stage, count in enumerate((first, permutations - first)):
        if count <= 0:
            continue
        if stage == 1:
            p_now = (1.0 + at_most) / (1.0 + done)
            live_items = p_now <= 0.05
            if not live_items.any():
                break
        rows = live_items[item]
        s_item, s_group, s_x, s_x2 = item[rows], group[rows], x[rows], x2[rows]
        for _ in range(count):
            # Rows are sorted by item: item + a uniform key sorts within each item's block.
            shuffled = np.argsort(s_item + rng.random(s_item.size))
            perm_sum = _within_sums(s_item, s_group[shuffled], s_x, s_x2, n_items, n_groups)
            at_most += live_items & (perm_sum <= observed + tol)
        done += np.where(live_items, count, 0)
    tested = np.zeros(n_items, dtype=bool)
    tested[np.unique(item)] = True
    p_value[tested] = (1.0 + at_most[tested]) / (1.0 + done[tested])
    discovery, q_value = benjamini_hochberg(p_value.tolist(), fdr)
    return CultureTest(p_value, q_value, discovery, permutations, seed, fdr)


__all__ = ["CultureTest", "culture_dependence_test"]
