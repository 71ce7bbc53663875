from __future__ import annotations

from django.apps import AppConfig


class ScreeningConfig(AppConfig):
    name = "apps.screening"
    label = "screening"
    verbose_name = "Screening (offense filter, features, FunnyScore, LLM judge)"
