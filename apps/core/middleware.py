"""Domain errors escaping a view become a 4xx page (or JSON under /api/), never a 500; a lost
database connection becomes a clean 503 that tells the client to retry (with the same
idempotency key, for answers: the retry then stores exactly one judgment).

The 503 page is drawn without the request's context processors: they read the logged-in user
from the session, that is from the same database, and would fail a second time (a 500). A
database failure outside any view reaches `apps.core.views.server_error` instead, which gives
the same response."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from apps.core.errors import Busy, DomainError
from apps.core.ratelimit import RateLimited

logger = logging.getLogger(__name__)


class DatabaseUnavailable(DomainError):
    status_code = 503
    code = "database_unavailable"


DATABASE_ERRORS = (OperationalError, InterfaceError)


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/") or "application/json" in request.headers.get(
        "Accept", ""
    )


def database_error_name(exc: BaseException | None) -> str:
    """SQLite's own name for the error behind a database exception, or "" (another database,
    or none). "database is locked" is SQLite's message for every busy case: SQLITE_BUSY once
    the busy timeout ran out waiting for another writer, SQLITE_BUSY_SNAPSHOT at once when
    this connection still held an older read (a statement left unfinished) as it began to
    write. The name tells an operator which of the two happened."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        name = getattr(exc, "sqlite_errorname", None)
        if name:
            return str(name)
        exc = exc.__cause__ or exc.__context__
    return ""


def database_unavailable_response(request: HttpRequest) -> HttpResponse:
    """The retryable 503 for a database that could not be reached, drawn without touching it.
    Called while the database error is being handled: the log line carries it."""
    name = database_error_name(sys.exc_info()[1])
    logger.warning(
        "database unavailable during %s %s%s",
        request.method,
        request.path,
        f" ({name})" if name else "",
        exc_info=True,
    )
    error = DatabaseUnavailable(
        "the database is briefly unavailable; nothing was saved — please retry"
    )
    response: HttpResponse
    if wants_json(request):
        response = JsonResponse(error.as_dict(), status=error.status_code)
    else:
        response = HttpResponse(
            render_to_string("error.html", {"error": error}), status=error.status_code
        )
    response["Retry-After"] = "1"
    return response


class DomainErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DATABASE_ERRORS):
            # The failed transaction was rolled back; Django's end-of-request handler discards the
            # broken connection, and the health check before reuse catches a dead kept one.
            return database_unavailable_response(request)
        if not isinstance(exception, DomainError):
            return None
        response: HttpResponse
        if wants_json(request):
            response = JsonResponse(exception.as_dict(), status=exception.status_code)
        else:
            response = render(
                request, "error.html", {"error": exception}, status=exception.status_code
            )
        if isinstance(exception, RateLimited):
            response["Retry-After"] = str(exception.retry_after)
        if isinstance(exception, Busy):
            response["Retry-After"] = "1"
        return response
