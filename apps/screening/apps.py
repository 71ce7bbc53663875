from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _install_default_terms(sender: AppConfig, apps: Any = None, **kwargs: Any) -> None:
    """After migrate or flush: the default offense terms, into an empty term table only.

    The data migration installs them once; a flush (tests, an emptied database) removes them,
    and this puts them back. A table that holds any term is the admins' to edit: a default they
    deleted stays deleted.
    """
    from django.apps import apps as global_apps

    from apps.screening.offense_defaults import DEFAULT_OFFENSE_TERMS

    registry = apps or global_apps
    if "screening" not in {config.label for config in registry.get_app_configs()}:
        return
    term_model = registry.get_model("screening", "OffenseTerm")
    if term_model.objects.exists():
        return
    term_model.objects.bulk_create(
        [
            term_model(language=language, term=term, category=category)
            for language, term, category in DEFAULT_OFFENSE_TERMS
        ],
        ignore_conflicts=True,
    )


class ScreeningConfig(AppConfig):
    name = "apps.screening"
    label = "screening"
    verbose_name = "Screening (offense filter, features, FunnyScore, LLM judge)"

    def ready(self) -> None:
        post_migrate.connect(
            _install_default_terms, sender=self, dispatch_uid="screening.default_offense_terms"
        )
