"""Install the built-in humor and content rubrics (data in apps/studies/builtin_rubrics.py)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from apps.studies.builtin_rubrics import BUILTIN_RUBRICS


def install(apps: Any, schema_editor: Any) -> None:
    Rubric = apps.get_model("studies", "Rubric")
    Question = apps.get_model("studies", "Question")
    for spec in BUILTIN_RUBRICS:
        rubric, _ = Rubric.objects.update_or_create(
            slug=spec["slug"],
            defaults={"name": spec["name"], "kind": spec["kind"], "builtin": True},
        )
        by_name = {}
        for position, question in enumerate(spec["questions"], start=1):
            by_name[question["name"]], _ = Question.objects.update_or_create(
                rubric=rubric,
                name=question["name"],
                defaults={
                    "position": position,
                    "kind": question["kind"],
                    "min_value": question["min_value"],
                    "max_value": question["max_value"],
                    "required": question.get("required", True),
                    "prompt": question["prompt"],
                    "anchors": question.get("anchors", {}),
                },
            )
        for question in spec["questions"]:
            by_name[question["name"]].answered_after.set(
                [by_name[name] for name in question.get("after", [])]
            )


def uninstall(apps: Any, schema_editor: Any) -> None:
    apps.get_model("studies", "Rubric").objects.filter(builtin=True, studies__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]
    operations = [migrations.RunPython(install, uninstall)]
