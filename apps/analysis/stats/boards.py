"""The results document's style-controlled boards and the reliability of the board.

Pure: StudyInputs in, JSON-ready dicts out (the caller, report.py, rounds nothing).

Style control (``style_section``)
---------------------------------
The covariates, one value per item (``covariates``):

- ``log_length``: log(1 + length) in the item's own units (characters for Chinese, words
  otherwise; ``apps.studies.lengths``). The log makes a joke twice as long one step whatever
  the language, and with the language indicator beside it the two units need no exchange
  rate (log characters = log words + a constant per language, absorbed by the indicator);
- ``language_zh``: the item is Chinese (only in studies with items in both languages);
- ``level_<level>``: one indicator per level other than the first (single, multi-turn,
  scenario);
- ``offensive``: some rater flagged the item offensive (the method's any-rater rule);
- ``judged_human``: the share of Turing judgments that called the item a person's (items
  without one take the mean of those with one, so the column only compares judged items);
- each numeric item metadata key the study names (``Study.style_covariates``), items without
  a value taking the mean of those with one.

``style_control.py`` standardises the continuous columns, drops constant and collinear ones
(reported in ``dropped``) and fits the contextual Bradley-Terry of the sources with rater-
clustered (CR1) Wald intervals, and the item scores minus the covariates' effect with a rater-
clustered bootstrap of both stages. Only decisive pair judgments enter (a tie says the two are
close, and the tie model reads it on the plain board). ``order_changes`` lists the pairs of
sources (and of items) whose separated order flips, appears or disappears when controlling.

Reliability (``reliability_section``)
-------------------------------------
Per study and per model (``reliability.by_group``): the split-half ranking correlation (raters
split at random into halves, each half's Bradley-Terry scores or item means correlated by
Spearman over the items both halves rated; its distribution over random splits, not a
confidence interval) for pairs and for the primary question's item means, and the k-rater
reliability of the item means of that question (ICC(1) from the one-way random-effects
ANOVA, stepped up to k raters by Spearman-Brown, with a rater-clustered bootstrap interval;
estimand: the reliability of the mean of k random raters' scores of these items, for raters
like these).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.stats.bootstrap import SharedDraws
from apps.analysis.stats.inputs import StudyInputs
from apps.analysis.stats.reliability import by_group
from apps.analysis.stats.style_control import (
    order_changes,
    style_controlled_items,
    style_controlled_sources,
)

# Random rater splits of the split-half correlations. Each split of the pairs refits
# Bradley-Terry twice (~0.1 s on 2,000 items); 100 splits put the mean's Monte Carlo error
# near 0.002 (the spread over splits is ~0.02 on a full-size study, benchmarks/README.md).
SPLITS = 100
RELIABILITY_KS = (1, 3, 5, 10, 15, 20)


def _num(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    return value


def _filled(values: np.ndarray) -> np.ndarray | None:
    """The column with missing values set to the mean of the known ones; None when none is."""
    known = np.isfinite(values)
    if not known.any():
        return None
    return np.where(known, values, float(values[known].mean()))


def covariates(inputs: StudyInputs, offensive: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(n_items, p) matrix and the columns' names, as the module docstring lists them."""
    n = inputs.n_items
    columns: list[np.ndarray] = []
    names: list[str] = []
    if inputs.item_length.size == n and np.isfinite(inputs.item_length).any():
        length = _filled(np.log1p(inputs.item_length))
        if length is not None:
            columns.append(length)
            names.append("log_length")
    languages = sorted(set(inputs.item_language)) if inputs.item_language else []
    if len(languages) > 1 and "zh" in languages:
        columns.append(np.array([lang == "zh" for lang in inputs.item_language], dtype=float))
        names.append("language_zh")
    levels = sorted(set(inputs.item_level))
    for level in levels[1:]:
        columns.append(np.array([lv == level for lv in inputs.item_level], dtype=float))
        names.append(f"level_{level}")
    columns.append(np.asarray(offensive, dtype=float))
    names.append("offensive")
    if inputs.turing_item.size:
        judged = np.bincount(inputs.turing_item, minlength=n).astype(float)
        human = np.bincount(
            inputs.turing_item, weights=(~inputs.turing_guess_ai).astype(float), minlength=n
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            share = _filled(np.where(judged > 0, human / judged, np.nan))
        if share is not None:
            columns.append(share)
            names.append("judged_human")
    for name in sorted(inputs.item_covariates):
        column = _filled(np.asarray(inputs.item_covariates[name], dtype=float))
        if column is not None:
            columns.append(column)
            names.append(f"meta:{name}")
    return np.column_stack(columns) if columns else np.zeros((n, 0)), names


def _board(scores: Any, low: Any, high: Any, rank: Any | None = None) -> dict[str, Any]:
    out = {"value": _num(scores), "ci_low": _num(low), "ci_high": _num(high)}
    if rank is not None:
        out["rank"] = int(rank)
    return out


def style_section(
    inputs: StudyInputs, offensive: np.ndarray, *, seed: int, rounds: int, level: float
) -> dict[str, Any] | None:
    """The two boards side by side, for sources and items; None without pair judgments."""
    if inputs.pair_left.size == 0:
        return None
    x, names = covariates(inputs, offensive)
    sources = sorted(set(inputs.item_source))
    code = {name: k for k, name in enumerate(sources)}
    item_source = np.array([code[s] for s in inputs.item_source], dtype=np.int64)
    args = (
        inputs.pair_left,
        inputs.pair_right,
        inputs.pair_winner_is_left,
        inputs.pair_rater,
        item_source,
        len(sources),
        x,
        names,
    )
    out: dict[str, Any] = {
        "level": level,
        "covariates_offered": names,
        "estimand": "raters_random_items_fixed",
        "interval": {"sources": "cluster_robust_wald_t", "items": "expanded_percentile"},
    }
    try:
        fit = style_controlled_sources(*args, level=level)
    except ValueError as exc:
        # Sources not linked by any comparison: their strengths share no scale.
        return {**out, "reason": "sources_not_connected", "detail": str(exc)}
    out.update(
        {
            "n_pairs": int(fit.n_pairs),
            "n_raters": int(fit.n_clusters),
            "reason": fit.reason,
            "dropped": dict(fit.dropped),
            "covariates": [
                {
                    "name": name,
                    "beta": _num(fit.beta[k]),
                    "ci_low": _num(fit.beta_low[k]),
                    "ci_high": _num(fit.beta_high[k]),
                    "standardised": bool(fit.standardised[k]),
                }
                for k, name in enumerate(fit.beta_names)
            ],
            "sources": [
                {
                    "source": source,
                    "plain": _board(fit.plain_theta[k], fit.plain_low[k], fit.plain_high[k]),
                    "controlled": _board(fit.theta[k], fit.theta_low[k], fit.theta_high[k]),
                    "flag": fit.source_flags.get(k),
                }
                for k, source in enumerate(sources)
            ],
            "order_changes": [
                {"change": c["change"], "a": c["a"], "b": c["b"]}
                for c in order_changes(
                    fit.plain_theta,
                    fit.plain_low,
                    fit.plain_high,
                    fit.theta,
                    fit.theta_low,
                    fit.theta_high,
                    sources,
                )
            ],
        }
    )
    items = style_controlled_items(*args, rounds=rounds, seed=seed, level=level)
    compared = np.zeros(inputs.n_items, dtype=bool)
    compared[inputs.pair_left] = True
    compared[inputs.pair_right] = True
    out["items"] = [
        {
            "item": inputs.item_ids[i],
            "component": int(items.component[i]),
            "plain": _board(
                items.plain_scores[i], items.plain_low[i], items.plain_high[i], items.plain_rank[i]
            ),
            "controlled": _board(items.scores[i], items.ci_low[i], items.ci_high[i], items.rank[i]),
            "adjustment": _num(items.adjustment[i]),
        }
        for i in np.flatnonzero(compared)
    ]
    out["item_order_changes"] = len(
        order_changes(
            items.plain_scores,
            items.plain_low,
            items.plain_high,
            items.scores,
            items.ci_low,
            items.ci_high,
            inputs.item_ids,
            component=items.component,
        )
    )
    out["item_rounds"] = int(items.rounds)
    return out


def reliability_section(
    inputs: StudyInputs,
    *,
    seed: int,
    rounds: int,
    threads: int = 1,
    shared: SharedDraws | None = None,
) -> dict[str, Any]:
    """``{"study": {...}, "by_source": {source: {...}}}``, each with ``pairs`` and ``scores``
    (split-half) and ``k_rater``; a part without its data is None. ``threads``: see
    ``reliability.by_group`` (the same results either way). With ``shared``, the study's ICC
    bootstrap reads its raters' resamples from the primary question's source there (the group
    tables read the same: report.compute_results)."""
    primary = next(
        (q for q, info in enumerate(inputs.questions) if info.name == inputs.primary_question),
        None,
    )
    scores = None
    if primary is not None and inputs.questions[primary].kind != "choice":
        rows = inputs.score_question == primary
        scores = (inputs.score_item[rows], inputs.score_rater[rows], inputs.score_value[rows])
    pairs = (
        (inputs.pair_left, inputs.pair_right, inputs.pair_winner_is_left, inputs.pair_rater)
        if inputs.pair_left.size
        else None
    )

    # One call for the study and its models: the rater splits and pair fits are shared.
    whole = "\x00study"
    found = by_group(
        np.array(inputs.item_source, dtype=object),
        scores=scores,
        pairs=pairs,
        splits=SPLITS,
        rounds=rounds,
        seed=seed,
        ks=RELIABILITY_KS,
        whole=whole,
        threads=threads,
        resamples=shared.source(primary)
        if shared is not None and primary is not None and scores is not None
        else None,
    )
    tables = {
        name: {
            "n_items": entry.n_items,
            "pairs": entry.pairs.as_dict() if entry.pairs is not None else None,
            "scores": entry.scores.as_dict() if entry.scores is not None else None,
            "k_rater": entry.k_rater.as_dict() if entry.k_rater is not None else None,
        }
        for name, entry in found.items()
    }
    study = tables.pop(whole)
    return {
        "question": inputs.primary_question if scores is not None else None,
        "splits": SPLITS,
        "study": study,
        "by_source": tables,
    }
