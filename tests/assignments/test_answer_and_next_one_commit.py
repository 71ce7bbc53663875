"""An answer and the task after it are one commit (`with_next`): the next task is chosen in
the answer's own transaction, two statements fewer than a transaction of its own. Nothing the
choice meets undoes the answer: every candidate held by others, or a task another tab handed
out meanwhile, leaves the answer stored and the next page to ask again."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.assignments.models import Assignment
from apps.assignments.selectors import rater_tasks
from apps.assignments.services import assignment_next_in_transaction
from apps.core.errors import Busy
from apps.judgments.models import TuringJudgment
from apps.raters.models import RaterSession
from apps.studies.models import Item
from tests.assignments.test_next_in_place import _enrol, _post, _study
from tests.faults import other_connection


def _turing(client, study, assignment: int, key: str):  # type: ignore[no-untyped-def]
    body = {"assignment": assignment, "idempotency_key": key, "active_ms": 900, "guess": "ai"}
    return _post(client, study, "turing", {**body, "with_next": True, "layout": "turing"})


def _committed_writes(queries: CaptureQueriesContext) -> list[list[str]]:
    """The writes ("INSERT table", "UPDATE table") of each COMMIT the request sent, in order."""
    done: list[list[str]] = []
    current: list[str] = []
    for query in queries.captured_queries:
        sql = query["sql"]
        if sql == "COMMIT":
            done.append(current)
            current = []
        elif sql.startswith(("INSERT", "UPDATE")):
            words = sql.split()
            table = words[words.index("INTO") + 1] if words[0] == "INSERT" else words[1]
            current.append(f"{words[0]} {table.strip(chr(34))}")
    return done


def _other_tabs_task(session: RaterSession, status: str) -> Assignment:
    """The task another tab of the same rater stored after this request read the rater's
    tasks: the second of the session, on an item the rater has not had."""
    rater = session.rater
    return Assignment.objects.create(
        study=rater.study,
        rater=rater,
        session=session,
        kind=Assignment.Kind.TURING,
        item=Item.objects.filter(study=rater.study).exclude(assignments__rater=rater).first(),
        position=2,
        status=status,
    )


@pytest.mark.django_db(transaction=True)  # the request's own BEGIN and COMMIT, not savepoints
def test_the_answer_and_the_next_task_are_one_commit() -> None:
    study = _study(task_mix={"turing": 1.0})
    client, rater, first = _enrol(study)
    with CaptureQueriesContext(connection) as queries:
        response = _turing(client, study, first, "k" * 8)
    assert response.status_code == 201
    task = response.json()["task"]
    assert task["id"] != first
    stored = TuringJudgment.objects.get(rater=rater)
    assert stored.assignment_id == first
    writes = _committed_writes(queries)
    # One transaction stores the answer, closes its task and hands out the next one.
    assert writes[0] == [
        "INSERT judgments_turingjudgment",
        "UPDATE assignments_assignment",
        "INSERT assignments_assignment",
    ], writes
    # What commits after it is the results' (the aggregation runs inline in tests).
    assert not [w for later in writes[1:] for w in later if "judgments" in w or "assignments" in w]
    assert Assignment.objects.get(pk=task["id"]).status == Assignment.Status.PENDING


@pytest.mark.django_db
def test_a_task_another_tab_handed_out_meanwhile_stands_and_the_transaction_goes_on() -> None:
    study = _study(task_mix={"turing": 1.0})
    _client, rater, first = _enrol(study)
    session = RaterSession.objects.get(rater=rater)
    Assignment.objects.filter(pk=first).update(status=Assignment.Status.DONE)
    with transaction.atomic():
        stale = rater_tasks(rater=rater)  # read before the other tab's task was stored
        other = _other_tabs_task(session, Assignment.Status.PENDING)
        assert assignment_next_in_transaction(rater=rater, session=session, tasks=stale) == other
        # No statement failed: the transaction is usable, and holds one open task.
        assert list(Assignment.objects.filter(rater=rater, status="pending")) == [other]


@pytest.mark.django_db
def test_a_task_another_tab_handed_out_and_answered_meanwhile_raises_busy_having_written_nothing() -> (
    None
):
    study = _study(task_mix={"turing": 1.0})
    _client, rater, first = _enrol(study)
    session = RaterSession.objects.get(rater=rater)
    Assignment.objects.filter(pk=first).update(status=Assignment.Status.DONE)
    with transaction.atomic():
        stale = rater_tasks(rater=rater)
        _other_tabs_task(session, Assignment.Status.DONE)
        before = Assignment.objects.filter(rater=rater).count()
        with pytest.raises(Busy):
            assignment_next_in_transaction(rater=rater, session=session, tasks=stale)
        assert Assignment.objects.filter(rater=rater).count() == before


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_every_candidate_held_by_others_leaves_the_answer_stored_and_the_next_page_to_ask(
    postgres_only: None,
) -> None:
    study = _study(task_mix={"turing": 1.0})
    client, rater, first = _enrol(study)
    other = other_connection()
    try:
        other.autocommit = False
        with other.cursor() as cursor:
            # Another request choosing for another rater holds every item of the study.
            cursor.execute(
                "SELECT id FROM studies_item WHERE study_id = %s FOR NO KEY UPDATE", [study.pk]
            )
        response = _turing(client, study, first, "k" * 8)
    finally:
        other.rollback()
        other.close()
    assert response.status_code == 201
    assert response.json()["task"] is None  # the page loads `next`, which asks again
    assert TuringJudgment.objects.get(rater=rater).assignment_id == first
    assert Assignment.objects.get(pk=first).status == Assignment.Status.DONE
    assert not Assignment.objects.filter(rater=rater, status="pending").exists()
    # The next page hands out the task the answer could not.
    page = client.get(f"/s/{study.slug}/task/")
    assert page.status_code == 200
    assert Assignment.objects.filter(rater=rater, status="pending").count() == 1
