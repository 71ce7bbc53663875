"""The server-error handler (config.urls.handler500): what a request gets when an exception
escaped every middleware. A database that could not be reached is the retryable 503 of
apps.core.middleware wherever it failed (a middleware, the session saved after the view, the
error page itself); anything else is a plain 500 that names no internals."""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from apps.core.middleware import DATABASE_ERRORS, database_unavailable_response, wants_json


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls the handler inside its `except` block: the exception is the current one.
    if isinstance(sys.exception(), DATABASE_ERRORS):
        return database_unavailable_response(request)
    message = _("Something went wrong on our side; nothing you did caused it. Please try again.")
    if wants_json(request):
        return JsonResponse({"code": "server_error", "message": message}, status=500)
    # No request context: its processors read the database, which may be what failed.
    return HttpResponse(render_to_string("error.html", {"error": {"message": message}}), status=500)
