"""Reads compiled once (apps/core/compiled.py) return what their querysets return, take each
call's arguments, and refuse a builder whose SQL would freeze anything else."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.sessions.models import Session
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, Q, signals
from django.db.models.sql.compiler import SQLCompiler, SQLInsertCompiler
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.core import compiled
from apps.core.compiled import CompiledInsert, CompiledRead, CompiledReadError, readable
from apps.core.sessions import SessionStore
from apps.judgments.models import ScoreAnswer
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Question
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    RaterSessionFactory,
    ScoreResponseFactory,
)

pytestmark = pytest.mark.django_db


def _assignment_for_rater(assignment_id, rater_id):  # type: ignore[no-untyped-def]
    return Assignment.objects.select_related("item", "session").filter(
        pk=assignment_id, rater_id=rater_id
    )


def _fields(obj):  # type: ignore[no-untyped-def]
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


def test_a_compiled_read_returns_what_its_queryset_returns_for_each_calls_arguments(
    django_assert_num_queries,
):
    read = CompiledRead(_assignment_for_rater)
    first = AssignmentFactory(item=ItemFactory(text="Eins"))
    second = AssignmentFactory(item=ItemFactory(text="二"))
    for assignment in (first, second, first):
        with django_assert_num_queries(1):
            (got,) = read(assignment.pk, assignment.rater_id)
            # The related rows came with it, as select_related() brings them.
            item, session = got.item, got.session
        (expected,) = _assignment_for_rater(assignment.pk, assignment.rater_id)
        assert _fields(got) == _fields(expected)
        assert _fields(item) == _fields(expected.item)
        assert _fields(session) == _fields(expected.session)
        assert got._state.adding is False
        assert got._state.db == "default"
    # Someone else's assignment is not found, as with the queryset.
    assert read(first.pk, second.rater_id) == []


def test_the_sql_is_compiled_on_the_first_call_only():
    read = CompiledRead(_assignment_for_rater)
    assignment = AssignmentFactory()
    with mock.patch.object(
        SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql
    ) as spy:
        read(assignment.pk, assignment.rater_id)
        compiled = spy.call_count
        for _ in range(3):
            read(assignment.pk, assignment.rater_id)
    assert compiled == 2  # the two marker builds that check the shape
    assert spy.call_count == compiled


def test_a_values_list_read_converts_its_columns_as_the_queryset_does():
    def build(rater_id):  # type: ignore[no-untyped-def]
        return (
            Assignment.objects.filter(rater_id=rater_id)
            .order_by("pk")
            .annotate(explained=ExpressionWrapper(~Q(item__explanation=""), BooleanField()))
            .values_list("pk", "status", "explained")
        )

    session = RaterSessionFactory()
    AssignmentFactory(session=session, item=ItemFactory(explanation="Because."))
    AssignmentFactory(session=session)
    got = CompiledRead(build)(session.rater_id)
    assert got == list(build(session.rater_id))
    assert [row[2] for row in got] == [True, False]  # booleans, also where SQLite stores 0 and 1


def test_a_read_that_depends_on_the_clock_is_refused():
    session = RaterSessionFactory()
    read = CompiledRead(
        lambda rater_id: RaterSession.objects.filter(rater_id=rater_id, deadline__gt=timezone.now())
    )
    with pytest.raises(CompiledReadError, match="besides its arguments"):
        read(session.rater_id)


def test_arguments_must_be_ints_or_strings_that_reach_the_sql():
    session = RaterSessionFactory()
    unused = CompiledRead(lambda rater_id, slug: Rater.objects.filter(pk=rater_id))
    with pytest.raises(CompiledReadError, match=r"arguments \[1\] do not reach the SQL"):
        unused(session.rater_id, "study")
    by_time = CompiledRead(lambda at: RaterSession.objects.filter(deadline__gt=at))
    with pytest.raises(CompiledReadError, match="int or str, not datetime"):
        by_time(timezone.now())
    with pytest.raises(CompiledReadError, match="int or str, not NoneType"):
        CompiledRead(lambda pk: Rater.objects.filter(pk=pk))(None)  # type: ignore[arg-type]


@pytest.mark.django_db(transaction=True)
def test_a_locking_read_outside_a_transaction_fails_as_the_querysets_does():
    assignment = AssignmentFactory()

    def build(pk):  # type: ignore[no-untyped-def]
        return Assignment.objects.select_for_update().filter(pk=pk)

    read = CompiledRead(build)
    try:
        list(build(assignment.pk))
    except TransactionManagementError:
        orm_refuses = True  # PostgreSQL
    else:
        orm_refuses = False  # SQLite takes no row locks
    if orm_refuses:
        with pytest.raises(TransactionManagementError):
            read(assignment.pk)
    else:
        assert [a.pk for a in read(assignment.pk)] == [assignment.pk]
    with transaction.atomic():
        assert [a.pk for a in read(assignment.pk)] == [assignment.pk]


def test_a_session_is_read_back_and_an_expired_one_is_no_session():
    store = SessionStore()
    store["laughlab:rater:7"] = 41
    store.save()
    key = store.session_key
    assert SessionStore(session_key=key).load() == {"laughlab:rater:7": 41}
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    expired = SessionStore(session_key=key)
    assert expired.load() == {}
    assert expired.session_key is None
    assert SessionStore(session_key="no-such-key-at-all-anywhere").load() == {}


def _new_task(session, item, position):  # type: ignore[no-untyped-def]
    return {
        "study": session.rater.study,
        "rater": session.rater,
        "session": session,
        "kind": Assignment.Kind.SCORECARD,
        "item": item,
        "position": position,
        "reason": "coverage",
    }


def test_a_compiled_insert_stores_the_row_create_stores(django_assert_num_queries):
    insert = CompiledInsert(Assignment)
    session = RaterSessionFactory()
    items = [ItemFactory(study=session.rater.study) for _ in range(3)]
    made = []
    for position, item in enumerate(items[:2], start=1):
        with django_assert_num_queries(1):
            made.append(insert(**_new_task(session, item, position)))
        made[-1].status = Assignment.Status.DONE
        made[-1].save(update_fields=["status"])  # one open task per rater
    made[-1].status = Assignment.Status.PENDING  # as it was stored
    by_orm = Assignment.objects.create(**_new_task(session, items[2], 3))
    for obj in made:
        # The instance is what create() returns: saved, with its key and its defaults.
        assert obj.pk is not None
        assert obj._state.adding is False
        assert obj._state.db == "default"
        assert obj.created_at is not None
        stored = Assignment.objects.get(pk=obj.pk)
        assert _fields(stored) == {**_fields(obj), "status": Assignment.Status.DONE}
    differ = ("id", "item_id", "position", "created_at")
    assert {k: v for k, v in _fields(made[1]).items() if k not in differ} == {
        k: v for k, v in _fields(by_orm).items() if k not in differ
    }


def test_the_insert_is_compiled_on_the_first_call_only():
    insert = CompiledInsert(ScoreAnswer)
    response = ScoreResponseFactory()
    questions = list(Question.objects.filter(rubric=response.study.rubric)[:3])
    with mock.patch.object(
        SQLInsertCompiler, "as_sql", autospec=True, side_effect=SQLInsertCompiler.as_sql
    ) as spy:
        for question in questions:
            insert(response=response, question=question, value=2.0)
    assert spy.call_count == 1
    assert sorted(
        ScoreAnswer.objects.filter(response=response).values_list("question_id", flat=True)
    ) == sorted(q.pk for q in questions)


def test_a_refused_insert_raises_as_create_does_and_stores_nothing():
    insert = CompiledInsert(Assignment)
    session = RaterSessionFactory()
    item = ItemFactory(study=session.rater.study)
    insert(**_new_task(session, item, 1))
    before = Assignment.objects.count()
    with pytest.raises(IntegrityError), transaction.atomic():
        insert(**_new_task(session, ItemFactory(study=session.rater.study), 1))  # same position
    assert Assignment.objects.count() == before


def test_an_insert_unless_conflict_stores_the_row_or_nothing_and_the_transaction_goes_on(
    django_assert_num_queries,
):
    insert = CompiledInsert(Assignment)
    session = RaterSessionFactory()
    first, second = (ItemFactory(study=session.rater.study) for _ in range(2))
    with transaction.atomic():
        with django_assert_num_queries(1):
            made = insert.unless_conflict(**_new_task(session, first, 1))
        assert made is not None
        assert made.pk is not None
        assert made._state.adding is False
        # Another open task for the same rater: the one-open-task constraint refuses it.
        with django_assert_num_queries(1):
            assert insert.unless_conflict(**_new_task(session, second, 2)) is None
        # No savepoint was spent, and the transaction is still usable: what it stored stands.
        assert list(Assignment.objects.filter(session=session).values_list("pk", flat=True)) == [
            made.pk
        ]
    stored = Assignment.objects.get(session=session)
    assert _fields(stored) == _fields(made)


def test_an_insert_unless_conflict_on_the_orms_path_refuses_in_a_savepoint():
    insert = CompiledInsert(Assignment)
    session = RaterSessionFactory()
    first, second = (ItemFactory(study=session.rater.study) for _ in range(2))

    def receiver(sender, instance, created, **kwargs):  # type: ignore[no-untyped-def]
        pass

    signals.post_save.connect(receiver, sender=Assignment, weak=False)
    try:
        with transaction.atomic():
            made = insert.unless_conflict(**_new_task(session, first, 1))
            assert insert.unless_conflict(**_new_task(session, second, 2)) is None
            assert Assignment.objects.filter(session=session).count() == 1
    finally:
        signals.post_save.disconnect(receiver, sender=Assignment)
    assert made is not None
    assert list(Assignment.objects.filter(session=session).values_list("pk", flat=True)) == [
        made.pk
    ]


def test_a_model_with_save_receivers_takes_the_orms_path():
    insert = CompiledInsert(Assignment)
    session = RaterSessionFactory()
    seen = []

    def receiver(sender, instance, created, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((instance.position, created))

    signals.post_save.connect(receiver, sender=Assignment, weak=False)
    try:
        made = insert(**_new_task(session, ItemFactory(study=session.rater.study), 1))
    finally:
        signals.post_save.disconnect(receiver, sender=Assignment)
    assert seen == [(1, True)]
    assert Assignment.objects.filter(pk=made.pk).exists()


def test_a_compiled_insert_is_only_for_a_model_of_one_table_with_an_automatic_key():
    with pytest.raises(CompiledReadError, match="automatic key"):
        CompiledInsert(Session)(session_key="k" * 32, session_data="", expire_date=timezone.now())
    assert not Session.objects.exists()


# Rows of one table written at once ---------------------------------------------------------

_ANSWER_FIELDS = ("response_id", "question_id", "value", "answered_at", "received_at")


def _answer_rows(response, questions, value, at):  # type: ignore[no-untyped-def]
    return [(response.pk, q.pk, value + n, at, at) for n, q in enumerate(questions)]


def test_compiled_rows_store_what_bulk_create_stores(django_assert_num_queries):
    rows = compiled.CompiledRows(ScoreAnswer, _ANSWER_FIELDS)
    now = timezone.now()
    ours, theirs = ScoreResponseFactory(), ScoreResponseFactory()
    questions = list(Question.objects.filter(rubric=ours.study.rubric).order_by("position")[:3])
    with django_assert_num_queries(1):
        rows(_answer_rows(ours, questions, 2, now))
    ScoreAnswer.objects.bulk_create(
        [
            ScoreAnswer(**dict(zip(_ANSWER_FIELDS, row, strict=True)))
            for row in _answer_rows(theirs, questions, 2, now)
        ]
    )

    def stored(response):  # type: ignore[no-untyped-def]
        return list(
            ScoreAnswer.objects.filter(response=response)
            .order_by("question__position")
            .values_list("question_id", "value", "answered_at", "received_at")
        )

    assert stored(ours) == stored(theirs)
    assert [value for _, value, _, _ in stored(ours)] == [2.0, 3.0, 4.0]
    with django_assert_num_queries(0):
        rows([])  # nothing to store sends nothing


def test_compiled_rows_store_a_column_of_nothing_but_nulls():
    """A nullable column with no value in any row: an array of NULLs alone has no type, so the
    statement types each array itself."""
    rows = compiled.CompiledRows(ScoreAnswer, _ANSWER_FIELDS)
    response = ScoreResponseFactory()
    question = Question.objects.filter(rubric=response.study.rubric).first()
    rows([(response.pk, question.pk, 1.0, None, None)])
    rows([(ScoreResponseFactory().pk, question.pk, 2.0, None, None)])  # prepared: executed
    stored = ScoreAnswer.objects.get(response=response)
    assert (stored.value, stored.answered_at, stored.received_at) == (1.0, None, None)


def test_compiled_rows_are_written_once_and_not_by_the_orm(postgres_only):
    rows = compiled.CompiledRows(ScoreAnswer, _ANSWER_FIELDS)
    now = timezone.now()
    first, second = ScoreResponseFactory(), ScoreResponseFactory()
    questions = list(Question.objects.filter(rubric=first.study.rubric)[:2])
    with mock.patch.object(
        SQLInsertCompiler, "as_sql", autospec=True, side_effect=SQLInsertCompiler.as_sql
    ) as spy:
        rows(_answer_rows(first, questions, 1, now))
        with CaptureQueriesContext(connection) as sent:
            rows(_answer_rows(second, questions, 1, now))
    assert spy.call_count == 0
    assert [readable(q["sql"]).split(" SELECT")[0] for q in sent.captured_queries] == [
        'INSERT INTO "judgments_scoreanswer" ("response_id", "question_id", "value", '
        '"answered_at", "received_at")'
    ]
    assert ScoreAnswer.objects.filter(response__in=[first, second]).count() == 4


def test_compiled_rows_are_sent_as_written_where_statements_are_not_prepared(
    postgres_only, settings
):
    settings.DB_PREPARED_READS = False
    rows = compiled.CompiledRows(ScoreAnswer, _ANSWER_FIELDS)
    response = ScoreResponseFactory()
    questions = list(Question.objects.filter(rubric=response.study.rubric)[:2])
    with CaptureQueriesContext(connection) as sent:
        rows(_answer_rows(response, questions, 1, timezone.now()))
    (statement,) = [q["sql"] for q in sent.captured_queries]
    assert statement.startswith('INSERT INTO "judgments_scoreanswer"')
    assert "UNNEST" in statement
    assert ScoreAnswer.objects.filter(response=response).count() == 2


def test_compiled_rows_upsert_replaces_what_the_unique_fields_already_hold():
    rows = compiled.CompiledRows(
        ScoreAnswer,
        _ANSWER_FIELDS,
        upsert=(("response", "question"), ("value", "answered_at", "received_at")),
    )
    response = ScoreResponseFactory()
    questions = list(Question.objects.filter(rubric=response.study.rubric)[:2])
    before, after = timezone.now() - timedelta(seconds=5), timezone.now()
    rows(_answer_rows(response, questions, 1, before))
    rows([(response.pk, questions[1].pk, 9.0, after, after)])
    assert sorted(
        ScoreAnswer.objects.filter(response=response).values_list("value", "received_at")
    ) == [(1.0, before), (9.0, after)]


def test_a_refused_row_stores_none_of_the_rows(transactional_db):
    rows = compiled.CompiledRows(ScoreAnswer, _ANSWER_FIELDS)
    response = ScoreResponseFactory()
    questions = list(Question.objects.filter(rubric=response.study.rubric)[:2])
    now = timezone.now()
    rows(_answer_rows(response, questions[:1], 1, now))
    # The second row answers the first question again: the unique constraint refuses it.
    with pytest.raises(IntegrityError), transaction.atomic():
        rows(_answer_rows(response, [questions[1], questions[0]], 5, now))
    assert list(ScoreAnswer.objects.filter(response=response).values_list("value")) == [(1.0,)]


def test_compiled_rows_name_every_field_but_the_key():
    response = ScoreResponseFactory()
    with pytest.raises(CompiledReadError, match="every field but the key"):
        compiled.CompiledRows(ScoreAnswer, _ANSWER_FIELDS[:-1])([(response.pk, 1, 1.0, None)])
    with pytest.raises(CompiledReadError, match="attname"):
        compiled.CompiledRows(ScoreAnswer, ("response", *_ANSWER_FIELDS[1:]))([])
    assert not ScoreAnswer.objects.exists()


# Planned once per connection on PostgreSQL -------------------------------------------------


def _sent(read, *args):  # type: ignore[no-untyped-def]
    """What one call sent, and what it returned."""
    with CaptureQueriesContext(connection) as sent:
        rows = read(*args)
    return [query["sql"] for query in sent.captured_queries], rows


def _read_back(read, assignment) -> list[str]:  # type: ignore[no-untyped-def]
    """What reading `assignment` sent; the read must find it."""
    sent, rows = _sent(read, assignment.pk, assignment.rater_id)
    assert [row.pk for row in rows] == [assignment.pk]
    return sent


@pytest.fixture
def assignment_read(postgres_only):  # type: ignore[no-untyped-def]
    """A compiled read of the rater's assignment, not yet called, and an assignment to read."""
    return CompiledRead(_assignment_for_rater), AssignmentFactory()


