"""Reads and inserts whose SQL the ORM compiles once per process, then runs with each call's
values.

Every rater request reads the same few shapes (the rater with the study and its rubric, the
assignment with its item and session, the rater's tasks), and compiling a `select_related`
read of three tables cost the server more CPU than the database spent answering it
(benchmarks/load/README.md). A `CompiledRead` is written as an ordinary queryset built from
its arguments; the first call builds it twice with marker values, checks that the two differ
only where the markers are, and keeps the SQL, where each argument goes, and what the ORM needs
to turn rows into instances. Later calls only execute.

Arguments are `int` or `str` (identifiers, keys, slugs): values the database receives as they
are, on every backend, so the compiled parameters can be replaced by the call's own. Anything
else a read depends on (the time, a setting) must be an argument too; a builder that reads the
clock fails the check on its first call rather than freezing the first call's time.

On PostgreSQL a read is also planned once per connection: its first call on a connection sends
`PREPARE` with the `EXECUTE`, in one round trip, and later calls send only the `EXECUTE`.
Planning the rater's three-table read took the database about three times as long as running it.
`DB_PREPARED_READS=0` turns this off, for a pooler that hands a session's statements to other
clients (PgBouncer in transaction mode before 1.21). A read written in SQL (the task chooser's
item lock and counts) is planned once per connection the same way (`PreparedRead`).
"""

from __future__ import annotations

import itertools
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.db.models import Model, QuerySet, signals, sql
from django.db.models import query as orm_query
from django.db.models.constants import OnConflict
from django.db.models.query import ModelIterable, ValuesListIterable
from django.db.transaction import TransactionManagementError

# What a row becomes: a model instance, or a tuple for values_list().
Row = TypeVar("Row")
# What a compiled insert stores.
Stored = TypeVar("Stored", bound=Model)
T = TypeVar("T")

# Values no identifier or key takes: negative (no sequence gives them) yet within a 32-bit
# column's range, which the ORM would otherwise compile to an empty result; and strings no
# slug, session key or language code can hold.
_INT_MARKS = (-2_000_000_001, -2_100_000_001)
_STR_MARKS = ("\x1ecompiled-read:a:{}\x1e", "\x1ecompiled-read:b:{}\x1e")


class CompiledReadError(TypeError):
    """A builder whose SQL is not a function of its arguments alone."""


def _mark(value: Any, index: int, round_: int) -> int | str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise CompiledReadError(
            f"argument {index}: a compiled read takes int or str, not {type(value).__name__}"
        )
    if isinstance(value, int):
        return _INT_MARKS[round_] - index
    return _STR_MARKS[round_].format(index)


# The statements prepared on each open connection (the driver's own connection object, so a
# reconnection starts empty). None: a call failed midway, and the server is asked what it holds.
_prepared: weakref.WeakKeyDictionary[Any, set[str] | None] = weakref.WeakKeyDictionary()
_statement_numbers = itertools.count(1)
_PLACEHOLDER = re.compile(r"%%|%s")
# Each prepared statement's SQL by name, for `readable`.
_statements: dict[str, str] = {}
_EXECUTE = re.compile(r"(?:PREPARE \w+ AS .*?; )?EXECUTE (\w+)(?: \((.*)\))?", re.DOTALL)


def readable(sql: str) -> str:
    """The SQL a prepared read's statement runs, its values after it in a comment, for logs,
    profiles and tests that look for a table or a value in what was sent; any other statement
    as it is."""
    found = _EXECUTE.fullmatch(sql)
    if found is None or found.group(1) not in _statements:
        return sql
    values = found.group(2)
    return _statements[found.group(1)] + (f" /* {values} */" if values else "")


def _numbered(sql: str) -> str:
    """The ORM's SQL with its `%s` placeholders numbered `$1`, `$2`, ... for PREPARE; a literal
    `%%` stays as it is, for the driver's own interpolation of the EXECUTE's values."""
    numbers = itertools.count(1)
    return _PLACEHOLDER.sub(lambda m: m.group() if m.group() == "%%" else f"${next(numbers)}", sql)


@dataclass(frozen=True)
class _Prepared:
    name: str
    prepare: str  # PREPARE then EXECUTE, for a connection that does not hold it yet
    execute: str


