from __future__ import annotations

from django.contrib import admin

from apps.analysis.models import AggregationState, StudyResult
from apps.core.admin import ReadOnlyAdmin


@admin.register(StudyResult)
class StudyResultAdmin(ReadOnlyAdmin):
    list_display = ("study", "computed_at", "duration_seconds", "seed", "rounds", "input_hash")
    exclude = ("payload",)
    readonly_fields = (
        "study",
        "computed_at",
        "duration_seconds",
        "seed",
        "rounds",
        "input_hash",
        "evidence_as_of",
    )


@admin.register(AggregationState)
class AggregationStateAdmin(ReadOnlyAdmin):
    list_display = (
        "study",
        "requested_at",
        "scheduled",
        "last_started_at",
        "last_finished_at",
        "last_error",
    )
