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

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.selectors import study_result_get
from apps.core.errors import NotFound
from apps.core.spreadsheet import SafeCsvWriter
from apps.dashboard.results.agreement import (
    agreement_context,
    agreement_csv,
    agreement_groups_csv,
    cross_group_csv,
)
from apps.dashboard.results.common import (
    SECTIONS,
    Payload,
    Questions,
    Table,
    group_order,
    items_view,
    load_questions,
)
from apps.dashboard.results.comparison import models_context, models_csv
from apps.dashboard.results.items import items_context, items_csv
from apps.dashboard.results.leaderboard import (
    leaderboard_context,
    leaderboard_csv,
    leaderboard_source_csv,
)
from apps.dashboard.results.quality import (
    fatigue_csv,
    position_csv,
    quality_context,
    rater_quality_csv,
)
from apps.dashboard.results.safety import safety_context, safety_csv
from apps.dashboard.results.summary import summary_context, summary_csv
from apps.dashboard.results.turing import turing_context, turing_csv
from apps.findings.document import has_evidence_view, shown_document
from apps.reports import tables as export_tables
from apps.reports.writers import headline_comparison
from apps.studies.access import study_view
from apps.studies.models import Study

# Downloads that are the export's table of the same name, computed from the page's view: one
# definition of each column, whichever way a researcher takes the numbers away.
EXPORT_CSVS: dict[str, Callable[[dict[str, Any]], export_tables.Table]] = {
    "style-sources": export_tables.style_sources_table,
    "style-covariates": export_tables.style_covariates_table,
    "style-items": export_tables.style_items_table,
    "reliability": export_tables.reliability_table,
    "pair-outcomes": export_tables.pair_outcomes_table,
}


def _csv_table(name: str, study: Study, payload: Payload) -> Table | None:
    if name == "rater-quality":
        return rater_quality_csv(study)
    simple: dict[str, Callable[[Payload], Table]] = {
        "leaderboard": lambda p: leaderboard_csv(p, [""]),
        "leaderboard-by-level": lambda p: leaderboard_csv(
            p, group_order(p.get("bradley_terry_by_level") or {}, "level")
        ),
        "leaderboard-by-source": leaderboard_source_csv,
        "turing": turing_csv,
        "fatigue": fatigue_csv,
        "position-bias": position_csv,
    }
    if name in EXPORT_CSVS:
        table = EXPORT_CSVS[name](dict(payload))
        return table.columns, table.rows
    if name in simple:
        return simple[name](payload)
    with_questions: dict[str, Callable[[Payload, Questions], Table]] = {
        "summary": lambda p, q: summary_csv(study, p, q),
        "items": items_csv,
        "models": models_csv,
        "agreement": agreement_csv,
        "agreement-by-group": agreement_groups_csv,
        "cross-group": cross_group_csv,
        "safety": safety_csv,
    }
    if name in with_questions:
        return with_questions[name](payload, load_questions(study, payload))
    return None


CSV_NAMES = [
    "summary",
    "models",
    "leaderboard",
    "leaderboard-by-level",
    "leaderboard-by-source",
    "style-sources",
    "style-covariates",
    "style-items",
    "reliability",
    "pair-outcomes",
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
SECTION_CONTEXT: dict[str, Callable[[HttpRequest, Study, Payload], dict[str, Any]]] = {
    "models": models_context,
    "leaderboard": leaderboard_context,
    "items": items_context,
    "agreement": agreement_context,
    "turing": turing_context,
    "quality": quality_context,
    "safety": safety_context,
}


def _result(study: Study) -> StudyResult | None:
    try:
        return study_result_get(study=study)
    except NotFound:
        return None


def _view(request: HttpRequest, study: Study, payload: Payload) -> tuple[Payload, dict[str, Any]]:
    """The payload for the chosen view, and what the page says about the two views. Both
    documents are read, never computed, here."""
    if not has_evidence_view(payload):
        return payload, {}
    chosen = items_view(request, study)
    evidence = payload["evidence_only"]
    shown = shown_document(payload, chosen)
    questions = load_questions(study, payload)
    named = study.rubric.primary_question
    primary: str | None = named if named in questions.all else None
    switch = {
        "chosen": chosen,
        "other": "all" if chosen == "evidence" else "evidence",
        "left_out": evidence.get("left_out") or [],
        "primary": primary,
        "effect": headline_comparison(
            ((evidence.get("results") or {}).get("groups") or {}).get("source") or {},
            (payload.get("groups") or {}).get("source") or {},
            primary,
        ),
    }
    return shown, switch


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
    payload, switch = _view(request, study, result.payload)
    context = {
        "study": study,
        "result": result,
        "section": section,
        "section_title": title,
        "view_switch": switch,
    }
    context.update(build(request, study, payload))
    return render(request, f"dashboard/results_{section}.html", context)


@study_view
def summary(request: HttpRequest, study: Study) -> HttpResponse:
    return _render(request, study, "summary", summary_context)


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
    payload, _switch = _view(request, study, result.payload)
    table = _csv_table(name, study, payload)
    if table is None:  # pragma: no cover - CSV_NAMES and _csv_table list the same names
        raise Http404("no such download")
    header, rows = table
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-{name}.csv"'
    writer = SafeCsvWriter(response, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    return response
