"""Researcher pages for exports. Thin: the form picks a format, services build and queue, the
download view checks membership before a byte of a file leaves the server."""

from __future__ import annotations

from typing import cast

from django import forms
from django.contrib import messages
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from apps.analysis.models import StudyResult
from apps.core.errors import DomainError
from apps.reports import services
from apps.reports.models import ExportFormat, ExportJob, ExportLanguage
from apps.reports.selectors import export_job_get, export_job_list
from apps.reports.tables import SELECTABLE_TABLES
from apps.studies.access import study_view
from apps.studies.models import Study


class ExportForm(forms.Form):
    format = forms.ChoiceField(
        label=gettext_lazy("Format"),
        choices=ExportFormat.choices,
        error_messages={
            "invalid_choice": gettext_lazy(
                "Unknown export format %(value)s: choose one from the list."
            ),
            "required": gettext_lazy("Choose a format."),
        },
    )
    # Not `language`: the interface's language switch on the same page posts that name.
    report_language = forms.ChoiceField(
        label=gettext_lazy("Language of the report"),
        choices=ExportLanguage.choices,
        required=False,
        help_text=gettext_lazy(
            "The printable report, and the labels and warning texts of the tables, are written "
            "in this language."
        ),
        error_messages={
            "invalid_choice": gettext_lazy(
                "Unknown report language %(value)s: choose one from the list."
            ),
        },
    )


def _job_json(job: ExportJob, slug: str) -> dict[str, object]:
    done = job.status == ExportJob.Status.DONE
    return {
        "id": job.pk,
        "format": job.format,
        "language": job.language,
        "status": job.status,
        "status_label": job.get_status_display(),
        "progress": job.progress,
        "size": job.size,
        "error": job.error,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "download_url": reverse("reports:download", args=[slug, job.pk]) if done else None,
    }


def _page(
    request: HttpRequest, study: Study, *, form: ExportForm | None = None, status: int = 200
) -> HttpResponse:
    context = {
        "study": study,
        "form": form
        or ExportForm(initial={"report_language": services.export_language_parse(None)}),
        "jobs": export_job_list(study=study),
        "tables": SELECTABLE_TABLES,
        "result": StudyResult.objects.filter(study=study).only("computed_at").first(),
    }
    return render(request, "reports/exports.html", context, status=status)


@study_view
@require_http_methods(["GET", "POST"])
def exports(request: HttpRequest, study: Study) -> HttpResponse:
    if request.method != "POST":
        return _page(request, study)
    form = ExportForm(request.POST)
    if not form.is_valid():
        return _page(request, study, form=form, status=400)
    try:
        job = services.export_job_create(
            study=study,
            user=request.user,
            fmt=form.cleaned_data["format"],
            language=form.cleaned_data["report_language"] or None,
        )
    except DomainError as exc:
        form.add_error("format", exc.message)
        return _page(request, study, form=form, status=exc.status_code)
    messages.success(
        request,
        _("Export %(id)s queued: %(format)s.") % {"id": job.pk, "format": job.get_format_display()},
    )
    return HttpResponseRedirect(reverse("reports:exports", args=[study.slug]))


@study_view
@require_GET
def job_status(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    job = export_job_get(study=study, job_id=job_id)
    return JsonResponse(_job_json(job, study.slug))


@study_view
@require_GET
def job_download(request: HttpRequest, study: Study, job_id: int) -> HttpResponse:
    job = export_job_get(study=study, job_id=job_id)
    response = FileResponse(
        services.export_job_file(job=job),
        as_attachment=True,
        filename=services.export_download_name(job=job),
    )
    # A streaming response; study_view's signature names the common HttpResponse.
    return cast(HttpResponse, response)


DIRECT_FORMATS = ("json", "csv", "report-html")


@study_view
@require_GET
def direct_download(request: HttpRequest, study: Study, fmt: str) -> HttpResponse:
    """Small exports built on request: the results JSON, one table as CSV, the report to print."""
    if fmt not in DIRECT_FORMATS:
        raise DomainError(
            f"unknown direct export {fmt!r}; choose one of: {', '.join(DIRECT_FORMATS)} "
            "(the larger formats are built as export jobs)",
            field="format",
        )
    if fmt == "csv":
        name = services.export_table_parse(request.GET.get("table", ""))
        response = HttpResponse(
            services.study_table_csv(study=study, name=name), content_type="text/csv; charset=utf-8"
        )
        # The table's labels are in the interface language.
        filename = services.export_file_name(
            study=study,
            kind=name,
            extension="csv",
            language=services.export_language_parse(None),
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    if fmt == "json":
        document = services.study_result_document(study=study)
        response = JsonResponse(document, json_dumps_params={"ensure_ascii": False, "indent": 2})
        filename = services.export_file_name(study=study, kind="results", extension="json")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    # Shown in the browser, to read or print to PDF. Its CSS is inside the page (so the saved
    # file stands alone); it has no script at all, so its own policy forbids every script.
    language = services.export_language_parse(request.GET.get("language") or None)
    response = HttpResponse(services.study_report_html(study=study, language=language))
    # Inline, and named for when it is saved: by its language, as the report built as a job.
    filename = services.export_file_name(
        study=study, kind="report", extension="html", language=language
    )
    response["Content-Disposition"] = f'inline; filename="{filename}"'
    response["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"
    )
    return response
