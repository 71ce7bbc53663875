"""Tokens in the admin: seen and revoked there too, never made there (the key would have no
page to be shown on) and never with their hash on show."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from apps.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "created_at", "last_used_at", "revoked_at", "limited")
    list_filter = ("limited",)
    search_fields = ("name", "user__username")
    fields = ("user", "name", "created_at", "last_used_at", "revoked_at", "limited", "studies")
    readonly_fields = fields
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
