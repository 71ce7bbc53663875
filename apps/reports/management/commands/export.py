from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.utils import translation

from apps.analysis.exports import FORMATS, render
from apps.analysis.selectors import study_result_get
from apps.core.commands import DataCommand, command_errors
from apps.reports import services
from apps.studies.selectors import study_get_by_slug

# Built here in apps/reports, by the same code as the dashboard's export jobs.
REPORT_FORMATS = ("xlsx", "raw", "tables", "report-html", "report-pdf")


class _Text:
    """A text stream onto the command's stdout that adds no line endings of its own."""

    def __init__(self, command: DataCommand) -> None:
        self.command = command

    def write(self, text: str) -> int:
        self.command.stdout.write(text, ending="")
        return len(text)


class Command(DataCommand):
    help = (
        "Write a study's stored results (json: the whole document; csv/jsonl: the per-item table; "
        "xlsx: one sheet per table plus provenance; tables: a zip of one CSV per table, or one "
        "table with --table NAME; report-html/report-pdf: the printable report) or its raw "
        "judgments (raw: one tidy CSV row per answer, pair and Turing judgment)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="Study slug")
        parser.add_argument("--format", choices=(*FORMATS, *REPORT_FORMATS), default="json")
        parser.add_argument(
            "--table",
            default=None,
            help="With --format tables: write only this table as CSV (e.g. bradley_terry)",
        )
        parser.add_argument("--out", default=None, help="File to write (default: standard output)")
        parser.add_argument(
            "--language",
            choices=[code for code, _name in settings.LANGUAGES],
            default="en",
            help="Language of the report and of the tables' labels and warning texts",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with translation.override(options["language"]):
            self._handle(**options)

    def _handle(self, **options: Any) -> None:
        fmt, out, table = options["format"], options["out"], options["table"]
        if table is not None and fmt != "tables":
            raise CommandError("--table applies to --format tables only")
        path = self._out_path(out) if out is not None else None
        if fmt in REPORT_FORMATS:
            self._report_format(options["study"], fmt, path, table)
            return
        with command_errors():
            study = study_get_by_slug(slug=options["study"])
            result = study_result_get(study=study)
        text = render(result, fmt)
        if path is None:
            self.stdout.write(text, ending="")
            return
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"--out {out!r} cannot be written: {exc.strerror}") from exc
        self.stderr.write(f"Wrote {path} ({fmt})")

    def _out_path(self, out: str) -> Path:
        path = Path(out)
        if not path.parent.is_dir():
            raise CommandError(f"--out {out!r}: folder {str(path.parent)!r} does not exist")
        return path

    def _report_format(self, slug: str, fmt: str, path: Path | None, table: str | None) -> None:
        with command_errors():
            study = study_get_by_slug(slug=slug)
            if table is not None:
                text = services.study_table_csv(study=study, name=table)
                if path is None:
                    self.stdout.write(text, ending="")
                else:
                    self._write_text(path, text)
                    self.stderr.write(f"Wrote {path} (table {table})")
                return
            if path is None:
                if fmt in services.BINARY_FORMATS:
                    raise CommandError(
                        f"--format {fmt} writes a binary file ({services.FILE_NAMES[fmt]}): "
                        "give --out PATH"
                    )
                if fmt == "raw":
                    services.study_raw_write(study=study, stream=_Text(self))
                else:
                    self.stdout.write(services.study_report_html(study=study), ending="")
                return
            try:
                size = services.export_write(study=study, fmt=fmt, path=path)
            except OSError as exc:
                raise CommandError(
                    f"--out {str(path)!r} cannot be written: {exc.strerror}"
                ) from exc
        self.stderr.write(f"Wrote {path} ({fmt}, {size} bytes)")

    def _write_text(self, path: Path, text: str) -> None:
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"--out {str(path)!r} cannot be written: {exc.strerror}") from exc
