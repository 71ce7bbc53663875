"""A study's full results from its StudyInputs: the export document of DESIGN.md.

Pure: arrays in, a JSON-ready dict out. Every random step draws its seed from the one study seed
(`seed + offset`, offsets fixed below), so the stored seed reproduces every interval.

Choices that shape the numbers:
- Per-item means resample the item's ratings (each rater rates an item once, so this is the
  rater bootstrap within the item); group means (per model, level, humor type, background)
  resample raters as clusters, since one rater's answers across items are not independent.
- Agreement intervals (Fleiss' and Cohen's kappa, Krippendorff's alpha) are for these items
  rated by raters in general: a delete-a-group jackknife over raters (rater_agreement.py), with
  t intervals. Cohen's kappa is the mean over pairs of raters sharing at least
  MIN_SHARED_ITEMS items. Cross-group agreement uses quadratic weights on ordinal scales and
  0/1 weights on flags (formula in agreement.cross_group_agreement).
- Bradley-Terry uses every pair judgment; components of a disconnected comparison graph are
  centred separately and reported, never put on one scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from apps.analysis.stats.agreement import (
    CROSS_GROUP_MIN_RATERS,
    cross_group_agreement,
    cross_group_reasons,
    per_item_agreement,
)
from apps.analysis.stats.boards import reliability_section, style_section
from apps.analysis.stats.bootstrap import (
    SharedDraws,
    _wilson,
    grouped_mean_ci_many,
    grouped_proportion_ci,
    proportion_ci,
)
from apps.analysis.stats.bradley_terry import bt_bootstrap
from apps.analysis.stats.choices import choice_shares
from apps.analysis.stats.crossed import grouped_t_interval, grouped_wilson_interval
from apps.analysis.stats.culture import CultureTest, culture_dependence_test
from apps.analysis.stats.diagnostics import (
    fatigue,
    position_bias,
    position_bias_p_value,
    sample_size_warnings,
)
from apps.analysis.stats.drift import drift_warnings, session_drift
from apps.analysis.stats.ends import (
    EndBounds,
    end_ranks,
    finite_comparison_mask,
    one_sided_bounds,
)
from apps.analysis.stats.inputs import QuestionInfo, StudyInputs, inputs_without_items
from apps.analysis.stats.keys import distinct_pairs
from apps.analysis.stats.model_comparison import compare_models
from apps.analysis.stats.not_understood import RULE as NOT_UNDERSTOOD_RULE
from apps.analysis.stats.not_understood import not_understood_rates
from apps.analysis.stats.pair_outcomes import pair_outcome_rates
from apps.analysis.stats.rater_agreement import (
    JACKKNIFE_GROUPS,
    MIN_SHARED_ITEMS,
    mean_pair_kappa_intervals,
    pairwise_cohen_kappa,
    rater_agreement_intervals,
)
from apps.analysis.stats.signals import SIGNALS, signals_section
from apps.analysis.stats.tie_ends import tie_one_sided_bounds
from apps.analysis.stats.ties import LEFT, RIGHT, TIE, TIE_MODELS, choose_tie_model, tie_bootstrap
from apps.analysis.stats.turing import d_prime, model_turing_verdict, turing_summary

LEVEL = 0.95
# The method's pairing minimum (DESIGN.md): an item ranks once it has 3 pairings against 2
# opponents.
MIN_PAIRINGS, MIN_OPPONENTS = 3, 2
# Cross-group agreement is reported for an item only where at least two background groups have
# CROSS_GROUP_MIN_RATERS of its raters each; below it, one or two pairs would stand for the
# whole item. The culture test's family is these items too: the selection reads counts, never
# answers, so the test's error rates hold (tests/analysis/stats/test_culture.py).
# Offsets added to the study seed, one per random step, so steps do not share random streams.
_SEED_CULTURE = 6000
_SEED_NOT_UNDERSTOOD = 7000
_SEED_CHOICES = 8000
_SEED_STYLE = 9000
_SEED_RELIABILITY = 10000
_SEED_PAIR_OUTCOMES = 11000
_SEED_SIGNALS = 12000
# The raters' resamples that the study's ICC and the group tables read alike (SharedDraws).
_SEED_SHARED_RESAMPLES = 13000
_SEED_ITEMS, _SEED_GROUPS, _SEED_AGREEMENT, _SEED_BT, _SEED_TURING, _SEED_DIAG = (
    0,
    1000,
    2000,
    3000,
    4000,
    5000,
)
# The results document's `groups`; content_type is empty for studies whose items have none.
GROUP_DIMENSIONS = (
    "source",
    "level",
    "humor_type",
    "level_humor_type",
    "content_type",
    "language",
    "background",
    "rater_language",
)
# The groups of raters rather than of items: their tables count raters, not items.
RATER_DIMENSIONS = ("background", "rater_language")


def _num(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, nan and inf to None."""
    if isinstance(value, dict):
        return {str(k): _num(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_num(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_num(v) for v in value.tolist()]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        return None if math.isnan(number) or math.isinf(number) else number
    return value


def _interval(estimate: float, low: float, high: float, n: int) -> dict[str, Any]:
    return _num({"value": estimate, "ci_low": low, "ci_high": high, "n": n})


def _json_floats(values: np.ndarray) -> list[float | None]:
    """``_num`` of each element of a float array, in one pass (tens of thousands of items)."""
    return [v if math.isfinite(v) else None for v in np.asarray(values, dtype=np.float64).tolist()]


def _intervals(
    estimate: np.ndarray, low: np.ndarray, high: np.ndarray, n: np.ndarray
) -> list[dict[str, Any]]:
    """``_interval`` of each row of four arrays: what the per-item loop reads by index."""
    counts = np.asarray(n).astype(np.int64).tolist()
    return [
        {"value": v, "ci_low": lo, "ci_high": hi, "n": c}
        for v, lo, hi, c in zip(
            _json_floats(estimate), _json_floats(low), _json_floats(high), counts, strict=True
        )
    ]


def _is_binary(question: QuestionInfo) -> bool:
    # A two-point scale is a flag; a slider from 0 to 1 is not (its steps lie between).
    return question.kind == "binary" or (
        question.kind != "slider" and question.max_value - question.min_value == 1
    )


def _is_nominal(question: QuestionInfo) -> bool:
    """Answers that are categories, not points on a scale: a flag, or a choice among options
    (their indices have no order), so agreement is nominal: exact matches, no weights."""
    return _is_binary(question) or question.kind == "choice"


def _is_continuous(question: QuestionInfo) -> bool:
    """A slider's answers: points of a fine grid, not categories, so only interval-level
    agreement applies (kappa and nominal or ordinal alpha need categories)."""
    return question.kind == "slider"


CONTINUOUS_NOTE = (
    "a slider's answers have no categories: Fleiss' and Cohen's kappa and nominal or ordinal "
    "alpha do not apply; interval alpha (squared differences) is reported"
)


def _codes(labels: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    names = sorted(set(labels))
    index = {name: i for i, name in enumerate(names)}
    return np.array([index[label] for label in labels], dtype=np.int64), names


def _rater_groups(inputs: StudyInputs) -> tuple[np.ndarray, list[str]]:
    """Each rater's background group as an index into the sorted known groups; -1 where the
    background is unknown ("" in the inputs: imported judgments that did not say)."""
    names = sorted({group for group in inputs.rater_group if group})
    index = {name: i for i, name in enumerate(names)}
    codes = np.array([index.get(group, -1) for group in inputs.rater_group], dtype=np.int64)
    return codes, names


def _question_rows(inputs: StudyInputs, q: int) -> np.ndarray:
    return np.flatnonzero(inputs.score_question == q)


def _items(
    inputs: StudyInputs, seed: int, rounds: int, agreement: dict[str, Any]
) -> list[dict[str, Any]]:
    n = inputs.n_items
    per_question: dict[str, tuple[np.ndarray, ...]] = {}
    for q, question in enumerate(inputs.questions):
        if question.kind == "choice":
            continue  # an option's index has no mean: see choices.py
        rows = _question_rows(inputs, q)
        # An item's raters are a sample of raters in general, one answer each: a studentized
        # interval for a scale, Wilson for a flag (percentile bootstraps of ~30 answers cover
        # 92%; these the nominal 95%: benchmarks/sim_model_coverage.py).
        if _is_binary(question):
            share, low, high, count = grouped_wilson_interval(
                inputs.score_value[rows] - question.min_value,
                inputs.score_item[rows],
                n,
                level=LEVEL,
            )
            base = question.min_value
            per_question[question.name] = (share + base, low + base, high + base, count)
        else:
            per_question[question.name] = grouped_t_interval(
                inputs.score_value[rows],
                inputs.score_item[rows],
                n,
                level=LEVEL,
                bounds=(question.min_value, question.max_value),
            )
    raters_per_item = np.zeros(n, dtype=np.int64)
    if inputs.score_item.size:
        pairs = distinct_pairs(inputs.score_item, inputs.score_rater)
        raters_per_item = np.bincount(pairs[0], minlength=n)
    flagged = _offensive_items(inputs)
    is_ai = ~inputs.item_is_human
    correct = (inputs.turing_guess_ai == is_ai[inputs.turing_item]).astype(float)
    # Proportions per item rest on a handful of judgments: unanimous ones get Wilson intervals.
    turing = grouped_proportion_ci(
        correct, inputs.turing_item, n, rounds=rounds, seed=seed + 500, level=LEVEL
    )
    explained = grouped_proportion_ci(
        inputs.explanation_match.astype(float),
        inputs.explanation_item,
        n,
        rounds=rounds,
        seed=seed + 600,
        level=LEVEL,
    )
    pair_counts = np.bincount(inputs.pair_left, minlength=n) + np.bincount(
        inputs.pair_right, minlength=n
    )
    primary = agreement.get(inputs.primary_question, {})
    cross = primary.get("_cross_group")
    cross_reason = primary.get("_cross_group_reason")
    within = primary.get("_per_item")
    thresholds = inputs.thresholds
    culture = _culture_test(inputs, cross, seed + _SEED_CULTURE)
    question_rows = {name: _intervals(*stats) for name, stats in per_question.items()}
    turing_rows = _intervals(*turing)
    explained_rows = _intervals(*explained)
    items = []
    for i in range(n):
        questions = {name: rows[i] for name, rows in question_rows.items()}
        cross_i = None if cross is None else _num(cross[i])
        within_i = None if within is None else _num(within[i])
        flags = []
        below_line = cross_i is not None and cross_i < thresholds.culture_dependent_agreement
        if below_line and culture is not None and culture.discovery[i]:
            flags.append("culture_dependent")
        elif (below_line) or (within_i is not None and within_i < thresholds.controversial_kappa):
            # Below the line without evidence that groups disagree more than raters within a
            # group: disagreement in general, which stays in as evidence.
            flags.append("controversial")
        if flagged[i]:
            flags.append("offensive")
        if inputs.item_safety_intercepted[i]:
            flags.append("safety_intercepted")
        if raters_per_item[i] < thresholds.min_raters_per_item:
            flags.append("too_few_raters")
        if inputs.item_held.size and inputs.item_held[i]:
            # Held by the offense filter after it was rated: counted, and said so.
            flags.append("held")
        items.append(
            {
                "item": inputs.item_ids[i],
                "source": inputs.item_source[i],
                "level": inputs.item_level[i],
                "humor_type": inputs.item_humor_type[i],
                "content_type": inputs.item_content_type[i] if inputs.item_content_type else "",
                "language": inputs.item_language[i] if inputs.item_language else "",
                "topic": inputs.item_topic[i],
                "safety_intercepted": bool(inputs.item_safety_intercepted[i]),
                "n_raters": int(raters_per_item[i]),
                "n_pairs": int(pair_counts[i]),
                "questions": questions,
                "offensive": bool(flagged[i]),
                "turing_accuracy": turing_rows[i],
                "explanation_match": explained_rows[i] if inputs.item_has_explanation[i] else None,
                "agreement": within_i,
                "cross_group_agreement": cross_i,
                # Why there is no cross-group agreement (None when there is one).
                "cross_group_reason": None if cross_reason is None else cross_reason[i],
                "culture_test": None
                if culture is None or np.isnan(culture.p_value[i])
                else {
                    "p_value": _num(culture.p_value[i]),
                    "q_value": _num(culture.q_value[i]),
                },
                "flags": flags,
            }
        )
    return items


CULTURE_PERMUTATIONS = 999
# How every agreement interval is made, stored beside the figures.
AGREEMENT_INTERVAL = {
    "method": "rater_jackknife",
    "estimand": "these_items_raters_in_general",
    "groups": JACKKNIFE_GROUPS,
    "min_shared_items": MIN_SHARED_ITEMS,
}


def _offensive_items(inputs: StudyInputs) -> np.ndarray:
    """The method's rule: an item is offensive when any rater flags it."""
    offense_q = next(
        (q for q, qi in enumerate(inputs.questions) if qi.name == inputs.offense_question), None
    )
    flagged = np.zeros(inputs.n_items, dtype=bool)
    if offense_q is not None:
        rows = _question_rows(inputs, offense_q)
        flagged[inputs.score_item[rows][inputs.score_value[rows] > 0]] = True
    return flagged


def _culture_test(inputs: StudyInputs, cross: np.ndarray | None, seed: int) -> CultureTest | None:
    """The permutation test of group labels on the items below the cross-group line."""
    if cross is None or not inputs.rater_group:
        return None
    q = next(
        (k for k, qi in enumerate(inputs.questions) if qi.name == inputs.primary_question), None
    )
    if q is None:
        return None
    candidates = np.nan_to_num(cross, nan=np.inf) < inputs.thresholds.culture_dependent_agreement
    if not candidates.any():
        return None
    rows = _question_rows(inputs, q)
    group_of_rater = _codes(inputs.rater_group)[0]
    return culture_dependence_test(
        inputs.score_item[rows],
        inputs.score_value[rows],
        group_of_rater[inputs.score_rater[rows]],
        inputs.n_items,
        candidates=candidates,
        nominal=_is_nominal(inputs.questions[q]),
        permutations=CULTURE_PERMUTATIONS,
        seed=seed,
        fdr=inputs.thresholds.culture_fdr,
    )


def _agreement(inputs: StudyInputs, seed: int, rounds: int) -> dict[str, Any]:
    group_of_rater, group_names = _rater_groups(inputs)
    result: dict[str, Any] = {}
    for q, question in enumerate(inputs.questions):
        rows = _question_rows(inputs, q)
        item, rater, value = (
            inputs.score_item[rows],
            inputs.score_rater[rows],
            inputs.score_value[rows],
        )
        qseed = seed + 100 * q
        weights = "nominal" if _is_nominal(question) else "quadratic"
        categories = np.arange(question.min_value, question.max_value + 1, dtype=float)
        entry: dict[str, Any] = {"n_ratings": int(rows.size), "weights": weights}
        if rows.size == 0:
            result[question.name] = entry
            continue
        continuous = _is_continuous(question)
        if continuous:
            levels: tuple[str, ...] = ("interval",)
        elif _is_nominal(question):
            levels = ("nominal",)
        else:
            levels = ("nominal", "ordinal", "interval")
        # Raters are the sample (items are the study's own): one rater jackknife serves Fleiss'
        # kappa and every alpha level of the question.
        overall = rater_agreement_intervals(
            item, rater, value, levels=levels, seed=qseed, level_ci=LEVEL
        )
        entry["fleiss_kappa"] = None if continuous else overall["fleiss"].as_dict()
        entry["krippendorff_alpha"] = {level: overall[level].as_dict() for level in levels}
        entry["interval"] = dict(AGREEMENT_INTERVAL)
        if continuous:
            entry["categories_note"] = CONTINUOUS_NOTE
            entry["cohen_kappa"] = {}
        else:
            # Cohen's kappa: the mean over pairs of raters who share enough items; plain for
            # every question, quadratic-weighted beside it on rating scales.
            weightings = ("unweighted",) if _is_nominal(question) else ("unweighted", "quadratic")
            pairs = pairwise_cohen_kappa(
                item, rater, value, categories, weightings=weightings, min_shared=MIN_SHARED_ITEMS
            )
            entry["cohen_kappa"] = {
                name: kappa.as_dict()
                for name, kappa in mean_pair_kappa_intervals(
                    pairs, seed=qseed + 90, level_ci=LEVEL
                ).items()
            }
        headline = "interval" if continuous else "nominal" if _is_nominal(question) else "ordinal"
        # The level that fits the scale, named beside every figure: ordinal for rating scales
        # (interval, which most published work reports, is given beside it), nominal for flags.
        entry["alpha_level"] = headline
        by_group = {}
        by_group_interval = {}
        group_levels = (
            (headline,) if headline in ("nominal", "interval") else (headline, "interval")
        )
        for g, name in enumerate(group_names):
            mask = group_of_rater[rater] == g
            within = rater_agreement_intervals(
                item[mask],
                rater[mask],
                value[mask],
                levels=group_levels,
                seed=qseed + 10 + g,
                level_ci=LEVEL,
            )
            by_group[name] = {**within[headline].as_dict(), "level": headline}
            if headline == "ordinal":
                by_group_interval[name] = {**within["interval"].as_dict(), "level": "interval"}
        entry["krippendorff_alpha_by_group"] = by_group
        entry["krippendorff_alpha_by_group_level"] = headline
        if by_group_interval:
            entry["krippendorff_alpha_by_group_interval"] = by_group_interval
        # Cross-group figures use only raters whose background is known; say how many are not.
        entry["unknown_background_raters"] = int(np.unique(rater[group_of_rater[rater] < 0]).size)
        entry["_per_item"] = per_item_agreement(
            item,
            rater,
            value,
            inputs.n_items,
            scale_min=question.min_value,
            scale_max=question.max_value,
            weights=weights,
        )
        entry["_cross_group"] = cross_group_agreement(
            item,
            rater,
            value,
            group_of_rater,
            inputs.n_items,
            scale_min=question.min_value,
            scale_max=question.max_value,
            weights=weights,
            min_raters_per_group=CROSS_GROUP_MIN_RATERS,
        )
        entry["_cross_group_reason"] = cross_group_reasons(
            item,
            rater,
            value,
            group_of_rater,
            inputs.n_items,
            scale_min=question.min_value,
            scale_max=question.max_value,
            min_raters_per_group=CROSS_GROUP_MIN_RATERS,
        )
        result[question.name] = entry
    return result


@dataclass(frozen=True)
class _Board:
    """One fit of the item board, whichever model made it."""

    scores: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rank: np.ndarray
    component: np.ndarray
    bound: np.ndarray  # one-sided, nan where none
    unidentified: np.ndarray  # bool: scale not fixed by the data
    summary: dict[str, Any]


def _ended_board(ends: EndBounds, boot: Any, summary: dict[str, Any]) -> _Board:
    """A board from its end bounds and the bootstrap of the comparisons between finite items
    (plain or tie model): end items get their bound and no interval, ranks follow from both."""
    at_end = ends.end != 0
    ci_low = np.where(at_end, np.nan, boot.ci_low)
    ci_high = np.where(at_end, np.nan, boot.ci_high)
    return _Board(
        scores=ends.scores,
        ci_low=ci_low,
        ci_high=ci_high,
        rank=end_ranks(ends.scores, ci_low, ci_high, ends, component=ends.component),
        component=ends.component,
        bound=np.where(at_end, ends.bound, np.nan),
        # Where the finite items' own estimate does not exist (they meet only through end
        # items, or one of them never lost or never won against the others), their scores are
        # held by the ridge, not measured: shown, not ranked, and no end there has a bound.
        unidentified=~ends.identified,
        summary={
            "converged": boot.fit.converged,
            "iterations": boot.fit.iterations,
            "rounds": boot.rounds,
            "disconnected_rounds": boot.disconnected_rounds,
            "end_bound": {"level": LEVEL, "cut": ends.cut, "simultaneous": ends.simultaneous},
            **summary,
        },
    )


def _plain_board(
    winners: np.ndarray, losers: np.ndarray, rater: np.ndarray, n: int, seed: int, rounds: int
) -> _Board:
    # Items that won (or lost) every comparison have no finite maximum-likelihood score; what
    # the data say about them is one-sided: a simultaneous profile-likelihood bound
    # (ends.py). The other items' scores and intervals are fitted on the comparisons between
    # them, on the scale of their own mean, which is the full data's estimate with the ends at
    # their limits (the bootstrap of those comparisons is exact for the same reason).
    ends = one_sided_bounds(winners, losers, n, level=LEVEL)
    finite = finite_comparison_mask(winners, losers, ends.end)
    boot = bt_bootstrap(
        winners[finite],
        losers[finite],
        n,
        clusters=rater[finite],
        rounds=rounds,
        seed=seed,
        level=LEVEL,
        cluster="rater",
        interval="expanded",
    )
    return _ended_board(ends, boot, {"model": "bradley_terry"})


def _tie_board(
    left: np.ndarray,
    right: np.ndarray,
    outcome: np.ndarray,
    rater: np.ndarray,
    n: int,
    seed: int,
    rounds: int,
) -> _Board:
    # Ties enter through a tie model: Davidson or Rao-Kupper, whichever has the higher
    # likelihood (same number of parameters, so the AIC comparison is the likelihood's). An
    # item with only wins (no loss, no tie) still has no finite score: as on the plain board it
    # gets the simultaneous one-sided profile bound, now under the tie model (tie_ends.py), and
    # the other items are fitted and bootstrapped on the comparisons between them. At the
    # limit that is the full data's estimate, the tie parameter included (every tie is between
    # two finite items).
    choice = choose_tie_model(left, right, outcome, n)
    ends = tie_one_sided_bounds(left, right, outcome, n, model=choice.chosen, level=LEVEL)
    finite = (ends.end[left] == 0) & (ends.end[right] == 0)
    boot = tie_bootstrap(
        left[finite],
        right[finite],
        outcome[finite],
        n,
        clusters=rater[finite],
        rounds=rounds,
        seed=seed,
        level=LEVEL,
        model=choice.chosen,
    )
    return _ended_board(
        ends,
        boot,
        {
            "model": choice.chosen,
            "ties": int((outcome == TIE).sum()),
            # Davidson's nu (ties relative to the geometric mean of the two strengths) or
            # Rao-Kupper's theta, with its bias-corrected expanded percentile interval.
            "tie_param": {
                "value": boot.fit.tie_param,
                "ci_low": boot.tie_ci_low,
                "ci_high": boot.tie_ci_high,
                "reason": boot.tie_interval_reason,
            },
            "tie_models": {
                name: {"log_lik": choice.log_lik[name], "aic": choice.aic[name]}
                for name in TIE_MODELS
            },
        },
    )


def _bradley_terry(
    inputs: StudyInputs,
    seed: int,
    rounds: int,
    subset: np.ndarray | None = None,
    tie_subset: np.ndarray | None = None,
) -> dict[str, Any]:
    """The item board: plain Bradley-Terry with honest ends, or a tie model where the pairs
    hold ties. ``subset`` / ``tie_subset`` select decisive and tie judgments (a level's)."""
    left, right, rater = inputs.pair_left, inputs.pair_right, inputs.pair_rater
    winner_is_left = inputs.pair_winner_is_left
    if subset is not None:
        left, right, rater, winner_is_left = (
            left[subset],
            right[subset],
            rater[subset],
            winner_is_left[subset],
        )
    tie_rows = inputs.tie_rows
    if tie_subset is not None:
        tie_rows = tie_rows[tie_subset[tie_rows]]
    tie_left, tie_right = inputs.undecided_left[tie_rows], inputs.undecided_right[tie_rows]
    if left.size + tie_left.size == 0:
        return {"items": [], "n_components": 0, "n_judgments": 0}
    n = inputs.n_items
    winners = np.where(winner_is_left, left, right)
    losers = np.where(winner_is_left, right, left)
    if tie_left.size:
        board = _tie_board(
            np.concatenate([left, tie_left]),
            np.concatenate([right, tie_right]),
            np.concatenate([np.where(winner_is_left, LEFT, RIGHT), np.full(tie_left.size, TIE)]),
            np.concatenate([rater, inputs.undecided_rater[tie_rows]]),
            n,
            seed,
            rounds,
        )
    else:
        board = _plain_board(winners, losers, rater, n, seed, rounds)
    all_left = np.concatenate([left, tie_left])
    all_right = np.concatenate([right, tie_right])
    compared = np.zeros(n, dtype=bool)
    compared[all_left] = True
    compared[all_right] = True
    wins = np.bincount(winners, minlength=n)
    losses = np.bincount(losers, minlength=n)
    ties = np.bincount(tie_left, minlength=n) + np.bincount(tie_right, minlength=n)
    opponents = np.bincount(
        np.unique(np.concatenate([all_left * n + all_right, all_right * n + all_left])) // n,
        minlength=n,
    )
    undefeated = compared & (losses == 0) & (ties == 0) & (wins > 0)
    never_won = compared & (wins == 0) & (ties == 0) & (losses > 0)
    unidentified = compared & board.unidentified
    # An item below the method's minimum (3 pairings against 2 opponents) keeps its interval
    # but is not ranked: its rank would rest on one or two judgments.
    barely = compared & ((wins + losses + ties < MIN_PAIRINGS) | (opponents < MIN_OPPONENTS))
    at_end = undefeated | never_won
    # An end item without a bound (none exists there) has no rank either: nothing says where.
    unranked = unidentified | barely | (at_end & ~np.isfinite(board.bound))
    # Items never compared have no score; components are relabelled over compared items only.
    labels = {old: new for new, old in enumerate(sorted(set(board.component[compared].tolist())))}
    rows = []
    for i in np.flatnonzero(compared):
        flags = (
            (["undefeated"] if undefeated[i] else ["never_won"] if never_won[i] else [])
            + (["scale_not_identified"] if unidentified[i] else [])
            + (["barely_compared"] if barely[i] else [])
        )
        bound = board.bound[i] if at_end[i] and np.isfinite(board.bound[i]) else None
        rows.append(
            {
                "item": inputs.item_ids[i],
                "score": None if at_end[i] else board.scores[i],
                "ci_low": board.ci_low[i],
                "ci_high": board.ci_high[i],
                # One-sided: at least this strong (undefeated) or at most (never won), on the
                # scale of the component's other items, every bound of the board at once.
                "bound": bound,
                "bound_side": ("lower" if undefeated[i] else "upper")
                if bound is not None
                else None,
                "rank": None if unranked[i] else int(board.rank[i]),
                "component": labels[int(board.component[i])],
                "wins": int(wins[i]),
                "losses": int(losses[i]),
                "ties": int(ties[i]),
                "flags": flags,
            }
        )
    rows.sort(
        key=lambda row: (
            row["component"],
            row["rank"] is None,
            row["rank"] or 0,
            -(
                row["score"]
                if row["score"] is not None
                else np.inf
                if "undefeated" in row["flags"]
                else -np.inf
            ),
        )
    )
    return _num(
        {
            "items": rows,
            "n_components": len(labels),
            "n_judgments": int(left.size + tie_left.size),
            **board.summary,
            "interval": "expanded_percentile",
            "undefeated": int(undefeated.sum()),
            "never_won": int(never_won.sum()),
            "end_bounds": int(np.isfinite(board.bound[at_end]).sum()),
            "scale_not_identified": int(unidentified.sum()),
            "barely_compared": int(barely.sum()),
        }
    )


_FIT_KEYS = (
    "model",
    "converged",
    "iterations",
    "rounds",
    "disconnected_rounds",
    "interval",
    "undefeated",
    "never_won",
    "end_bounds",
    "end_bound",
    "scale_not_identified",
    "barely_compared",
    "n_judgments",
    "ties",
    "tie_param",
    "tie_models",
)


def _bt_fit_summary(bt: dict[str, Any]) -> dict[str, Any]:
    return {key: bt.get(key) for key in _FIT_KEYS}


def _group_tables(
    inputs: StudyInputs,
    labels: dict[str, list[str]],
    seed: int,
    rounds: int,
    *,
    background: bool = False,
    shared: SharedDraws | None = None,
) -> dict[str, dict[str, Any]]:
    """Per dimension (model, level, ...), per group of items: means with rater-clustered CIs,
    Turing accuracy; with `background`, also the means split by the rater's background group
    (`background`) and, where the raters' languages are known, by the languages the rater
    reads (`rater_language`: "en", "zh", "en+zh", "unstated"). One resample of the raters per
    round serves every dimension of a question (bootstrap.grouped_mean_ci_many): the rater
    groupings cost no draws of their own. With `shared`, the primary question's resamples are
    read from there, alike with the study's ICC (compute_results). The offense columns need
    the items section: `_group_offense` adds them."""
    codes = {dimension: _codes(values) for dimension, values in labels.items()}
    tables: dict[str, dict[str, Any]] = {
        dimension: {name: {"n_items": int(np.sum(item_group == g))} for g, name in enumerate(names)}
        for dimension, (item_group, names) in codes.items()
    }
    rater_group, group_names = _rater_groups(inputs)
    # Raters of unknown background go to one extra group, computed and then left out.
    rater_group = np.where(rater_group < 0, len(group_names), rater_group)
    rater_dimensions: list[tuple[str, np.ndarray, int]] = []
    if background:
        tables["background"] = {
            name: {"n_raters": int(np.sum(rater_group == g)), "questions": {}}
            for g, name in enumerate(group_names)
        }
        rater_dimensions.append(("background", rater_group, len(group_names) + 1))
        if inputs.rater_languages:
            language_group, language_names = _codes(inputs.rater_languages)
            tables["rater_language"] = {
                name: {"n_raters": int(np.sum(language_group == g)), "questions": {}}
                for g, name in enumerate(language_names)
            }
            rater_dimensions.append(("rater_language", language_group, len(language_names)))
    for q, question in enumerate(inputs.questions):
        if question.kind == "choice":
            continue  # an option's index has no mean: see choices.py
        resamples = (
            shared.source(q)
            if shared is not None and question.name == inputs.primary_question
            else None
        )
        rows = _question_rows(inputs, q)
        groupings = [
            (item_group[inputs.score_item[rows]], len(names))
            for item_group, names in codes.values()
        ]
        groupings.extend(
            (group[inputs.score_rater[rows]], size) for _, group, size in rater_dimensions
        )
        stats = grouped_mean_ci_many(
            inputs.score_value[rows],
            groupings,
            clusters=inputs.score_rater[rows],
            rounds=rounds,
            seed=seed + q,
            level=LEVEL,
            resamples=resamples,
        )
        dimensions = [*codes, *(name for name, _, _ in rater_dimensions)]
        for dimension, (est, low, high, n) in zip(dimensions, stats, strict=True):
            for g, name in enumerate(tables[dimension]):
                tables[dimension][name].setdefault("questions", {})[question.name] = _interval(
                    est[g], low[g], high[g], int(n[g])
                )
    is_ai = ~inputs.item_is_human
    correct = (inputs.turing_guess_ai == is_ai[inputs.turing_item]).astype(float)
    for k, (dimension, (item_group, names)) in enumerate(codes.items()):
        table = tables[dimension]
        est, low, high, n = grouped_proportion_ci(
            correct,
            item_group[inputs.turing_item],
            len(names),
            clusters=inputs.turing_rater,
            rounds=rounds,
            seed=seed + 50 + 100 * k,
            level=LEVEL,
        )
        for g, name in enumerate(names):
            members = item_group == g
            table[name]["turing_accuracy"] = _interval(est[g], low[g], high[g], int(n[g]))
            table[name]["safety_intercepted_items"] = int(
                inputs.item_safety_intercepted[members].sum()
            )
    return tables


def _group_offense(
    tables: dict[str, dict[str, Any]],
    inputs: StudyInputs,
    labels: dict[str, list[str]],
    items: list[dict[str, Any]],
) -> None:
    """The offense columns of `_group_tables`' item dimensions, from the items' flags."""
    offense_answered = np.zeros(inputs.n_items, dtype=bool)
    offense_q = next(
        (q for q, qi in enumerate(inputs.questions) if qi.name == inputs.offense_question), None
    )
    if offense_q is not None:
        offense_answered[inputs.score_item[_question_rows(inputs, offense_q)]] = True
    offensive = np.array([item["offensive"] for item in items], dtype=float)
    for dimension, values in labels.items():
        item_group, names = _codes(values)
        table = tables[dimension]
        for g, name in enumerate(names):
            members = item_group == g
            table[name]["offensive_items"] = int(offensive[members].sum())
            # The method's rule counts an item offensive when any rater flags it; the share
            # is over the items someone answered the flag for.
            rated = members & offense_answered
            n_rated = int(rated.sum())
            flagged_items = int(offensive[rated].sum())
            any_rater = None
            if n_rated:
                w_low, w_high = _wilson(float(flagged_items), float(n_rated), LEVEL)
                any_rater = _interval(flagged_items / n_rated, w_low, w_high, n_rated)
            table[name]["offense_rate"] = None if any_rater is None else any_rater["value"]
            table[name]["offense"] = {
                "any_rater": any_rater,
                # The other reading: the share of raters' answers that flagged it.
                "share_of_raters": table[name].get("questions", {}).get(inputs.offense_question),
            }


def _turing(
    inputs: StudyInputs, seed: int, rounds: int, models: dict[str, Any] | None = None
) -> dict[str, Any]:
    is_ai_item = ~inputs.item_is_human
    is_ai = is_ai_item[inputs.turing_item]
    guess_ai, rater = inputs.turing_guess_ai, inputs.turing_rater
    result: dict[str, Any] = {
        "overall": turing_summary(guess_ai, is_ai, clusters=rater, rounds=rounds, seed=seed)
        if guess_ai.size
        else None
    }
    human_rows = ~is_ai
    false_alarms = int(np.sum(guess_ai[human_rows]))
    correct_rejections = int(np.sum(~guess_ai[human_rows]))
    by_source: dict[str, Any] = {}
    sources = (
        np.array(inputs.item_source)[inputs.turing_item]
        if guess_ai.size
        else np.array([], dtype=str)
    )
    for k, source in enumerate(sorted(set(sources.tolist()))):
        rows = sources == source
        summary = turing_summary(
            guess_ai[rows], is_ai[rows], clusters=rater[rows], rounds=rounds, seed=seed + 10 + k
        )
        if source != "human":
            # A model's d' is measured against the human items as noise: how well raters tell
            # this model's jokes from people's.
            hits = int(np.sum(guess_ai[rows]))
            summary["d_prime"] = _num(
                d_prime(hits, int(rows.sum()) - hits, false_alarms, correct_rejections)
            )
            # Is this model's judged-human rate different from the human-written items'? The
            # difference, items and raters random, from the model comparison.
            row = next(
                (
                    d
                    for d in (models or {}).get("differences") or []
                    if d.get("question") == "judged_human"
                    and d.get("a") == source
                    and d.get("b") == "human"
                ),
                None,
            )
            summary["vs_human"] = (
                None
                if row is None
                else {
                    key: row.get(key) for key in ("value", "ci_low", "ci_high", "p_value", "p_holm")
                }
            )
            # The verdict of a model follows that test, not its hit rate alone.
            summary["verdict"] = model_turing_verdict(summary.get("accuracy"), summary["vs_human"])
        else:
            # The human-written items are what the models are compared with: no verdict.
            summary["verdict"] = None
        by_source[source] = summary
    result["by_source"] = by_source
    levels = (
        np.array(inputs.item_level)[inputs.turing_item]
        if guess_ai.size
        else np.array([], dtype=str)
    )
    result["by_level"] = {
        level: turing_summary(
            guess_ai[levels == level],
            is_ai[levels == level],
            clusters=rater[levels == level],
            rounds=rounds,
            seed=seed + 100 + k,
        )
        for k, level in enumerate(sorted(set(levels.tolist())))
    }
    return _num(result)


def _diagnostics(inputs: StudyInputs, seed: int, rounds: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if inputs.pair_left.size:
        bias = position_bias(
            inputs.pair_winner_is_left, clusters=inputs.pair_rater, rounds=rounds, seed=seed
        )
        result["position_bias"] = {
            "left_choice_rate": bias.as_dict(),
            "p_value": _num(
                position_bias_p_value(inputs.pair_winner_is_left, clusters=inputs.pair_rater)
            ),
        }
    primary = next(
        (q for q, qi in enumerate(inputs.questions) if qi.name == inputs.primary_question), None
    )
    if primary is not None:
        rows = _question_rows(inputs, primary)
        result["fatigue"] = fatigue(
            inputs.score_seconds[rows] / 60.0,
            inputs.score_value[rows],
            clusters=inputs.score_rater[rows],
            rounds=rounds,
            seed=seed + 1,
        )
        # The test of the same drift with every rater their own baseline (the pooled trend
        # above mixes raters who reach late minutes with change within a session).
        result["session_drift"] = {
            "question": inputs.questions[primary].name,
            **session_drift(
                inputs.score_seconds[rows] / 60.0,
                inputs.score_value[rows],
                inputs.score_rater[rows],
                np.asarray(inputs.item_level, dtype=object)[inputs.score_item[rows]],
                seed=seed + 3,
                rounds=rounds,
            ),
        }
    group_of_rater, names = _rater_groups(inputs)
    if names and inputs.score_item.size:
        scorecards = distinct_pairs(inputs.score_item, inputs.score_rater)
        scorecards = scorecards[:, group_of_rater[scorecards[1]] >= 0]
        coverage = np.zeros((inputs.n_items, len(names)), dtype=np.int64)
        np.add.at(coverage, (scorecards[0], group_of_rater[scorecards[1]]), 1)
        result["coverage"] = {
            "groups": names,
            "items_without_group": {
                name: int(np.sum(coverage[:, g] == 0)) for g, name in enumerate(names)
            },
        }
    if inputs.explanation_item.size:
        result["explanation_match_rate"] = proportion_ci(
            inputs.explanation_match, rounds=rounds, seed=seed + 2
        ).as_dict()
    return _num(result)


def _warnings(
    inputs: StudyInputs, items: list[dict[str, Any]], agreement: dict[str, Any], bt: dict[str, Any]
) -> list[dict[str, Any]]:
    """The study's warnings, study-level first; each per-item condition is one warning that
    counts its items (``scope`` "items", the item flag in ``flag``): the items themselves carry
    the flag, so a study of thousands of items still has a handful of warnings.

    Each warning: ``code``, ``scope`` ("study" or "items"), ``subject``, ``params`` (what a
    translated sentence needs), ``message`` (the sentence in English), ``value``, ``threshold``.
    """
    thresholds = inputs.thresholds
    # The method's minimum counts rated items (the warning says "rated"), not imported ones.
    rated = np.zeros(inputs.n_items, dtype=bool)
    rated[inputs.score_item] = True
    sources = sorted({source for source in inputs.item_source if source != "human"})
    items_per_model = {
        source: sum(1 for i, s in enumerate(inputs.item_source) if s == source and rated[i])
        for source in sources
    }
    study: list[dict[str, Any]] = [
        {**warning, "scope": "study"}
        for warning in sample_size_warnings(
            items_per_model,
            {},
            min_items_per_model=thresholds.min_items_per_model,
            min_raters_per_item=thresholds.min_raters_per_item,
        )
    ]
    for name, entry in agreement.items():
        # The agreement that fits the scale: ordinal (weighted) for Likert answers, where exact
        # matches on a 7-point scale would call near-misses disagreement; nominal for flags.
        alphas = entry.get("krippendorff_alpha") or {}
        measure = "ordinal" if "ordinal" in alphas else "nominal"
        value = (alphas.get(measure) or {}).get("value")
        if value is not None and value < thresholds.controversial_kappa:
            study.append(
                {
                    "code": "controversial_question",
                    "scope": "study",
                    "subject": name,
                    "params": {
                        "question": name,
                        "measure": measure,
                        "value": value,
                        "threshold": thresholds.controversial_kappa,
                    },
                    "message": f"agreement on {name} ({measure} Krippendorff's alpha) is "
                    f"{value:.2f}, below {thresholds.controversial_kappa}: too controversial "
                    "to rank on",
                    "value": value,
                    "threshold": thresholds.controversial_kappa,
                }
            )
    if bt.get("n_components", 0) > 1:
        study.append(
            {
                "code": "disconnected_comparisons",
                "scope": "study",
                "subject": "bradley_terry",
                "params": {"groups": bt["n_components"]},
                "message": f"the pair comparisons form {bt['n_components']} separate groups; "
                "scores are comparable only within a group",
                "value": bt["n_components"],
                "threshold": 1,
            }
        )
    if bt.get("converged") is False:
        study.append(
            {
                "code": "bt_not_converged",
                "scope": "study",
                "subject": "bradley_terry",
                "params": {"iterations": bt.get("iterations")},
                "message": "the Bradley-Terry fit did not converge; its scores are not final",
                "value": bt.get("iterations"),
                "threshold": 0,
            }
        )
    if bt.get("disconnected_rounds"):
        study.append(
            {
                "code": "bt_disconnected_rounds",
                "scope": "study",
                "subject": "bradley_terry",
                "params": {"count": bt["disconnected_rounds"], "rounds": bt.get("rounds")},
                "message": f"{bt['disconnected_rounds']} of {bt.get('rounds')} bootstrap rounds "
                "split the comparisons into separate groups: the design is too sparse for "
                "the intervals to be trusted fully",
                "value": bt["disconnected_rounds"],
                "threshold": 0,
            }
        )
    one_sided = (bt.get("undefeated") or 0) + (bt.get("never_won") or 0)
    if one_sided:
        study.append(
            {
                "code": "bt_unbounded_items",
                "scope": "study",
                "subject": "bradley_terry",
                "params": {"count": one_sided, "bounded": bt.get("end_bounds") or 0},
                "message": f"{one_sided} item(s) won or lost every comparison: no finite "
                f"Bradley-Terry score; {bt.get('end_bounds') or 0} of them have a one-sided "
                "bound and the rank that follows from it",
                "value": one_sided,
                "threshold": 0,
            }
        )
    unidentified = bt.get("scale_not_identified") or 0
    if unidentified:
        study.append(
            {
                "code": "bt_scale_not_identified",
                "scope": "study",
                "subject": "bradley_terry",
                "params": {"count": unidentified},
                "message": f"{unidentified} item(s) are compared only in ways the data cannot "
                "place on a scale (through items that won or lost everything): their scores are "
                "held by the fit's ridge, shown but not ranked",
                "value": unidentified,
                "threshold": 0,
            }
        )
    uncompared = sum(1 for item in items if item["n_pairs"] == 0)
    if uncompared and inputs.pair_left.size:
        study.append(
            {
                "code": "items_never_paired",
                "scope": "study",
                "subject": "bradley_terry",
                "params": {"count": uncompared},
                "message": f"{uncompared} item(s) appear in no pair judgment and have no "
                "Bradley-Terry score",
                "value": uncompared,
                "threshold": 1,
            }
        )
    per_item: list[dict[str, Any]] = []
    culture = sum(1 for item in items if "culture_dependent" in item["flags"])
    if culture:
        per_item.append(
            {
                "code": "culture_dependent_items",
                "scope": "items",
                "flag": "culture_dependent",
                "subject": "items",
                "params": {"count": culture, "threshold": thresholds.culture_dependent_agreement},
                "message": f"{culture} item(s) have cross-group agreement below "
                f"{thresholds.culture_dependent_agreement}: culture-dependent, not evidence "
                "about the model",
                "value": culture,
                "threshold": thresholds.culture_dependent_agreement,
            }
        )
    few = sum(1 for item in items if "too_few_raters" in item["flags"])
    if few:
        per_item.append(
            {
                "code": "too_few_raters",
                "scope": "items",
                "flag": "too_few_raters",
                "subject": "items",
                "params": {"count": few, "min": thresholds.min_raters_per_item},
                "message": f"{few} item(s) have fewer than {thresholds.min_raters_per_item} "
                "raters; at least that many are needed for a stable mean and agreement",
                "value": few,
                "threshold": thresholds.min_raters_per_item,
            }
        )
    held = sum(1 for item in items if "held" in item["flags"])
    if held:
        per_item.append(
            {
                "code": "held_items_counted",
                "scope": "items",
                "flag": "held",
                "subject": "items",
                "params": {"count": held},
                "message": f"{held} item(s) held by the offense filter are counted (a study "
                "setting): their ratings are in every figure",
                "value": held,
                "threshold": 0,
            }
        )
    return _num(study + per_item)


def compute_results(
    inputs: StudyInputs,
    *,
    seed: int,
    rounds: int,
    threads: int = 1,
    meanwhile: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """The whole results document for one study (see the module docstring for the choices).

    With `threads` > 1 the reliability section, the longest independent part, is computed in a
    second thread while this one computes the rest, and splits its own work the same way
    (`reliability.by_group`): most of its time is spent in numpy and scipy routines that release
    the interpreter's lock (benchmarks/README.md, bench_import.py). Every section draws from its
    own seed, so the document is the same either way.

    `meanwhile`, if given, is called once in this thread when the rest is done, before waiting
    for the reliability section: the caller's own work that the document does not depend on
    fills the time this thread would otherwise spend waiting.
    """
    # The study's ICC bootstrap and the group tables resample the same raters of the primary
    # question, 1,000 times each: they read one set of resamples (benchmarks/README.md, "One
    # set of rater resamples").
    shared = SharedDraws(seed + _SEED_SHARED_RESAMPLES)
    with ThreadPoolExecutor(max_workers=1) if threads > 1 else nullcontext() as pool:
        reliability = (
            pool.submit(
                reliability_section,
                inputs,
                seed=seed + _SEED_RELIABILITY,
                rounds=rounds,
                threads=threads,
                shared=shared,
            )
            if pool is not None
            else None
        )
        payload = _compute_results(inputs, seed=seed, rounds=rounds, shared=shared)
        if meanwhile is not None:
            meanwhile()
        payload["reliability"] = (
            reliability.result()
            if reliability is not None
            else reliability_section(
                inputs, seed=seed + _SEED_RELIABILITY, rounds=rounds, shared=shared
            )
        )
    return payload


def _compute_results(
    inputs: StudyInputs, *, seed: int, rounds: int, shared: SharedDraws | None = None
) -> dict[str, Any]:
    """Every section of `compute_results` but reliability, in the document's order (the
    reliability section's place is kept, and filled by the caller).

    The group tables come first: they read the resamples of `shared` while the reliability
    section's ICC, started at the same time, reads them too (each batch is kept for the other
    only within a budget, so the two should keep pace)."""
    labels = {
        "source": inputs.item_source,
        "level": inputs.item_level,
        "humor_type": inputs.item_humor_type,
        "level_humor_type": [
            f"{lv}/{ht}" for lv, ht in zip(inputs.item_level, inputs.item_humor_type, strict=True)
        ],
    }
    if any(inputs.item_content_type):
        # Generated-content studies: news, analysis, creative (the weights differ per type).
        labels["content_type"] = [ct or "unspecified" for ct in inputs.item_content_type]
    if inputs.item_language:
        # Last, so the other dimensions' Turing seeds stay as they were.
        labels["language"] = inputs.item_language
    groups: dict[str, Any] = _group_tables(
        inputs, labels, seed + _SEED_GROUPS, rounds, background=True, shared=shared
    )
    agreement = _agreement(inputs, seed + _SEED_AGREEMENT, rounds)
    # Analytic (crossed-design variances, no resampling): needs no seed.
    models = _num(compare_models(inputs, level=LEVEL))
    items = _items(inputs, seed + _SEED_ITEMS, rounds, agreement)
    bt = _bradley_terry(inputs, seed + _SEED_BT, rounds)
    by_level: dict[str, Any] = {}
    levels = np.array(inputs.item_level)
    for k, level in enumerate(sorted(set(inputs.item_level))):
        same_level = (levels[inputs.pair_left] == level) & (levels[inputs.pair_right] == level)
        same_level_ties = (levels[inputs.undecided_left] == level) & (
            levels[inputs.undecided_right] == level
        )
        if same_level.any() or same_level_ties[inputs.tie_rows].any():
            by_level[level] = _bradley_terry(
                inputs, seed + _SEED_BT + 100 * (k + 1), rounds, same_level, same_level_ties
            )
    _group_offense(groups, inputs, labels, items)
    public_agreement = {
        name: {
            **{key: value for key, value in entry.items() if not key.startswith("_")},
            "per_item": [
                {
                    "item": inputs.item_ids[i],
                    "agreement": _num(entry["_per_item"][i]),
                    "cross_group": _num(entry["_cross_group"][i]),
                    "cross_group_reason": entry["_cross_group_reason"][i],
                }
                for i in range(inputs.n_items)
            ]
            if "_per_item" in entry
            else [],
        }
        for name, entry in agreement.items()
    }
    diagnostics = _diagnostics(inputs, seed + _SEED_DIAG, rounds)
    return {
        "seed": seed,
        "rounds": rounds,
        "level": LEVEL,
        "cluster": "rater",
        # The question the headline numbers follow (the rubric names it).
        "primary_question": inputs.primary_question,
        "counts": {
            "items": inputs.n_items,
            "raters": inputs.n_raters,
            "raters_unknown_background": sum(1 for group in inputs.rater_group if not group),
            "score_answers": int(inputs.score_item.size),
            "pair_judgments": int(inputs.pair_left.size),
            # Answered "about the same" or "neither" (not in pair_judgments, which are decisive).
            "pair_ties": int(inputs.tie_rows.size),
            "pair_neither": int(inputs.neither_rows.size),
            "turing_judgments": int(inputs.turing_item.size),
        },
        "bradley_terry": bt["items"],
        "bradley_terry_components": bt["n_components"],
        "bradley_terry_by_level": {level: entry["items"] for level, entry in by_level.items()},
        # How far the fit and its bootstrap can be trusted (exported, and warned about below).
        "bradley_terry_fit": _bt_fit_summary(bt),
        "bradley_terry_fit_by_level": {
            level: _bt_fit_summary(entry) for level, entry in by_level.items()
        },
        "agreement": public_agreement,
        # The culture-dependence test's setting and outcome (per item: items[].culture_test).
        "culture_test": {
            "fdr": inputs.thresholds.culture_fdr,
            "permutations": CULTURE_PERMUTATIONS,
            "line": inputs.thresholds.culture_dependent_agreement,
            "tested": sum(1 for item in items if item["culture_test"] is not None),
            "discoveries": sum(1 for item in items if "culture_dependent" in item["flags"]),
        },
        "items": items,
        "groups": groups,
        "models": models,
        "turing": _turing(inputs, seed + _SEED_TURING, rounds, models),
        "diagnostics": diagnostics,
        # Only for rubrics with choice questions, so other documents are unchanged.
        **(
            {
                "choices": choice_shares(
                    inputs, seed=seed + _SEED_CHOICES, rounds=rounds, level=LEVEL
                )
            }
            if any(question.kind == "choice" for question in inputs.questions)
            else {}
        ),
        # Only for rubrics that offer "I don't get it", so other documents are unchanged.
        **(
            {
                "not_understood": {
                    "rule": NOT_UNDERSTOOD_RULE,
                    "questions": not_understood_rates(
                        inputs, seed=seed + _SEED_NOT_UNDERSTOOD, rounds=rounds, level=LEVEL
                    ),
                }
            }
            if any(question.not_understood for question in inputs.questions)
            else {}
        ),
        # Only for studies with ties or "neither" answers, so other documents are unchanged.
        **(
            {
                "pair_outcomes": pair_outcome_rates(
                    inputs, seed=seed + _SEED_PAIR_OUTCOMES, rounds=rounds, level=LEVEL
                )
            }
            if inputs.undecided_left.size
            else {}
        ),
        # Only for rubrics that ask the behavioural signals, so other documents are unchanged.
        **(
            {
                "signals": signals_section(
                    inputs, seed=seed + _SEED_SIGNALS, rounds=rounds, level=LEVEL
                )
            }
            if any(question.name in SIGNALS for question in inputs.questions)
            else {}
        ),
        "style_control": style_section(
            inputs, _offensive_items(inputs), seed=seed + _SEED_STYLE, rounds=rounds, level=LEVEL
        ),
        "reliability": None,
        "warnings": _warnings(inputs, items, public_agreement, bt)
        + drift_warnings(diagnostics.get("session_drift")),
    }


# Item flags that make an item no evidence about the model that wrote it.
NOT_EVIDENCE_FLAGS = ("culture_dependent", "safety_intercepted")


def compute_study_document(
    inputs: StudyInputs,
    *,
    seed: int,
    rounds: int,
    before_exclusions: StudyInputs | None = None,
    threads: int = 1,
    meanwhile: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """The results document with its two comparisons (`threads` and `meanwhile`: see
    `compute_results`; `meanwhile` is called during the main document).

    - `evidence_only`: when some items are not evidence about their model (culture-dependent:
      cross-group agreement below the threshold; or intercepted by a safety filter), the whole
      document again without them, so every page can show both views;
    - `before_exclusions`: when the researcher excluded data, the headline table (per model:
      means of every question and Turing accuracy, with intervals) computed on everything, to
      show how the exclusions move the headline numbers.
    Both use the same seed as the main document, so a difference is the data's, not the noise's.
    """
    payload = compute_results(
        inputs, seed=seed, rounds=rounds, threads=threads, meanwhile=meanwhile
    )
    left_out = [
        (i, [flag for flag in item["flags"] if flag in NOT_EVIDENCE_FLAGS])
        for i, item in enumerate(payload["items"])
        if any(flag in NOT_EVIDENCE_FLAGS for flag in item["flags"])
    ]
    if left_out:
        keep = np.ones(inputs.n_items, dtype=bool)
        keep[[i for i, _ in left_out]] = False
        payload["evidence_only"] = {
            "left_out": [{"item": inputs.item_ids[i], "flags": flags} for i, flags in left_out],
            "results": compute_results(
                inputs_without_items(inputs, keep), seed=seed, rounds=rounds, threads=threads
            ),
        }
    if before_exclusions is not None:
        payload["before_exclusions"] = {
            "counts": {
                "items": before_exclusions.n_items,
                "raters": before_exclusions.n_raters,
                "score_answers": int(before_exclusions.score_item.size),
                "pair_judgments": int(before_exclusions.pair_left.size),
                "turing_judgments": int(before_exclusions.turing_item.size),
            },
            "source": _group_tables(
                before_exclusions,
                {"source": before_exclusions.item_source},
                seed + _SEED_GROUPS,
                rounds,
            )["source"],
        }
    return payload


__all__ = ["NOT_EVIDENCE_FLAGS", "compute_results", "compute_study_document"]
