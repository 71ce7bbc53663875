from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from apps.screening.services.offense import offense_scan_items
from apps.studies.models import Item, Question, Rubric, Study, StudyMembership


class QuestionInline(admin.TabularInline):
    model = Question
    extra = 0
    fields = ("position", "name", "kind", "min_value", "max_value", "required", "prompt", "anchors")
    ordering = ("position",)


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "kind", "builtin")
    inlines = [QuestionInline]


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ("rubric", "position", "name", "kind", "min_value", "max_value", "required")
    list_filter = ("rubric", "kind")
    filter_horizontal = ("answered_after",)


class MembershipInline(admin.TabularInline):
    model = StudyMembership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(StudyMembership)
class StudyMembershipAdmin(admin.ModelAdmin):
    list_display = ("study", "user", "role", "created_at")
    list_filter = ("role", "study")
    list_select_related = ("study", "user")


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    inlines = [MembershipInline]
    list_display = (
        "slug",
        "name",
        "status",
        "rubric",
        "session_minutes",
        "target_scorecards_per_item",
    )
    list_filter = ("status", "rubric")
    search_fields = ("slug", "name")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = (
        "external_id",
        "study",
        "source",
        "level",
        "humor_type",
        "topic",
        "language",
        "safety_intercepted",
    )
    list_filter = ("study", "level", "language", "safety_intercepted", "source")
    search_fields = ("external_id", "text", "topic")
    list_select_related = ("study",)

    def save_model(self, request: HttpRequest, obj: Item, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        # An item added or rewritten here passes the offense filter as an imported one does.
        if not change or {"text", "context", "scenario"} & set(form.changed_data):
            offense_scan_items(items=[obj])
        # Its model, type or level may have changed what the results count. Imported here: the
        # analysis brings scipy, and every process (a command, a worker) loads the admin at start.
        from apps.analysis.services import study_results_request

        study_results_request(study_id=obj.study_id)
