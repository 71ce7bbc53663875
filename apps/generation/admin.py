"""Refusal patterns are edited here (per language). Prompt sets and models are edited on the
study's generation pages, where every change is checked; runs and outputs are machine records.
The admin never shows a run's API key."""

from __future__ import annotations

from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.generation.models import (
    GenerationOutput,
    GenerationRun,
    ModelEndpoint,
    Prompt,
    PromptSet,
    RefusalPattern,
)


@admin.register(RefusalPattern)
class RefusalPatternAdmin(admin.ModelAdmin):
    list_display = ("language", "pattern", "is_active", "created_at")
    list_display_links = ("pattern",)
    list_editable = ("is_active",)
    list_filter = ("language", "is_active")
    search_fields = ("pattern",)
    fields = ("language", "pattern", "is_active")


@admin.register(PromptSet)
class PromptSetAdmin(ReadOnlyAdmin):
    list_display = ("name", "study", "humor_type", "created_at")
    list_filter = ("study",)
    list_select_related = ("study",)
    search_fields = ("name",)


@admin.register(Prompt)
class PromptAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "prompt_set", "level", "language", "topic", "humor_type")
    list_filter = ("level", "language")
    list_select_related = ("prompt_set",)
    search_fields = ("external_id", "topic", "text")


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(ReadOnlyAdmin):
    list_display = ("name", "study", "kind", "model", "max_concurrency", "timeout_seconds")
    list_filter = ("kind", "study")
    list_select_related = ("study",)


@admin.register(GenerationRun)
class GenerationRunAdmin(ReadOnlyAdmin):
    list_display = ("pk", "study", "status", "samples_per_prompt", "temperature", "top_p")
    list_filter = ("status", "study")
    list_select_related = ("study",)
    exclude = ("api_key",)


@admin.register(GenerationOutput)
class GenerationOutputAdmin(ReadOnlyAdmin):
    list_display = ("pk", "run", "endpoint", "prompt", "sample_index", "status", "intercept_reason")
    list_filter = ("status", "intercept_reason")
    list_select_related = ("run", "endpoint", "prompt", "prompt__prompt_set")
    search_fields = ("text",)
    raw_id_fields = ("item",)
