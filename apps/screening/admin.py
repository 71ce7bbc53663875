"""The offense term lists are edited here; everything else screening stores is derived or machine
output, so the admin shows it and changes nothing."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from apps.core.admin import ReadOnlyAdmin
from apps.screening.models import (
    FunnyScoreCalibration,
    ItemFeatures,
    JudgeComparison,
    JudgeVerdict,
    OffenseMatch,
    OffenseTerm,
    ScreeningOutcome,
    ScreeningRun,
)


@admin.register(OffenseTerm)
class OffenseTermAdmin(admin.ModelAdmin):
    list_display = ("language", "term", "category", "is_active", "created_at")
    list_display_links = ("term",)
    list_editable = ("is_active",)
    list_filter = ("language", "category", "is_active")
    search_fields = ("term",)
    fields = ("language", "term", "category", "is_active")


@admin.register(OffenseMatch)
class OffenseMatchAdmin(ReadOnlyAdmin):
    list_display = ("item", "term", "matched", "where", "start", "found_at")
    list_filter = ("where", "term__language", "term__category")
    list_select_related = ("item", "item__study", "term")
    search_fields = ("matched", "item__external_id")


@admin.register(ItemFeatures)
class ItemFeaturesAdmin(ReadOnlyAdmin):
    list_display = ("item", "surprise", "coherence", "valence", "valence_penalty", "computed_at")
    list_select_related = ("item", "item__study")
    search_fields = ("item__external_id",)


@admin.register(FunnyScoreCalibration)
class FunnyScoreCalibrationAdmin(ReadOnlyAdmin):
    list_display = ("study", "scope", "a", "b", "c", "intercept", "is_default", "n_items")
    list_filter = ("study", "is_default")
    list_select_related = ("study",)


class ScreeningOutcomeInline(admin.TabularInline):
    model = ScreeningOutcome
    extra = 0
    can_delete = False
    fields = ("item", "funny_score", "rank", "kept", "reason", "calibration")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScreeningRun)
class ScreeningRunAdmin(ReadOnlyAdmin):
    list_display = ("pk", "study", "status", "top_k", "batches_done", "batches_total", "created_at")
    list_filter = ("study", "status")
    list_select_related = ("study",)
    inlines = [ScreeningOutcomeInline]


@admin.register(JudgeVerdict)
class JudgeVerdictAdmin(ReadOnlyAdmin):
    list_display = ("item", "model_name", "status", "latency_ms", "created_at")
    list_filter = ("model_name", "status")
    list_select_related = ("item", "item__study")
    search_fields = ("item__external_id", "model_name")


@admin.register(JudgeComparison)
class JudgeComparisonAdmin(ReadOnlyAdmin):
    list_display = ("study", "model_name", "rounds", "seed", "computed_at")
    list_filter = ("study", "model_name")
    list_select_related = ("study",)
