from __future__ import annotations

from django.contrib import admin

from apps.raters.models import BackgroundGroup, Rater, RaterSession


@admin.register(BackgroundGroup)
class BackgroundGroupAdmin(admin.ModelAdmin):
    list_display = ("code", "study", "quota", "filled", "position")
    list_filter = ("study",)
    # `filled` only moves through the enrolment service's conditional UPDATE.
    readonly_fields = ("filled",)


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ("external_id", "study", "background", "age_band", "origin", "consent_at")
    list_filter = ("study", "origin", "age_band")
    search_fields = ("external_id",)
    list_select_related = ("study", "background")


@admin.register(RaterSession)
class RaterSessionAdmin(admin.ModelAdmin):
    list_display = ("rater", "started_at", "deadline", "ended_at", "end_reason")
    list_filter = ("end_reason",)
    list_select_related = ("rater", "rater__study")
