from __future__ import annotations

from django.apps import AppConfig


class JudgmentsConfig(AppConfig):
    name = "apps.judgments"
    label = "judgments"
    verbose_name = "Judgments"
