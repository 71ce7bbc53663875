"""Agreement: Fleiss' kappa and Krippendorff's alpha per question and group, cross-group flags."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from apps.analysis import labels
from apps.dashboard.results.common import (
    DEFAULTS,
    LIST_LIMIT,
    Payload,
    Questions,
    Table,
    download_url,
    interval_cells,
    load_questions,
    threshold_of,
)
from apps.findings import figures
from apps.studies.models import Study


def _cohen_cells(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Cohen's kappa cells (plain, then quadratic-weighted): the interval with the pairs it
    rests on, or the reason there is none ("no pair of raters shares 10 items"); a flag has
    no weighted cell."""
    cohen = entry.get("cohen_kappa") or {}
    cells: list[dict[str, Any]] = []
    for weighting in ("unweighted", "quadratic"):
        stats = cohen.get(weighting)
        if stats is None:
            cells.append({"stats": None, "pairs": None, "missing": ""})
            continue
        pairs = stats.get("n_pairs") or 0
        cells.append(
            {
                "stats": stats if pairs else None,
                "pairs": pairs,
                "missing": "" if pairs else labels.no_kappa_pairs(stats.get("min_shared_items")),
            }
        )
    return cells


def _min_shared(agreement: Mapping[str, Any]) -> Any:
    for entry in agreement.values():
        for stats in (entry.get("cohen_kappa") or {}).values():
            if stats.get("min_shared_items") is not None:
                return stats["min_shared_items"]
    return None


def agreement_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = load_questions(study, payload)
    agreement = payload.get("agreement") or {}
    culture = threshold_of(payload, "culture_dependent_items", DEFAULTS.culture_dependent_agreement)
    controversial = threshold_of(payload, "controversial_question", DEFAULTS.controversial_kappa)
    rows = []
    group_names: set[str] = set()
    for name in questions.all:
        entry = agreement.get(name)
        if entry is None:
            continue
        measure = figures.headline_alpha(entry)[0]
        per_item = entry.get("per_item") or []
        alphas = entry.get("krippendorff_alpha") or {}
        rows.append(
            {
                "question": name,
                "n_ratings": entry.get("n_ratings"),
                "weights": entry.get("weights"),
                "fleiss_kappa": entry.get("fleiss_kappa"),
                "cohen": _cohen_cells(entry),
                "alpha": [alphas.get(level) for level in ("nominal", "ordinal", "interval")],
                "headline": measure,
                "below_cross_group_line": sum(
                    1
                    for row in per_item
                    if row.get("cross_group") is not None and row["cross_group"] < culture
                ),
                "controversial_items": sum(
                    1
                    for row in per_item
                    if row.get("agreement") is not None and row["agreement"] < controversial
                ),
            }
        )
        group_names |= set((entry.get("krippendorff_alpha_by_group") or {}).keys())
    groups = sorted(group_names)
    by_group = []
    for name in questions.all:
        if name not in agreement:
            continue
        entry = agreement[name]
        by_group.append(
            {
                "question": name,
                "measure": figures.headline_alpha(entry)[0],
                "cells": [(entry.get("krippendorff_alpha_by_group") or {}).get(g) for g in groups],
            }
        )
        # Interval alpha beside ordinal on numeric scales, in its own labelled row.
        interval = entry.get("krippendorff_alpha_by_group_interval") or {}
        if interval:
            by_group.append(
                {
                    "question": name,
                    "measure": "interval",
                    "cells": [interval.get(g) for g in groups],
                }
            )
    flagged = sorted(
        (
            item
            for item in payload.get("items") or []
            if item.get("cross_group_agreement") is not None
            and item["cross_group_agreement"] < culture
        ),
        key=lambda item: (item["cross_group_agreement"], item["item"]),
    )
    chart = figures.agreement_figure(payload, questions.all)
    return {
        "rows": rows,
        "groups": groups,
        "by_group": by_group,
        "chart": chart,
        "culture_threshold": culture,
        "controversial_threshold": controversial,
        "flagged": flagged[:LIST_LIMIT],
        "n_flagged": len(flagged),
        "list_limit": LIST_LIMIT,
        "download": download_url(request, study, "agreement"),
        "download_groups": download_url(request, study, "agreement-by-group"),
        "download_cross": download_url(request, study, "cross-group"),
        # Raters of unknown background take part in no per-group or cross-group figure.
        "unknown_raters": (payload.get("counts") or {}).get("raters_unknown_background") or 0,
        "min_shared_items": _min_shared(agreement),
        "culture_test": labels.culture_test_shown(payload),
    }


def agreement_csv(payload: Payload, questions: Questions) -> Table:
    header = ["question", "n_ratings", "weights", "measure", "value", "ci_low", "ci_high", "n"]
    rows = []
    agreement = payload.get("agreement") or {}
    for name in questions.all:
        entry = agreement.get(name)
        if entry is None:
            continue
        base = [name, entry.get("n_ratings"), entry.get("weights")]
        if entry.get("fleiss_kappa"):
            rows.append([*base, "fleiss_kappa", *interval_cells(entry["fleiss_kappa"])])
        for level, interval in sorted((entry.get("krippendorff_alpha") or {}).items()):
            rows.append([*base, f"krippendorff_alpha_{level}", *interval_cells(interval)])
        # Cohen's kappa, mean over pairs of raters: `n` is the number of pairs (0: none shares
        # min_shared_items items, and no value).
        for weighting, stats in (entry.get("cohen_kappa") or {}).items():
            rows.append(
                [
                    *base,
                    f"cohen_kappa_{weighting}",
                    stats.get("value"),
                    stats.get("ci_low"),
                    stats.get("ci_high"),
                    stats.get("n_pairs"),
                ]
            )
    return header, rows


def agreement_groups_csv(payload: Payload, questions: Questions) -> Table:
    header = ["question", "group", "measure", "value", "ci_low", "ci_high", "n"]
    rows = []
    agreement = payload.get("agreement") or {}
    for name in questions.all:
        if name not in agreement:
            continue
        measure = figures.headline_alpha(agreement[name])[0]
        for group, interval in sorted(
            (agreement[name].get("krippendorff_alpha_by_group") or {}).items()
        ):
            rows.append([name, group, f"krippendorff_alpha_{measure}", *interval_cells(interval)])
        # Interval alpha beside ordinal, as the page shows it.
        for group, interval in sorted(
            (agreement[name].get("krippendorff_alpha_by_group_interval") or {}).items()
        ):
            rows.append([name, group, "krippendorff_alpha_interval", *interval_cells(interval)])
    return header, rows


def cross_group_csv(payload: Payload, questions: Questions) -> Table:
    header = ["question", "item", "agreement", "cross_group", "cross_group_reason"]
    agreement = payload.get("agreement") or {}
    rows = [
        [
            name,
            row["item"],
            row.get("agreement"),
            row.get("cross_group"),
            row.get("cross_group_reason") or "",
        ]
        for name in questions.all
        for row in (agreement.get(name) or {}).get("per_item") or []
    ]
    return header, rows
