"""Foreign keys of a bulk load checked once per referenced table, not once per row.

PostgreSQL checks a foreign key with a trigger per inserted row: at commit, one look-up of the
parent row (locked FOR KEY SHARE) per row and per foreign key. An import of a million scorecards
ran six million of them, about a third of its time. Inside `references_checked_in_bulk` those
triggers are off for the rows `bulk_insert` writes (`session_replication_role = replica`, for the
block only), `bulk_insert` notes every key its rows name, and on leaving the block one statement
per referenced table looks the named keys up and locks them, as the triggers would have. Keys of
rows the block itself created need no look-up: no other transaction sees them before the commit.

Turning triggers off needs a superuser or, from PostgreSQL 15, `GRANT SET ON PARAMETER
session_replication_role TO <role>`. A role without either gets the triggers as before: the
same rows are refused, only more slowly. Either way a row naming a missing parent stores nothing.

Only for inserts: a delete inside the block would skip the checks that protect its children.
The setting turns off every ordinary trigger, not only the foreign keys'; the schema has no
other (a test holds it so), and a migration that adds one must have the block check it too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
from django.db import IntegrityError, connection, models, transaction


class MissingParent(IntegrityError):
    """A bulk row names a parent row that is not there (deleted meanwhile, or never stored)."""


class NamedKeys:
    """What the rows written inside one block name, and what they created."""

    def __init__(self) -> None:
        # (child table, child column, foreign key) -> arrays of the keys its rows name
        self.named: dict[tuple[str, str, models.ForeignKey[Any, Any]], list[np.ndarray]] = (
            defaultdict(list)
        )
        self.created: dict[type[models.Model], list[np.ndarray]] = defaultdict(list)

    def note_columns(
        self,
        model: type[models.Model],
        fields: Sequence[models.Field[Any, Any]],
        slices: Sequence[Sequence[Sequence[Any]]],
    ) -> None:
        """Note the keys the foreign-key columns of some rows name: `slices` holds the rows a
        slice at a time, each as its columns in the order of `fields`. NULL names nothing."""
        for k, field in enumerate(fields):
            if isinstance(field, models.ForeignKey):
                keys = np.asarray(
                    [key for columns in slices for key in columns[k] if key is not None]
                )
                if keys.size:
                    self.named[(model._meta.db_table, str(field.column), field)].append(keys)

    def note_created(self, model: type[models.Model], pks: Sequence[int]) -> None:
        if pks:
            self.created[model].append(np.asarray(pks))

    def check(self) -> None:
        """Look up and lock (FOR KEY SHARE) every named key of each referenced table at once;
        MissingParent naming the first column whose key is missing."""
        by_target: dict[tuple[type[models.Model], str], list[np.ndarray]] = defaultdict(list)
        for (_, _, field), arrays in self.named.items():
            by_target[(_parent(field), str(field.target_field.column))].extend(arrays)
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            for (parent, column), arrays in by_target.items():
                keys = np.concatenate(arrays)
                if column == parent._meta.pk.column and self.created[parent]:
                    keys = _not_among(keys, np.concatenate(self.created[parent]))
                keys = np.unique(keys)
                if not keys.size:
                    continue
                cursor.execute(
                    f"SELECT {quote(column)} FROM {quote(parent._meta.db_table)} "
                    f"WHERE {quote(column)} = ANY(%s) FOR KEY SHARE",
                    [keys.tolist()],
                )
                missing = np.setdiff1d(keys, np.asarray([row[0] for row in cursor.fetchall()]))
                if missing.size:
                    raise MissingParent(self._missing_message(parent, column, missing))

    def _missing_message(self, parent: type[models.Model], column: str, missing: np.ndarray) -> str:
        first = missing[0]
        for (table, child_column, field), arrays in self.named.items():
            if _parent(field) is parent and any(first in keys for keys in arrays):
                more = f" (and {missing.size - 1} more)" if missing.size > 1 else ""
                return (
                    f"{table}.{child_column} names {parent._meta.db_table}.{column} {first}, "
                    f"which does not exist{more}"
                )
        raise AssertionError("a missing key no column named")  # pragma: no cover


def _not_among(keys: np.ndarray, created: np.ndarray) -> np.ndarray:
    """The keys that are not among `created`: by binary search in the sorted created keys,
    before any deduplication. A million answers name a million scorecards made by the same
    import; deduplicating them first and then taking the set difference cost 2.6 s."""
    created = np.sort(created)
    at = np.searchsorted(created, keys).clip(max=created.size - 1)
    return keys[created[at] != keys]


def _parent(field: models.ForeignKey[Any, Any]) -> type[models.Model]:
    parent = field.related_model
    assert isinstance(parent, type)
    return parent


_active: ContextVar[NamedKeys | None] = ContextVar("bulk_named_keys", default=None)


def active() -> NamedKeys | None:
    """The block's notes, when the rows being written are not checked by the triggers."""
    return _active.get()


def _may_turn_triggers_off() -> bool:
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        if connection.pg_version >= 150000:  # type: ignore[attr-defined]
            cursor.execute(
                "SELECT current_setting('is_superuser') = 'on' "
                "OR has_parameter_privilege('session_replication_role', 'SET')"
            )
        else:
            cursor.execute("SELECT current_setting('is_superuser') = 'on'")
        return bool(cursor.fetchone()[0])


@contextmanager
def references_checked_in_bulk() -> Iterator[None]:
    """Inside the caller's transaction: the foreign keys of what `bulk_insert` writes in the
    block are checked once per referenced table when the block ends (see the module)."""
    if _active.get() is not None or not _may_turn_triggers_off():
        yield
        return
    notes = NamedKeys()
    # A savepoint: if the block fails, its rows and the setting are rolled back together.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SHOW session_replication_role")
            before = cursor.fetchone()[0]
            cursor.execute("SET LOCAL session_replication_role = replica")
        token = _active.set(notes)
        try:
            yield
        finally:
            _active.reset(token)
        notes.check()
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('session_replication_role', %s, true)", [before])
