from __future__ import annotations

from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "apps.studies"
    label = "studies"
    verbose_name = "Studies"
