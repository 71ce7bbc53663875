from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.core.commands import DataCommand, command_errors, read_input_file
from apps.studies.services import study_create


class Command(DataCommand):
    help = (
        "Create a draft study with a built-in or stored rubric (--rubric humor), or a custom one "
        "from a rubric file (--rubric FILE.json)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "slug", help="URL name of the study: lowercase letters, digits, hyphens"
        )
        parser.add_argument(
            "--rubric",
            required=True,
            help="A stored rubric's slug (humor, content, ...) or a rubric file FILE.json",
        )
        parser.add_argument("--name", default="", help="Display name (defaults to the slug)")
        parser.add_argument(
            "--languages",
            default="en,zh",
            help="Comma-separated interface languages offered to raters",
        )
        parser.add_argument(
            "--backgrounds",
            default=None,
            help="Comma-separated codes of the rater background groups (default: the method's "
            "four; an empty string: none, every rater's background unknown)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        languages = [code.strip() for code in options["languages"].split(",") if code.strip()]
        rubric = options["rubric"]
        spec = None
        if rubric.endswith(".json") or Path(rubric).is_file():
            try:
                spec = json.loads(read_input_file(rubric).decode("utf-8-sig"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise CommandError(f"FILE {rubric!r} is not a JSON rubric: {exc}") from exc
        backgrounds: list[tuple[str, dict[str, str]]] | None = None
        if options["backgrounds"] is not None:
            backgrounds = [
                (code.strip(), {}) for code in options["backgrounds"].split(",") if code.strip()
            ]
        with command_errors():
            study = study_create(
                slug=options["slug"],
                rubric_slug="" if spec is not None else rubric,
                rubric_spec=spec,
                name=options["name"],
                languages=languages,
                backgrounds=backgrounds,
            )
        self.stdout.write(
            self.style.SUCCESS(f"Created study {study.slug!r} ({study.rubric.slug} rubric, draft)")
        )
