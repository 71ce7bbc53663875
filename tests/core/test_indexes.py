"""The tables a rater's answers and an import write carry no index another index serves.

Every index is written on every insert: a rater's task, submission and early answer, and each
row of an import pay for it. A single-column index on a foreign key is redundant where a
unique constraint or index begins with that column (and holds every row: a partial index
serves only the look-ups its condition implies), and a `unique=True` CharField gets a second,
pattern-matching (LIKE) index on PostgreSQL that no query here uses. Measured on a million-row
import, the redundant ones on the judgment tables cost about a third of the database's time
(benchmarks/README.md, bench_import.py)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from apps.assignments.models import Assignment
from apps.judgments.models import (
    EarlyAnswer,
    NotUnderstood,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Item
from tests.factories import (
    PairJudgmentFactory,
    ScoreAnswerFactory,
    ScoreResponseFactory,
    TuringJudgmentFactory,
)

TABLES = [
    model._meta.db_table
    for model in (
        ScoreResponse,
        ScoreAnswer,
        NotUnderstood,
        EarlyAnswer,
        PairJudgment,
        TuringJudgment,
        Assignment,
        Rater,
        RaterSession,
        Item,
    )
]
pytestmark = pytest.mark.django_db


def _indexes(table: str) -> dict[str, tuple[list[str], str, bool, bool]]:
    """name -> (the index's key columns in order, its definition, whether it is unique,
    whether it is partial)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT i.relname, pg_get_indexdef(x.indexrelid), x.indisunique,
                   x.indpred IS NOT NULL,
                   ARRAY(SELECT coalesce(a.attname, '(expression)')
                         FROM unnest(x.indkey[0:x.indnkeyatts - 1]) WITH ORDINALITY k(n, pos)
                         LEFT JOIN pg_attribute a
                                ON a.attrelid = x.indrelid AND a.attnum = k.n
                         ORDER BY k.pos)
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
            WHERE x.indrelid = %s::regclass
            """,
            [table],
        )
        return {
            name: (list(columns), definition, unique, partial)
            for name, definition, unique, partial, columns in cursor
        }


@pytest.mark.parametrize("table", TABLES)
def test_no_index_is_a_leading_part_of_another(postgres_only, table):
    """A unique index enforces its constraint, so only a plain one can be redundant."""
    indexes = _indexes(table)
    assert indexes, f"{table} has no indexes"
    for name, (columns, _, unique, _) in indexes.items():
        for other, (longer, _, _, partial) in indexes.items():
            if not unique and not partial and other != name and len(longer) > len(columns):
                assert longer[: len(columns)] != columns, (
                    f"{table}: {name} {columns} is served by {other} {longer}"
                )


@pytest.mark.parametrize("table", TABLES)
def test_no_pattern_index_for_like_queries(postgres_only, table):
    patterns = [
        name
        for name, (_, definition, _, _) in _indexes(table).items()
        if "pattern_ops" in definition
    ]
    assert patterns == []


@pytest.mark.parametrize(
    "factory", [ScoreResponseFactory, PairJudgmentFactory, TuringJudgmentFactory]
)
def test_an_idempotency_key_is_still_stored_once(factory):
    """The key's uniqueness is a constraint now, on every database: a second judgment of
    another task by another rater under the same key is refused."""
    first = factory(idempotency_key="same-key-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        factory(idempotency_key="same-key-1")
    assert factory._meta.model.objects.filter(idempotency_key="same-key-1").get() == first


@pytest.mark.parametrize("table", TABLES)
def test_no_plain_index_extends_a_unique_key(postgres_only, table):
    """A unique key names one row, so an index that only adds columns after it orders nothing
    further: the unique index carries them as included (non-key) columns instead, and each
    insert writes one index where it wrote two."""
    indexes = _indexes(table)
    for name, (columns, _, unique, partial) in indexes.items():
        if unique or partial:
            continue
        for other, (key, _, other_unique, other_partial) in indexes.items():
            if other_unique and not other_partial and len(columns) > len(key):
                assert columns[: len(key)] != key, (
                    f"{table}: {name} {columns} only extends the unique {other} {key}"
                )


def test_an_answer_s_value_is_read_from_its_unique_index(postgres_only):
    """The straight-lining check reads (response, question, value) without the table."""
    covering = [
        definition
        for columns, definition, unique, _ in _indexes(ScoreAnswer._meta.db_table).values()
        if unique and columns == ["response_id", "question_id"]
    ]
    assert len(covering) == 1
    assert covering[0].endswith("INCLUDE (value)")


def test_a_second_answer_to_a_question_is_still_refused():
    """On every database: SQLite has no included columns, and the constraint falls back to its
    key there rather than to nothing."""
    answer = ScoreAnswerFactory(value=3)
    with pytest.raises(IntegrityError), transaction.atomic():
        ScoreAnswerFactory(response=answer.response, question=answer.question, value=4)
    stored = ScoreAnswer.objects.filter(response=answer.response, question=answer.question)
    assert list(stored.values_list("value", flat=True)) == [3.0]