def _prepared_statement(sql: str, n_params: int, casts: Sequence[str] = ()) -> _Prepared:
    """`casts`: each parameter's type, written in the EXECUTE (none: as the values come)."""
    name = f"laughlab_read_{next(_statement_numbers)}"
    _statements[name] = numbered = _numbered(sql)
    values = [f"%s::{cast}" for cast in casts] or ["%s"] * n_params
    execute = f"EXECUTE {name}" + (f" ({', '.join(values)})" if n_params else "")
    return _Prepared(name, f"PREPARE {name} AS {numbered}; {execute}", execute)


def _run_prepared(connection: Any, prepared: _Prepared, run: Callable[[str], T]) -> T:
    """`run(sql)` with the statement to send on this (open) connection: the EXECUTE, with its
    PREPARE in front the first time."""
    raw = connection.connection
    names = _prepared.get(raw)
    if names is None:
        names = set()
        if raw in _prepared:
            with connection.cursor() as cursor:
                cursor.execute("SELECT name FROM pg_prepared_statements")
                names = {name for (name,) in cursor.fetchall()}
        _prepared[raw] = names
    try:
        result = run(prepared.execute if prepared.name in names else prepared.prepare)
    except Exception:
        # A PREPARE outlives the transaction that failed after it: ask the server next time.
        _prepared[raw] = None
        raise
    names.add(prepared.name)
    return result


@dataclass(frozen=True)
class _Plan:
    sql: str
    prepared: _Prepared | None
    # Per parameter: the argument it takes (an index), or None for a constant of the shape.
    slots: tuple[int | None, ...]
    constants: tuple[Any, ...]
    locks: bool
    build_row: Callable[[Sequence[Any]], Any]
    converters: dict[int, Any]
    compiler: Any


class CompiledRead(Generic[Row]):
    """`read(*args)` is `list(build(*args))`, with the SQL compiled once per database alias.

    The arguments' types are part of the shape: one plan per alias and tuple of types.
    """

    def __init__(self, build: Callable[..., QuerySet[Any, Row]]) -> None:
        self._build = build
        self._plans: dict[tuple[str, tuple[type, ...]], _Plan] = {}

    def __call__(self, *args: int | str) -> list[Row]:
        key = (DEFAULT_DB_ALIAS, tuple(type(a) for a in args))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._compile(args)
        connection = connections[DEFAULT_DB_ALIAS]
        if plan.locks and connection.get_autocommit():
            # What the ORM itself says, so a lock outside a transaction is never silent.
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        params = [
            plan.constants[i] if slot is None else args[slot] for i, slot in enumerate(plan.slots)
        ]
        with connection.cursor() as cursor:
            if plan.prepared is None:
                cursor.execute(plan.sql, params)
            else:
                _run_prepared(connection, plan.prepared, lambda sql: cursor.execute(sql, params))
            rows: Any = cursor.fetchall()
        if plan.converters:
            rows = plan.compiler.apply_converters(rows, plan.converters)
        return [plan.build_row(row) for row in rows]

    def _compile(self, args: tuple[int | str, ...]) -> _Plan:
        first = self._build(*(_mark(a, i, 0) for i, a in enumerate(args)))
        second = self._build(*(_mark(a, i, 1) for i, a in enumerate(args)))
        if first.db != DEFAULT_DB_ALIAS:
            raise CompiledReadError(f"a compiled read runs on {DEFAULT_DB_ALIAS}, not {first.db}")
        compiler = first.query.get_compiler(using=first.db)
        try:
            sql, params = compiler.as_sql()
            other_sql, other_params = second.query.get_compiler(using=second.db).as_sql()
        except (EmptyResultSet, FullResultSet) as e:
            raise CompiledReadError(
                f"the read's SQL depends on its arguments' values ({e!r})"
            ) from e
        if sql != other_sql or len(params) != len(other_params):
            raise CompiledReadError("the read's SQL changes with its arguments' values")
        marks = [{_mark(a, i, r): i for i, a in enumerate(args)} for r in (0, 1)]
        slots: list[int | None] = []
        for a, b in zip(params, other_params, strict=True):
            slot = marks[0].get(a) if type(a) in (int, str) else None
            if slot is not None and marks[1].get(b) == slot:
                slots.append(slot)
            elif a == b and type(a) is type(b):
                slots.append(None)
            else:
                raise CompiledReadError(
                    f"the read depends on something besides its arguments: {a!r} then {b!r}"
                )
        missing = set(range(len(args))) - {s for s in slots if s is not None}
        if missing:
            raise CompiledReadError(f"arguments {sorted(missing)} do not reach the SQL")
        fields = [s[0] for s in compiler.select[0 : compiler.col_count]]
        prepared = (
            _prepared_statement(sql, len(params))
            if connections[first.db].vendor == "postgresql" and settings.DB_PREPARED_READS
            else None
        )
        return _Plan(
            sql=sql,
            prepared=prepared,
            slots=tuple(slots),
            constants=tuple(params),
            locks=bool(first.query.select_for_update)
            and connections[first.db].features.has_select_for_update,
            build_row=_row_builder(first, compiler),
            converters=compiler.get_converters(fields),
            compiler=compiler,
        )


