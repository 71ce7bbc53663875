"""Base for the rater endpoints: anonymous raters identified by their browser session, with CSRF.

DRF's SessionAuthentication checks CSRF only for logged-in users; raters have no account, so the
check is made here for every unsafe request.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.views import APIView

from apps.core.parsers import RaterJSONParser
from apps.core.ratelimit import client_address, rate_limit_check


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request: Any, reason: str) -> Any:
        return reason


class RaterAPIView(APIView):
    authentication_classes: list[type] = []
    permission_classes: list[type] = []
    parser_classes = [RaterJSONParser]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            check = _CsrfCheck(lambda _request: None)  # type: ignore[arg-type]
            check.process_request(request._request)
            reason = check.process_view(request._request, None, (), {})  # type: ignore[arg-type]
            if reason:
                raise exceptions.PermissionDenied(f"CSRF check failed: {reason}")
            # Per browser session (one rater); a client without one is counted by address.
            session_key = request._request.session.session_key
            key = session_key or client_address(request.META)
            rate_limit_check(
                scope="submit", key=key, rate=settings.RATE_LIMIT_SUBMIT, what=_("answers")
            )
