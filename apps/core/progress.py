"""Progress of a long import, reported while its file is read (a background job shows it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from apps.core.errors import LineError
from apps.core.lines import Record

# Lines between two reports: often enough for a page that refreshes every few seconds, rarely
# enough that a million-line file costs a hundred small UPDATEs.
REPORT_EVERY_LINES = 10_000


class ImportProgress(Protocol):
    def lines_read(self, line: int) -> None:
        """The file has been read up to this line."""

    def storing(self) -> None:
        """Every line is read and checked; what is new is being written."""


def reporting(
    records: Iterable[Record | LineError],
    progress: ImportProgress | None,
    *,
    every: int | None = None,
) -> Iterator[Record | LineError]:
    """The records unchanged, telling `progress` how far the file has been read."""
    if progress is None:
        yield from records
        return
    every = every or REPORT_EVERY_LINES
    last = 0
    line = 0
    for record in records:
        line = record.line
        if line - last >= every:
            progress.lines_read(line)
            last = line
        yield record
    if line > last:
        progress.lines_read(line)
