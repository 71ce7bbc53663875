"""Bulk inserts of plain rows, for imports of hundreds of thousands of lines.

`Model.objects.bulk_create` builds one model instance per row and prepares every value through
its field (about 40 us a row here); an import of a million judgments spent most of its time
there. These helpers take rows as tuples of column values and send them to the database in bulk: on
PostgreSQL through COPY (the server's own bulk-load path: no statement to parse or plan per
batch, no parameters to interpolate), elsewhere as multi-row INSERT statements. Only values
that need converting for the database (date-times, JSON) are touched.
The caller validates first (imports check every line before writing), and the database's
constraints still hold every row.
"""

from __future__ import annotations

import io
import itertools
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime
from typing import Any

from django.db import connection, models
from django.db.backends.utils import CursorWrapper

from apps.core import bulk_references


def _converter(field: models.Field[Any, Any]) -> Callable[[Any], Any] | None:
    if isinstance(field, models.DateTimeField):
        adapt = connection.ops.adapt_datetimefield_value
        # An import's rows share a few instants (the import's own time, a session's bounds):
        # each is adapted once.
        seen: dict[Any, Any] = {}

        def datetime_value(value: Any) -> Any:
            if value is None:
                return None
            adapted = seen.get(value)
            if adapted is None:
                if len(seen) > 100_000:
                    seen.clear()
                adapted = seen[value] = adapt(value)
            return adapted

        return datetime_value
    if isinstance(field, models.JSONField):
        encoder = field.encoder

        def json_value(value: Any) -> Any:
            # Most imported rows carry no metadata: an empty object needs no encoder.
            if type(value) is dict and not value:
                return "{}"
            return json.dumps(value, cls=encoder)

        return json_value
    return None


def _batch_rows(n_columns: int) -> int:
    """Rows per statement: as many as the database takes parameters for, at most 1,000."""
    limit = connection.features.max_query_params or 65_535
    if connection.vendor == "sqlite":
        raw = connection.connection
        if raw is not None and hasattr(raw, "getlimit"):
            limit = raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    return max(1, min(1000, limit // max(n_columns, 1)))


def bulk_insert(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    returning: bool = False,
    from_key: Sequence[tuple[str, Callable[[int], Any]]] = (),
    keys: Sequence[int] | None = None,
) -> list[int]:
    """Insert `rows` (values in the order of `columns`, field names; a foreign key by its
    `<name>_id` attname) into `model`'s table. With `returning`, the new primary keys, in the
    order of the rows. `from_key` names further columns, each with the function that makes its
    value from the row's own new primary key (drawn before the row is sent, so the value is
    stored with it); their keys come back as with `returning`. `keys` gives the rows' primary
    keys, one per row, drawn earlier (`draw_keys`) so that other rows could name them first;
    they come back as with `returning`. Run inside the caller's transaction."""
    meta = model._meta
    fields = [meta.get_field(name) for name in (*columns, *(name for name, _ in from_key))]
    concrete = [f for f in fields if isinstance(f, models.Field)]
    if len(concrete) != len(fields):
        raise ValueError(f"{model.__name__}: every column must be a concrete field")
    quote = connection.ops.quote_name
    names = ", ".join(quote(str(f.column)) for f in concrete)
    converters = [(k, c) for k, c in enumerate(map(_converter, concrete)) if c is not None]
    makers = [make for _, make in from_key]
    if connection.vendor == "postgresql":
        return _copy(
            model, concrete, names, converters, rows, returning=returning, makers=makers, keys=keys
        )
    return _insert(
        model, names, len(concrete), converters, rows, returning=returning, makers=makers, keys=keys
    )


def draw_keys(model: type[models.Model], count: int) -> list[int]:
    """`count` new primary keys of `model`'s table, drawn from its own sequence as an insert
    would draw them (PostgreSQL only), for rows that other rows must name before they are
    written (`bulk_insert(..., keys=...)`)."""
    if connection.vendor != "postgresql":
        raise ValueError("keys drawn ahead of their rows: PostgreSQL only")
    with connection.cursor() as cursor:
        return _drawn(cursor.cursor, _sequence(cursor.cursor, model), count)


class _SentBehind:
    """COPYs sent on the caller's connection by a thread of their own, one after the other,
    while the caller goes on formatting the next: the database stores one table's rows on its
    core while the interpreter makes the next table's on the other.

    Every other statement on the connection first waits for the COPYs queued before it
    (`wait`), so statements still run in the order the caller issued them. Keys are drawn on a
    connection of their own (`keys_cursor`), so drawing the next rows' keys does not wait."""

    # COPYs queued at most: past this the caller waits for the oldest, so a database slower
    # than the formatting does not gather the whole file's text in memory.
    QUEUED = 4

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="copy-send")
        self.pending: list[Future[None]] = []
        self.failed: BaseException | None = None
        self._keys: Any = None

    def send(self, statement: str, text: str) -> None:
        data = text.encode()
        if len(self.pending) >= self.QUEUED:
            self.pending[0].exception()  # waits for the oldest
        self._note_finished()
        if self.failed is not None:
            # Raised here, not at the block's end: the rest of a large file is not made and
            # sent into a transaction that can only be rolled back.
            self.wait()
        self.pending.append(self.pool.submit(self._copy, statement, data))

    def _note_finished(self) -> None:
        for future in [f for f in self.pending if f.done()]:
            self.pending.remove(future)
            if self.failed is None:
                self.failed = future.exception()

    def keys_cursor(self) -> Any:
        """A cursor of a connection of its own, in autocommit, for drawing keys: a sequence's
        `nextval` is never rolled back and needs no transaction, and drawn here it does not
        wait for the COPYs queued on the caller's connection."""
        if self._keys is None:
            self._keys = connection.get_new_connection(connection.get_connection_params())
            self._keys.autocommit = True
        return self._keys.cursor()

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        if self._keys is not None:
            self._keys.close()

    def _copy(self, statement: str, data: bytes) -> None:
        with self.raw.cursor() as cursor:
            # Read whole, as bytes: each read takes the interpreter's lock, which the thread
            # making the next rows holds most of the time.
            cursor.copy_expert(statement, io.BytesIO(data), size=len(data) + 1)

    def wait(self) -> None:
        """Until every queued COPY has run; the first that failed raises, as the ORM raises
        (once one fails the transaction is aborted, and the ones after it fail too)."""
        for future in self.pending:
            future.exception()
        self._note_finished()
        failed, self.failed = self.failed, None
        if failed is not None:
            with connection.wrap_database_errors:
                raise failed


_behind: ContextVar[_SentBehind | None] = ContextVar("bulk_sent_behind", default=None)


@contextmanager
def copies_sent_behind() -> Iterator[None]:
    """PostgreSQL: inside the block, `bulk_insert` formats each chunk and hands it to a thread
    that sends it, instead of sending it itself (see `_SentBehind`). Leaving the block waits
    for every COPY, and raises the first that failed. Elsewhere the block changes nothing."""
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    sender = _SentBehind(connection.connection)

    def after_the_copies(execute: Any, sql: Any, params: Any, many: Any, context: Any) -> Any:
        sender.wait()
        return execute(sql, params, many, context)

    token = _behind.set(sender)
    try:
        with connection.execute_wrapper(after_the_copies):
            yield
        sender.wait()
    finally:
        _behind.reset(token)
        # On an error the COPYs still queued are waited for before the caller's transaction
        # is rolled back: the connection is not the sending thread's any more after this.
        sender.close()


def _sequence(raw: Any, model: type[models.Model]) -> str:
    meta = model._meta
    sender = _behind.get()
    with connection.wrap_database_errors:
        cursor = raw if sender is None else sender.keys_cursor()
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [meta.db_table, meta.pk.column])
        return str(cursor.fetchone()[0])


