from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.core.commands import command_errors
from apps.studies.services import study_create


class Command(BaseCommand):
    help = "Create a draft study with the default background groups."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "slug", help="URL name of the study: lowercase letters, digits, hyphens"
        )
        parser.add_argument(
            "--rubric", required=True, choices=["humor", "content"], help="Built-in rubric"
        )
        parser.add_argument("--name", default="", help="Display name (defaults to the slug)")
        parser.add_argument(
            "--languages",
            default="en,zh",
            help="Comma-separated interface languages offered to raters",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        languages = [code.strip() for code in options["languages"].split(",") if code.strip()]
        with command_errors():
            study = study_create(
                slug=options["slug"],
                rubric_slug=options["rubric"],
                name=options["name"],
                languages=languages,
            )
        self.stdout.write(
            self.style.SUCCESS(f"Created study {study.slug!r} ({study.rubric.slug} rubric, draft)")
        )
