from __future__ import annotations

from django.apps import AppConfig


class RatersConfig(AppConfig):
    name = "apps.raters"
    label = "raters"
    verbose_name = "Raters"
