"""The summary page: the method's table by humor type, level, source and background."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

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
from apps.studies.models import Study


def group_rows(payload: Payload, dimension: str, questions: Questions) -> list[dict[str, Any]]:
    table = (payload.get("groups") or {}).get(dimension) or {}
    rows = []
    for name in group_order(table.keys(), dimension):
        entry = table[name]
        rows.append(
            {
                "name": name,
                "label": group_label(name, dimension),
                "n_items": entry.get("n_items"),
                "n_raters": entry.get("n_raters"),
                "questions": [(entry.get("questions") or {}).get(q) for q in questions.scale],
                "offense_rate": entry.get("offense_rate"),
                "offensive_items": entry.get("offensive_items"),
                "safety_intercepted_items": entry.get("safety_intercepted_items"),
                "turing": entry.get("turing_accuracy"),
            }
        )
    return rows


def summary_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = load_questions(study, payload)
    tables = [
        ("humor_type", _("By humor type")),
        ("level_humor_type", _("By level × humor type")),
        ("source", _("By source model")),
        ("level", _("By level")),
    ]
    return {
        "questions": questions,
        "tables": [
            {"dimension": dim, "title": title, "rows": group_rows(payload, dim, questions)}
            for dim, title in tables
        ],
        "background": group_rows(payload, "background", questions),
        "warnings": payload.get("warnings") or [],
        "counts": payload.get("counts") or {},
        "download": download_url(study, "summary"),
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
    rows = []
    groups = payload.get("groups") or {}
    for dimension in ("source", "level", "humor_type", "level_humor_type", "background"):
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
            rows.append(row)
    return header, rows
