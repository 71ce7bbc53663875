"""A JSON document stored and read whole, as PostgreSQL's `json` rather than `jsonb`.

`jsonb` parses a value into a tree of its keys and values when it is stored (and prints it back
when it is read), which pays off for documents queried inside by SQL. A study's results are
never queried inside: they are written whole by each aggregation and read whole by a page or an
export. `json` only checks the text: the crowd set's 9.9 MB document was stored in less than half
the time (`benchmarks/bench_results_store.py`: 0.27-0.37 s against 0.58-0.90 s through the two
fields on a slow machine), and `json` keeps the document's own key order.

Elsewhere (SQLite) the column is the text column `JSONField` already uses.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import Expression


class DocumentJSONField(models.JSONField):
    """A `JSONField` kept as `json` on PostgreSQL: for documents read and written whole, never
    looked into by a query (its key lookups would run on `json`, which has no index)."""

    def db_type(self, connection: BaseDatabaseWrapper) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(
        self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False
    ) -> Any:
        if connection.vendor != "postgresql":
            return super().get_db_prep_value(value, connection, prepared)
        if not prepared:
            value = self.get_prep_value(value)
        if value is None or hasattr(value, "as_sql"):
            return value
        # The text itself, sent as an untyped literal that the column takes as `json`: the
        # JSONField's own adapter casts it to `jsonb` first.
        return json.dumps(value, cls=self.encoder)

    def from_db_value(
        self, value: Any, expression: Expression, connection: BaseDatabaseWrapper
    ) -> Any:
        if connection.vendor == "postgresql":
            # psycopg2 reads a `json` column into Python values itself (`jsonb` Django has it
            # leave as text, to read it here).
            return value
        return super().from_db_value(value, expression, connection)
