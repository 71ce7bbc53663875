"""Safety-intercepted items, listed apart so they are not read as humor failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from apps.dashboard.results.common import (
    Payload,
    Questions,
    Table,
    download_url,
    interval_cells,
    load_questions,
    page_links,
    paginate,
)
from apps.dashboard.results.summary import group_rows
from apps.studies.models import Study


def _safety_items(payload: Payload) -> list[Mapping[str, Any]]:
    return sorted(
        (item for item in payload.get("items") or [] if item.get("safety_intercepted")),
        key=lambda item: item["item"],
    )


def safety_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = load_questions(study, payload)
    items = _safety_items(payload)
    page = paginate(request, items)
    return {
        "questions": questions,
        "rows": [
            {
                **item,
                "question_values": [
                    ((item.get("questions") or {}).get(q), q in questions.binary)
                    for q in questions.all
                ],
            }
            for item in page.object_list
        ],
        "page": page,
        "page_links": page_links(request, page),
        "n_items": len(items),
        "by_source": [
            row
            for row in group_rows(payload, "source", questions)
            if row["safety_intercepted_items"]
        ],
        "by_level": [
            row
            for row in group_rows(payload, "level", questions)
            if row["safety_intercepted_items"]
        ],
        "download": download_url(request, study, "safety"),
    }


def safety_csv(payload: Payload, questions: Questions) -> Table:
    header = ["item", "source", "level", "humor_type", "topic", "n_raters"]
    for q in questions.all:
        header += [f"{q}_mean", f"{q}_ci_low", f"{q}_ci_high", f"{q}_n"]
    header += ["offensive"]
    rows = []
    for item in _safety_items(payload):
        row = [
            item["item"],
            item.get("source"),
            item.get("level"),
            item.get("humor_type"),
            item.get("topic"),
        ]
        row += [item.get("n_raters")]
        for q in questions.all:
            row += interval_cells((item.get("questions") or {}).get(q))
        rows.append([*row, item.get("offensive")])
    return header, rows