def _drawn(raw: Any, sequence: str, count: int) -> list[int]:
    # The sequence named by a constant: as nextval's argument, a look-up of the table's
    # sequence ran once per key (40 ms for 20,000 keys, 2 s of a million scorecards' import).
    sender = _behind.get()
    with connection.wrap_database_errors:
        cursor = raw if sender is None else sender.keys_cursor()
        cursor.execute(
            "SELECT nextval(%s::regclass) FROM generate_series(1, %s)", [sequence, count]
        )
        return [row[0] for row in cursor.fetchall()]


def _insert(
    model: type[models.Model],
    names: str,
    n_columns: int,
    converters: list[tuple[int, Callable[[Any], Any]]],
    rows: Iterable[Sequence[Any]],
    *,
    returning: bool,
    makers: Sequence[Callable[[int], Any]] = (),
    keys: Sequence[int] | None = None,
) -> list[int]:
    """Multi-row INSERT statements of up to a thousand rows (SQLite; PostgreSQL before COPY).
    With `makers` (SQLite only) each row's key is drawn here and sent as its first column, as
    are `keys` given."""
    meta = model._meta
    quote = connection.ops.quote_name
    next_key = _next_sqlite_key(model) if makers and keys is None else 0
    given = iter(keys) if keys is not None else None
    if makers or given is not None:
        names = f"{quote(str(meta.pk.column))}, {names}"
        n_columns += 1
        returning = False
    size = _batch_rows(n_columns)
    # The driver's own placeholder: the statements go to the driver's cursor directly, past
    # Django's query logging and placeholder rewriting (both cost more than the insert itself
    # for statements of a thousand rows).
    mark = "?" if connection.vendor == "sqlite" else "%s"
    one = "(" + ", ".join([mark] * n_columns) + ")"
    head = f"INSERT INTO {quote(meta.db_table)} ({names}) VALUES "
    tail = f" RETURNING {quote(str(meta.pk.column))}" if returning else ""
    pks: list[int] = []
    batch: list[Any] = []
    count = 0
    statement = ""
    with connection.cursor() as cursor:
        for row in rows:
            values = list(row)
            key = next_key if given is None else next(given, None)
            if key is None:
                raise ValueError(f"{model.__name__}: fewer keys than rows")
            if makers:
                values.extend(make(key) for make in makers)
            for k, convert in converters:
                values[k] = convert(values[k])
            if makers or given is not None:
                pks.append(key)
                values.insert(0, key)
                next_key += 1
            batch.extend(values)
            count += 1
            if count == size:
                if not statement:
                    statement = head + ", ".join([one] * size) + tail
                _execute(cursor, statement, batch, returning, pks)
                batch, count = [], 0
        if count:
            _execute(cursor, head + ", ".join([one] * count) + tail, batch, returning, pks)
    if keys is not None and len(pks) != len(keys):
        raise ValueError(f"{model.__name__}: more keys than rows")
    return pks


