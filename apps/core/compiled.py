"""Reads whose SQL the ORM compiles once per process, then runs with each call's values.

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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet
from django.db.models import query as orm_query
from django.db.models.query import ModelIterable, ValuesListIterable
from django.db.transaction import TransactionManagementError

# What a row becomes: a model instance, or a tuple for values_list().
Row = TypeVar("Row")

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


@dataclass(frozen=True)
class _Plan:
    sql: str
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
            cursor.execute(plan.sql, params)
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
        return _Plan(
            sql=sql,
            slots=tuple(slots),
            constants=tuple(params),
            locks=bool(first.query.select_for_update)
            and connections[first.db].features.has_select_for_update,
            build_row=_row_builder(first, compiler),
            converters=compiler.get_converters(fields),
            compiler=compiler,
        )


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
