"""A unique constraint that carries extra columns where the database can, and stays unique where
it cannot.

PostgreSQL's `UNIQUE (...) INCLUDE (...)` makes one index serve both the constraint and the
reads that want the included columns without the table (an index-only scan). Django's own
`UniqueConstraint(include=...)` creates nothing at all on a database without included columns
(SQLite, the tests' and the demo's database), so the rows there would lose their uniqueness.
This one falls back to the plain unique constraint on its key instead: the same rows are
refused everywhere, and only the read path differs."""

from __future__ import annotations

import copy
from typing import Any

from django.core import checks
from django.db.models import UniqueConstraint


class CoveringUniqueConstraint(UniqueConstraint):
    # django-stubs declare neither `include` nor `_check`, which Django 5.2 has: hence the
    # ignores below.

    def _here(self, schema_editor: Any) -> UniqueConstraint:
        """This constraint as the schema editor's database can make it."""
        included = self.include  # type: ignore[attr-defined]
        if not included or schema_editor.connection.features.supports_covering_indexes:
            return self
        plain = copy.copy(self)
        plain.include = ()  # type: ignore[attr-defined]
        return plain

    def constraint_sql(self, model: Any, schema_editor: Any) -> Any:
        return UniqueConstraint.constraint_sql(self._here(schema_editor), model, schema_editor)

    def create_sql(self, model: Any, schema_editor: Any) -> Any:
        return UniqueConstraint.create_sql(self._here(schema_editor), model, schema_editor)

    def remove_sql(self, model: Any, schema_editor: Any) -> Any:
        return UniqueConstraint.remove_sql(self._here(schema_editor), model, schema_editor)

    def _check(self, model: Any, connection: Any) -> list[checks.CheckMessage]:
        # W039 says the constraint "won't be created"; this one is, on its key.
        errors = super()._check(model, connection)  # type: ignore[misc]
        return [error for error in errors if error.id != "models.W039"]
