"""The summary page: the method's table by humor type, content type, level, source, item
language, rater background and rater language.

A study on another rubric than the humor one (the content rubric) reads the same tables in
neutral words: its items are texts, not jokes, and a type table is shown only when its items
carry a type.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.analysis.stats.report import GROUP_DIMENSIONS
from apps.dashboard.results.common import (
    Payload,
    Questions,
    Table,
    download_url,
    group_label,
    group_order,
    interval_cells,
    load_questions,
)
from apps.findings.estimands import THESE_ITEMS, estimand_label, group_estimand, group_means
from apps.reports.tables import PAIR_OUTCOMES
from apps.studies.models import Question, Rubric, Study

# What the statistics put in place of an item's empty humor type (apps/analysis/selectors.py).
NO_TYPE = "unspecified"


def humor_rubric(study: Study) -> bool:
    """Whether the study's pages speak of jokes; every other rubric gets neutral wording."""
    return study.rubric.kind == Rubric.Kind.HUMOR


def has_types(payload: Payload) -> bool:
    """Whether any item carries a humor type (a content study's articles usually carry none)."""
    names = ((payload.get("groups") or {}).get("humor_type") or {}).keys()
    return any(name not in ("", NO_TYPE) for name in names)


def neutral_group_label(name: str, dimension: str) -> str:
    """A group's label in neutral words: on a study of texts the single level is not a joke."""
    return labels.group_label(name, dimension, humor=False)


def group_rows(
    payload: Payload, dimension: str, questions: Questions, *, humor: bool = True
) -> list[dict[str, Any]]:
    table = (payload.get("groups") or {}).get(dimension) or {}
    label = group_label if humor else neutral_group_label
    # Per source, the model comparison's means (items and raters random): the Models page's.
    means = group_means(payload, dimension)
    rows = []
    for name in group_order(table.keys(), dimension):
        entry = table[name]
        rows.append(
            {
                "name": name,
                "label": label(name, dimension),
                "n_items": entry.get("n_items"),
                "n_raters": entry.get("n_raters"),
                "questions": [(means.get(name) or {}).get(q) for q in questions.scale],
                "offense_rate": entry.get("offense_rate"),
                "offense_any": (entry.get("offense") or {}).get("any_rater"),
                "offense_share": (entry.get("offense") or {}).get("share_of_raters"),
                "offensive_items": entry.get("offensive_items"),
                "safety_intercepted_items": entry.get("safety_intercepted_items"),
                "turing": entry.get("turing_accuracy"),
            }
        )
    return rows


# Items listed under "I don't get it": the most often not understood.
NOT_UNDERSTOOD_ITEMS_SHOWN = 10


def not_understood_tables(payload: Payload) -> list[dict[str, Any]]:
    """Per question that offers "I don't get it": its rate overall, per model and per rater
    background, and the items raters got least, read from the stored document."""
    section = payload.get("not_understood") or {}
    tables = []
    for name, entry in (section.get("questions") or {}).items():
        items = sorted(
            entry.get("items") or [],
            key=lambda row: (-(row["rate"].get("value") or 0.0), row["item"]),
        )
        tables.append(
            {
                "question": name,
                "count": entry.get("count", 0),
                "answers": entry.get("answers", 0),
                "overall": entry.get("overall"),
                "by_source": [
                    (group_label(source, "source"), stats)
                    for source, stats in sorted((entry.get("by_source") or {}).items())
                ],
                "by_background": [
                    (group_label(group, "background"), stats)
                    for group, stats in sorted((entry.get("by_background") or {}).items())
                ],
                "items": [row for row in items if row["count"]][:NOT_UNDERSTOOD_ITEMS_SHOWN],
            }
        )
    return tables


def signal_tables(payload: Payload) -> list[dict[str, Any]]:
    """Per behavioural signal the rubric asks: its rate overall and per model, level and rater
    background (the groups tables' question means, yes = 1), and how it goes with the study's
    primary question (funniness in the humor scorecard)."""
    groups = payload.get("groups") or {}
    tables = []
    for name, entry in (payload.get("signals") or {}).items():
        rows = [
            (dimension, group_label(group, dimension), (table.get("questions") or {}).get(name))
            for dimension in ("source", "level", "background")
            for group, table in sorted((groups.get(dimension) or {}).items())
        ]
        tables.append(
            {
                "question": name,
                "against": entry.get("against") or "",
                "rate": entry.get("rate"),
                "association": entry.get("association") or {},
                "rows": [row for row in rows if row[2]],
            }
        )
    return tables


def choice_tables(study: Study, payload: Payload) -> list[dict[str, Any]]:
    """Per choice question: the share choosing each option, named in the reader's language,
    overall, per model and per rater background (the stored document's `choices`)."""
    stored = payload.get("choices") or {}
    if not stored:
        return []
    names = {
        q.name: [labels.localized(option, str(k)) for k, option in enumerate(q.choices or [])]
        for q in Question.objects.filter(rubric_id=study.rubric_id, kind=Question.Kind.CHOICE)
    }
    tables = []
    for name, entry in stored.items():
        options = names.get(name) or [str(k) for k in range(entry.get("options", 0))]

        def row(label: str, cells: list[dict[str, Any]]) -> dict[str, Any]:
            return {"label": label, "cells": cells}

        tables.append(
            {
                "question": name,
                "options": options,
                "answers": entry.get("answers", 0),
                "rows": [
                    row(_("All items"), entry.get("overall") or []),
                    *(
                        row(group_label(source, "source"), cells)
                        for source, cells in sorted((entry.get("by_source") or {}).items())
                    ),
                    *(
                        row(group_label(group, "background"), cells)
                        for group, cells in sorted((entry.get("by_background") or {}).items())
                    ),
                ],
            }
        )
    return tables


