"""Making and revoking API tokens."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.models import ApiToken
from apps.accounts.selectors import key_hash
from apps.core.errors import Conflict, DomainError, NotFound
from apps.studies.selectors import studies_for_user

# Every key starts with this, so a key pasted where it should not be (a repository, a chat) is
# easy to find and to tell apart from DRF's 40-hex-digit tokens.
KEY_PREFIX = "ll_"
NAME_MAX_LENGTH = 100
# last_used_at is written at most this often per token: not one UPDATE per API request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _clean_name(value: str) -> str:
    name = (value or "").strip()
    if not name:
        raise DomainError("the token needs a name", field="name")
    if len(name) > NAME_MAX_LENGTH:
        raise DomainError(f"name is longer than {NAME_MAX_LENGTH} characters", field="name")
    if "\x00" in name:
        raise DomainError("name contains a NUL character", field="name")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise DomainError(
            "name contains an unpaired surrogate (not valid Unicode)", field="name"
        ) from None
    return name


@transaction.atomic
def api_token_create(
    *, user: User, name: str, study_ids: Sequence[int] | None
) -> tuple[ApiToken, str]:
    """A new token for `user`, limited to `study_ids` (studies the user may see) unless None.
    Returns the token and its key: the only time the key exists outside the caller's hands."""
    clean = _clean_name(name)
    wanted = sorted({int(pk) for pk in study_ids or ()})
    if study_ids is not None and not wanted:
        raise DomainError("choose at least one study, or none to allow all", field="studies")
    studies = list(studies_for_user(user=user).filter(pk__in=wanted))
    if len(studies) != len(wanted):
        # One message for a study that does not exist and one that is not the user's.
        raise DomainError("you can only choose your own studies", field="studies")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=user, name=clean, key_hash=key_hash(key), limited=study_ids is not None
            )
    except IntegrityError:
        raise Conflict(f"you already have a token named {clean!r}", field="name") from None
    token.studies.set(studies)
    return token, key


def api_token_revoke(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of the user's tokens (again: no change). Someone else's is not found."""
    ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFound(f"no token {token_id}", field="token")
    return token


def api_token_used(*, token: ApiToken) -> None:
    """Record that the token was used now; a conditional UPDATE, so concurrent requests neither
    race nor each write the row."""
    now = timezone.now()
    ApiToken.objects.filter(pk=token.pk).exclude(
        last_used_at__gt=now - LAST_USED_RESOLUTION
    ).update(last_used_at=now)
