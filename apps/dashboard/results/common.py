"""Shared pieces of the results pages: constants, small helpers over the payload, paging."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.http import HttpRequest, QueryDict
from django.urls import reverse

from apps.analysis import labels
from apps.analysis.stats.inputs import Thresholds
from apps.dashboard.context import RESULT_SECTIONS
from apps.findings import figures
from apps.findings.document import VIEWS, default_items_view
from apps.studies.models import Item, Question, Study

Payload = Mapping[str, Any]
Table = tuple[list[str], list[list[Any]]]

PAGE_SIZE = 100
LIST_LIMIT = 200
LEVELS = [level.value for level in Item.Level]
SECTIONS = dict(RESULT_SECTIONS)
DEFAULTS = Thresholds()


@dataclass(frozen=True)
class Questions:
    """The rubric's questions present in the payload, in scorecard order."""

    scale: list[str]
    binary: list[str]

    @property
    def all(self) -> list[str]:
        return self.scale + self.binary


def load_questions(study: Study, payload: Payload) -> Questions:
    """Scorecard order and kinds come from the rubric (one query): a payload stored before the
    results became `json` (analysis 0005) went through jsonb, which does not keep the order of
    its keys."""
    rubric = list(
        Question.objects.filter(rubric_id=study.rubric_id)
        .order_by("position")
        .values_list("name", "kind")
    )
    scale, binary = figures.questions_shown(rubric, payload)
    return Questions(scale=scale, binary=binary)


def level_name(level: str) -> str:
    return labels.level_label(level)


def group_order(names: Iterable[str], dimension: str) -> list[str]:
    """Levels in the method's order, models before the human baseline, the rest by name."""
    return figures.group_order(names, dimension)


def group_label(name: str, dimension: str) -> str:
    return labels.group_label(name, dimension)


def interval_cells(interval: Mapping[str, Any] | None) -> list[Any]:
    interval = interval or {}
    return [
        interval.get("value"),
        interval.get("ci_low"),
        interval.get("ci_high"),
        interval.get("n"),
    ]


def item_index(payload: Payload) -> dict[str, Mapping[str, Any]]:
    return {item["item"]: item for item in payload.get("items") or []}


def threshold_of(payload: Payload, code: str, default: float) -> float:
    for warning in payload.get("warnings") or []:
        if warning.get("code") == code and warning.get("threshold") is not None:
            return float(warning["threshold"])
    return default


def url_with(request: HttpRequest, **changes: Any) -> str:
    """This page's URL with some query parameters changed (None removes one)."""
    query: QueryDict = request.GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            query.pop(key, None)
        else:
            query[key] = str(value)
    encoded = query.urlencode()
    return f"{request.path}?{encoded}" if encoded else request.path


def paginate(request: HttpRequest, rows: Sequence[Any]) -> Page:
    # get_page turns a missing, malformed or out-of-range ?page= into the first or last page.
    return Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))


def page_links(request: HttpRequest, page: Page) -> dict[str, str | None]:
    return {
        "previous": url_with(request, page=page.previous_page_number())
        if page.has_previous()
        else None,
        "next": url_with(request, page=page.next_page_number()) if page.has_next() else None,
    }


def download_url(request: HttpRequest, study: Study, name: str) -> str:
    """A results CSV; a view the page was switched to (`?view=`) carries over to its data."""
    url = reverse("dashboard:results_data", args=[study.slug, name])
    view = request.GET.get("view")
    return f"{url}?view={view}" if view in ("all", "evidence") else url


def items_view(request: HttpRequest, study: Study) -> str:
    """The items a page's figures rest on: `?view=` when given, else the study's setting, the
    same default on every page and in the report (apps.findings.document)."""
    chosen = request.GET.get("view", "")
    if chosen in VIEWS:
        return chosen
    return default_items_view(exclude_items_not_evidence=study.exclude_items_not_evidence)
