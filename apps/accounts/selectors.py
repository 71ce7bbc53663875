"""Reads of API tokens, and the studies a request may reach through the API."""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from apps.accounts.models import ApiToken
from apps.core.errors import NotFound
from apps.studies.models import Study
from apps.studies.selectors import studies_for_user


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def api_tokens_list(*, user: User) -> QuerySet[ApiToken]:
    return (
        ApiToken.objects.filter(user=user)
        .prefetch_related("studies")
        .order_by("revoked_at", "-created_at", "-pk")
    )


def api_token_for_key(*, key: str) -> ApiToken | None:
    """The token with this key, revoked or not (the caller decides), with its user."""
    return ApiToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()


def studies_for_request(*, user: User | AnonymousUser, auth: Any) -> QuerySet[Study]:
    """The studies the user may see, narrowed to the token's studies when the request came with
    a token limited to some (`auth`: what authenticated the request, DRF's `request.auth`)."""
    studies = studies_for_user(user=user)
    if isinstance(auth, ApiToken) and auth.limited:
        studies = studies.filter(pk__in=auth.studies.values("pk"))
    return studies


def study_get_for_request(*, user: User | AnonymousUser, auth: Any, slug: str) -> Study:
    """The study if this request may reach it; otherwise not found (404), as for any study the
    user may not see, so a limited token learns nothing about the others."""
    study = (
        studies_for_request(user=user, auth=auth).select_related("rubric").filter(slug=slug).first()
    )
    if study is None:
        raise NotFound(f"no study with slug {slug!r}", field="study")
    return study
