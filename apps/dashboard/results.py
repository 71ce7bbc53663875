"""Results pages: the stored StudyResult payload laid out as tables, SVG charts and CSV files.

Nothing here computes a statistic on a request: every estimate and interval is read from the
payload the workers stored (`apps/analysis/stats/report.py::compute_results` gives its shape).
What is done here is layout: ordering, filtering, paging, and the mean Bradley-Terry score per
source model, which is an average of stored scores, not an estimate with its own interval.

The one exception is rater quality, which counts raw rows: a fixed number of bounded queries
(raters, attention checks, timed tasks, scorecards), never one query per rater, with the
per-rater median and the run detection done in Python over their results.

Every page is bounded for a study of thousands of items: tables of items are paged
(PAGE_SIZE rows), lists are cut at LIST_LIMIT rows with the full data in the CSV, and the
leaderboard chart shows the top CHART_TOP and bottom CHART_BOTTOM items of one comparison group.
"""

from __future__ import annotations

import csv
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Max, Min, Q
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _

from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.selectors import study_result_get
from apps.analysis.stats.inputs import Thresholds
from apps.assignments.models import Assignment
from apps.core.errors import NotFound
from apps.dashboard import charts
from apps.dashboard.access import study_view
from apps.dashboard.context import RESULT_SECTIONS
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.raters.models import Rater
from apps.studies.models import Item, Question, Study

Payload = Mapping[str, Any]
Table = tuple[list[str], list[list[Any]]]

PAGE_SIZE = 100
LIST_LIMIT = 200
CHART_TOP, CHART_BOTTOM = 50, 10
# Rater quality: a rater whose median time on a task is below this is a speeder...
SPEEDER_SECONDS = 3.0
# ...and one who gives the same value to every scale question of this many consecutive
# scorecards (in time order) a straight-liner.
STRAIGHT_LINE_RUN = 5
LEVELS = [level.value for level in Item.Level]
SECTIONS = dict(RESULT_SECTIONS)
DEFAULTS = Thresholds()
# Percentages put into translated chart titles as values, so no "%" sits in a message.
PCT = {"level": "95%", "a": "50%", "b": "70%"}


# ---------------------------------------------------------------------------------------------
# Small helpers over the payload


@dataclass(frozen=True)
class Questions:
    """The rubric's questions present in the payload, in scorecard order."""

    scale: list[str]
    binary: list[str]

    @property
    def all(self) -> list[str]:
        return self.scale + self.binary


def _questions(study: Study, payload: Payload) -> Questions:
    """Scorecard order and kinds come from the rubric (one query): a jsonb payload on
    PostgreSQL does not keep the order of its keys."""
    present = set((payload.get("agreement") or {}).keys())
    for item in (payload.get("items") or [])[:1]:
        present |= set(item.get("questions", {}).keys())
    rubric = list(
        Question.objects.filter(rubric_id=study.rubric_id)
        .order_by("position")
        .values_list("name", "kind")
    )
    known = {name for name, _kind in rubric}
    # Choice questions store an option's index: a mean of indexes means nothing, so they are left
    # out of the tables (the CSV of the export has them).
    scale = [name for name, kind in rubric if name in present and kind == Question.Kind.LIKERT]
    binary = [name for name, kind in rubric if name in present and kind == Question.Kind.BINARY]
    scale += sorted(present - known)
    return Questions(scale=scale, binary=binary)


def _level_name(level: str) -> str:
    try:
        return _(str(Item.Level(level).label))
    except ValueError:
        return level


def _group_order(names: Iterable[str], dimension: str) -> list[str]:
    """Levels in the method's order, models before the human baseline, the rest by name."""
    names = list(names)
    if dimension == "level":
        return sorted(names, key=lambda n: (LEVELS.index(n) if n in LEVELS else len(LEVELS), n))
    if dimension == "level_humor_type":
        return sorted(
            names,
            key=lambda n: (
                LEVELS.index(n.split("/", 1)[0]) if n.split("/", 1)[0] in LEVELS else len(LEVELS),
                n,
            ),
        )
    if dimension == "source":
        return sorted(names, key=lambda n: (n == Item.HUMAN_SOURCE, n))
    return sorted(names)


def _group_label(name: str, dimension: str) -> str:
    if dimension == "level":
        return _level_name(name)
    if dimension == "level_humor_type" and "/" in name:
        level, humor = name.split("/", 1)
        return f"{_level_name(level)} · {humor}"
    return name


def _interval_cells(interval: Mapping[str, Any] | None) -> list[Any]:
    interval = interval or {}
    return [
        interval.get("value"),
        interval.get("ci_low"),
        interval.get("ci_high"),
        interval.get("n"),
    ]


