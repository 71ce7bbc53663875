"""Researcher pages of the LLM judge: its configuration, its verdicts, and how it compares with
the humans per humor type. The page reads stored verdicts and comparisons; it computes nothing."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import DomainError
from apps.dashboard.access import study_view
from apps.screening.llm_judge import judge_config
from apps.screening.selectors import (
    judge_comparisons,
    judge_failed_verdicts,
    judge_verdict_counts,
    screening_tiers_of,
)
from apps.screening.services.judge import judge_run_start
from apps.studies.models import Study

# Failed verdicts listed on the page; the count above the list says how many there are in all.
ERROR_LIST_LIMIT = 200


def _page(request: HttpRequest, study: Study, *, status: int = 200) -> HttpResponse:
    config = judge_config()
    failed, failed_total = judge_failed_verdicts(study=study, limit=ERROR_LIST_LIMIT)
    context = {
        "study": study,
        "configured": config.is_configured,
        "judge_host": config.host,
        "judge_model": config.model,
        "timeout_seconds": config.timeout_seconds,
        "model_counts": judge_verdict_counts(study=study),
        "failed": failed,
        "failed_total": failed_total,
        "failed_limit": ERROR_LIST_LIMIT,
        "comparisons": judge_comparisons(study=study),
        "tiers": screening_tiers_of(study=study),
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
