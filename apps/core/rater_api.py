"""Base for the rater endpoints: anonymous raters identified by their browser session, with CSRF.

DRF's SessionAuthentication checks CSRF only for logged-in users; raters have no account, so the
check is made here for every unsafe request.
"""

from __future__ import annotations

from typing import Any

from django.middleware.csrf import CsrfViewMiddleware
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.views import APIView


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request: Any, reason: str) -> Any:
        return reason


class RaterAPIView(APIView):
    authentication_classes: list[type] = []
    permission_classes: list[type] = []

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            check = _CsrfCheck(lambda _request: None)  # type: ignore[arg-type]
            check.process_request(request._request)
            reason = check.process_view(request._request, None, (), {})  # type: ignore[arg-type]
            if reason:
                raise exceptions.PermissionDenied(f"CSRF check failed: {reason}")