def _item_index(payload: Payload) -> dict[str, Mapping[str, Any]]:
    return {item["item"]: item for item in payload.get("items") or []}


def _threshold(payload: Payload, code: str, default: float) -> float:
    for warning in payload.get("warnings") or []:
        if warning.get("code") == code and warning.get("threshold") is not None:
            return float(warning["threshold"])
    return default


def _url(request: HttpRequest, **changes: Any) -> str:
    """This page's URL with some query parameters changed (None removes one)."""
    query: QueryDict = request.GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            query.pop(key, None)
        else:
            query[key] = str(value)
    encoded = query.urlencode()
    return f"{request.path}?{encoded}" if encoded else request.path


def _page(request: HttpRequest, rows: Sequence[Any]) -> Page:
    # get_page turns a missing, malformed or out-of-range ?page= into the first or last page.
    return Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))


def _page_links(request: HttpRequest, page: Page) -> dict[str, str | None]:
    return {
        "previous": _url(request, page=page.previous_page_number())
        if page.has_previous()
        else None,
        "next": _url(request, page=page.next_page_number()) if page.has_next() else None,
    }


def _download(study: Study, name: str) -> str:
    return reverse("dashboard:results_data", args=[study.slug, name])


# ---------------------------------------------------------------------------------------------
# Summary


def _group_rows(payload: Payload, dimension: str, questions: Questions) -> list[dict[str, Any]]:
    table = (payload.get("groups") or {}).get(dimension) or {}
    rows = []
    for name in _group_order(table.keys(), dimension):
        entry = table[name]
        rows.append(
            {
                "name": name,
                "label": _group_label(name, dimension),
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


def _summary_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = _questions(study, payload)
    tables = [
        ("humor_type", _("By humor type")),
        ("level_humor_type", _("By level × humor type")),
        ("source", _("By source model")),
        ("level", _("By level")),
    ]
    return {
        "questions": questions,
        "tables": [
            {"dimension": dim, "title": title, "rows": _group_rows(payload, dim, questions)}
            for dim, title in tables
        ],
        "background": _group_rows(payload, "background", questions),
        "warnings": payload.get("warnings") or [],
        "counts": payload.get("counts") or {},
        "download": _download(study, "summary"),
    }


def _summary_csv(study: Study, payload: Payload, questions: Questions) -> Table:
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
        for name in _group_order(table.keys(), dimension):
            entry = table[name]
            row = [dimension, name, entry.get("n_items"), entry.get("n_raters")]
            for q in questions.all:
                row += _interval_cells((entry.get("questions") or {}).get(q))
            row += _interval_cells(entry.get("turing_accuracy"))
            row += [
                entry.get("offense_rate"),
                entry.get("offensive_items"),
                entry.get("safety_intercepted_items"),
            ]
            rows.append(row)
    return header, rows


# ---------------------------------------------------------------------------------------------
# Leaderboard


def _bt_rows(payload: Payload, scope: str) -> list[Mapping[str, Any]]:
    if scope:
        return (payload.get("bradley_terry_by_level") or {}).get(scope) or []
    return payload.get("bradley_terry") or []


def _bounded(rows: Sequence[Mapping[str, Any]], top: int, bottom: int) -> tuple[list[Any], int]:
    """The first `top` and last `bottom` rows, and how many were left out between them."""
    if len(rows) <= top + bottom:
        return list(rows), 0
    return [*rows[:top], None, *rows[-bottom:]], len(rows) - top - bottom


def _leaderboard_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    by_level = payload.get("bradley_terry_by_level") or {}
    scope = request.GET.get("level", "")
    notes = []
    if scope and scope not in by_level:
        notes.append(_("There is no leaderboard for that level; showing all levels."))
        scope = ""
    rows = _bt_rows(payload, scope)
    items = _item_index(payload)
    sizes = Counter(row["component"] for row in rows)
    # Default chart: the largest comparison group (lowest number on a tie).
    default_component = min(sizes, key=lambda c: (-sizes[c], c)) if sizes else None
    component: int | None
    try:
        component = int(request.GET.get("component", ""))
    except ValueError:
        component = default_component
    if component not in sizes:
        component = default_component
    in_component = sorted(
        (row for row in rows if row["component"] == component),
        key=lambda row: (
            -(row["score"] if row["score"] is not None else float("-inf")),
            row["item"],
        ),
    )
    shown, hidden = _bounded(in_component, CHART_TOP, CHART_BOTTOM)
    chart_rows = []
    for row in shown:
        if row is None:
            chart_rows.append(
                charts.Row(label="…", detail=_("%(n)d items not shown") % {"n": hidden})
            )
            continue
        info = items.get(row["item"], {})
        chart_rows.append(
            charts.Row(
                label=row["item"],
                value=row["score"],
                low=row["ci_low"],
                high=row["ci_high"],
                detail=f"{info.get('source', '')}, {info.get('humor_type', '')}; "
                + _("rank %(rank)s") % {"rank": row["rank"]},
            )
        )
    chart = charts.leaderboard_chart(
        chart_rows,
        label=_("Bradley-Terry scores with %(level)s intervals, comparison group %(c)s")
        % {"level": "95%", "c": component},
    )

    def enrich(row: Mapping[str, Any]) -> dict[str, Any]:
        info = items.get(row["item"], {})
        return {
            **row,
            "source": info.get("source", ""),
            "level": info.get("level", ""),
            "humor_type": info.get("humor_type", ""),
        }

    page = _page(request, rows)
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
        for source in _group_order(per_source.keys(), "source")
    ]
    scopes = [("", _("All levels"))] + [
        (level, _level_name(level)) for level in _group_order(by_level, "level")
    ]
    return {
        "scope": scope,
        "scope_links": [
            {
                "label": label,
                "url": _url(request, level=code or None, component=None, page=None),
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
                "url": _url(request, component=c, page=None),
                "current": c == component,
            }
            for c in sorted(sizes)
        ],
        "component": component,
        "chart": chart,
        "chart_total": len(in_component),
        "chart_hidden": hidden,
        "chart_top": CHART_TOP,
        "chart_bottom": CHART_BOTTOM,
        "page": page,
        "page_links": _page_links(request, page),
        "table": table,
        "sources": sources,
        "download": _download(study, "leaderboard-by-level" if scope else "leaderboard"),
        "download_source": _download(study, "leaderboard-by-source"),
    }


def _leaderboard_csv(payload: Payload, scopes: Iterable[str]) -> Table:
    items = _item_index(payload)
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
                ]
            )
    return header, rows


