from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from apps.core.commands import DataCommand, command_errors, read_input_file
from apps.judgments.services import study_judgments_import
from apps.studies.selectors import study_get_by_slug


class Command(DataCommand):
    help = "Import judgments collected elsewhere (JSONL or CSV); nothing is written if any line is bad."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="Study slug")
        parser.add_argument("file", help="Judgments file (.jsonl or .csv)")

    def handle(self, *args: Any, **options: Any) -> None:
        with command_errors():
            study = study_get_by_slug(slug=options["study"])
            data = read_input_file(options["file"])
            summary = study_judgments_import(study=study, data=data, filename=options["file"])
        created = ", ".join(f"{count} {kind}" for kind, count in summary.created.items())
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {created} judgments; {summary.unchanged} already present; "
                f"{summary.raters_created} new raters"
            )
        )
        for warning in summary.warnings:
            self.stdout.write(self.style.WARNING(f"Warning ({warning.code}): {warning.message}"))