def _held() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        return {name for (name,) in cursor.fetchall()}


def test_placeholders_are_numbered_for_prepare_and_a_literal_percent_stays():
    sql = "SELECT a FROM t WHERE b = %s AND c LIKE 'x%%' AND d = %s"
    assert compiled._numbered(sql) == "SELECT a FROM t WHERE b = $1 AND c LIKE 'x%%' AND d = $2"


def test_on_postgresql_a_read_is_prepared_on_its_first_call_and_then_only_executed(
    assignment_read,
):
    read, first = assignment_read
    second = AssignmentFactory()
    sent = _read_back(read, first)
    # One round trip: the PREPARE travels with the first EXECUTE.
    assert len(sent) == 1
    assert sent[0].startswith("PREPARE laughlab_read_")
    name = sent[0].split()[1]
    assert name in _held()
    for assignment in (second, first):
        sent, rows = _sent(read, assignment.pk, assignment.rater_id)
        assert sent == [f"EXECUTE {name} ({assignment.pk}, {assignment.rater_id})"]
        (expected,) = _assignment_for_rater(assignment.pk, assignment.rater_id)
        assert _fields(rows[0]) == _fields(expected)
        assert _fields(rows[0].item) == _fields(expected.item)
    assert read(first.pk, second.rater_id) == []


