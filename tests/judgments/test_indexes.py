"""The judgment tables carry no index another index already serves.

Every index is written on every insert: a rater's submission and each row of an import pay for
it. On these tables a single-column index on a foreign key is redundant where a unique
constraint or index begins with that column, and a `unique=True` CharField gets a second,
pattern-matching (LIKE) index on PostgreSQL that no query here uses. Measured on a million-row
import, the redundant ones cost about a third of the database's time (benchmarks/README.md,
"Imports")."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from apps.judgments.models import (
    NotUnderstood,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from tests.factories import (
    PairJudgmentFactory,
    ScoreResponseFactory,
    TuringJudgmentFactory,
)

TABLES = [
    model._meta.db_table
    for model in (ScoreResponse, ScoreAnswer, NotUnderstood, PairJudgment, TuringJudgment)
]
pytestmark = pytest.mark.django_db


def _indexes(table: str) -> dict[str, tuple[list[str], str, bool]]:
    """name -> (the index's key columns in order, its definition, whether it is unique)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT i.relname, pg_get_indexdef(x.indexrelid), x.indisunique,
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
            name: (list(columns), definition, unique)
            for name, definition, unique, columns in cursor
        }


@pytest.mark.parametrize("table", TABLES)
def test_no_index_is_a_leading_part_of_another(postgres_only, table):
    """A unique index enforces its constraint, so only a plain one can be redundant (the
    answers' (response, question, value) index extends their unique (response, question) to
    cover the straight-lining check's reads)."""
    indexes = _indexes(table)
    assert indexes, f"{table} has no indexes"
    for name, (columns, _, unique) in indexes.items():
        for other, (longer, _, _) in indexes.items():
            if not unique and other != name and len(longer) > len(columns):
                assert longer[: len(columns)] != columns, (
                    f"{table}: {name} {columns} is served by {other} {longer}"
                )


@pytest.mark.parametrize("table", TABLES)
def test_no_pattern_index_for_like_queries(postgres_only, table):
    patterns = [
        name for name, (_, definition, _) in _indexes(table).items() if "pattern_ops" in definition
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