class PreparedRead:
    """A read written in SQL, planned once per connection on PostgreSQL as a compiled read is.

    `read.run(lambda sql: ..., n_params)` runs the caller's own execution (a cursor's, a raw
    queryset's) with the SQL to send: on PostgreSQL its EXECUTE, with the PREPARE in front the
    first time on a connection; elsewhere, or with `DB_PREPARED_READS=0`, the SQL itself. The
    parameters' types must be the same on every call: PostgreSQL fixes them when it prepares.
    """

    def __init__(self, sql: str, casts: Sequence[str] = ()) -> None:
        """`casts`: each parameter's type, written in the EXECUTE as well (see
        `_prepared_statement`), for values whose type the driver cannot tell."""
        self.sql = sql
        self._casts = tuple(casts)
        self._prepared: _Prepared | None = None

    def run(self, run: Callable[[str], T], n_params: int) -> T:
        connection = connections[DEFAULT_DB_ALIAS]
        if connection.vendor != "postgresql" or not settings.DB_PREPARED_READS:
            return run(self.sql)
        if self._prepared is None:
            self._prepared = _prepared_statement(self.sql, n_params, self._casts)
        connection.ensure_connection()
        return _run_prepared(connection, self._prepared, run)


_prepared_reads: dict[str, PreparedRead] = {}


def prepared_read(sql: str) -> PreparedRead:
    """The `PreparedRead` of this SQL, one per text: for SQL assembled at run time in one of a
    few fixed shapes (a shape per distinct text, so never with a value written into it)."""
    read = _prepared_reads.get(sql)
    if read is None:
        read = _prepared_reads[sql] = PreparedRead(sql)
    return read


# Django 5.2's signature (the type stubs describe a later one).
_related_populators: Callable[..., list[Any]] = orm_query.get_related_populators


def _row_builder(queryset: QuerySet[Any], compiler: Any) -> Callable[[Sequence[Any]], Any]:
    """What `ModelIterable` or `ValuesListIterable` does with each row, set up once."""
    if queryset._iterable_class is ValuesListIterable:
        return tuple  # the compiler selects in the order values_list() names
    if queryset._iterable_class is not ModelIterable or getattr(
        queryset, "_known_related_objects", None
    ):
        raise CompiledReadError("a compiled read returns model instances or values_list tuples")
    db = queryset.db
    select, klass_info = compiler.select, compiler.klass_info
    model_cls = klass_info["model"]
    start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    init_list = [f[0].target.attname for f in select[start:end]]
    populators = _related_populators(klass_info, select, db)
    annotations = list(compiler.annotation_col_map.items())

    def build(row: Sequence[Any]) -> Any:
        obj = model_cls.from_db(db, init_list, row[start:end])
        for populator in populators:
            populator.populate(row, obj)
        for name, position in annotations:
            setattr(obj, name, row[position])
        return obj

    return build


