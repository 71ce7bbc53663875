from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.analysis.exports import FORMATS, render
from apps.analysis.selectors import study_result_get
from apps.core.commands import command_errors
from apps.studies.selectors import study_get_by_slug


class Command(BaseCommand):
    help = (
        "Write a study's stored results (json: the whole document; csv/jsonl: the per-item table)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="Study slug")
        parser.add_argument("--format", choices=FORMATS, default="json")
        parser.add_argument("--out", default=None, help="File to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        with command_errors():
            study = study_get_by_slug(slug=options["study"])
            result = study_result_get(study=study)
        text = render(result, options["format"])
        if options["out"] is None:
            self.stdout.write(text, ending="")
            return
        path = Path(options["out"])
        if not path.parent.is_dir():
            raise CommandError(
                f"--out {options['out']!r}: folder {str(path.parent)!r} does not exist"
            )
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(
                f"--out {options['out']!r} cannot be written: {exc.strerror}"
            ) from exc
        self.stderr.write(f"Wrote {path} ({options['format']})")
