"""Response headers the platform sends on every page: a Content-Security-Policy without inline
scripts, and the referrer and permissions policies.

LaughLab's own pages load only their own scripts and styles (no inline `<script>` or `style=`),
so they get the strict policy. Django's admin and the API docs page use inline scripts of their
own, so those paths get a policy that allows them; a response that sets its own policy (the
self-contained printable report) keeps it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

STRICT = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self' https://app.prolific.com; frame-ancestors 'none'"
)
RELAXED = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
)


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.relaxed_prefixes = tuple(settings.CSP_RELAXED_PATHS)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            relaxed = request.path.startswith(self.relaxed_prefixes)
            response["Content-Security-Policy"] = RELAXED if relaxed else STRICT
        response.setdefault("Referrer-Policy", "same-origin")
        response.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
        return response