def _leaderboard_source_csv(payload: Payload) -> Table:
    items = _item_index(payload)
    header = ["level_scope", "source", "n_items", "mean_score", "max_score", "min_score"]
    rows = []
    for scope in ["", *_group_order(payload.get("bradley_terry_by_level") or {}, "level")]:
        per_source: dict[str, list[float]] = defaultdict(list)
        for row in _bt_rows(payload, scope):
            if row["score"] is not None:
                per_source[items.get(row["item"], {}).get("source", "")].append(row["score"])
        for source in _group_order(per_source, "source"):
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


# ---------------------------------------------------------------------------------------------
# Items


FLAGS = ["culture_dependent", "controversial", "offensive", "safety_intercepted", "too_few_raters"]


def _item_columns(
    questions: Questions,
) -> dict[str, tuple[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]]]:
    """Sortable columns: key -> (heading, value of an item given the item's BT row)."""

    def question(name: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], Any]:
        return lambda item, bt: ((item.get("questions") or {}).get(name) or {}).get("value")

    columns: dict[str, tuple[str, Callable[[Mapping[str, Any], Mapping[str, Any]], Any]]] = {
        "item": (_("Item"), lambda item, bt: item["item"]),
        "source": (_("Source"), lambda item, bt: item.get("source")),
        "level": (_("Level"), lambda item, bt: item.get("level")),
        "humor_type": (_("Humor type"), lambda item, bt: item.get("humor_type")),
        "topic": (_("Topic"), lambda item, bt: item.get("topic")),
        "n_raters": (_("Raters"), lambda item, bt: item.get("n_raters")),
        "n_pairs": (_("Pairs"), lambda item, bt: item.get("n_pairs")),
    }
    reserved = {*columns, "turing", "explanation", "agreement", "cross_group", "bt_score"}
    for name in questions.all:
        columns[f"q_{name}" if name in reserved else name] = (name, question(name))
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


