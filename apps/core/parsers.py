"""The JSON parser of every API endpoint (researcher and rater): a size limit, a depth limit,
and no non-finite or oversized numbers (apps.core.jsonsafe), each refused with a 400 that names
the field instead of a 500 from deep in the stack or the database."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

from apps.core import jsonsafe


class BodyTooLarge(APIException):
    status_code = 413
    default_code = "too_large"


class JsonFieldRejected(ParseError):
    """A parse error at a known place in the document: the error body names it as `field`."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class SafeJSONParser(JSONParser):
    def max_bytes(self) -> int:
        return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        limit = self.max_bytes()
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise BodyTooLarge(
                _("the request body is larger than %(limit)s bytes") % {"limit": limit}
            )
        try:
            return jsonsafe.loads(data)
        except jsonsafe.JsonRejected as exc:
            message = _("JSON parse error - %(problem)s") % {"problem": exc.message}
            if exc.path:
                raise JsonFieldRejected(f"{exc.path}: {message}", field=exc.path) from None
            raise ParseError(message) from None
        except json.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


class RaterJSONParser(SafeJSONParser):
    """A rater's answer is a few hundred bytes: anything near this limit is not an answer."""

    def max_bytes(self) -> int:
        return 64 * 1024
