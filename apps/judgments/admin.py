"""Judgments are evidence: the admin shows them and changes nothing."""

from __future__ import annotations

from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.judgments.models import (
    EarlyAnswer,
    NotUnderstood,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)


class ScoreAnswerInline(admin.TabularInline):
    model = ScoreAnswer
    extra = 0
    can_delete = False
    fields = ("question", "value", "answered_at", "received_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(ScoreResponse)
class ScoreResponseAdmin(ReadOnlyAdmin):
    list_display = ("item", "rater", "study", "seconds_into_session", "origin", "submitted_at")
    list_filter = ("study", "origin")
    list_select_related = ("item", "rater", "study")
    inlines = [ScoreAnswerInline]


@admin.register(ScoreAnswer)
class ScoreAnswerAdmin(ReadOnlyAdmin):
    list_display = ("response", "question", "value", "answered_at", "received_at")
    list_select_related = ("response", "question")


@admin.register(NotUnderstood)
class NotUnderstoodAdmin(ReadOnlyAdmin):
    list_display = ("response", "question", "answered_at", "received_at")
    list_select_related = ("response", "question")


@admin.register(EarlyAnswer)
class EarlyAnswerAdmin(ReadOnlyAdmin):
    list_display = ("assignment", "question", "value", "answered_at", "received_at")
    list_select_related = ("assignment", "question")


@admin.register(PairJudgment)
class PairJudgmentAdmin(ReadOnlyAdmin):
    list_display = ("left", "right", "winner", "rater", "study", "origin", "submitted_at")
    list_filter = ("study", "origin")
    list_select_related = ("left", "right", "winner", "rater", "study")


@admin.register(TuringJudgment)
class TuringJudgmentAdmin(ReadOnlyAdmin):
    list_display = ("item", "guess", "rater", "study", "origin", "submitted_at")
    list_filter = ("study", "guess", "origin")
    list_select_related = ("item", "rater", "study")