def _items_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = _questions(study, payload)
    columns = _item_columns(questions)
    bt = {row["item"]: row for row in payload.get("bradley_terry") or []}
    items = list(payload.get("items") or [])
    groups = payload.get("groups") or {}
    filters = {
        "level": _group_order((groups.get("level") or {}).keys(), "level"),
        "humor_type": _group_order((groups.get("humor_type") or {}).keys(), "humor_type"),
        "source": _group_order((groups.get("source") or {}).keys(), "source"),
        "flag": FLAGS,
    }
    chosen = {name: request.GET.get(name, "") for name in filters}
    for name in ("level", "humor_type", "source"):
        if chosen[name]:
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
    page = _page(request, items)
    texts = dict(
        Item.objects.filter(
            study=study, external_id__in=[item["item"] for item in page.object_list]
        ).values_list("external_id", "text")
    )
    rows = [
        {
            **item,
            "text": texts.get(item["item"], ""),
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
            "url": _url(
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
        "headers": headers,
        "filters": [
            {"name": name, "options": options, "value": chosen[name]}
            for name, options in filters.items()
        ],
        "sort": sort,
        "dir": "desc" if descending else "asc",
        "notes": notes,
        "page": page,
        "page_links": _page_links(request, page),
        "rows": rows,
        "n_filtered": len(items),
        "n_total": len(payload.get("items") or []),
        "download": _download(study, "items"),
    }


def _items_csv(payload: Payload, questions: Questions) -> Table:
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
    header += ["flags"]
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
            row += _interval_cells((item.get("questions") or {}).get(q))
        row += [item.get("offensive"), *_interval_cells(item.get("turing_accuracy"))]
        row += _interval_cells(item.get("explanation_match"))
        score = bt.get(item["item"], {})
        row += [item.get("agreement"), item.get("cross_group_agreement")]
        row += [
            score.get("score"),
            score.get("ci_low"),
            score.get("ci_high"),
            score.get("rank"),
            score.get("component"),
        ]
        row += [";".join(item.get("flags", []))]
        rows.append(row)
    return header, rows


# ---------------------------------------------------------------------------------------------
# Agreement


def _headline_alpha(entry: Mapping[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
    """The alpha that fits the scale, as in the stored warnings: ordinal for ratings, nominal
    for flags."""
    alphas = entry.get("krippendorff_alpha") or {}
    measure = "ordinal" if "ordinal" in alphas else "nominal"
    return measure, alphas.get(measure)


def _agreement_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = _questions(study, payload)
    agreement = payload.get("agreement") or {}
    culture = _threshold(payload, "culture_dependent_items", DEFAULTS.culture_dependent_agreement)
    controversial = _threshold(payload, "controversial_question", DEFAULTS.controversial_kappa)
    rows, chart_rows = [], []
    group_names: set[str] = set()
    for name in questions.all:
        entry = agreement.get(name)
        if entry is None:
            continue
        measure, headline = _headline_alpha(entry)
        per_item = entry.get("per_item") or []
        alphas = entry.get("krippendorff_alpha") or {}
        rows.append(
            {
                "question": name,
                "n_ratings": entry.get("n_ratings"),
                "weights": entry.get("weights"),
                "fleiss_kappa": entry.get("fleiss_kappa"),
                "alpha": [alphas.get(level) for level in ("nominal", "ordinal", "interval")],
                "headline": measure,
                "cross_group_flagged": sum(
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
        headline = headline or {}
        chart_rows.append(
            charts.Row(
                label=name,
                value=headline.get("value"),
                low=headline.get("ci_low"),
                high=headline.get("ci_high"),
                detail=_("Krippendorff's alpha (%(m)s)") % {"m": measure},
            )
        )
    groups = sorted(group_names)
    by_group = [
        {
            "question": name,
            "measure": _headline_alpha(agreement[name])[0],
            "cells": [
                (agreement[name].get("krippendorff_alpha_by_group") or {}).get(g) for g in groups
            ],
        }
        for name in questions.all
        if name in agreement
    ]
    flagged = sorted(
        (
            item
            for item in payload.get("items") or []
            if item.get("cross_group_agreement") is not None
            and item["cross_group_agreement"] < culture
        ),
        key=lambda item: (item["cross_group_agreement"], item["item"]),
    )
    lows = [r.low for r in chart_rows if r.low is not None]
    chart = charts.interval_chart(
        chart_rows,
        label=_("Krippendorff's alpha per question with %(level)s intervals") % {"level": "95%"},
        axis_label=_("Krippendorff's alpha"),
        domain=(min([-0.2, *lows]), 1.0),
        references=[charts.Reference(controversial, f"{charts.fmt(controversial)}")],
    )
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
        "download": _download(study, "agreement"),
        "download_groups": _download(study, "agreement-by-group"),
        "download_cross": _download(study, "cross-group"),
    }


def _agreement_csv(payload: Payload, questions: Questions) -> Table:
    header = ["question", "n_ratings", "weights", "measure", "value", "ci_low", "ci_high", "n"]
    rows = []
    agreement = payload.get("agreement") or {}
    for name in questions.all:
        entry = agreement.get(name)
        if entry is None:
            continue
        base = [name, entry.get("n_ratings"), entry.get("weights")]
        if entry.get("fleiss_kappa"):
            rows.append([*base, "fleiss_kappa", *_interval_cells(entry["fleiss_kappa"])])
        for level, interval in sorted((entry.get("krippendorff_alpha") or {}).items()):
            rows.append([*base, f"krippendorff_alpha_{level}", *_interval_cells(interval)])
    return header, rows


def _agreement_groups_csv(payload: Payload, questions: Questions) -> Table:
    header = ["question", "group", "measure", "value", "ci_low", "ci_high", "n"]
    rows = []
    agreement = payload.get("agreement") or {}
    for name in questions.all:
        if name not in agreement:
            continue
        measure = _headline_alpha(agreement[name])[0]
        for group, interval in sorted(
            (agreement[name].get("krippendorff_alpha_by_group") or {}).items()
        ):
            rows.append([name, group, f"krippendorff_alpha_{measure}", *_interval_cells(interval)])
    return header, rows


def _cross_group_csv(payload: Payload, questions: Questions) -> Table:
    header = ["question", "item", "agreement", "cross_group"]
    agreement = payload.get("agreement") or {}
    rows = [
        [name, row["item"], row.get("agreement"), row.get("cross_group")]
        for name in questions.all
        for row in (agreement.get(name) or {}).get("per_item") or []
    ]
    return header, rows


# ---------------------------------------------------------------------------------------------
# Turing


def _turing_rows(payload: Payload) -> list[dict[str, Any]]:
    turing = payload.get("turing") or {}
    rows: list[dict[str, Any]] = []
    if turing.get("overall"):
        rows.append(
            {"scope": "overall", "name": "overall", "label": _("All items"), **turing["overall"]}
        )
    by_source = turing.get("by_source") or {}
    for name in _group_order(by_source, "source"):
        rows.append({"scope": "source", "name": name, "label": name, **by_source[name]})
    by_level = turing.get("by_level") or {}
    for name in _group_order(by_level, "level"):
        rows.append({"scope": "level", "name": name, "label": _level_name(name), **by_level[name]})
    return rows


def _chart_row(row: Mapping[str, Any], key: str) -> charts.Row:
    interval = row.get(key) or {}
    return charts.Row(
        label=row["label"],
        value=interval.get("value"),
        low=interval.get("ci_low"),
        high=interval.get("ci_high"),
        detail=f"n = {row.get('n', 0)}",
    )


def _turing_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    rows = _turing_rows(payload)
    models = [row for row in rows if row["scope"] in ("overall", "source")]
    levels = [row for row in rows if row["scope"] == "level"]
    return {
        "overall": next((row for row in rows if row["scope"] == "overall"), None),
        "models": models,
        "levels": levels,
        "human": Item.HUMAN_SOURCE,
        "accuracy_chart": charts.turing_chart(
            [_chart_row(row, "accuracy") for row in models],
            label=_("Turing accuracy per source with %(level)s intervals; lines at %(a)s and %(b)s")
            % PCT,
        ),
        "judged_human_chart": charts.proportion_chart(
            [_chart_row(row, "judged_human") for row in models],
            label=_(
                "Share judged 'written by a person' per source with %(level)s intervals; "
                "line at %(a)s"
            )
            % PCT,
        ),
        "level_chart": charts.turing_chart(
            [_chart_row(row, "accuracy") for row in levels],
            label=_("Turing accuracy per level with %(level)s intervals; lines at %(a)s and %(b)s")
            % PCT,
        ),
        "download": _download(study, "turing"),
    }


def _turing_csv(payload: Payload) -> Table:
    header = ["scope", "name", "n", "accuracy", "accuracy_ci_low", "accuracy_ci_high"]
    header += ["judged_human", "judged_human_ci_low", "judged_human_ci_high"]
    header += [
        "d_prime",
        "hits",
        "misses",
        "false_alarms",
        "correct_rejections",
        "verdict",
        "threshold",
    ]
    rows = []
    for row in _turing_rows(payload):
        accuracy, human = row.get("accuracy") or {}, row.get("judged_human") or {}
        rows.append(
            [row["scope"], row["name"], row.get("n")]
            + [accuracy.get("value"), accuracy.get("ci_low"), accuracy.get("ci_high")]
            + [human.get("value"), human.get("ci_low"), human.get("ci_high")]
            + [
                row.get(key)
                for key in ("d_prime", "hits", "misses", "false_alarms", "correct_rejections")
            ]
            + [row.get("verdict"), row.get("threshold")]
        )
    return header, rows


# ---------------------------------------------------------------------------------------------
# Quality


@dataclass
class RaterQuality:
    rater: str
    background: str
    attention_checks: int = 0
    attention_failed: int = 0
    timed_tasks: int = 0
    fast_tasks: int = 0
    # Exact when computed; None for a rater with fewer than half their tasks under the speeder
    # line, whose median is then known to be at or above it (see rater_quality).
    median_seconds: float | None = None
    scorecards: int = 0
    straight_runs: int = 0
    longest_run: int = 0

    @property
    def speeder(self) -> bool:
        return self.median_seconds is not None and self.median_seconds < SPEEDER_SECONDS

    @property
    def straight_liner(self) -> bool:
        return self.longest_run >= STRAIGHT_LINE_RUN

    @property
    def flagged(self) -> bool:
        return self.attention_failed > 0 or self.speeder or self.straight_liner


_Judgment = type[ScoreResponse] | type[PairJudgment] | type[TuringJudgment]


def rater_quality(*, study: Study, all_medians: bool = False) -> list[RaterQuality]:
    """Per rater: failed attention checks, median active time per task, straight-lining.

    At most seven queries whatever the number of raters, each an aggregate or bounded:
    1. the raters; 2. attention checks counted per rater;
    3. per rater, timed tasks and tasks under SPEEDER_SECONDS (one UNION ALL of three GROUP
       BYs). A median is below the line only if at least half the tasks are, so:
    4. the active times of those candidate raters only (of every rater with `all_medians`, for
       the download), whose exact median is taken in Python;
    5. the scale questions; 6. the scorecards whose scale answers are all equal (one GROUP BY
       ... HAVING over the answers); 7. every scorecard's rater in time order, for the runs.
    """
    raters = {
        pk: RaterQuality(rater=external, background=background or "")
        for pk, external, background in Rater.objects.filter(study=study)
        .order_by("external_id")
        .values_list("pk", "external_id", "background__code")
    }
    checks = (
        Assignment.objects.filter(study=study, is_attention_check=True)
        .order_by()
        .values("rater_id")
        .annotate(
            seen=Count("pk", filter=Q(attention_passed__isnull=False)),
            failed=Count("pk", filter=Q(attention_passed=False)),
        )
        .values_list("rater_id", "seen", "failed")
    )
    for rater, seen, failed in checks:
        if rater in raters:
            raters[rater].attention_checks, raters[rater].attention_failed = seen, failed
    _speed(study, raters, all_medians=all_medians)
    _straight_lining(study, raters)
    return list(raters.values())


def _speed(study: Study, raters: dict[int, RaterQuality], *, all_medians: bool) -> None:
    def counts(model: _Judgment) -> Any:
        return (
            model.objects.filter(rater__study=study, active_seconds__isnull=False)
            .order_by()
            .values("rater_id")
            .annotate(n=Count("pk"), fast=Count("pk", filter=Q(active_seconds__lt=SPEEDER_SECONDS)))
            .values_list("rater_id", "n", "fast")
        )

    for rater, n, fast in counts(ScoreResponse).union(
        counts(PairJudgment), counts(TuringJudgment), all=True
    ):
        if rater in raters:
            raters[rater].timed_tasks += n
            raters[rater].fast_tasks += fast
    # With k values under the line out of n, the median is below it only if 2k >= n (for odd n
    # the middle value is under it; for even n both middle values must be, or the lower one
    # with an average still under): everyone else's median is at or above the line.
    candidates = [
        pk
        for pk, q in raters.items()
        if q.timed_tasks and (all_medians or 2 * q.fast_tasks >= q.timed_tasks)
    ]
    if not candidates:
        return

    def times(model: _Judgment) -> Any:
        return (
            model.objects.filter(rater_id__in=candidates, active_seconds__isnull=False)
            .order_by()
            .values_list("rater_id", "active_seconds")
        )

    seconds: dict[int, list[float]] = defaultdict(list)
    for rater, value in times(ScoreResponse).union(
        times(PairJudgment), times(TuringJudgment), all=True
    ):
        seconds[rater].append(value)
    for rater, values in seconds.items():
        raters[rater].median_seconds = statistics.median(values)


def _straight_lining(study: Study, raters: dict[int, RaterQuality]) -> None:
    kinds = list(Question.objects.filter(rubric_id=study.rubric_id).values_list("pk", "kind"))
    scale = [pk for pk, kind in kinds if kind == Question.Kind.LIKERT]
    others = [pk for pk, kind in kinds if kind != Question.Kind.LIKERT]
    if not scale:
        return
    # Filters written so that both SQLite and PostgreSQL walk the study's raters through their
    # indexes instead of visiting every judgment of the study's index in random order.
    responses = ScoreResponse.objects.filter(rater__study=study)
    uniform = dict(
        ScoreAnswer.objects.filter(response_id__in=responses.values("pk"))
        .exclude(question_id__in=others)
        .order_by()
        .values("response_id")
        .annotate(lo=Min("value"), hi=Max("value"), k=Count("pk"))
        .filter(lo=F("hi"), k=len(scale))
        .values_list("response_id", "lo")
    )
    cards = responses.order_by(
        "rater_id", "submitted_at", "seconds_into_session", "pk"
    ).values_list("rater_id", "pk")
    current, run, value = None, 0, None
    for rater, card in cards:
        if rater != current:
            current, run, value = rater, 0, None
        quality = raters.get(rater)
        if quality is None:
            continue
        quality.scorecards += 1
        same = uniform.get(card)
        if same is not None and same == value:
            run += 1
        else:
            run, value = (1, same) if same is not None else (0, None)
        if run == STRAIGHT_LINE_RUN:
            quality.straight_runs += 1
        quality.longest_run = max(quality.longest_run, run)


def _quality_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    diagnostics = payload.get("diagnostics") or {}
    fatigue = diagnostics.get("fatigue") or {}
    bias = diagnostics.get("position_bias") or {}
    left = bias.get("left_choice_rate") or {}
    quality = rater_quality(study=study)
    flagged = sorted(
        (q for q in quality if q.flagged),
        key=lambda q: (
            -q.attention_failed,
            not q.straight_liner,
            float("inf") if q.median_seconds is None else q.median_seconds,
            q.rater,
        ),
    )
    coverage = diagnostics.get("coverage") or {}
    return {
        "fatigue": fatigue,
        "fatigue_chart": charts.fatigue_chart(
            fatigue.get("bins") or [],
            label=_("Mean funniness per minute into the session, with %(level)s intervals") % PCT,
        ),
        "slope": fatigue.get("slope"),
        "position_bias": bias,
        "position_chart": charts.proportion_chart(
            [
                charts.Row(
                    label=_("Left item chosen"),
                    value=left.get("value"),
                    low=left.get("ci_low"),
                    high=left.get("ci_high"),
                    detail=f"n = {left.get('n', 0)}",
                )
            ]
            if left
            else [],
            label=_(
                "Share of A/B judgments won by the left item, with %(level)s interval; line at %(a)s"
            )
            % PCT,
        ),
        "explanation": diagnostics.get("explanation_match_rate"),
        "coverage": [
            {"group": group, "missing": (coverage.get("items_without_group") or {}).get(group)}
            for group in coverage.get("groups") or []
        ],
        "raters": len(quality),
        "attention_failures": sum(1 for q in quality if q.attention_failed),
        "speeders": sum(1 for q in quality if q.speeder),
        "straight_liners": sum(1 for q in quality if q.straight_liner),
        "flagged": flagged[:LIST_LIMIT],
        "n_flagged": len(flagged),
        "list_limit": LIST_LIMIT,
        "speeder_seconds": SPEEDER_SECONDS,
        "straight_line_run": STRAIGHT_LINE_RUN,
        "download_fatigue": _download(study, "fatigue"),
        "download_position": _download(study, "position-bias"),
        "download_raters": _download(study, "rater-quality"),
    }


def _fatigue_csv(payload: Payload) -> Table:
    fatigue = (payload.get("diagnostics") or {}).get("fatigue") or {}
    header = ["start_minute", "end_minute", "n", "mean", "ci_low", "ci_high"]
    rows = [
        [b.get("start"), b.get("end"), b.get("n"), b.get("mean"), b.get("ci_low"), b.get("ci_high")]
        for b in fatigue.get("bins") or []
    ]
    return header, rows


def _position_csv(payload: Payload) -> Table:
    bias = (payload.get("diagnostics") or {}).get("position_bias") or {}
    header = ["measure", "value", "ci_low", "ci_high", "n", "p_value"]
    if not bias:
        return header, []
    return header, [
        ["left_choice_rate", *_interval_cells(bias.get("left_choice_rate")), bias.get("p_value")]
    ]


def _rater_quality_csv(study: Study) -> Table:
    header = [
        "rater",
        "background",
        "attention_checks",
        "attention_failed",
        "timed_tasks",
        "tasks_under_speeder_line",
        "median_active_seconds",
        "speeder",
        "scorecards",
        "straight_line_runs",
        "longest_straight_run",
        "straight_liner",
    ]
    rows = [
        [
            q.rater,
            q.background,
            q.attention_checks,
            q.attention_failed,
            q.timed_tasks,
            q.fast_tasks,
            q.median_seconds,
            q.speeder,
            q.scorecards,
            q.straight_runs,
            q.longest_run,
            q.straight_liner,
        ]
        for q in rater_quality(study=study, all_medians=True)
    ]
    return header, rows


# ---------------------------------------------------------------------------------------------
# Safety


def _safety_items(payload: Payload) -> list[Mapping[str, Any]]:
    return sorted(
        (item for item in payload.get("items") or [] if item.get("safety_intercepted")),
        key=lambda item: item["item"],
    )


def _safety_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    questions = _questions(study, payload)
    items = _safety_items(payload)
    page = _page(request, items)
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
        "page_links": _page_links(request, page),
        "n_items": len(items),
        "by_source": [
            row
            for row in _group_rows(payload, "source", questions)
            if row["safety_intercepted_items"]
        ],
        "by_level": [
            row
            for row in _group_rows(payload, "level", questions)
            if row["safety_intercepted_items"]
        ],
        "download": _download(study, "safety"),
    }


def _safety_csv(payload: Payload, questions: Questions) -> Table:
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
            row += _interval_cells((item.get("questions") or {}).get(q))
        rows.append([*row, item.get("offensive")])
    return header, rows


# ---------------------------------------------------------------------------------------------
# CSV downloads: name -> table. Full precision, empty cell for a missing value.


def _csv_table(name: str, study: Study, payload: Payload) -> Table | None:
    if name == "rater-quality":
        return _rater_quality_csv(study)
    simple: dict[str, Callable[[Payload], Table]] = {
        "leaderboard": lambda p: _leaderboard_csv(p, [""]),
        "leaderboard-by-level": lambda p: _leaderboard_csv(
            p, _group_order(p.get("bradley_terry_by_level") or {}, "level")
        ),
        "leaderboard-by-source": _leaderboard_source_csv,
        "turing": _turing_csv,
        "fatigue": _fatigue_csv,
        "position-bias": _position_csv,
    }
    if name in simple:
        return simple[name](payload)
    with_questions: dict[str, Callable[[Payload, Questions], Table]] = {
        "summary": lambda p, q: _summary_csv(study, p, q),
        "items": _items_csv,
        "agreement": _agreement_csv,
        "agreement-by-group": _agreement_groups_csv,
        "cross-group": _cross_group_csv,
        "safety": _safety_csv,
    }
    if name in with_questions:
        return with_questions[name](payload, _questions(study, payload))
    return None


CSV_NAMES = [
    "summary",
    "leaderboard",
    "leaderboard-by-level",
    "leaderboard-by-source",
    "items",
    "agreement",
    "agreement-by-group",
    "cross-group",
    "turing",
    "fatigue",
    "position-bias",
    "rater-quality",
    "safety",
]
# Characters that make a spreadsheet read a cell as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


# ---------------------------------------------------------------------------------------------
# Views


SECTION_CONTEXT: dict[str, Callable[[HttpRequest, Study, Payload], dict[str, Any]]] = {
    "leaderboard": _leaderboard_context,
    "items": _items_context,
    "agreement": _agreement_context,
    "turing": _turing_context,
    "quality": _quality_context,
    "safety": _safety_context,
}


def _result(study: Study) -> StudyResult | None:
    try:
        return study_result_get(study=study)
    except NotFound:
        return None


def _render(
    request: HttpRequest, study: Study, section: str, build: Callable[..., dict[str, Any]]
) -> HttpResponse:
    result = _result(study)
    title = SECTIONS.get(section, _("Summary"))
    if result is None:
        state = AggregationState.objects.filter(study=study).first()
        return render(
            request,
            "dashboard/results_empty.html",
            {"study": study, "section_title": title, "state": state},
        )
    context = {"study": study, "result": result, "section": section, "section_title": title}
    context.update(build(request, study, result.payload))
    return render(request, f"dashboard/results_{section}.html", context)


@study_view
def summary(request: HttpRequest, study: Study) -> HttpResponse:
    return _render(request, study, "summary", _summary_context)


@study_view
def section(request: HttpRequest, study: Study, section: str) -> HttpResponse:
    if section not in SECTION_CONTEXT:
        raise Http404("no such results section")
    return _render(request, study, section, SECTION_CONTEXT[section])


@study_view
def chart_data(request: HttpRequest, study: Study, name: str) -> HttpResponse:
    if name not in CSV_NAMES:
        raise Http404("no such download")
    result = _result(study)
    if result is None:
        raise Http404("no results yet")
    table = _csv_table(name, study, result.payload)
    if table is None:  # pragma: no cover - CSV_NAMES and _csv_table list the same names
        raise Http404("no such download")
    header, rows = table
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-{name}.csv"'
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows([_cell(value) for value in row] for row in rows)
    return response
