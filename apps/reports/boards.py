"""The printable report's sections on the pair board: which model fitted each board and what its
ends say, how often a pair was answered "about the same" or "neither", the style-controlled
boards, and the reliability of the board.

Pure like the rest of the report's context: the stored results document in (its sections
``bradley_terry_fit``, ``bradley_terry_fit_by_level``, ``pair_outcomes``, ``style_control`` and
``reliability``; ``apps/analysis/stats/report.py`` and ``boards.py`` give their shape), rounded
text out. Every code is named through ``apps.analysis.labels``, as on the results pages. Results
stored before a section existed have none of it: its function then returns None (or an empty
list) and the report leaves the section out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.findings.figures import group_order
from apps.reports.formats import DASH, fmt, fmt_interval, fmt_percent

Payload = Mapping[str, Any]
LEVELS = ("single", "multi_turn", "scenario")
# End items named one by one in the report; the bradley_terry tables of the exports list all.
NAMED_ENDS = 50


def _levels(names: Any) -> list[str]:
    return sorted(names, key=lambda n: (LEVELS.index(n) if n in LEVELS else len(LEVELS), n))


def _boards(document: Payload, *, humor: bool) -> list[tuple[str, str, Payload]]:
    """(scope, label, fit) for the pooled board, then each level's (ranked separately)."""
    out: list[tuple[str, str, Payload]] = []
    fit = document.get("bradley_terry_fit") or {}
    if fit.get("model"):
        out.append(("", _("All levels"), fit))
    by_level = document.get("bradley_terry_fit_by_level") or {}
    for level in _levels(by_level):
        if (by_level[level] or {}).get("model"):
            out.append((level, labels.level_label(level, humor=humor), by_level[level]))
    return out


def bound_text(row: Payload) -> str:
    """An end item's one-sided bound: `≥ 0.73` for an undefeated item (at least this strong),
    `≤ -1.20` for one that never won (at most)."""
    if row.get("bound") is None:
        return DASH
    sign = "≥" if row.get("bound_side") == "lower" else "≤"
    return f"{sign} {fmt(row['bound'])}"


def pair_board(document: Payload, *, humor: bool) -> dict[str, Any] | None:
    """Which model fitted each board (plain Bradley-Terry, or Davidson / Rao-Kupper with the tie
    parameter and both tie models' log-likelihoods), and the ends of each board: how many items
    won or lost every comparison, how many of them have a one-sided bound, and which items
    those are. None for results stored before the board named its model."""
    boards = _boards(document, humor=humor)
    if not boards:
        return None
    tie_models = ("davidson", "rao_kupper")
    fits = []
    ends = []
    for scope, label, fit in boards:
        model = str(fit.get("model"))
        stored = fit.get("tie_models") or {}
        tie_param = fit.get("tie_param")
        fits.append(
            {
                "scope": scope or "all",
                "label": label,
                "model": labels.tie_model_label(model),
                "n_judgments": fmt(fit.get("n_judgments")),
                "ties": fmt(fit.get("ties") or 0),
                "tie_param": f"{labels.tie_param_symbol(model)} = {fmt_interval(tie_param)}"
                if tie_param and tie_param.get("value") is not None
                else DASH,
                "tie_param_note": labels.tie_interval_reason_label((tie_param or {}).get("reason")),
                "log_liks": [
                    {
                        "text": fmt((stored.get(name) or {}).get("log_lik")),
                        "chosen": name == model,
                    }
                    for name in tie_models
                ],
            }
        )
        end_bound = fit.get("end_bound") or {}
        ends.append(
            {
                "scope": scope or "all",
                "label": label,
                "undefeated": fmt(fit.get("undefeated") or 0),
                "never_won": fmt(fit.get("never_won") or 0),
                "end_bounds": fmt(fit.get("end_bounds") or 0),
                "scale_not_identified": fmt(fit.get("scale_not_identified") or 0),
                "level": fmt(100 * end_bound["level"], 0) if end_bound.get("level") else "",
                "simultaneous": bool(end_bound.get("simultaneous")),
            }
        )
    # The end items the report's leaderboards show: per level where the levels are ranked
    # separately, else the pooled board.
    by_level = document.get("bradley_terry_by_level") or {}
    scopes = [
        (labels.level_label(level, humor=humor), by_level[level]) for level in _levels(by_level)
    ]
    scopes = scopes or [(_("All levels"), document.get("bradley_terry") or [])]
    bounded = [
        {
            "item": row["item"],
            "board": label,
            "wins": fmt(row.get("wins")),
            "losses": fmt(row.get("losses")),
            "bound": bound_text(row),
            "side": _("at least this strong")
            if row.get("bound_side") == "lower"
            else _("at most this strong"),
        }
        for label, rows in scopes
        for row in rows
        if row.get("bound") is not None
    ]
    return {
        "fits": fits,
        "tie_model_labels": [labels.tie_model_label(name) for name in tie_models],
        "any_ties": any(fit.get("tie_param") for _s, _l, fit in boards),
        "ends": ends,
        "any_ends": any(
            (fit.get("undefeated") or 0) + (fit.get("never_won") or 0)
            or fit.get("scale_not_identified")
            for _s, _l, fit in boards
        ),
        "bounded": bounded[:NAMED_ENDS],
        "bounded_more": max(0, len(bounded) - NAMED_ENDS),
        "simultaneous": any(row["simultaneous"] for row in ends),
    }


