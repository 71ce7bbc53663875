"""Researcher pages for setting a study up and following its progress. Thin: forms validate,
services write, selectors read."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from apps.core.errors import DomainError, ImportRejected
from apps.core.links import public_base, rater_links
from apps.dashboard.forms import (
    ItemsUploadForm,
    JudgmentsUploadForm,
    QuotaForm,
    StudyCreateForm,
    StudySettingsForm,
)
from apps.dashboard.imports import JUDGMENTS_PREFIX, background_import, runs_in_background
from apps.dashboard.selectors import study_progress
from apps.imports.models import ImportKind
from apps.imports.selectors import import_job_list
from apps.imports.services import import_upload_check
from apps.studies.access import study_view
from apps.studies.models import Study
from apps.studies.rubrics import RubricInvalid
from apps.studies.selectors import studies_for_user
from apps.studies.services import (
    EDITABLE_SETTINGS,
    study_create,
    study_items_import,
    study_settings_update,
    study_status_set,
)


@login_required
def study_list(request: HttpRequest) -> HttpResponse:
    studies = studies_for_user(user=request.user).select_related("rubric").order_by("-created_at")
    return render(request, "dashboard/study_list.html", {"studies": studies})


@login_required
def study_new(request: HttpRequest) -> HttpResponse:
    form = StudyCreateForm(request.POST or None, copy_from=request.GET.get("copy", ""))
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                spec = form.cleaned_data["rubric_spec"]
                study = study_create(
                    slug=form.cleaned_data["slug"],
                    rubric_slug="" if spec is not None else form.cleaned_data["rubric"],
                    rubric_spec=spec,
                    name=form.cleaned_data["name"],
                    backgrounds=form.cleaned_data["backgrounds"],
                    owner=request.user if isinstance(request.user, User) else None,
                )
            except DomainError as exc:
                # A custom rubric's errors name its field (questions[0].max_value): shown there.
                custom = spec is not None and (
                    isinstance(exc, RubricInvalid) or exc.field == "rubric"
                )
                where = "rubric_spec" if custom else exc.field
                form.add_error(where if where in form.fields else None, exc.message)
            else:
                messages.success(
                    request, _("Study created as a draft. Upload items, then open it.")
                )
                return HttpResponseRedirect(reverse("dashboard:settings", args=[study.slug]))
        status = 400
    return render(request, "dashboard/study_new.html", {"form": form}, status=status)


def _links(request: HttpRequest, study: Study) -> dict[str, str]:
    return rater_links(base=public_base(request=request), slug=study.slug)


@study_view
def overview(request: HttpRequest, study: Study) -> HttpResponse:
    context = {
        "study": study,
        "progress": study_progress(study=study),
        "links": _links(request, study),
    }
    return render(request, "dashboard/overview.html", context)


@study_view
def progress_partial(request: HttpRequest, study: Study) -> HttpResponse:
    """The progress block alone, for the page's periodic refresh."""
    return render(
        request,
        "dashboard/_progress.html",
        {"study": study, "progress": study_progress(study=study)},
    )


@study_view
def study_settings(request: HttpRequest, study: Study) -> HttpResponse:
    form = StudySettingsForm(request.POST or None, instance=study, prefix="s")
    quotas = QuotaForm(request.POST or None, study=study, prefix="q")
    status = 200
    if request.method == "POST":
        if form.is_valid() and quotas.is_valid():
            changes = {name: form.cleaned_data[name] for name in EDITABLE_SETTINGS}
            try:
                study_settings_update(
                    study=study, task_mix=form.task_mix(), quotas=quotas.quotas(), **changes
                )
            except DomainError as exc:
                target = (
                    form if (exc.field or "") in form.fields or exc.field == "task_mix" else quotas
                )
                field = exc.field if exc.field in target.fields else None
                target.add_error(field, exc.message)
            else:
                messages.success(request, _("Settings saved."))
                return HttpResponseRedirect(reverse("dashboard:settings", args=[study.slug]))
        status = 400
        study.refresh_from_db()
    return settings_page(request, study, form=form, quotas=quotas, status=status)


def settings_page(
    request: HttpRequest,
    study: Study,
    *,
    form: StudySettingsForm | None = None,
    quotas: QuotaForm | None = None,
    upload: ItemsUploadForm | None = None,
    upload_errors: list[object] | None = None,
    judgments: JudgmentsUploadForm | None = None,
    judgments_errors: list[object] | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "study": study,
        "form": form or StudySettingsForm(instance=study, prefix="s"),
        "quotas": quotas or QuotaForm(study=study, prefix="q"),
        "upload": upload or ItemsUploadForm(),
        "upload_errors": upload_errors or [],
        "judgments": judgments or JudgmentsUploadForm(prefix=JUDGMENTS_PREFIX),
        "judgments_errors": judgments_errors or [],
        "imports": import_job_list(study=study),
        "inline_max_bytes": settings.IMPORT_INLINE_MAX_BYTES,
        "upload_max_bytes": settings.IMPORT_UPLOAD_MAX_BYTES,
        "links": _links(request, study),
        "item_count": study.items.count(),
    }
    return render(request, "dashboard/settings.html", context, status=status)


@study_view
@require_POST
def items_upload(request: HttpRequest, study: Study) -> HttpResponse:
    form = ItemsUploadForm(request.POST, request.FILES)
    errors: list[object] = []
    if form.is_valid():
        upload = form.cleaned_data["file"]
        as_candidates = form.cleaned_data["as_candidates"]
        try:
            import_upload_check(upload=upload)
            if runs_in_background(upload):
                return background_import(
                    request,
                    study,
                    kind=ImportKind.ITEMS,
                    upload=upload,
                    as_candidates=as_candidates,
                )
            summary = study_items_import(
                study=study, data=upload.read(), filename=upload.name, as_candidates=as_candidates
            )
        except ImportRejected as exc:
            errors = list(exc.errors)
            form.add_error("file", exc.message)
        except DomainError as exc:
            form.add_error("file", exc.message)
        else:
            template = (
                _("%(created)d items imported as candidates, %(unchanged)d already present.")
                if as_candidates
                else _("%(created)d items imported, %(unchanged)d already present.")
            )
            messages.success(
                request, template % {"created": summary.created, "unchanged": summary.unchanged}
            )
            if summary.held:
                messages.warning(
                    request,
                    _(
                        "%(held)d new item(s) matched the offense filter and are held out of "
                        "the human study until released on the offense page."
                    )
                    % {"held": summary.held},
                )
            return HttpResponseRedirect(reverse("dashboard:settings", args=[study.slug]))
    return settings_page(request, study, upload=form, upload_errors=errors, status=400)


@study_view
@require_POST
def status_change(request: HttpRequest, study: Study) -> HttpResponse:
    try:
        study_status_set(study=study, status=request.POST.get("status", ""))
    except DomainError as exc:
        messages.error(request, exc.message)
        return settings_page(request, study, status=exc.status_code)
    messages.success(
        request,
        _("The study is now %(status)s.") % {"status": Study.Status(request.POST["status"]).label},
    )
    return HttpResponseRedirect(reverse("dashboard:settings", args=[study.slug]))
