from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _install_default_patterns(sender: AppConfig, apps: Any = None, **kwargs: Any) -> None:
    """After migrate or flush: the shipped refusal patterns, into an empty table only (a table
    that holds any pattern is the admins' to edit: a default they deleted stays deleted)."""
    from django.apps import apps as global_apps

    from apps.generation.guardrails import DEFAULT_REFUSAL_PATTERNS

    registry = apps or global_apps
    if "generation" not in {config.label for config in registry.get_app_configs()}:
        return
    model = registry.get_model("generation", "RefusalPattern")
    if model.objects.exists():
        return
    model.objects.bulk_create(
        [model(language=lang, pattern=text) for lang, text in DEFAULT_REFUSAL_PATTERNS],
        ignore_conflicts=True,
    )


class GenerationConfig(AppConfig):
    name = "apps.generation"
    label = "generation"
    verbose_name = "Generation (prompt sets, models, runs, outputs)"

    def ready(self) -> None:
        post_migrate.connect(
            _install_default_patterns, sender=self, dispatch_uid="generation.default_patterns"
        )
