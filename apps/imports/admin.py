from __future__ import annotations

from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin
from apps.imports.models import ImportJob


@admin.register(ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "study",
        "kind",
        "status",
        "stage",
        "lines_read",
        "lines_total",
        "requested_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "kind", "study")
    list_select_related = ("study", "requested_by")
    search_fields = ("study__slug", "filename")
