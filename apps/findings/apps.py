from __future__ import annotations

from django.apps import AppConfig


class FindingsConfig(AppConfig):
    name = "apps.findings"
    label = "findings"
    verbose_name = "Findings shown on pages and in reports"