def pair_outcome_block(
    request: HttpRequest, study: Study, payload: Payload
) -> dict[str, Any] | None:
    """The "About the same / Neither" block: per answer offered, its rate over all pair
    judgments, per model and per rater background (the stored `pair_outcomes`); None when
    nobody answered either (the document then has no such section)."""
    section = payload.get("pair_outcomes") or {}
    kinds = [kind for kind in PAIR_OUTCOMES if section.get(kind)]
    if not kinds:
        return None

    def rows(key: str, dimension: str) -> list[dict[str, Any]]:
        names = {name for kind in kinds for name in section[kind].get(key) or {}}
        return [
            {
                "name": name,
                "label": group_label(name, dimension),
                "cells": [(section[kind].get(key) or {}).get(name) for kind in kinds],
            }
            for name in group_order(names, dimension)
        ]

    return {
        "judgments": section.get("judgments") or 0,
        "kinds": [
            {
                "kind": kind,
                "label": labels.pair_outcome_label(kind),
                "count": section[kind].get("count") or 0,
                "overall": section[kind].get("overall"),
            }
            for kind in kinds
        ],
        "by_source": rows("by_source", "source"),
        "by_background": rows("by_background", "background"),
        "download": download_url(request, study, "pair-outcomes"),
    }


def summary_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = load_questions(study, payload)
    humor = humor_rubric(study)
    tables: list[tuple[str, str]] = []
    if humor:
        tables += [
            ("humor_type", _("By humor type")),
            ("level_humor_type", _("By level × humor type")),
        ]
    elif has_types(payload):
        tables += [("humor_type", _("By type")), ("level_humor_type", _("By level × type"))]
    if (payload.get("groups") or {}).get("content_type"):
        # Only items that carry a content type (the content rubric's articles) have this table.
        tables.append(("content_type", _("By content type")))
    tables += [("source", _("By source model")), ("level", _("By level"))]
    groups = payload.get("groups") or {}
    several_languages = len(groups.get("language") or {}) > 1
    if several_languages:
        # Items of each language are judged by their own readers: compare within a language.
        tables.append(("language", _("By item language")))
    # Only the humor rubric asks whether an item is offensive; elsewhere the rate would be an
    # empty 0% unless the rubric has the same flag.
    offense = humor or "offensive" in questions.binary
    return {
        "questions": questions,
        "humor": humor,
        "offense": offense,
        "tables": [
            {
                "dimension": dim,
                "title": title,
                "rows": group_rows(payload, dim, questions, humor=humor),
                "estimand": estimand_label(group_estimand(payload, dim)),
            }
            for dim, title in tables
        ],
        "background": group_rows(payload, "background", questions, humor=humor),
        # Splits by rater describe these items: their means hold the items fixed.
        "rater_estimand": estimand_label(THESE_ITEMS),
        "rater_language": group_rows(payload, "rater_language", questions, humor=humor)
        if several_languages or len(groups.get("rater_language") or {}) > 1
        else [],
        "warnings": labels.study_warnings(
            payload.get("warnings") or [], payload.get("items") or []
        ),
        "items_url": reverse("dashboard:results_section", args=[study.slug, "items"]),
        "not_understood": not_understood_tables(payload),
        "signals": signal_tables(payload),
        "choices": choice_tables(study, payload),
        "counts": payload.get("counts") or {},
        "pair_outcomes": pair_outcome_block(request, study, payload),
        "download": download_url(request, study, "summary"),
    }


def summary_csv(study: Study, payload: Payload, questions: Questions) -> Table:
    header = ["dimension", "group", "n_items", "n_raters"]
    for q in questions.all:
        header += [f"{q}_mean", f"{q}_ci_low", f"{q}_ci_high", f"{q}_n"]
    header += [
        "turing_accuracy",
        "turing_ci_low",
        "turing_ci_high",
        "turing_n",
        "offense_rate",
        "offensive_items",
        "safety_intercepted_items",
    ]
    # Both readings of offense with their intervals, as the page and the export's group tables
    # show them (appended: scripts reading the earlier columns by position keep working).
    for reading in ("any_rater", "share_of_raters"):
        header += [f"offense_{reading}_{part}" for part in ("rate", "ci_low", "ci_high", "n")]
    # What the means estimate, as the page names it (apps.findings.estimands).
    header.append("means_estimand")
    rows = []
    groups = payload.get("groups") or {}
    for dimension in GROUP_DIMENSIONS:
        table = groups.get(dimension) or {}
        means = group_means(payload, dimension)
        for name in group_order(table.keys(), dimension):
            entry = table[name]
            row = [dimension, name, entry.get("n_items"), entry.get("n_raters")]
            for q in questions.all:
                # A flag's share is the group's, as the page shows it beside the offense readings.
                stats = (means.get(name) if q in questions.scale else entry.get("questions")) or {}
                row += interval_cells(stats.get(q))
            row += interval_cells(entry.get("turing_accuracy"))
            row += [
                entry.get("offense_rate"),
                entry.get("offensive_items"),
                entry.get("safety_intercepted_items"),
            ]
            for reading in ("any_rater", "share_of_raters"):
                row += interval_cells((entry.get("offense") or {}).get(reading))
            row.append(group_estimand(payload, dimension))
            rows.append(row)
    return header, rows