def _next_sqlite_key(model: type[models.Model]) -> int:
    """The key SQLite would give the table's next row: past every key it ever gave
    (AUTOINCREMENT's own counter) and every key in the table. Once this transaction has
    written, no other connection writes until it ends; a writer in between makes the insert
    fail on the key, and nothing of the batch is stored."""
    if connection.vendor != "sqlite":
        raise ValueError("keys drawn before the insert: PostgreSQL (COPY) or SQLite only")
    meta = model._meta
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT MAX("
            "COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0), "
            f"COALESCE((SELECT MAX({quote(str(meta.pk.column))}) FROM {quote(meta.db_table)}), 0))",
            [meta.db_table],
        )
        return int(cursor.fetchone()[0]) + 1


def _execute(
    cursor: CursorWrapper, sql: str, params: list[Any], returning: bool, pks: list[int]
) -> None:
    raw = cursor.cursor
    with connection.wrap_database_errors:
        if connection.vendor == "sqlite":
            sqlite3.Cursor.execute(raw, sql, params)
        else:
            raw.execute(sql, params)
        if returning:
            pks.extend(row[0] for row in raw.fetchall())


# Rows sent per COPY: bounds the memory of one chunk's rows, and of its preallocated keys.
COPY_CHUNK = 20_000
# Rows formatted per read of the COPY's input: the server stores one slice while the next is
# formatted, each on its own core, so the import waits for the slower of the two, not their sum.
COPY_SLICE = 2_000
# COPY's text format: a backslash, tab, newline or carriage return inside a value is escaped.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_value(value: Any) -> str:
    if value is None:
        return "\\N"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, str):
        return value.translate(_COPY_ESCAPES)
    return str(value).translate(_COPY_ESCAPES)


_BOOLEANS = {True: "t", False: "f"}
# Types whose text (str) never holds a character COPY escapes: numbers, and date-times (an
# import's own time, a session's bounds), which PostgreSQL reads in that ISO form.
_PLAIN = {int, float, datetime, date}
_INSTANTS = {datetime, date}
_NONE = type(None)


def _once_per_instant(values: Sequence[Any]) -> list[str]:
    """Date-times (or NULL) as text, each distinct one formatted once: an import's rows share
    a few instants (its own time, a session's bounds), and formatting one costs as much as a
    dozen integers."""
    texts = {value: "\\N" if value is None else str(value) for value in set(values)}
    return list(map(texts.__getitem__, values))


def _copy_column(values: Sequence[Any]) -> Sequence[str]:
    """One column of a chunk in COPY's text format. Columns of one plain type (integer keys and
    counts, flags, scores, strings with nothing to escape: nearly every column of an import) are
    converted by the interpreter's own loops; anything else value by value."""
    kinds = set(map(type, values))
    if kinds & _INSTANTS and kinds <= _PLAIN | {_NONE}:
        return _once_per_instant(values)
    if kinds <= _PLAIN:
        return list(map(str, values))
    if kinds <= {bool}:
        return list(map(_BOOLEANS.__getitem__, values))
    # A str subclass (a TextChoices member such as an import's origin) joins as its own text.
    if all(issubclass(kind, str) for kind in kinds):
        joined = "".join(values)
        if "\\" in joined or "\t" in joined or "\n" in joined or "\r" in joined:
            return [value.translate(_COPY_ESCAPES) for value in values]
        return values
    if kinds <= _PLAIN | {_NONE}:
        return ["\\N" if value is None else str(value) for value in values]
    return list(map(_copy_value, values))