def pair_outcomes(document: Payload) -> dict[str, Any] | None:
    """The share of pair judgments answered "about the same" and "neither", overall (of all
    judgments) and per model and background (of their pairings); None where the study offered
    neither answer."""
    section = document.get("pair_outcomes") or {}
    kinds = [kind for kind in ("tie", "neither") if section.get(kind)]
    if not kinds:
        return None

    def cell(stats: Any) -> dict[str, Any]:
        stats = stats or {}
        return {"rate": fmt_percent(stats), "count": stats.get("count"), "n": stats.get("n")}

    rows = [
        {"label": _("All judgments"), "cells": [cell(section[k].get("overall")) for k in kinds]}
    ]
    for dimension in ("source", "background"):
        names: set[str] = set()
        for kind in kinds:
            names |= set(section[kind].get(f"by_{dimension}") or {})
        for name in group_order(names, dimension):
            rows.append(
                {
                    "label": labels.group_label(name, dimension),
                    "cells": [
                        cell((section[kind].get(f"by_{dimension}") or {}).get(name))
                        for kind in kinds
                    ],
                }
            )
    return {
        "kinds": [{"kind": kind, "label": labels.pair_outcome_label(kind)} for kind in kinds],
        "judgments": section.get("judgments"),
        "rows": rows,
    }


def style_control(document: Payload) -> dict[str, Any] | None:
    """The sources' boards plain and style-controlled, the covariates' effects (and the ones
    dropped), and the order changes in words; None without pair judgments."""
    style = document.get("style_control")
    if not style:
        return None
    reason = style.get("reason")
    sources = {row["source"]: row for row in style.get("sources") or []}
    covariates = [
        {
            "name": row["name"],
            "label": labels.covariate_label(row["name"]),
            "scale": labels.covariate_scale_label(bool(row.get("standardised"))),
            "beta": fmt_interval(
                {
                    "value": row.get("beta"),
                    "ci_low": row.get("ci_low"),
                    "ci_high": row.get("ci_high"),
                }
            ),
        }
        for row in style.get("covariates") or []
    ]
    return {
        "fitted": reason != "sources_not_connected",
        "reason": labels.style_reason_label(reason) if reason else "",
        "n_pairs": style.get("n_pairs"),
        "n_raters": style.get("n_raters"),
        "sources": [
            {
                "name": name,
                "label": labels.source_label(name),
                "plain": fmt_interval(sources[name].get("plain")),
                "controlled": fmt_interval(sources[name].get("controlled")),
                "flag": labels.style_flag_label(sources[name].get("flag"))
                if sources[name].get("flag")
                else "",
            }
            for name in group_order(sources, "source")
        ],
        "covariates": covariates,
        "dropped": [
            {
                "name": name,
                "label": labels.covariate_label(name),
                "reason": labels.covariate_dropped_label(why),
            }
            for name, why in sorted((style.get("dropped") or {}).items())
        ],
        "changes": [
            labels.order_change_sentence(change["change"], change["a"], change["b"])
            for change in style.get("order_changes") or []
        ],
        "item_order_changes": style.get("item_order_changes") or 0,
        "n_items": len(style.get("items") or []),
    }


