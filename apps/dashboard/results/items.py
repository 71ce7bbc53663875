"""The per-item table: server-side sort, filters and paging over the stored item results."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.dashboard.results.common import (
    Payload,
    Questions,
    Table,
    download_url,
    group_order,
    interval_cells,
    load_questions,
    page_links,
    paginate,
    url_with,
)
from apps.dashboard.results.leaderboard import FLAGS
from apps.dashboard.results.summary import has_types, humor_rubric
from apps.studies.models import Item, Study


def _item_columns(
    questions: Questions, *, type_label: str | None
) -> dict[str, tuple[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]]]:
    """Sortable columns: key -> (heading, value of an item given the item's BT row); the type
    column only under a `type_label`."""

    def question(name: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], Any]:
        return lambda item, bt: ((item.get("questions") or {}).get(name) or {}).get("value")

    columns: dict[str, tuple[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]]] = {
        "item": (_("Item"), lambda item, bt: item["item"]),
        "source": (_("Source"), lambda item, bt: item.get("source")),
        "level": (_("Level"), lambda item, bt: item.get("level")),
        "humor_type": (type_label or "", lambda item, bt: item.get("humor_type")),
        "topic": (_("Topic"), lambda item, bt: item.get("topic")),
        "language": (_("Language"), lambda item, bt: item.get("language")),
        "n_raters": (_("Raters"), lambda item, bt: item.get("n_raters")),
        "n_pairs": (_("Pairs"), lambda item, bt: item.get("n_pairs")),
    }
    if type_label is None:
        del columns["humor_type"]
    reserved = {*columns, "turing", "explanation", "agreement", "cross_group", "bt_score"}
    for name in questions.all:
        columns[f"q_{name}" if name in reserved else name] = (
            labels.question_label(name),
            question(name),
        )
    columns["turing"] = (
        _("Turing accuracy"),
        lambda item, bt: (item.get("turing_accuracy") or {}).get("value"),
    )
    columns["explanation"] = (
        _("Explanation match"),
        lambda item, bt: (item.get("explanation_match") or {}).get("value"),
    )
    columns["agreement"] = (_("Agreement"), lambda item, bt: item.get("agreement"))
    columns["cross_group"] = (_("Cross-group"), lambda item, bt: item.get("cross_group_agreement"))
    columns["bt_score"] = (_("BT score"), lambda item, bt: bt.get("score"))
    return columns


def _sorted(rows: list[Any], key: Callable[[Any], Any], descending: bool) -> list[Any]:
    """Sort on `key`; rows without a value go last in either direction."""
    present = [row for row in rows if key(row) is not None]
    missing = [row for row in rows if key(row) is None]
    present.sort(key=key, reverse=descending)
    return present + missing


def meta_pairs(meta: Any) -> list[tuple[str, str]]:
    """An item's metadata as (key, value) pairs in key order; nested values as compact JSON."""
    if not isinstance(meta, dict):
        return []
    return [
        (str(key), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for key, value in sorted(meta.items())
    ]


def items_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = load_questions(study, payload)
    humor = humor_rubric(study)
    # A study of texts shows the type only when its items carry one, and never as "humor".
    show_type = humor or has_types(payload)
    type_label = (_("Humor type") if humor else _("Type")) if show_type else None
    columns = _item_columns(questions, type_label=type_label)
    bt = {row["item"]: row for row in payload.get("bradley_terry") or []}
    items = list(payload.get("items") or [])
    groups = payload.get("groups") or {}
    filters = {
        "level": group_order((groups.get("level") or {}).keys(), "level"),
        "humor_type": group_order((groups.get("humor_type") or {}).keys(), "humor_type"),
        "source": group_order((groups.get("source") or {}).keys(), "source"),
        "language": group_order((groups.get("language") or {}).keys(), "language"),
        "flag": FLAGS,
    }
    if not show_type:
        del filters["humor_type"]
    chosen = {name: request.GET.get(name, "") for name in filters}
    for name in ("level", "humor_type", "source", "language"):
        if chosen.get(name):
            items = [item for item in items if item.get(name) == chosen[name]]
    if chosen["flag"]:
        items = [item for item in items if chosen["flag"] in item.get("flags", [])]
    notes = []
    sort = request.GET.get("sort", "item")
    if sort not in columns:
        notes.append(_("Unknown sort column; sorted by item instead."))
        sort = "item"
    descending = request.GET.get("dir") == "desc"
    getter = columns[sort][1]
    items = _sorted(items, lambda item: getter(item, bt.get(item["item"], {})), descending)
    page = paginate(request, items)
    stored = {
        external_id: (text, meta)
        for external_id, text, meta in Item.objects.filter(
            study=study, external_id__in=[item["item"] for item in page.object_list]
        ).values_list("external_id", "text", "meta")
    }
    rows = [
        {
            **item,
            "text": stored.get(item["item"], ("", {}))[0],
            # The item's own metadata, as imported: shown as key = value under its text.
            "meta": meta_pairs(stored.get(item["item"], ("", {}))[1]),
            "question_values": [
                ((item.get("questions") or {}).get(q), q in questions.binary) for q in questions.all
            ],
            "bt": bt.get(item["item"]),
        }
        for item in page.object_list
    ]
    headers = [
        {
            "key": key,
            "label": label,
            "url": url_with(
                request,
                sort=key,
                dir="asc" if sort == key and descending else "desc" if sort == key else "asc",
                page=None,
            ),
            "sorted": ("descending" if descending else "ascending") if key == sort else "",
        }
        for key, (label, _getter) in columns.items()
    ]
    return {
        "questions": questions,
        "humor": humor,
        "show_type": show_type,
        "headers": headers,
        "filters": [
            {"name": name, "options": options, "value": chosen[name]}
            for name, options in filters.items()
        ],
        "sort": sort,
        "dir": "desc" if descending else "asc",
        "notes": notes,
        "page": page,
        "page_links": page_links(request, page),
        "rows": rows,
        "n_filtered": len(items),
        "n_total": len(payload.get("items") or []),
        "download": download_url(request, study, "items"),
    }


def items_csv(payload: Payload, questions: Questions) -> Table:
    bt = {row["item"]: row for row in payload.get("bradley_terry") or []}
    header = [
        "item",
        "source",
        "level",
        "humor_type",
        "topic",
        "safety_intercepted",
        "n_raters",
        "n_pairs",
    ]
    for q in questions.all:
        header += [f"{q}_mean", f"{q}_ci_low", f"{q}_ci_high", f"{q}_n"]
    header += ["offensive", "turing_accuracy", "turing_ci_low", "turing_ci_high", "turing_n"]
    header += ["explanation_match", "explanation_ci_low", "explanation_ci_high", "explanation_n"]
    header += [
        "agreement",
        "cross_group_agreement",
        "bt_score",
        "bt_ci_low",
        "bt_ci_high",
        "bt_rank",
        "bt_component",
    ]
    # Appended, so scripts reading the earlier columns by position keep working.
    header += ["flags", "language"]
    rows = []
    for item in payload.get("items") or []:
        row = [
            item["item"],
            item.get("source"),
            item.get("level"),
            item.get("humor_type"),
            item.get("topic"),
        ]
        row += [item.get("safety_intercepted"), item.get("n_raters"), item.get("n_pairs")]
        for q in questions.all:
            row += interval_cells((item.get("questions") or {}).get(q))
        row += [item.get("offensive"), *interval_cells(item.get("turing_accuracy"))]
        row += interval_cells(item.get("explanation_match"))
        score = bt.get(item["item"], {})
        row += [item.get("agreement"), item.get("cross_group_agreement")]
        row += [
            score.get("score"),
            score.get("ci_low"),
            score.get("ci_high"),
            score.get("rank"),
            score.get("component"),
        ]
        row += [";".join(item.get("flags", [])), item.get("language", "")]
        rows.append(row)
    return header, rows
