"""Cells that are safe to open in a spreadsheet: the one place every CSV writer goes through.

A text cell beginning with `=`, `+`, `-`, `@`, a tab or a carriage return is read as a formula by
Excel, LibreOffice and Google Sheets (`=HYPERLINK(...)`, `+cmd|' /C calc'!A0`); item ids, model
names, imported rater ids and idempotency keys come from people outside the study team, so such a
cell is prefixed with a single quote, as OWASP recommends ("CSV Injection"). Numbers stay
numbers: numeric values are written as they are, and so is text that is exactly a number
(`-1.5`, `+3`, `-2e-05`), which a spreadsheet reads as that number and never runs.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import IO, Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")


def spreadsheet_cell(value: Any) -> Any:
    """`value` as a CSV cell: dates in ISO 8601, None empty, formula-like text neutralised."""
    if value is None:
        return ""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.match(value):
        return "'" + value
    return value


def spreadsheet_row(row: Iterable[Any]) -> list[Any]:
    return [spreadsheet_cell(value) for value in row]


class SafeCsvWriter:
    """csv.writer whose every cell goes through spreadsheet_cell (the header too)."""

    def __init__(self, stream: IO[str] | Any, **options: Any) -> None:
        options.setdefault("lineterminator", "\n")
        self._writer = csv.writer(stream, **options)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow(spreadsheet_row(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def write_dict_rows(stream: IO[str], rows: Sequence[dict[str, Any]]) -> None:
    """Rows of dicts under a header of the first row's keys."""
    if not rows:
        return
    writer = SafeCsvWriter(stream)
    columns = list(rows[0])
    writer.writerow(columns)
    writer.writerows([row.get(column) for column in columns] for row in rows)
