"""The content evaluation page: the stored weights, independence of the dimensions and tiers;
and the button that queues a recomputation. The page reads the stored evaluation only."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from apps.analysis import labels
from apps.content.selectors import content_evaluation_get, study_is_content
from apps.content.services.evaluation import COMPOSITE, content_evaluation_request
from apps.content.weights import DEFAULT_WEIGHTS, DIMENSIONS, MIN_ITEMS
from apps.core.errors import DomainError
from apps.studies.access import study_view
from apps.studies.models import Study

QUALITY_KEYS = (
    "reason",
    "warnings",
    "n_rows",
    "n_good",
    "log_likelihood",
    "pseudo_r2",
    "cv_accuracy",
    "cv_auc",
)


def _type_label(content_type: str) -> str:
    if not content_type:
        return _("No content type")
    return labels.content_type_label(content_type)


def _against_rows(rows: list[dict[str, Any]], human_names: list[str]) -> list[dict[str, Any]]:
    """Cells in the column order of the header, the matching human score marked."""
    return [
        {
            "name": row["name"],
            "cells": [
                {
                    "human": name,
                    "matching": name == row.get("matching"),
                    **(row["against"].get(name) or {}),
                }
                for name in human_names
            ],
        }
        for row in rows
    ]


def _context(study: Study) -> dict[str, Any]:
    evaluation = content_evaluation_get(study=study)
    context: dict[str, Any] = {
        "study": study,
        "is_content": study_is_content(study=study),
        "evaluation": evaluation,
        "dimensions": DIMENSIONS,
        "min_items": MIN_ITEMS,
        "defaults": [
            {"content_type": t, "label": _type_label(t), "weights": w}
            for t, w in DEFAULT_WEIGHTS.items()
        ],
    }
    if evaluation is None:
        return context
    payload = evaluation.payload
    human_names = [*DIMENSIONS, COMPOSITE]
    context.update(
        {
            "weights": [
                {
                    **row,
                    "label": _type_label(row["content_type"]),
                    # A default row has no fit: its quality holds only the counts and reason.
                    "quality": dict.fromkeys(QUALITY_KEYS) | row.get("quality", {}),
                }
                for row in payload.get("weights", [])
            ],
            "outcome": labels.outcome_label(payload.get("composite", {}).get("outcome", "")),
            "matrices": [
                {
                    "title": _("Are the human dimensions independent?"),
                    "css": "human-correlations",
                    "matrix": payload.get("independence", {}).get("human", {}),
                },
                {
                    "title": _("Are the automatic dimension scores independent?"),
                    "css": "automatic-correlations",
                    "matrix": payload.get("independence", {}).get("automatic", {}),
                },
                {
                    "title": _("Every automatic metric, pair by pair"),
                    "css": "metric-correlations",
                    "matrix": payload.get("independence", {}).get("metrics", {}),
                },
            ],
            "human_names": human_names,
            "against": _against_rows(payload.get("metric_vs_human", []), human_names),
            "tiers": [
                {**row, "label": labels.tier_label(str(row.get("label", "")))}
                for row in payload.get("tiers", [])
            ],
            "counts": payload.get("counts", {}),
            "threshold": payload.get("threshold", 0.4),
        }
    )
    return context


def _page(request: HttpRequest, study: Study, *, status: int = 200) -> HttpResponse:
    return render(request, "content/evaluation.html", _context(study), status=status)


@study_view
@require_GET
def evaluation(request: HttpRequest, study: Study) -> HttpResponse:
    return _page(request, study)


@study_view
@require_POST
def recompute(request: HttpRequest, study: Study) -> HttpResponse:
    try:
        content_evaluation_request(study=study)
    except DomainError as exc:
        messages.error(request, exc.message)
        return _page(request, study, status=exc.status_code)
    messages.success(
        request,
        _("The content evaluation was queued; this page shows it once it is computed."),
    )
    return HttpResponseRedirect(reverse("content:evaluation", args=[study.slug]))


urlpatterns: list[URLPattern] = [
    path("", evaluation, name="evaluation"),
    path("recompute/", recompute, name="recompute"),
]
