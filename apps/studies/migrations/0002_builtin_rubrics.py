"""Install the built-in humor and content rubrics (data in apps/studies/builtin_rubrics.py)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from apps.studies.builtin_rubrics import install_builtin_rubrics


def install(apps: Any, schema_editor: Any) -> None:
    install_builtin_rubrics(apps)


def uninstall(apps: Any, schema_editor: Any) -> None:
    apps.get_model("studies", "Rubric").objects.filter(builtin=True, studies__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]
    operations = [migrations.RunPython(install, uninstall)]
