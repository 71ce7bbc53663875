"""The exclusions page: what the analysis leaves out, the rules' proposals, and the history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.analysis.models import StudyResult
from apps.core.errors import DomainError
from apps.exclusions.evidence import ANOMALOUS_THRESHOLD
from apps.exclusions.forms import DecisionForm, ExcludeForm
from apps.exclusions.models import ExclusionProposal
from apps.exclusions.selectors import (
    exclusion_set_for_study,
    exclusions_list,
    proposals_list,
    rule_coverage,
)
from apps.exclusions.services import (
    exclusion_create,
    exclusion_proposal_confirm,
    exclusion_proposal_dismiss,
    exclusion_proposals_refresh,
    exclusion_undo,
    proposal_reason,
)
from apps.studies.access import study_view
from apps.studies.models import Study


def _page(
    request: HttpRequest, study: Study, *, form: ExcludeForm | None = None, status: int = 200
) -> HttpResponse:
    exclusions = list(exclusions_list(study=study))
    proposals = list(proposals_list(study=study))
    result = StudyResult.objects.filter(study=study).only("exclusion_hash", "computed_at").first()
    current = exclusion_set_for_study(study=study)
    context: dict[str, Any] = {
        "study": study,
        "form": form or ExcludeForm(),
        "active": [e for e in exclusions if e.undone_at is None],
        "undone": [e for e in exclusions if e.undone_at is not None],
        "open_proposals": [
            (p, proposal_reason(p)) for p in proposals if p.status == ExclusionProposal.Status.OPEN
        ],
        "decided_proposals": [
            (p, proposal_reason(p)) for p in proposals if p.status != ExclusionProposal.Status.OPEN
        ],
        "result": result,
        "current_hash": current.digest,
        "results_current": result is not None and result.exclusion_hash == current.digest,
        "coverage": rule_coverage(study=study),
        "anomalous_threshold": ANOMALOUS_THRESHOLD,
    }
    return render(request, "exclusions/page.html", context, status=status)


@study_view
def page(request: HttpRequest, study: Study) -> HttpResponse:
    return _page(request, study)


def _back(study: Study) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("exclusions:page", args=[study.slug]))


@study_view
@require_POST
def exclude(request: HttpRequest, study: Study) -> HttpResponse:
    form = ExcludeForm(request.POST)
    if not form.is_valid():
        return _page(request, study, form=form, status=400)
    data = form.cleaned_data
    try:
        exclusion_create(
            study=study,
            user=request.user,
            target=data["target"],
            subject=data["subject"],
            judgment_kind=data["judgment_kind"],
            reason=data["reason"],
        )
    except DomainError as exc:
        form.add_error("subject" if exc.field in ("subject", None) else None, exc.message)
        return _page(request, study, form=form, status=exc.status_code)
    messages.success(request, _("Excluded; the results are being recomputed without it."))
    return _back(study)


def _decision(
    request: HttpRequest, study: Study, act: Callable[[int, str], object], done: str
) -> HttpResponse:
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("That request did not name a row of this page."))
        return _page(request, study, status=400)
    try:
        act(form.cleaned_data["id"], form.cleaned_data["reason"])
    except DomainError as exc:
        messages.error(request, exc.message)
        return _page(request, study, status=exc.status_code)
    messages.success(request, done)
    return _back(study)


@study_view
@require_POST
def undo(request: HttpRequest, study: Study) -> HttpResponse:
    return _decision(
        request,
        study,
        lambda pk, reason: exclusion_undo(
            study=study, user=request.user, exclusion_id=pk, reason=reason
        ),
        _("Exclusion undone; the results are being recomputed with the data back in."),
    )


@study_view
@require_POST
def confirm(request: HttpRequest, study: Study) -> HttpResponse:
    return _decision(
        request,
        study,
        lambda pk, reason: exclusion_proposal_confirm(
            study=study, user=request.user, proposal_id=pk, reason=reason
        ),
        _("Proposal confirmed: the rater is excluded."),
    )


@study_view
@require_POST
def dismiss(request: HttpRequest, study: Study) -> HttpResponse:
    return _decision(
        request,
        study,
        lambda pk, _reason: exclusion_proposal_dismiss(
            study=study, user=request.user, proposal_id=pk
        ),
        _("Proposal dismissed."),
    )


@study_view
@require_POST
def refresh(request: HttpRequest, study: Study) -> HttpResponse:
    open_count = exclusion_proposals_refresh(study=study)
    messages.success(request, _("Rules checked: %(n)d open proposal(s).") % {"n": open_count})
    return _back(study)