class CompiledInsert(Generic[Stored]):
    """`insert(**fields)` is `Model.objects.create(**fields)`, with the INSERT compiled once
    per database alias.

    Every answer stores one judgment and hands out one task: building each INSERT through the
    ORM (an InsertQuery, its compiler, the quoted names) cost more CPU than the database spent
    on it. The statement of a plain one-row insert is the same text whatever the values, so it
    is kept, and each call only prepares its values as the compiler does (`pre_save`, then
    `get_db_prep_save`) and reads back what the database returns.

    Whatever `save()` would do beyond that takes the ORM's own path instead, for that call: a
    `pre_save` or `post_save` receiver, a value that is an expression (a database default), a
    primary key given, or a database that cannot return the new row's columns.
    """

    def __init__(self, model: type[Stored]) -> None:
        self._model = model
        self._fields: list[Any] = []
        self._returning: list[Any] = []
        self._plans: dict[tuple[str, bool], _InsertPlan] = {}
        # Read on first use: a module may make one before every model is loaded.
        self._checked = False

    def _check(self) -> None:
        meta = self._model._meta
        if meta.parents or meta.auto_field is None or meta.pk is not meta.auto_field:
            raise CompiledReadError(
                f"{meta.label}: a compiled insert is for a model of one table with an automatic key"
            )
        if any(hasattr(f, "get_placeholder") for f in meta.local_concrete_fields):
            raise CompiledReadError(f"{meta.label}: a field writes its own SQL placeholder")
        self._fields = [
            f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field
        ]
        self._returning = list(meta.db_returning_fields)
        self._checked = True

    def __call__(self, **values: Any) -> Stored:
        if not self._checked:
            self._check()
        obj = self._model(**values)
        if self._insert(obj, unless_conflict=False) is None:
            obj.save(force_insert=True, using=DEFAULT_DB_ALIAS)
        return obj

    def unless_conflict(self, **values: Any) -> Stored | None:
        """The insert, or None, with nothing stored and the transaction still usable, when a
        unique constraint refuses the row (`ON CONFLICT DO NOTHING`; SQLite's `OR IGNORE`).

        For an insert that may lose a race inside a transaction that must go on: a rater's next
        task is chosen in the transaction of the answer before it, and a task another tab
        handed out meanwhile must not undo that answer. No savepoint is spent on it (two
        statements more), except on the ORM's path, which has no such insert. (SQLite's `OR
        IGNORE` also skips a row that breaks a NOT NULL or CHECK constraint; PostgreSQL raises
        for those as for any insert.)
        """
        if not self._checked:
            self._check()
        obj = self._model(**values)
        stored = self._insert(obj, unless_conflict=True)
        if stored is None:
            try:
                with transaction.atomic(using=DEFAULT_DB_ALIAS):
                    obj.save(force_insert=True, using=DEFAULT_DB_ALIAS)
            except IntegrityError:
                return None
            return obj
        return obj if stored else None

    def _insert(self, obj: Any, *, unless_conflict: bool) -> bool | None:
        """Insert `obj` with the compiled statement: True when stored, False when a conflict
        left it out (`unless_conflict` only), None, with nothing done, when the ORM's path must
        take it."""
        alias = DEFAULT_DB_ALIAS
        connection = connections[alias]
        model = self._model
        if (
            obj.pk is not None
            or not connection.features.can_return_columns_from_insert
            or signals.pre_save.has_listeners(model)
            or signals.post_save.has_listeners(model)
        ):
            return None
        obj._prepare_related_fields_for_save(operation_name="save")
        key = (alias, unless_conflict)
        plan = self._plans.get(key)
        compiler = (
            plan.compiler
            if plan is not None
            else _insert_compiler(model, self._fields, obj, unless_conflict=unless_conflict)
        )
        raw = [compiler.pre_save_val(f, obj) for f in self._fields]
        if any(hasattr(v, "resolve_expression") for v in raw):
            return None
        if plan is None:
            plan = self._plans[key] = self._compile(compiler)
            # Compiling ran `pre_save` again: the values stored are the instance's own.
            raw = [compiler.pre_save_val(f, obj) for f in self._fields]
        params = [compiler.prepare_value(f, v) for f, v in zip(self._fields, raw, strict=True)]
        with transaction.mark_for_rollback_on_error(alias), connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            row = connection.ops.fetch_returned_insert_columns(  # type: ignore[attr-defined]
                cursor, plan.returning_params
            )
        if row is None:  # the constraint refused it: no row came back
            return False
        if plan.converters:
            (row,) = compiler.apply_converters([row], plan.converters)
        for value, field in zip(row, self._returning, strict=True):
            setattr(obj, field.attname, value)
        obj._state.adding = False
        obj._state.db = alias
        return True

    def _compile(self, compiler: Any) -> _InsertPlan:
        compiler.returning_fields = self._returning
        ((statement, _),) = compiler.as_sql()
        compiler.query.objs = []  # the first call's instance is not kept
        table = self._model._meta.db_table
        return _InsertPlan(
            sql=statement,
            compiler=compiler,
            returning_params=compiler.returning_params,
            converters=compiler.get_converters([f.get_col(table) for f in self._returning]),
        )


