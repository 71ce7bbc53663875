from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from apps.core.commands import DataCommand, command_errors, read_input_file
from apps.studies.selectors import study_get_by_slug
from apps.studies.services import study_items_import


class Command(DataCommand):
    help = (
        "Import items from a JSONL or CSV file, or a zip of one and the pictures it names; "
        "nothing is written if any line or picture is bad."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="Study slug")
        parser.add_argument(
            "file", help="Items file (.jsonl or .csv), or a .zip of one with pictures"
        )
        parser.add_argument(
            "--candidates",
            action="store_true",
            help="Import new items as candidates for screening instead of into the human study",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with command_errors():
            study = study_get_by_slug(slug=options["study"])
            data = read_input_file(options["file"])
            summary = study_items_import(
                study=study,
                data=data,
                filename=options["file"],
                as_candidates=options["candidates"],
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"{summary.created} items imported"
                f"{' as candidates' if options['candidates'] else ''}, "
                f"{summary.unchanged} already present"
                + (f", {summary.held} held by the offense filter" if summary.held else "")
            )
        )
