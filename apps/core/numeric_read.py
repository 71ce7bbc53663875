"""Numeric columns of many rows, read straight into a numpy array.

Through the ORM, each row of a million-row read becomes a Python tuple of Python numbers, which
numpy then copies again: the million scorecard answers of the import benchmark's large set took
2.3-2.4 s so. PostgreSQL's binary COPY sends the same rows as fixed-width big-endian fields,
which numpy reads where they lie (1.4-1.7 s, most of it the server's own query). Other
databases read through the ORM; both give the same array.

Every column is cast to the array's type in SQL, so the binary fields all have one width, and a
float column's NULL arrives as NaN (what numpy makes of None): a row of the binary stream then
has a fixed size.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import BigIntegerField, Expression, F, FloatField, QuerySet, Value
from django.db.models.functions import Cast, Coalesce

# PostgreSQL's binary COPY: an 11-byte signature, 32-bit flags and the length of a header
# extension; then per row a 16-bit field count and, per field, a 32-bit length (-1 for NULL)
# and the bytes; then a field count of -1.
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_TRAILER = 2


def numeric_columns(
    queryset: QuerySet[Any], columns: Sequence[str | Expression], dtype: type[np.generic]
) -> np.ndarray:
    """(rows, len(columns)) array of ``dtype`` (np.float64 or np.int64) of the queryset's rows,
    in its order. Float columns give NaN for NULL; integer columns must have no NULL."""
    floating = np.dtype(dtype) == np.float64
    if not floating and np.dtype(dtype) != np.int64:
        raise ValueError("numeric_columns reads float64 or int64")
    names = [f"numeric_column_{i}" for i in range(len(columns))]
    field = FloatField() if floating else BigIntegerField()
    expressions: dict[str, Any] = {}
    for name, column in zip(names, columns, strict=True):
        cast = Cast(F(column) if isinstance(column, str) else column, field)
        expressions[name] = (
            Coalesce(cast, Value(float("nan")), output_field=field) if floating else cast
        )
    rows = queryset.annotate(**expressions).values_list(*names)
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return np.array(list(rows), dtype=dtype).reshape(-1, len(names))
    try:
        sql, params = rows.query.sql_with_params()
    except EmptyResultSet:  # a condition no row can meet (`none()`, `pk__in=[]`)
        return np.empty((0, len(names)), dtype=dtype)
    buffer = io.BytesIO()
    # The driver's own cursor, so its errors are turned into Django's as the ORM's are (as
    # apps/core/bulk.py's COPY does).
    with connection.cursor() as cursor, connection.wrap_database_errors:
        statement = cursor.cursor.mogrify(sql, params).decode()
        cursor.cursor.copy_expert(f"COPY ({statement}) TO STDOUT WITH (FORMAT binary)", buffer)
    return binary_copy_decoded(buffer.getbuffer(), len(names), dtype)


def binary_copy_decoded(data: Any, n_columns: int, dtype: type[np.generic]) -> np.ndarray:
    """The (rows, n_columns) array of a binary COPY whose every field is an 8-byte ``dtype``;
    a stream of any other shape (a NULL, another width) is refused, never misread."""
    view = memoryview(data)
    if bytes(view[: len(_SIGNATURE)]) != _SIGNATURE or len(view) < len(_SIGNATURE) + 8:
        raise ValueError("not a binary COPY stream")
    extension = int.from_bytes(view[len(_SIGNATURE) + 4 : len(_SIGNATURE) + 8], "big")
    start = len(_SIGNATURE) + 8 + extension
    if bytes(view[len(view) - _TRAILER :]) != b"\xff\xff":
        raise ValueError("a binary COPY stream without its end")
    body = view[start : len(view) - _TRAILER]
    kind = ">f8" if np.dtype(dtype) == np.float64 else ">i8"
    row = np.dtype(
        [("count", ">i2")]
        + [entry for i in range(n_columns) for entry in ((f"l{i}", ">i4"), (f"v{i}", kind))]
    )
    if len(body) % row.itemsize:
        raise ValueError("a binary COPY row is not a row of 8-byte fields")
    rows = np.frombuffer(body, dtype=row)
    if (rows["count"] != n_columns).any() or any(
        (rows[f"l{i}"] != 8).any() for i in range(n_columns)
    ):
        raise ValueError("a binary COPY row holds a NULL or a field of another width")
    out = np.empty((rows.size, n_columns), dtype=dtype)
    for i in range(n_columns):
        out[:, i] = rows[f"v{i}"]
    return out
