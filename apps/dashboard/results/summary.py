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
from apps.studies.models import Rubric, Study

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
    rows = []
    for name in group_order(table.keys(), dimension):
        entry = table[name]
        rows.append(
            {
                "name": name,
                "label": label(name, dimension),
                "n_items": entry.get("n_items"),
                "n_raters": entry.get("n_raters"),
                "questions": [(entry.get("questions") or {}).get(q) for q in questions.scale],
                "offense_rate": entry.get("offense_rate"),
                "offense_any": (entry.get("offense") or {}).get("any_rater"),
                "offense_share": (entry.get("offense") or {}).get("share_of_raters"),
                "offensive_items": entry.get("offensive_items"),
                "safety_intercepted_items": entry.get("safety_intercepted_items"),
                "turing": entry.get("turing_accuracy"),
            }
        )
    return rows


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
            }
            for dim, title in tables
        ],
        "background": group_rows(payload, "background", questions, humor=humor),
        "rater_language": group_rows(payload, "rater_language", questions, humor=humor)
        if several_languages or len(groups.get("rater_language") or {}) > 1
        else [],
        "warnings": labels.study_warnings(
            payload.get("warnings") or [], payload.get("items") or []
        ),
        "items_url": reverse("dashboard:results_section", args=[study.slug, "items"]),
        "counts": payload.get("counts") or {},
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
    rows = []
    groups = payload.get("groups") or {}
    for dimension in GROUP_DIMENSIONS:
        table = groups.get(dimension) or {}
        for name in group_order(table.keys(), dimension):
            entry = table[name]
            row = [dimension, name, entry.get("n_items"), entry.get("n_raters")]
            for q in questions.all:
                row += interval_cells((entry.get("questions") or {}).get(q))
            row += interval_cells(entry.get("turing_accuracy"))
            row += [
                entry.get("offense_rate"),
                entry.get("offensive_items"),
                entry.get("safety_intercepted_items"),
            ]
            for reading in ("any_rater", "share_of_raters"):
                row += interval_cells((entry.get("offense") or {}).get(reading))
            rows.append(row)
    return header, rows
