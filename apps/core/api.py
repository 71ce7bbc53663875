"""One error shape for the API: every 4xx is JSON with a stable `code` and a `message`."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.errors import DomainError
from apps.core.ratelimit import RateLimited


def _first_field_error(detail: Any, prefix: str = "") -> tuple[str | None, str]:
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = key if not prefix else f"{prefix}.{key}"
            field, message = _first_field_error(value, name)
            return (field if key != "non_field_errors" else prefix or None), message
    if isinstance(detail, list) and detail:
        return _first_field_error(detail[0], prefix)
    return (prefix or None), str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
        return Response(exc.as_dict(), status=exc.status_code, headers=headers)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        field, message = _first_field_error(exc.detail)
        body: dict[str, Any] = {"code": "invalid", "message": message, "errors": exc.detail}
        if field:
            body["field"] = field
            body["message"] = f"{field}: {message}"
        response.data = body
        response.status_code = status.HTTP_400_BAD_REQUEST
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        response.data = {
            "code": codes if isinstance(codes, str) else "error",
            "message": str(exc.detail),
        }
        field = getattr(exc, "field", None)
        if field:
            response.data["field"] = field
    return response
