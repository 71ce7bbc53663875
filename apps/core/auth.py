"""Login throttling for the researcher login and the admin login.

Failed attempts are counted per account name and per client address (apps.core.ratelimit); once
either reaches its limit, every attempt is refused before the password is checked, with the same
message whether or not the account exists and whether or not the password would have been right,
so the refusal tells an attacker nothing about the accounts.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.http import HttpResponse
from django.utils.translation import gettext as _

from apps.core.ratelimit import client_address, rate_limit_count, rate_limit_reached

_ACCOUNT = "login-account"
_ADDRESS = "login-address"


def _account_key(username: str) -> str:
    return username.strip().casefold()


class ThrottledLoginMixin:
    """Refuses a login attempt while its account or address has too many recent failures."""

    request: Any
    cleaned_data: dict[str, Any]
    throttled = False

    def clean(self) -> dict[str, Any]:
        username = _account_key(str(self.cleaned_data.get("username") or ""))
        address = client_address(self.request.META) if self.request is not None else "unknown"
        waits = [
            rate_limit_reached(
                scope=_ACCOUNT, key=username, rate=settings.RATE_LIMIT_LOGIN_ACCOUNT
            ),
            rate_limit_reached(scope=_ADDRESS, key=address, rate=settings.RATE_LIMIT_LOGIN_ADDRESS),
        ]
        wait = max((w for w in waits if w is not None), default=None)
        if wait is not None:
            self.throttled = True
            minutes = max(1, -(-wait // 60))
            raise forms.ValidationError(
                _("Too many failed login attempts. Please wait %(minutes)s minutes and try again.")
                % {"minutes": minutes},
                code="throttled",
            )
        try:
            return super().clean()  # type: ignore[misc]
        except forms.ValidationError:
            rate_limit_count(scope=_ACCOUNT, key=username, rate=settings.RATE_LIMIT_LOGIN_ACCOUNT)
            rate_limit_count(scope=_ADDRESS, key=address, rate=settings.RATE_LIMIT_LOGIN_ADDRESS)
            raise


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


class ThrottledLoginView(LoginView):
    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if getattr(form, "throttled", False):
            response.status_code = 429
        return response
