"""Researcher pages of the LLM judge: its set-up (the study's own judge or the deployment's), its
verdicts, and how it compares with the humans per humor type. The page reads stored verdicts and
comparisons; it computes nothing."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import DomainError
from apps.screening.llm_judge import ConfigSource, judge_config
from apps.screening.models import StudyJudgeConfig
from apps.screening.selectors import (
    judge_comparisons,
    judge_failed_verdicts,
    judge_verdict_counts,
    screening_tiers_of,
)
from apps.screening.services.judge import judge_config_reset, judge_config_save, judge_run_start
from apps.studies.access import study_view
from apps.studies.models import Study

# Failed verdicts listed on the page; the count above the list says how many there are in all.
ERROR_LIST_LIMIT = 200


class JudgeConfigForm(forms.Form):
    """Shapes only; `judge_config_save` checks the rules (the URL's address among them)."""

    url = forms.CharField(
        label=gettext_lazy("Endpoint URL"),
        max_length=500,
        help_text=gettext_lazy(
            "An OpenAI-compatible chat-completions endpoint; /chat/completions is added to a "
            "base URL such as https://api.example.com/v1."
        ),
    )
    model = forms.CharField(label=gettext_lazy("Model"), max_length=200)
    timeout_seconds = forms.FloatField(
        label=gettext_lazy("Timeout per item (s)"),
        min_value=0.1,
        max_value=StudyJudgeConfig.MAX_TIMEOUT_SECONDS,
        initial=30,
    )
    parallelism = forms.IntegerField(
        label=gettext_lazy("Calls at once"),
        min_value=1,
        max_value=StudyJudgeConfig.MAX_PARALLELISM,
        initial=1,
    )


def _config_form_initial(study: Study) -> dict[str, Any]:
    config = judge_config(study=study)
    return {
        "url": config.url if config.source == ConfigSource.STUDY else "",
        "model": config.model,
        "timeout_seconds": config.timeout_seconds,
        "parallelism": config.parallelism,
    }


def _page(
    request: HttpRequest,
    study: Study,
    *,
    status: int = 200,
    config_form: JudgeConfigForm | None = None,
) -> HttpResponse:
    config = judge_config(study=study)
    failed, failed_total = judge_failed_verdicts(study=study, limit=ERROR_LIST_LIMIT)
    context = {
        "study": study,
        "configured": config.is_configured,
        "own_config": config.source == ConfigSource.STUDY,
        "judge_host": config.host,
        "judge_model": config.model,
        "timeout_seconds": config.timeout_seconds,
        "parallelism": config.parallelism,
        # Whether a key goes with the calls, never the key.
        "has_key": bool(config.api_key),
        "config_form": config_form or JudgeConfigForm(initial=_config_form_initial(study)),
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


@study_view
@require_POST
def judge_config_edit(request: HttpRequest, study: Study) -> HttpResponse:
    form = JudgeConfigForm(request.POST)
    if form.is_valid():
        try:
            judge_config_save(study=study, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, _("The study's judge is saved; the next run uses it."))
            return HttpResponseRedirect(reverse("screening:judge", args=[study.slug]))
    return _page(request, study, status=400, config_form=form)


@study_view
@require_POST
def judge_config_default(request: HttpRequest, study: Study) -> HttpResponse:
    judge_config_reset(study=study)
    messages.success(request, _("The study uses the server's judge again."))
    return HttpResponseRedirect(reverse("screening:judge", args=[study.slug]))


urlpatterns: list[URLPattern] = [
    path("judge/", judge, name="judge"),
    path("judge/run/", judge_start, name="judge_start"),
    path("judge/config/", judge_config_edit, name="judge_config"),
    path("judge/config/default/", judge_config_default, name="judge_config_default"),
]
