"""The one error shape of every 4xx/5xx JSON response (see apps.core.api.exception_handler), and
the input check of the rater's answers."""

from __future__ import annotations

import threading
from typing import Any

from rest_framework import serializers


class ErrorOut(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `invalid`.")
    message = serializers.CharField(help_text="For a person; names the field when there is one.")
    field = serializers.CharField(required=False, help_text="The input field at fault.")
    errors = serializers.JSONField(  # type: ignore[assignment]
        required=False, help_text="Every problem found, when there are several."
    )


_REUSED = threading.local()


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """`data` checked by `serializer_class`, as `serializer_class(data=data)` with
    `is_valid(raise_exception=True)` checks it; a ValidationError names the bad fields.

    For the rater's answers, several a second: a new serializer deep-copies every declared
    field (and a nested one's) before it checks anything, a tenth of an answer's CPU. One
    instance per class and thread is kept instead, and only its input and results are
    replaced: its bound fields hold no state of a check (they take no context).
    """
    kept: dict[type[serializers.Serializer], serializers.Serializer] = _REUSED.__dict__.setdefault(
        "serializers", {}
    )
    serializer = kept.get(serializer_class)
    if serializer is None:
        serializer = kept[serializer_class] = serializer_class(data=data)
    else:
        serializer.initial_data = data
        for result in ("_validated_data", "_errors", "_data"):
            serializer.__dict__.pop(result, None)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
