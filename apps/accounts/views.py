"""The account page: the researcher's API tokens, made, listed and revoked."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.forms import ApiTokenForm
from apps.accounts.selectors import api_tokens_list
from apps.accounts.services import api_token_create, api_token_revoke
from apps.core.errors import DomainError
from apps.studies.selectors import studies_for_user


def _studies(request: HttpRequest) -> Any:
    return studies_for_user(user=request.user).order_by("name", "slug")


@sensitive_variables("key")
@never_cache  # the response that shows a new key must not be kept by any cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    studies = _studies(request)
    status, key, created = 200, "", None
    if request.method == "POST":
        form = ApiTokenForm(request.POST, studies=studies)
        if form.is_valid():
            chosen = form.cleaned_data["studies"]
            try:
                created, key = api_token_create(
                    user=request.user,  # type: ignore[arg-type]
                    name=form.cleaned_data["name"],
                    study_ids=chosen or None,
                )
            except DomainError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        if key:
            form = ApiTokenForm(studies=studies)
        else:
            status = 400
    else:
        form = ApiTokenForm(studies=studies)
    context = {
        "form": form,
        "tokens": api_tokens_list(user=request.user),  # type: ignore[arg-type]
        "new_key": key,
        "new_token": created,
        "api_base": request.build_absolute_uri(reverse("api:studies")),
    }
    return render(request, "accounts/tokens.html", context, status=status)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = api_token_revoke(user=request.user, token_id=token_id)  # type: ignore[arg-type]
    messages.success(request, _("The token %(name)s is revoked.") % {"name": token.name})
    return HttpResponseRedirect(reverse("accounts:tokens"))