@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_the_read_again(assignment_read):
    read, assignment = assignment_read
    _read_back(read, assignment)
    connection.close()
    assert _read_back(read, assignment)[0].startswith("PREPARE ")
    assert _read_back(read, assignment)[0].startswith("EXECUTE ")


def test_a_statement_prepared_in_a_rolled_back_transaction_is_still_held(assignment_read):
    read, assignment = assignment_read
    with transaction.atomic():
        _read_back(read, assignment)
        transaction.set_rollback(True)
    assert _read_back(read, assignment)[0].startswith("EXECUTE ")


def test_a_call_that_fails_after_its_prepare_leaves_the_next_call_working(assignment_read):
    read, assignment = assignment_read
    # Out of bigint's range: the PREPARE succeeds, the EXECUTE fails, and the statement stays.
    with pytest.raises(DataError), transaction.atomic():
        read(2**70, assignment.rater_id)
    sent = _read_back(read, assignment)
    # The server is asked what it holds, and the statement is not prepared twice.
    assert sent[0] == "SELECT name FROM pg_prepared_statements"
    assert sent[1].startswith("EXECUTE ")


def test_prepared_reads_can_be_turned_off(assignment_read, settings):
    settings.DB_PREPARED_READS = False
    read, assignment = assignment_read
    for _ in range(2):
        assert _read_back(read, assignment)[0].startswith("SELECT ")


