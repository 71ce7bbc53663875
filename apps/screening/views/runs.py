"""The candidates page: features, FunnyScore, rank and why each candidate was kept or dropped;
starting a screening run; calibrating FunnyScore against the study's human ratings."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core import validators
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from apps.analysis.labels import question_label
from apps.core.errors import DomainError
from apps.screening.calibration import DEFAULT_COEFFICIENTS, MIN_ITEMS_PER_SCOPE
from apps.screening.scoring import prior_available
from apps.screening.selectors import (
    calibration_default,
    screening_overview,
    screening_run_latest,
    sieve_audit_of,
)
from apps.screening.services.calibration import (
    funnyscore_calibrate_request,
    funnyscore_calibration_choose,
)
from apps.screening.services.runs import (
    L1_KEEP_MAX,
    L1_KEEP_PER_K,
    TOP_K_MAX,
    judge_stage_model,
    judged_scale,
    screening_run_rerun,
    screening_run_start,
)
from apps.studies.access import study_view
from apps.studies.models import Study


class RunStartForm(forms.Form):
    top_k = forms.IntegerField(
        label=gettext_lazy("Top K per model"), min_value=1, max_value=TOP_K_MAX
    )
    l1_keep = forms.IntegerField(
        label=gettext_lazy("L1 passes per model and level (0 = all)"),
        min_value=0,
        max_value=L1_KEEP_MAX,
        required=False,
    )
    l1_min_score = forms.FloatField(label=gettext_lazy("L1 minimum FunnyScore"), required=False)
    judge_min = forms.FloatField(required=False)

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The judge sieves on the rubric's primary question, on that question's own scale.
        scale = judged_scale(study=study)
        field = self.fields["judge_min"]
        assert isinstance(field, forms.FloatField)
        if scale is None:
            del self.fields["judge_min"]
            return
        field.label = _("LLM judge minimum %(question)s (%(low)s–%(high)s)") % {
            "question": question_label(scale.name),
            "low": f"{scale.low:g}",
            "high": f"{scale.high:g}",
        }
        field.widget.attrs.update({"min": f"{scale.low:g}", "max": f"{scale.high:g}"})
        field.validators.extend(
            [validators.MinValueValidator(scale.low), validators.MaxValueValidator(scale.high)]
        )

    def sieve(self) -> dict[str, object]:
        data = self.cleaned_data
        return {
            "top_k": data["top_k"],
            "l1_keep": data.get("l1_keep"),
            "l1_min_score": data.get("l1_min_score"),
            # An empty minimum means none (None would mean the documented default).
            "judge_min": "" if data.get("judge_min") is None else data["judge_min"],
        }


def _initial(study: Study) -> dict[str, object]:
    judge = judge_stage_model(study=study)
    scale = judged_scale(study=study)
    k = study.screening_top_k
    return {
        "top_k": k,
        "l1_keep": L1_KEEP_PER_K * k if judge else 0,
        "judge_min": scale.default_minimum if judge and scale is not None else None,
    }


def _page(
    request: HttpRequest, study: Study, *, form: RunStartForm | None = None, status: int = 200
) -> HttpResponse:
    overview_ = screening_overview(study=study)
    context = {
        "study": study,
        "overview": overview_,
        "form": form or RunStartForm(initial=_initial(study), study=study),
        "judge_model": judge_stage_model(study=study),
        "min_items": MIN_ITEMS_PER_SCOPE,
        "defaults": DEFAULT_COEFFICIENTS,
        "default_scorer": calibration_default(
            study=study, features=[row.features for row in overview_.rows] or None
        ),
        "prior": prior_available()[0],
        "prior_unavailable": prior_available()[1],
        "audit": sieve_audit_of(study=study),
    }
    return render(request, "screening/overview.html", context, status=status)


def _back(study: Study) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("screening:overview", args=[study.slug]))


@study_view
@require_GET
def overview(request: HttpRequest, study: Study) -> HttpResponse:
    return _page(request, study)


@study_view
@require_POST
def run_start(request: HttpRequest, study: Study) -> HttpResponse:
    form = RunStartForm(request.POST, study=study)
    if not form.is_valid():
        return _page(request, study, form=form, status=400)
    rerun = request.POST.get("rerun") == "1"
    try:
        if rerun:
            latest = screening_run_latest(study=study)
            if latest is None:
                raise DomainError("the study has no screening run to rerun", field="run")
            run = screening_run_rerun(run=latest, user=request.user, **form.sieve())
        else:
            run = screening_run_start(study=study, user=request.user, **form.sieve())
    except DomainError as exc:
        if exc.field in form.fields:
            form.add_error(exc.field, exc.message)
        else:
            messages.error(request, exc.message)
        return _page(request, study, form=form, status=exc.status_code)
    if rerun:
        messages.success(
            request,
            _("Screening run %(run)d decides the candidates of run %(old)d again.")
            % {"run": run.pk, "old": run.rerun_of_id},
        )
    else:
        messages.success(
            request,
            _("Screening run %(run)d queued in %(batches)d batches.")
            % {"run": run.pk, "batches": run.batches_total},
        )
    return _back(study)


@study_view
@require_POST
def calibrate(request: HttpRequest, study: Study) -> HttpResponse:
    try:
        rated = funnyscore_calibrate_request(study=study)
    except DomainError as exc:
        messages.error(request, exc.message)
        return _page(request, study, status=exc.status_code)
    messages.success(
        request,
        _(
            "Calibration queued on the %(n)d rated items: their features are computed first. "
            "Reload this page in a moment to see the fit."
        )
        % {"n": rated},
    )
    return _back(study)


@study_view
@require_POST
def calibration_choose(request: HttpRequest, study: Study) -> HttpResponse:
    choice = request.POST.get("choice", "")
    if choice not in ("apply", "defaults"):
        messages.error(request, _("Choose 'apply' or 'defaults', not %(c)r.") % {"c": choice})
        return _page(request, study, status=400)
    try:
        funnyscore_calibration_choose(study=study, user=request.user, apply=choice == "apply")
    except DomainError as exc:
        messages.error(request, exc.message)
        return _page(request, study, status=exc.status_code)
    if choice == "apply":
        messages.success(request, _("The fit now scores candidates, by your choice."))
    else:
        messages.success(
            request,
            _(
                "The default scorer (the prior where it applies, else the documented defaults) now scores candidates."
            ),
        )
    return _back(study)


urlpatterns: list[URLPattern] = [
    path("", overview, name="overview"),
    path("run/", run_start, name="run_start"),
    path("calibrate/", calibrate, name="calibrate"),
    path("calibrate/choose/", calibration_choose, name="calibration_choose"),
]
