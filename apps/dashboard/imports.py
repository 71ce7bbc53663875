"""Researcher pages for importing judgments and for following a background import. Thin: a form
validates, the importing service (or the job service, for a large file) does the work."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import DomainError, ImportRejected
from apps.dashboard.forms import JudgmentsUploadForm
from apps.imports.models import ImportJob, ImportKind
from apps.imports.selectors import import_job_get
from apps.imports.services import import_job_create, import_upload_check
from apps.judgments.importing import import_warning_text
from apps.judgments.services import JudgmentImportSummary, study_judgments_import
from apps.studies.access import study_view
from apps.studies.models import Study

JUDGMENTS_PREFIX = "judgments"


def runs_in_background(upload: UploadedFile) -> bool:
    return (upload.size or 0) > settings.IMPORT_INLINE_MAX_BYTES


def background_import(
    request: HttpRequest, study: Study, *, kind: str, upload: UploadedFile, as_candidates: bool
) -> HttpResponse:
    """Queue the file as an import job and show its page (ImportRejected/DomainError: caller)."""
    job = import_job_create(
        study=study, user=request.user, kind=kind, upload=upload, as_candidates=as_candidates
    )
    return HttpResponseRedirect(reverse("dashboard:import_job", args=[study.slug, job.pk]))


def judgments_summary_message(summary: JudgmentImportSummary) -> str:
    return _(
        "%(created)d judgments imported (%(score)d scorecards, %(pair)d pairs, %(turing)d Turing "
        "judgments), %(unchanged)d already present, %(raters)d new raters."
    ) % {
        "created": summary.total_created,
        "score": summary.created.get("score", 0),
        "pair": summary.created.get("pair", 0),
        "turing": summary.created.get("turing", 0),
        "unchanged": summary.unchanged,
        "raters": summary.raters_created,
    }


@study_view
@require_POST
def judgments_upload(request: HttpRequest, study: Study) -> HttpResponse:
    from apps.dashboard.views import settings_page

    form = JudgmentsUploadForm(request.POST, request.FILES, prefix=JUDGMENTS_PREFIX)
    errors: list[object] = []
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            import_upload_check(upload=upload)
            if runs_in_background(upload):
                return background_import(
                    request, study, kind=ImportKind.JUDGMENTS, upload=upload, as_candidates=False
                )
            summary = study_judgments_import(
                study=study, data=upload.read(), filename=upload.name or ""
            )
        except ImportRejected as exc:
            errors = list(exc.errors)
            form.add_error("file", exc.message)
        except DomainError as exc:
            form.add_error("file", exc.message)
        else:
            messages.success(request, judgments_summary_message(summary))
            for warning in summary.warnings:
                messages.warning(
                    request,
                    _("Warning: %(message)s")
                    % {"message": import_warning_text(warning.code, warning.params)},
                )
            return HttpResponseRedirect(reverse("dashboard:settings", args=[study.slug]))
    return settings_page(request, study, judgments=form, judgments_errors=errors, status=400)


def _job_context(study: Study, job: ImportJob) -> dict[str, Any]:
    return {
        "study": study,
        "job": job,
        "warnings": [
            import_warning_text(warning.get("code", ""), warning.get("params") or {})
            for warning in job.warnings
        ],
    }


@study_view
@require_GET
def import_job(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    job = import_job_get(study=study, job_id=job_id)
    return render(request, "dashboard/import_job.html", _job_context(study, job))


@study_view
@require_GET
def import_job_partial(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    """The job's state alone, for the page's periodic refresh."""
    job = import_job_get(study=study, job_id=job_id)
    return render(request, "dashboard/_import_job.html", _job_context(study, job))
