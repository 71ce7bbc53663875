"""Domain errors escaping a page view become a 4xx page (or JSON under /api/), never a 500."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from apps.core.errors import DomainError
from apps.core.ratelimit import RateLimited


class DomainErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DomainError):
            return None
        response: HttpResponse
        wants_json = "application/json" in request.headers.get("Accept", "")
        if request.path.startswith("/api/") or wants_json:
            response = JsonResponse(exception.as_dict(), status=exception.status_code)
        else:
            response = render(
                request, "error.html", {"error": exception}, status=exception.status_code
            )
        if isinstance(exception, RateLimited):
            response["Retry-After"] = str(exception.retry_after)
        return response
