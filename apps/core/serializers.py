"""The one error shape of every 4xx/5xx JSON response (see apps.core.api.exception_handler)."""

from __future__ import annotations

from rest_framework import serializers


class ErrorOut(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `invalid`.")
    message = serializers.CharField(help_text="For a person; names the field when there is one.")
    field = serializers.CharField(required=False, help_text="The input field at fault.")
    errors = serializers.JSONField(  # type: ignore[assignment]
        required=False, help_text="Every problem found, when there are several."
    )
