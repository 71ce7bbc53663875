"""Assignments are the record of what each rater was shown: read-only, like judgments."""

from __future__ import annotations

from django.contrib import admin

from apps.assignments.models import Assignment
from apps.core.admin import ReadOnlyAdmin


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = (
        "study",
        "rater",
        "position",
        "kind",
        "item",
        "right_item",
        "status",
        "is_attention_check",
        "attention_passed",
        "reason",
        "created_at",
    )
    list_filter = ("study", "kind", "status", "is_attention_check", "attention_passed")
    list_select_related = ("study", "rater", "item", "right_item")
