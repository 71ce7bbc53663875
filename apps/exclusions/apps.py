from __future__ import annotations

from django.apps import AppConfig


class ExclusionsConfig(AppConfig):
    name = "apps.exclusions"
    label = "exclusions"
    verbose_name = "Exclusions from the analysis"
