"""Simulated studies with item and rater variation, for coverage checks of the model comparison.

Pure numpy: a study whose truth is known, so a benchmark and the tests can count how often an
interval covers its estimand. Sources ("model-a", ..., "human") have true means; each item adds
its own effect, each rater their leniency, each answer noise; pair judgments follow
Bradley-Terry on item strengths (source strength + item effect) plus each rater's taste per
item; Turing guesses follow each source's true judged-human rate, shifted per item and rater.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apps.analysis.stats.bradley_terry import bt_fit_matrix
from apps.analysis.stats.inputs import QuestionInfo, StudyInputs


@dataclass(frozen=True)
class CrossedTruth:
    sources: list[str]
    mean: np.ndarray  # per source: population mean answer (items and raters random)
    bt: np.ndarray  # per source: population model-level BT strength, centred
    judged_human: np.ndarray  # per source: population judged-human rate
    p_beats: np.ndarray  # [a, b]: P(a random joke of a beats a random joke of b)


def _population_win(strength: np.ndarray, spread: float) -> np.ndarray:
    """P(a random joke of A beats a random joke of B, judged by a random rater), by
    Gauss-Hermite quadrature over the item and taste effects (0 on the diagonal)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(64)
    weights = weights / weights.sum()
    diff = strength[:, None] - strength[None, :]
    prob = (weights / (1.0 + np.exp(-(diff[:, :, None] + spread * nodes)))).sum(axis=2)
    np.fill_diagonal(prob, 0.0)
    return np.asarray(prob)


def _population_bt(prob: np.ndarray) -> np.ndarray:
    """Model-level BT fitted to the population win probabilities (every pair of sources
    compared equally often, as in the simulated design)."""
    return bt_fit_matrix(prob * 1e6, alpha=1e-9).scores


def simulate_crossed_study(
    rng: np.random.Generator,
    *,
    source_means: tuple[float, ...] = (4.0, 4.4, 4.2),
    source_strengths: tuple[float, ...] = (0.0, 0.5, 0.2),
    source_human_rates: tuple[float, ...] = (0.35, 0.45, 0.6),
    items_per_source: int = 20,
    n_raters: int = 40,
    rate_share: float = 0.6,
    item_sd: float = 0.7,
    leniency_sd: float = 0.5,
    noise_sd: float = 1.0,
    strength_sd: float = 0.8,
    taste_sd: float = 0.5,
    pairs_per_rater: int = 30,
    turing_share: float = 0.3,
    discrete: bool = False,
) -> tuple[StudyInputs, CrossedTruth]:
    """``discrete``: answers rounded and clipped to the 1-7 scale, as the platform stores them
    (the true means then no longer equal ``source_means``; coverage studies keep them
    continuous)."""
    n_src = len(source_means)
    sources = [f"model-{chr(97 + k)}" for k in range(n_src - 1)] + ["human"]
    item_src = np.repeat(np.arange(n_src), items_per_source)
    n_items = item_src.size
    item_effect = rng.normal(0.0, item_sd, n_items)
    leniency = rng.normal(0.0, leniency_sd, n_raters)
    rated = rng.random((n_items, n_raters)) < rate_share
    item, rater = np.nonzero(rated)
    value = (
        np.asarray(source_means)[item_src[item]]
        + item_effect[item]
        + leniency[rater]
        + rng.normal(0.0, noise_sd, item.size)
    )
    if discrete:
        value = np.clip(np.round(value), 1, 7)
    # Pair judgments between items of two different sources, chosen uniformly.
    strength = np.asarray(source_strengths)[item_src] + rng.normal(0.0, strength_sd, n_items)
    taste = rng.normal(0.0, taste_sd, (n_raters, n_items))
    p_rater = np.repeat(np.arange(n_raters), pairs_per_rater)
    src_a = rng.integers(0, n_src, p_rater.size)
    src_b = (src_a + rng.integers(1, n_src, p_rater.size)) % n_src
    left = src_a * items_per_source + rng.integers(0, items_per_source, p_rater.size)
    right = src_b * items_per_source + rng.integers(0, items_per_source, p_rater.size)
    gap = strength[left] - strength[right] + taste[p_rater, left] - taste[p_rater, right]
    left_won = rng.random(p_rater.size) < 1.0 / (1.0 + np.exp(-gap))
    # Turing: judged human with logit(rate) + item and rater shifts.
    seen = rng.random((n_items, n_raters)) < turing_share
    t_item, t_rater = np.nonzero(seen)
    base = np.log(np.asarray(source_human_rates) / (1 - np.asarray(source_human_rates)))
    t_item_shift = rng.normal(0.0, 0.6, n_items)
    t_rater_shift = rng.normal(0.0, 0.6, n_raters)
    logit = base[item_src[t_item]] + t_item_shift[t_item] + t_rater_shift[t_rater]
    said_human = rng.random(t_item.size) < 1.0 / (1.0 + np.exp(-logit))
    inputs = StudyInputs(
        item_ids=[f"i{k}" for k in range(n_items)],
        item_source=[sources[s] for s in item_src],
        item_level=["single"] * n_items,
        item_humor_type=["pun"] * n_items,
        item_topic=["t"] * n_items,
        item_safety_intercepted=np.zeros(n_items, dtype=bool),
        item_has_explanation=np.zeros(n_items, dtype=bool),
        rater_ids=[f"r{k}" for k in range(n_raters)],
        rater_group=["g"] * n_raters,
        groups=["g"],
        questions=[QuestionInfo("funniness", "likert", 1, 7)],
        score_item=item.astype(np.int64),
        score_rater=rater.astype(np.int64),
        score_question=np.zeros(item.size, dtype=np.int64),
        score_value=value,
        score_seconds=np.full(item.size, np.nan),
        pair_left=left.astype(np.int64),
        pair_right=right.astype(np.int64),
        pair_winner_is_left=left_won,
        pair_rater=p_rater.astype(np.int64),
        turing_item=t_item.astype(np.int64),
        turing_rater=t_rater.astype(np.int64),
        turing_guess_ai=~said_human,
    )
    nodes, weights = np.polynomial.hermite_e.hermegauss(64)
    weights = weights / weights.sum()
    # Judged-human rate of a random item by a random rater: logistic-normal mean.
    spread_t = np.sqrt(0.6**2 + 0.6**2)
    rates = np.array([(weights / (1.0 + np.exp(-(b + spread_t * nodes)))).sum() for b in base])
    win = _population_win(
        np.asarray(source_strengths, dtype=float),
        float(np.sqrt(2 * strength_sd**2 + 2 * taste_sd**2)),
    )
    truth = CrossedTruth(
        sources=sources,
        mean=np.asarray(source_means, dtype=float),
        bt=_population_bt(win),
        judged_human=rates,
        p_beats=win,
    )
    return inputs, truth


__all__ = ["CrossedTruth", "simulate_crossed_study"]
