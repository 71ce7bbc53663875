"""`Authorization: Token <key>` for the researcher API: the keys researchers make on their
account page (apps.accounts.models.ApiToken), and DRF's own tokens (`rest_framework.authtoken`),
which scripts and the load test made before and which keep working.

One class for both: DRF stops at the first authentication class that refuses a header, so two
`Token` classes in a row would refuse every key the first does not know."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from apps.accounts.selectors import api_token_for_key
from apps.accounts.services import KEY_PREFIX, api_token_used


class ApiTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if not key.startswith(KEY_PREFIX):
            return super().authenticate_credentials(key)
        token = api_token_for_key(key=key)
        if token is None or token.revoked_at is not None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        api_token_used(token=token)
        return token.user, token