class CompiledRows:
    """`rows(values)` is `Model.objects.bulk_create(...)` of the rows `values` (tuples of the
    fields named at construction, in that order), with its SQL written once per process.

    An answer with its several questions stores several rows of one table; building that
    INSERT through the ORM each time (an instance per row, the bulk compiler, its casts) cost
    more CPU than the database spent on it. On PostgreSQL the statement is `INSERT ... SELECT *
    FROM UNNEST(...)`, one typed array per column, so its text is the same for any number of
    rows, and it is planned once per connection as a compiled read is. Elsewhere the rows go
    through `bulk_create`.

    Every field of the model but its automatic key must be named, so nothing falls to a
    database default the ORM would not use. As `bulk_create`, it sends no signals; unlike it,
    the rows are not returned (their keys are not read back). `upsert=(unique, update)` is
    `bulk_create(update_conflicts=True, unique_fields=unique, update_fields=update)`.
    """

    def __init__(
        self,
        model: type[Model],
        fields: Sequence[str],
        *,
        upsert: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> None:
        self._model = model
        self._names = tuple(fields)
        self._upsert = upsert
        self._fields: list[Any] = []
        self._statement: PreparedRead | None = None

    def _check(self) -> None:
        meta = self._model._meta
        by_name = {f.attname: f for f in meta.local_concrete_fields}
        unknown = [name for name in self._names if name not in by_name]
        if meta.parents or meta.auto_field is None or unknown:
            raise CompiledReadError(
                f"{meta.label}: compiled rows are for a model of one table with an automatic "
                f"key, named by attname (not fields: {unknown})"
            )
        wanted = {f.attname for f in by_name.values() if f is not meta.auto_field}
        if set(self._names) != wanted or len(self._names) != len(wanted):
            raise CompiledReadError(
                f"{meta.label}: name every field but the key once, not {sorted(self._names)}"
            )
        self._fields = [by_name[name] for name in self._names]
        if any(
            getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) for f in self._fields
        ):
            raise CompiledReadError(f"{meta.label}: a field sets its own value on save")

    def _written(self, connection: Any) -> PreparedRead:
        quote = connection.ops.quote_name
        meta = self._model._meta
        columns = ", ".join(quote(f.column) for f in self._fields)
        arrays = ", ".join(f"%s::{f.db_type(connection)}[]" for f in self._fields)
        sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) SELECT * FROM UNNEST({arrays})"
        if self._upsert is not None:
            unique, update = self._upsert
            by_name = {f.name: f for f in meta.local_concrete_fields}
            target = ", ".join(quote(by_name[name].column) for name in unique)
            sets = ", ".join(
                f"{quote(by_name[n].column)} = EXCLUDED.{quote(by_name[n].column)}" for n in update
            )
            sql += f" ON CONFLICT ({target}) DO UPDATE SET {sets}"
        # Typed in the EXECUTE too: an array of NULLs alone would be text[].
        return PreparedRead(sql, casts=[f"{f.db_type(connection)}[]" for f in self._fields])

    def __call__(self, rows: Sequence[Sequence[Any]]) -> None:
        if not self._fields:
            self._check()
        if not rows:
            return
        connection = connections[DEFAULT_DB_ALIAS]
        if connection.vendor != "postgresql":
            self._by_the_orm(rows)
            return
        if self._statement is None:
            self._statement = self._written(connection)
        columns = [
            [field.get_db_prep_save(value, connection) for value in column]
            for field, column in zip(self._fields, zip(*rows, strict=True), strict=True)
        ]
        with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
            self._statement.run(lambda sent: cursor.execute(sent, columns), len(columns))

    def _by_the_orm(self, rows: Sequence[Sequence[Any]]) -> None:
        objs = [self._model(**dict(zip(self._names, row, strict=True))) for row in rows]
        if self._upsert is None:
            self._model._default_manager.bulk_create(objs)
            return
        unique, update = self._upsert
        self._model._default_manager.bulk_create(
            objs, update_conflicts=True, unique_fields=unique, update_fields=update
        )


@dataclass(frozen=True)
class _InsertPlan:
    sql: str
    compiler: Any
    returning_params: Any
    converters: dict[int, Any]


def _insert_compiler(
    model: type[Any], fields: list[Any], obj: Any, *, unless_conflict: bool
) -> Any:
    query = sql.InsertQuery(model, on_conflict=OnConflict.IGNORE if unless_conflict else None)
    query.insert_values(fields, [obj])
    return query.get_compiler(using=DEFAULT_DB_ALIAS)
