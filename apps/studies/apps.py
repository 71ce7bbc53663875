from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _install_builtin_rubrics(sender: AppConfig, apps: Any = None, **kwargs: Any) -> None:
    """After migrate (with the migrated state's registry) or flush (which passes none)."""
    from django.apps import apps as global_apps

    from apps.studies.builtin_rubrics import install_builtin_rubrics

    registry = apps or global_apps
    if "studies" in {config.label for config in registry.get_app_configs()}:
        install_builtin_rubrics(registry)


class StudiesConfig(AppConfig):
    name = "apps.studies"
    label = "studies"
    verbose_name = "Studies"

    def ready(self) -> None:
        from apps.studies import signals

        signals.connect()
        post_migrate.connect(
            _install_builtin_rubrics, sender=self, dispatch_uid="studies.builtin_rubrics"
        )
