"""An import's judgments written while its file is still being read (PostgreSQL).

Read-then-write keeps the database idle while the file is read and checked, and Python mostly
waiting while the database stores the rows: a crowd file of 75,000 grades spent 1.1 s on each,
one after the other. Here a thread reads and checks the lines while this one writes the rows
read so far; the database stores a batch (on its own core, this thread waiting on the socket
without the interpreter's lock) while the next lines are read.

Each COPY is sent by a thread of its own (`copies_sent_behind`) while this one makes the next
table's rows: the database stores one table's rows while the interpreter makes the next, where
they took turns before (2.75 s against 2.24 s for the crowd file, `benchmarks/README.md`).

A rater, and their session, is written with the first batch that names them, as the lines
read so far give them; their keys are drawn from the tables' sequences (`draw_keys`) so the
rows can name them. A session is dated by all its rater's lines, and a rater's age band may
come on a later line: once the file is read, the caller mends those a later line changed
(`Streamed.changed`, `raters_mend_imported`). The foreign keys are checked when the
transaction's block ends, as for any bulk import.

Only the common case is written this way, where every rater of the file is new to the study
and no line has a problem. Otherwise the writing stops, and once the whole file is read the
caller rolls the rows back and stores the file as before (compared with what is stored,
every error reported); `Streamed.complete` says which. Everything here runs inside the
caller's transaction, which it must roll back unless the import completes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from queue import SimpleQueue

from django.db import connections

from apps.core.bulk import copies_sent_behind, draw_keys
from apps.core.errors import LineError
from apps.core.lines import Record
from apps.judgments.import_rows import RowWriter
from apps.judgments.importing import (
    ImportContext,
    ParsedJudgments,
    Row,
    parse_judgments,
    widen_bounds,
)
from apps.raters.models import Rater, RaterSession
from apps.raters.selectors import background_group_keys
from apps.raters.services import ImportedRater, raters_write_imported
from apps.studies.models import Study

# Rows written at a time: small enough that little is left to write once the file is read,
# large enough that each batch's statements are few beside its rows.
STREAM_ROWS = 5_000


@dataclass
class Streamed:
    parsed: ParsedJudgments
    # Every row of `parsed` is written, and no rater of the file was stored before.
    complete: bool
    # The import's own time: the bounds of a rater none of whose lines is dated.
    now: datetime
    # rater external id -> (rater key, session key)
    people: dict[str, tuple[int, int]] = field(default_factory=dict)
    # rater external id -> the rater as written (their lines read so far)
    written: dict[str, ImportedRater] = field(default_factory=dict)
    # rater external id -> (earliest start, latest line) of their dated lines written so far
    bounds: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)
    created: Counter[str] = field(default_factory=Counter)
    # The study's background groups, read once: a read between two batches would wait for
    # the COPYs still queued (`copies_sent_behind`). None: each batch reads them.
    groups: dict[str, int] | None = None

    def changed(self, raters: Iterable[ImportedRater]) -> list[ImportedRater]:
        """Of the raters as the whole file gives them, those written otherwise."""
        return [spec for spec in raters if spec != self.written[spec.external_id]]


class _Stopped(Exception):
    """The writing failed: the reading stops too."""


def written_while_read(
    study: Study, records: Iterable[Record | LineError], context: ImportContext
) -> Streamed:
    """Read and check `records` in a thread while writing their rows here (see the module)."""
    stored = set(Rater.objects.filter(study=study).values_list("external_id", flat=True))
    writer = RowWriter(study)
    streamed = Streamed(
        ParsedJudgments(), complete=True, now=writer.now, groups=background_group_keys(study=study)
    )
    read: SimpleQueue[tuple[ParsedJudgments, int] | None] = SimpleQueue()
    stop = threading.Event()

    def each_batch(parsed: ParsedJudgments) -> None:
        if stop.is_set():
            raise _Stopped
        # How many rows the batch ended with: the rows after them, and their raters, may be
        # half added when the writing looks.
        read.put((parsed, len(parsed.rows)))

    def read_all() -> ParsedJudgments:
        try:
            return parse_judgments(records, context, each_batch=each_batch)
        finally:
            # Checking a line reads nothing from the database; should it ever, the thread's
            # own connection must not outlive it.
            connections.close_all()

    with ThreadPoolExecutor(1, thread_name_prefix="import-read") as pool:
        reading = pool.submit(read_all)
        reading.add_done_callback(lambda _: read.put(None))
        # Each COPY is sent by a thread of its own while the next rows are made; the reading
        # is stopped as soon as the writing fails, before the COPYs still queued are waited for.
        with copies_sent_behind():
            try:
                _write_as_read(read, stored, writer, study, streamed)
            except BaseException:
                stop.set()
                raise
        parsed = reading.result()
    streamed.parsed = parsed
    if streamed.complete and (parsed.errors or not parsed.rows):
        streamed.complete = False
    return streamed


def _write_as_read(
    read: SimpleQueue[tuple[ParsedJudgments, int] | None],
    stored: set[str],
    writer: RowWriter,
    study: Study,
    streamed: Streamed,
) -> None:
    """Write the rows of each batch read, `STREAM_ROWS` or more at a time, until the reading
    ends (None) or a batch shows a problem or a stored rater."""
    checked = written = 0
    last: ParsedJudgments | None = None
    while (batch := read.get()) is not None:
        parsed, end = batch
        last = parsed
        if not streamed.complete:
            continue  # read to the end: the caller stores the file as before
        rows = parsed.rows
        if parsed.errors or any(row.header.rater in stored for row in rows[checked:end]):
            streamed.complete = False
            continue
        checked = end
        if checked - written >= STREAM_ROWS:
            written = _write(rows[written:checked], parsed, writer, study, streamed, written)
    if streamed.complete and last is not None and written < checked:
        _write(last.rows[written:checked], last, writer, study, streamed, written)


def _write(
    rows: list[Row],
    parsed: ParsedJudgments,
    writer: RowWriter,
    study: Study,
    streamed: Streamed,
    written: int,
) -> int:
    """Write `rows`, and first the raters they name for the first time, with their sessions
    (dated by their lines read so far); the rows written so far."""
    people, bounds = streamed.people, streamed.bounds
    first: dict[str, int] = {}
    for row in rows:
        header = row.header
        rater = header.rater
        if rater not in people and rater not in first:
            first[rater] = header.line
        widen_bounds(bounds, header)
    if first:
        undated = (streamed.now, streamed.now)
        new = []
        for rater, line in first.items():
            background, age_band = parsed.raters[rater]
            started, last = bounds.get(rater, undated)
            new.append(ImportedRater(rater, background, age_band, line, started, last))
        keys = list(zip(draw_keys(Rater, len(new)), draw_keys(RaterSession, len(new)), strict=True))
        raters_write_imported(study=study, raters=new, keys=keys, groups=streamed.groups)
        for spec, pair in zip(new, keys, strict=True):
            people[spec.external_id] = pair
            streamed.written[spec.external_id] = spec
    streamed.created.update(writer.write(rows, people))
    return written + len(rows)
