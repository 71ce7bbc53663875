"""Researcher pages of the LLM judge: its configuration, its verdicts, and how it compares with
the humans per humor type. The page reads stored verdicts and comparisons; it computes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import DomainError
from apps.dashboard.access import study_view
from apps.screening.llm_judge import judge_config
from apps.screening.models import JudgeComparison, JudgeVerdict
from apps.screening.services.judge import judge_run_start
from apps.studies.models import Study

# Failed verdicts listed on the page; the count above the list says how many there are in all.
ERROR_LIST_LIMIT = 200


@dataclass(frozen=True)
class ModelCounts:
    model_name: str
    counts: list[tuple[str, str, int]]  # (status, label, number)
    total: int


def _verdict_counts(study: Study) -> list[ModelCounts]:
    rows = (
        JudgeVerdict.objects.filter(item__study=study)
        .values_list("model_name", "status")
        .annotate(n=Count("pk"))
        .order_by("model_name", "status")
    )
    by_model: dict[str, dict[str, int]] = {}
    for model_name, status, n in rows:
        by_model.setdefault(model_name, {})[status] = n
    return [
        ModelCounts(
            model_name=model_name,
            counts=[(s.value, str(s.label), counts.get(s.value, 0)) for s in JudgeVerdict.Status],
            total=sum(counts.values()),
        )
        for model_name, counts in by_model.items()
    ]


def _failed_verdicts(study: Study) -> tuple[list[JudgeVerdict], int]:
    failed = (
        JudgeVerdict.objects.filter(item__study=study)
        .exclude(status=JudgeVerdict.Status.OK)
        .select_related("item")
        .order_by("model_name", "item__external_id")
    )
    return list(failed[:ERROR_LIST_LIMIT]), failed.count()


def _comparisons(study: Study) -> list[dict[str, Any]]:
    return [
        {
            "model_name": comparison.model_name,
            "computed_at": comparison.computed_at,
            "seed": comparison.seed,
            "rounds": comparison.rounds,
            "question": comparison.payload.get("question", "funniness"),
            "overall": comparison.payload.get("overall"),
            "by_humor_type": comparison.payload.get("by_humor_type", []),
        }
        for comparison in JudgeComparison.objects.filter(study=study).order_by("model_name")
    ]


def _page(request: HttpRequest, study: Study, *, status: int = 200) -> HttpResponse:
    config = judge_config()
    failed, failed_total = _failed_verdicts(study)
    context = {
        "study": study,
        "configured": config.is_configured,
        "judge_host": config.host,
        "judge_model": config.model,
        "timeout_seconds": config.timeout_seconds,
        "model_counts": _verdict_counts(study),
        "failed": failed,
        "failed_total": failed_total,
        "failed_limit": ERROR_LIST_LIMIT,
        "comparisons": _comparisons(study),
    }
    return render(request, "screening/judge.html", context, status=status)


@study_view
@require_GET
def judge(request: HttpRequest, study: Study) -> HttpResponse:
    return _page(request, study)


@study_view
@require_POST
def judge_start(request: HttpRequest, study: Study) -> HttpResponse:
    try:
        queued = judge_run_start(study=study)
    except DomainError as exc:
        messages.error(request, exc.message)
        return _page(request, study, status=exc.status_code)
    messages.success(
        request,
        _("The judge was asked about %(n)s items; verdicts appear here as they arrive.")
        % {"n": queued},
    )
    return HttpResponseRedirect(reverse("screening:judge", args=[study.slug]))


urlpatterns: list[URLPattern] = [
    path("judge/", judge, name="judge"),
    path("judge/run/", judge_start, name="judge_start"),
]