def test_a_prepared_reads_statements_read_back_as_their_sql_and_values(assignment_read):
    read, assignment = assignment_read
    for _ in range(2):  # the PREPARE with its EXECUTE, then the EXECUTE alone
        shown = readable(_read_back(read, assignment)[0])
        assert shown.startswith('SELECT "assignments_assignment"."id"')
        assert '"assignments_assignment"."id" = $1' in shown
        assert shown.endswith(f"/* {assignment.pk}, {assignment.rater_id} */")
    assert readable("SELECT 1") == "SELECT 1"
    assert readable("EXECUTE not_ours (1)") == "EXECUTE not_ours (1)"


def _run(read: compiled.PreparedRead, params: list[object]) -> tuple[list[str], list[tuple]]:  # type: ignore[type-arg]
    """What running a hand-written prepared read sent, and its rows."""
    with CaptureQueriesContext(connection) as sent, connection.cursor() as cursor:
        read.run(lambda sql: cursor.execute(sql, params), len(params))
        rows = cursor.fetchall()
    return [query["sql"] for query in sent.captured_queries], rows


HAND_WRITTEN = (
    "SELECT id, status FROM assignments_assignment WHERE id = ANY(%s) AND status = %s "
    "ORDER BY array_position(%s, id)"
)


def test_a_read_written_in_sql_is_prepared_once_per_connection_and_returns_its_rows(
    postgres_only: None,
) -> None:
    first, second = AssignmentFactory(), AssignmentFactory()
    read = compiled.PreparedRead(HAND_WRITTEN)
    order = [second.pk, first.pk]
    expected = [(second.pk, "done"), (first.pk, "done")]
    sent, rows = _run(read, [order, "done", order])
    assert sent[0].startswith("PREPARE laughlab_read_")
    assert rows == expected
    sent, rows = _run(read, [order, "done", order])
    assert len(sent) == 1
    assert sent[0].startswith("EXECUTE laughlab_read_")
    assert rows == expected
    assert readable(sent[0]).startswith("SELECT id, status FROM assignments_assignment")
    assert _run(read, [[first.pk], "pending", [first.pk]])[1] == []


def test_a_read_written_in_sql_runs_as_written_where_reads_are_not_prepared(settings) -> None:
    settings.DB_PREPARED_READS = False
    assignment = AssignmentFactory()
    read = compiled.PreparedRead("SELECT id FROM assignments_assignment WHERE id = %s")
    for _ in range(2):
        sent, rows = _run(read, [assignment.pk])
        assert sent[0].startswith("SELECT id FROM")
        assert rows == [(assignment.pk,)]


def test_the_same_text_shares_one_prepared_read() -> None:
    sql = "SELECT 1 WHERE 1 = %s"
    assert compiled.prepared_read(sql) is compiled.prepared_read(sql)
    assert compiled.prepared_read(sql) is not compiled.prepared_read(sql + " ")
