from __future__ import annotations

from django.apps import AppConfig


class TextModelsConfig(AppConfig):
    name = "apps.textmodels"
    label = "textmodels"
    verbose_name = "Text models"
