"""The study's Prolific page: mark returned submissions (pasted or uploaded ids) and build the
bulk-bonus file from the study's rules, previewed before it is downloaded. Thin: the form
validates, apps.raters.prolific does the work."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from apps.core.errors import DomainError, ImportRejected
from apps.raters.prolific import (
    prolific_bonus_csv,
    prolific_bonuses,
    prolific_ids_from_text,
    prolific_returns_mark,
)
from apps.studies.access import study_view
from apps.studies.models import Study

MAX_RETURNS_FILE_BYTES = 1_000_000


class ReturnsForm(forms.Form):
    participant_ids = forms.CharField(
        label=gettext_lazy("Returned participant ids"),
        help_text=gettext_lazy(
            "One Prolific participant id per line, or Prolific's export of returned and "
            "timed-out submissions (the first column is read)."
        ),
        required=False,
        widget=forms.Textarea(attrs={"rows": 5}),
    )
    file = forms.FileField(label=gettext_lazy("or a file of ids"), required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        text = data.get("participant_ids") or ""
        if upload is not None:
            if (upload.size or 0) > MAX_RETURNS_FILE_BYTES:
                raise forms.ValidationError(_("The file is larger than 1 MB."))
            try:
                text = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise forms.ValidationError(_("The file is not UTF-8 text.")) from exc
        if not text.strip():
            raise forms.ValidationError(_("Paste at least one Prolific participant id."))
        data["text"] = text
        return data


def _page(
    request: HttpRequest, study: Study, form: ReturnsForm, errors: list[object], status: int
) -> HttpResponse:
    bonuses = prolific_bonuses(study=study)
    return render(
        request,
        "dashboard/prolific.html",
        {
            "study": study,
            "form": form,
            "errors": errors,
            "bonuses": bonuses,
            "bonus_total": sum((bonus.amount for bonus in bonuses), start=0),
        },
        status=status,
    )


@study_view
@require_http_methods(["GET", "POST"])
def prolific_page(request: HttpRequest, study: Study) -> HttpResponse:
    form = ReturnsForm(request.POST or None, request.FILES or None)
    if request.method != "POST":
        return _page(request, study, form, [], 200)
    errors: list[object] = []
    if form.is_valid():
        try:
            marked = prolific_returns_mark(
                study=study, ids=prolific_ids_from_text(form.cleaned_data["text"])
            )
        except ImportRejected as exc:
            errors = list(exc.errors)
            form.add_error(None, exc.message)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(
                request,
                _(
                    "%(returned)d sessions marked returned and their places given back; "
                    "%(already)d had already ended."
                )
                % {"returned": marked.returned, "already": marked.already},
            )
            return HttpResponseRedirect(reverse("dashboard:prolific", args=[study.slug]))
    return _page(request, study, form, errors, 400)


@study_view
@require_GET
def prolific_bonus_file(request: HttpRequest, study: Study) -> HttpResponse:
    response = HttpResponse(
        prolific_bonus_csv(prolific_bonuses(study=study)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-prolific-bonuses.csv"'
    return response