def _converted(values: Sequence[Any], convert: Callable[[Any], Any]) -> list[Any]:
    """`convert` applied to each value; once per distinct value where the values are few,
    hashable and of one type (an import's rows share a few instants, and most carry no
    metadata). One type: True, 1 and 1.0 are equal keys, and their JSON differs."""
    if len(set(map(type, values))) > 1:
        return list(map(convert, values))
    try:
        distinct = set(values)
    except TypeError:  # JSON objects and lists
        # Of one type and all empty (no metadata, no languages): all the same value.
        if not any(values):
            return [convert(values[0])] * len(values)
        return list(map(convert, values))
    if len(distinct) > len(values) // 4:
        return list(map(convert, values))
    table = {value: convert(value) for value in distinct}
    return list(map(table.__getitem__, values))


def _copy_text(columns: Sequence[Sequence[Any]]) -> str:
    """Rows, given as their columns, as COPY text, formatted column by column."""
    texts = [_copy_column(column) for column in columns]
    return "\n".join(map("\t".join, zip(*texts, strict=True))) + "\n"


def _chunks(rows: Iterable[Sequence[Any]]) -> Iterator[list[Sequence[Any]]]:
    iterator = iter(rows)
    while chunk := list(itertools.islice(iterator, COPY_CHUNK)):
        yield chunk


def _copy(
    model: type[models.Model],
    fields: Sequence[models.Field[Any, Any]],
    names: str,
    converters: list[tuple[int, Callable[[Any], Any]]],
    rows: Iterable[Sequence[Any]],
    *,
    returning: bool,
    makers: Sequence[Callable[[int], Any]] = (),
    keys: Sequence[int] | None = None,
) -> list[int]:
    """PostgreSQL: COPY the rows in chunks. COPY returns no keys, so with `returning` (or
    `makers`) each chunk's keys are drawn from the table's own sequence first (as the inserts
    would draw them), or taken from `keys`, and sent as the first column: the keys come back in
    the order of the rows.
    Inside `references_checked_in_bulk` the keys each chunk names are noted for one check at
    its end."""
    meta = model._meta
    quote = connection.ops.quote_name
    table, pk = quote(meta.db_table), quote(str(meta.pk.column))
    returning = returning or bool(makers) or keys is not None
    columns = f"{pk}, {names}" if returning else names
    statement = f"COPY {table} ({columns}) FROM STDIN"
    pks: list[int] = []
    notes = bulk_references.active()
    if returning:
        fields = [meta.pk, *fields]
    sequence: str | None = None
    with connection.cursor() as cursor:
        raw = cursor.cursor
        for chunk in _chunks(rows):
            drawn: list[int] = []
            if keys is not None:
                drawn = list(keys[len(pks) : len(pks) + len(chunk)])
                if len(drawn) != len(chunk):
                    raise ValueError(f"{model.__name__}: fewer keys than rows")
            elif returning:
                sequence = sequence or _sequence(raw, model)
                drawn = _drawn(raw, sequence, len(chunk))
            text = _CopyText(chunk, drawn, converters, makers)
            sender = _behind.get()
            if sender is not None:
                sender.send(statement, "".join(iter(text.read, "")))
            else:
                with connection.wrap_database_errors:
                    raw.copy_expert(statement, text, size=1 << 16)
            if notes is not None:
                notes.note_columns(model, fields, text.sent)
                notes.note_created(model, drawn)
            pks.extend(drawn)
    if keys is not None and len(pks) != len(keys):
        raise ValueError(f"{model.__name__}: more keys than rows")
    return pks


class _CopyText:
    """A chunk's COPY input, converted and formatted a slice at a time as the driver reads it
    (psycopg2 sends whatever each read returns). Values are converted a column at a time: one
    call per converted column and slice, not one per row. The columns `makers` make from the
    keys come last. `sent` keeps each slice's columns as sent (the chunk's keys first, when it
    has them)."""

    def __init__(
        self,
        chunk: list[Sequence[Any]],
        keys: list[int],
        converters: list[tuple[int, Callable[[Any], Any]]],
        makers: Sequence[Callable[[int], Any]] = (),
    ) -> None:
        self.chunk = chunk
        self.keys = keys
        self.converters = converters
        self.makers = makers
        self.sent: list[list[Sequence[Any]]] = []
        self._start = 0

    def read(self, size: int = -1) -> str:
        start = self._start
        rows = self.chunk[start : start + COPY_SLICE]
        if not rows:
            return ""
        self._start += len(rows)
        columns: list[Sequence[Any]] = list(zip(*rows, strict=True))
        keys = self.keys[start : start + len(rows)]
        columns.extend(list(map(make, keys)) for make in self.makers)
        for k, convert in self.converters:
            columns[k] = _converted(columns[k], convert)
        if keys:
            columns.insert(0, keys)
        self.sent.append(columns)
        return _copy_text(columns)
