from __future__ import annotations

from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.reports.models import ExportJob


@admin.register(ExportJob)
class ExportJobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "study",
        "format",
        "status",
        "progress",
        "size",
        "requested_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "format", "study")
    list_select_related = ("study", "requested_by")
    search_fields = ("study__slug", "requested_by__username")
    date_hierarchy = "created_at"
