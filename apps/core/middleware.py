"""Domain errors escaping a view become a 4xx page (or JSON under /api/), never a 500; a lost
database connection becomes a clean 503 that tells the client to retry (with the same
idempotency key, for answers: the retry then stores exactly one judgment)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from apps.core.errors import Busy, DomainError
from apps.core.ratelimit import RateLimited

logger = logging.getLogger(__name__)


class DatabaseUnavailable(DomainError):
    status_code = 503
    code = "database_unavailable"


class DomainErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            logger.warning(
                "database unavailable during %s %s", request.method, request.path, exc_info=True
            )
            # The failed transaction was rolled back; Django's end-of-request handler discards the
            # broken connection, and the health check before reuse catches a dead kept one.
            exception = DatabaseUnavailable(
                "the database is briefly unavailable; nothing was saved — please retry"
            )
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
        if isinstance(exception, DatabaseUnavailable | Busy):
            response["Retry-After"] = "1"
        return response