def _split_half(part: Payload | None, missing: str) -> dict[str, Any]:
    """A split-half cell: the mean over random splits, the middle 95% of the splits (their
    spread, not a confidence interval) and the Spearman-Brown step-up; or why it is undefined."""
    if not part:
        return {"reason": labels.reliability_reason_label(missing)}
    if part.get("reason") or part.get("mean") is None:
        return {"reason": labels.reliability_reason_label(part.get("reason") or "no_variation")}
    return {
        "reason": "",
        "mean": fmt(part.get("mean")),
        "spread": f"{fmt(part.get('q025'))}\u00a0–\u00a0{fmt(part.get('q975'))}",
        "spearman_brown": fmt(part.get("spearman_brown")),
        "n_splits_used": part.get("n_splits_used"),
    }


def _k_rater(part: Payload | None) -> dict[str, Any]:
    if not part:
        return {"reason": labels.reliability_reason_label("no_scores")}
    if part.get("reason") or part.get("icc") is None:
        return {"reason": labels.reliability_reason_label(part.get("reason") or "zero_variance")}
    at_mean = part.get("at_mean") or {}
    return {
        "reason": "",
        "icc": fmt_interval(
            {
                "value": part.get("icc"),
                "ci_low": part.get("icc_ci_low"),
                "ci_high": part.get("icc_ci_high"),
            }
        ),
        "k_mean": fmt(part.get("k_mean"), 1),
        "at_mean": fmt_interval(at_mean),
    }


def reliability(document: Payload) -> dict[str, Any] | None:
    """Per study and per model: the split-half ranking correlation of pairs and of the primary
    question's item means, and the k-rater reliability of those means (ICC(1) and at the
    study's mean number of ratings per item); and for the study the reliability of the mean of
    k raters at each k. None for results stored before the section existed."""
    section = document.get("reliability")
    if not section:
        return None
    by_source = section.get("by_source") or {}
    groups: list[tuple[str, str, Payload]] = []
    if section.get("study"):
        groups.append(("all", _("All items"), section["study"]))
    groups += [
        (name, labels.source_label(name), by_source[name])
        for name in group_order(by_source, "source")
    ]
    rows = [
        {
            "name": name,
            "label": label,
            "n_items": fmt(entry.get("n_items")),
            "split_halves": [
                _split_half(entry.get("pairs"), "no_pairs"),
                _split_half(entry.get("scores"), "no_scores"),
            ],
            "k_rater": _k_rater(entry.get("k_rater")),
        }
        for name, label, entry in groups
    ]
    study_k = ((section.get("study") or {}).get("k_rater")) or {}
    by_k = [
        {
            "k": fmt(row.get("k"), 0),
            "value": fmt_interval(row),
            "empirical": fmt(row.get("empirical")),
            "empirical_items": row.get("empirical_items") or 0,
        }
        for row in study_k.get("by_k") or []
        if not study_k.get("reason")
    ]
    question = section.get("question")
    return {
        "question": labels.question_label(question) if question else "",
        "splits": section.get("splits"),
        "rows": rows,
        "by_k": by_k,
        "any_empirical": any(row.get("empirical") is not None for row in study_k.get("by_k") or []),
    }
