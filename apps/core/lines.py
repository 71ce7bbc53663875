"""Reading uploaded line-oriented files (JSONL and CSV) into numbered records.

Both formats come out the same way: (line number, dict of fields) or a LineError, so every
import reports problems by the line a person sees in their editor.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

from django.utils.translation import gettext_noop

from apps.core import jsonsafe
from apps.core.errors import ImportRejected, LineError
from apps.core.sentences import Sentence


def _said(line: int, field: str, msgid: str, **params: object) -> LineError:
    return LineError.said(line, field, Sentence(msgid, params))


def _at(line: int, field: str, where: str, problem: Sentence) -> LineError:
    """A problem found at `where` inside a value (a JSON path), said before the problem."""
    if not where:
        return LineError.said(line, field, problem)
    return _said(line, field, gettext_noop("%(where)s %(problem)s"), where=where, problem=problem)


def _join_cell(column: str, path: str) -> str:
    if not path:
        return column
    return f"{column}{path}" if path.startswith("[") else f"{column}.{path}"


class Record(NamedTuple):
    """One line's fields (a named tuple: one is made for every line of a file, and a frozen
    dataclass took three times as long to make)."""

    line: int
    fields: dict[str, Any]
    # From a CSV file: its columns are the researcher's own, and extra ones are kept as
    # metadata rather than refused (a JSON line names its extras in a "meta" object).
    from_csv: bool = False


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Count the lines before the bad byte so the error names where to look.
        line = data[: exc.start].count(b"\n") + 1
        raise ImportRejected(
            [_said(line, "(file)", gettext_noop("is not valid UTF-8 text"))]
        ) from exc


def _unstorable(value: Any) -> str | None:
    """Why a parsed value cannot be stored as text (PostgreSQL refuses NUL and lone surrogates)."""
    if isinstance(value, str):
        if "\x00" in value:
            return gettext_noop("contains a NUL character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return gettext_noop("contains an invalid (unpaired surrogate) character")
        return None
    if isinstance(value, dict):
        return next(
            (r for k, v in value.items() for r in (_unstorable(k), _unstorable(v)) if r), None
        )
    if isinstance(value, list):
        return next((r for v in value if (r := _unstorable(v))), None)
    return None


def unstorable_path(value: Any, path: str = "") -> tuple[str, str] | None:
    """(where, problem) for the first text in a parsed JSON value that the database cannot
    store, `where` in the value's own notation (`questions[2].choices[0].zh`); None if all can."""
    if isinstance(value, str):
        problem = _unstorable(value)
        return (path or "(value)", problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if _unstorable(key):
                return (path or "(value)", f"has a key that {_unstorable(key)}")
            found = unstorable_path(item, where)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


def _unstorable_field(fields: dict[str, Any]) -> tuple[str, str] | None:
    """(field, problem) for the first field of a record that cannot be stored."""
    for key, value in fields.items():
        problem = _unstorable(key) or _unstorable(value)
        if problem:
            return (key if not _unstorable(key) else "(line)"), problem
    return None


# Characters of the text split into lines at a time by `numbered_lines`.
LINE_BLOCK = 1 << 20


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of `text`, numbered from 1, exactly as `text.splitlines()` gives them, split a
    block of about a megabyte at a time: the whole list of a million-line file's lines, held
    while it is read, was 150 MB of the import's memory. A block ends just after a newline,
    where every line ends (a CR LF pair stays whole)."""
    number, start, size = 0, 0, len(text)
    while start < size:
        cut = text.find("\n", start + LINE_BLOCK)
        end = size if cut < 0 else cut + 1
        for line in text[start:end].splitlines():
            number += 1
            yield number, line
        start = end


def read_jsonl(text: str) -> Iterator[Record | LineError]:
    for number, raw in numbered_lines(text):
        if not raw.strip():
            continue
        try:
            value = jsonsafe.loads(raw)
        except json.JSONDecodeError as exc:
            # The parser's own words (exc.msg) are a diagnostic, kept as they are.
            yield _said(
                number,
                "(line)",
                gettext_noop("is not valid JSON: %(problem)s at column %(column)s"),
                problem=exc.msg,
                column=exc.colno,
            )
            continue
        except jsonsafe.JsonRejected as exc:
            field = exc.path.partition(".")[0].split("[")[0] or "(line)"
            yield _at(number, field, exc.path, exc.sentence)
            continue
        if not isinstance(value, dict):
            yield _said(number, "(line)", gettext_noop("must be a JSON object"))
            continue
        # Decoded UTF-8 holds no lone surrogates and JSON refuses raw control characters, so
        # only a \u escape can put an unstorable character in a value.
        bad_field = _unstorable_field(value) if "\\u" in raw else None
        if bad_field:
            yield _said(number, bad_field[0], bad_field[1])
            continue
        yield Record(number, value)


def read_csv(
    text: str, *, json_columns: frozenset[str] = frozenset()
) -> Iterator[Record | LineError]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        yield _said(1, "(header)", gettext_noop("is not valid CSV: %(problem)s"), problem=str(exc))
        return
    header = [name.strip() for name in header]
    if len(set(header)) != len(header):
        yield _said(1, "(header)", gettext_noop("names a column twice"))
        return
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield _said(
                reader.line_num,
                "(line)",
                gettext_noop("is not valid CSV: %(problem)s"),
                problem=str(exc),
            )
            return
        number = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield _said(
                number,
                "(line)",
                gettext_noop("has %(cells)s cells, the header has %(columns)s"),
                cells=len(row),
                columns=len(header),
            )
            continue
        fields: dict[str, Any] = {}
        bad = False
        for name, cell in zip(header, row, strict=True):
            if cell == "":
                continue  # an empty cell is an absent field
            if name in json_columns:
                try:
                    fields[name] = jsonsafe.loads(cell)
                except json.JSONDecodeError:
                    yield _said(number, name, gettext_noop("is not valid JSON"))
                    bad = True
                    break
                except jsonsafe.JsonRejected as exc:
                    yield _at(number, name, _join_cell(name, exc.path), exc.sentence)
                    bad = True
                    break
            else:
                fields[name] = cell
        bad_field = None if bad else _unstorable_field(fields)
        if bad_field:
            yield _said(number, bad_field[0], bad_field[1])
        elif not bad:
            yield Record(number, fields, from_csv=True)


def read_records(
    data: bytes, *, filename: str, json_columns: frozenset[str] = frozenset()
) -> Iterator[Record | LineError]:
    """Records of a .jsonl/.json/.ndjson or .csv file, chosen by its name."""
    suffix = Path(filename).suffix.lower()
    # The type first: a file of the wrong type (a zip) is named as such, not as bad text.
    if suffix == ".csv":
        return read_csv(_decode(data), json_columns=json_columns)
    if suffix in {".jsonl", ".ndjson", ".json"}:
        return read_jsonl(_decode(data))
    raise ImportRejected(
        [
            _said(
                0,
                "(file)",
                gettext_noop("has an unknown type %(suffix)s; use .jsonl or .csv"),
                suffix=repr(suffix or "(none)"),
            )
        ]
    )


class _IdentifiedRow(Protocol):
    @property
    def line(self) -> int: ...

    @property
    def external_id(self) -> str: ...


RowT = TypeVar("RowT", bound=_IdentifiedRow)


def parse_unique_rows(
    records: Iterable[Record | LineError],
    parse_one: Callable[[Record, list[LineError]], RowT | None],
) -> tuple[list[RowT], list[LineError]]:
    """Every line parsed by `parse_one` (which adds its own errors); a repeated id within the
    file is an error on the later line, so the person fixes the copy, not the original."""
    errors: list[LineError] = []
    rows: list[RowT] = []
    first_line: dict[str, int] = {}
    for record in records:
        if isinstance(record, LineError):
            errors.append(record)
            continue
        row = parse_one(record, errors)
        if row is None:
            continue
        if row.external_id in first_line:
            errors.append(
                _said(
                    row.line,
                    "id",
                    gettext_noop("duplicates id %(id)s of line %(first)s"),
                    id=repr(row.external_id),
                    first=first_line[row.external_id],
                )
            )
            continue
        first_line[row.external_id] = row.line
        rows.append(row)
    return rows, errors
