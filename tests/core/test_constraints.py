"""CoveringUniqueConstraint: included columns where the database has them, its key where not."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

from apps.judgments.models import ScoreAnswer

pytestmark = pytest.mark.django_db


def _editor():
    # Only to build statements: never entered, so SQLite's foreign key switch is not needed.
    return connection.SchemaEditorClass(connection, collect_sql=True)


def _constraint():
    (constraint,) = [
        c for c in ScoreAnswer._meta.constraints if c.name == "one_answer_per_question"
    ]
    return constraint


def test_the_sql_names_the_key_and_includes_the_value_only_where_it_can():
    sql = str(_constraint().create_sql(ScoreAnswer, _editor()))
    assert "UNIQUE" in sql.upper()
    assert '"response_id", "question_id"' in sql
    assert ("INCLUDE" in sql.upper()) == connection.features.supports_covering_indexes


def test_no_warning_that_the_constraint_is_not_created():
    """Django's own warning (models.W039) says such a constraint is skipped; this one is not."""
    errors = _constraint()._check(ScoreAnswer, connection)
    assert [e.id for e in errors if isinstance(e, checks.CheckMessage)] == []


def test_it_is_removed_as_it_was_made():
    sql = str(_constraint().remove_sql(ScoreAnswer, _editor()))
    assert "one_answer_per_question" in sql
