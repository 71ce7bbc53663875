"""The Bradley-Terry leaderboard: per comparison group and level, with CI error bars."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from apps.dashboard.results.boards import board_fit, reliability_context, style_context
from apps.dashboard.results.common import (
    Payload,
    Table,
    download_url,
    group_order,
    item_index,
    level_name,
    page_links,
    paginate,
    url_with,
)
from apps.dashboard.results.summary import humor_rubric
from apps.findings import figures
from apps.studies.models import Study


def _bt_rows(payload: Payload, scope: str) -> list[Mapping[str, Any]]:
    return figures.leaderboard_rows(payload, scope)


def leaderboard_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    by_level = payload.get("bradley_terry_by_level") or {}
    scope = request.GET.get("level", "")
    notes = []
    if scope and scope not in by_level:
        notes.append(_("There is no leaderboard for that level; showing all levels."))
        scope = ""
    rows = _bt_rows(payload, scope)
    items = item_index(payload)
    try:
        requested: int | None = int(request.GET.get("component", ""))
    except ValueError:
        requested = None
    chart = figures.leaderboard_figure(
        payload, scope=scope, component=requested, humor=humor_rubric(study)
    )
    component = chart.meta["component"]
    sizes = chart.meta["sizes"]

    def enrich(row: Mapping[str, Any]) -> dict[str, Any]:
        info = items.get(row["item"], {})
        return {
            **row,
            "source": info.get("source", ""),
            "level": info.get("level", ""),
            "humor_type": info.get("humor_type", ""),
        }

    page = paginate(request, rows)
    table = [enrich(row) for row in page.object_list]

    per_source: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row["score"] is not None:
            per_source[items.get(row["item"], {}).get("source", "")].append(row["score"])
    sources = [
        {
            "source": source,
            "n": len(per_source[source]),
            "mean": statistics.fmean(per_source[source]),
            "best": max(per_source[source]),
            "worst": min(per_source[source]),
        }
        for source in group_order(per_source.keys(), "source")
    ]
    scopes = [("", _("All levels"))] + [
        (level, level_name(level)) for level in group_order(by_level, "level")
    ]
    return {
        "scope": scope,
        "scope_links": [
            {
                "label": label,
                "url": url_with(request, level=code or None, component=None, page=None),
                "current": code == scope,
            }
            for code, label in scopes
        ],
        "notes": notes,
        "n_rows": len(rows),
        "components": [
            {
                "id": c,
                "size": sizes[c],
                "url": url_with(request, component=c, page=None),
                "current": c == component,
            }
            for c in sorted(sizes)
        ],
        "component": component,
        "chart": chart,
        "page": page,
        "page_links": page_links(request, page),
        "table": table,
        "sources": sources,
        "download": download_url(
            request, study, "leaderboard-by-level" if scope else "leaderboard"
        ),
        "download_source": download_url(request, study, "leaderboard-by-source"),
        # The model of this level's board; the style-controlled boards and the reliability
        # are the study's (all levels together).
        "fit": board_fit(payload, scope),
        "style": style_context(request, study, payload),
        "reliability": reliability_context(request, study, payload),
    }


def leaderboard_csv(payload: Payload, scopes: Iterable[str]) -> Table:
    items = item_index(payload)
    header = [
        "level_scope",
        "item",
        "source",
        "level",
        "humor_type",
        "component",
        "rank",
        "score",
        "ci_low",
        "ci_high",
        # Appended: ties, and an undefeated (never-winning) item's one-sided bound.
        "ties",
        "bound",
        "bound_side",
    ]
    rows = []
    for scope in scopes:
        for row in _bt_rows(payload, scope):
            info = items.get(row["item"], {})
            rows.append(
                [
                    scope or "all",
                    row["item"],
                    info.get("source"),
                    info.get("level"),
                    info.get("humor_type"),
                    row["component"],
                    row["rank"],
                    row["score"],
                    row["ci_low"],
                    row["ci_high"],
                    row.get("ties"),
                    row.get("bound"),
                    row.get("bound_side") or "",
                ]
            )
    return header, rows


def leaderboard_source_csv(payload: Payload) -> Table:
    items = item_index(payload)
    header = ["level_scope", "source", "n_items", "mean_score", "max_score", "min_score"]
    rows = []
    for scope in ["", *group_order(payload.get("bradley_terry_by_level") or {}, "level")]:
        per_source: dict[str, list[float]] = defaultdict(list)
        for row in _bt_rows(payload, scope):
            if row["score"] is not None:
                per_source[items.get(row["item"], {}).get("source", "")].append(row["score"])
        for source in group_order(per_source, "source"):
            scores = per_source[source]
            rows.append(
                [
                    scope or "all",
                    source,
                    len(scores),
                    statistics.fmean(scores),
                    max(scores),
                    min(scores),
                ]
            )
    return header, rows


FLAGS = ["culture_dependent", "controversial", "offensive", "safety_intercepted", "too_few_raters"]
