from __future__ import annotations

from django.apps import AppConfig


class ImportsConfig(AppConfig):
    name = "apps.imports"
    label = "imports"
    verbose_name = "Background imports"
