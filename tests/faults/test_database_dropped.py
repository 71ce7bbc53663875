"""The database connection of a request is terminated mid-submission: the rater gets a clean,
retryable error, and a retry with the same idempotency key stores exactly one judgment."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models.signals import post_save

from apps.assignments.models import Assignment
from apps.judgments.models import ScoreAnswer, ScoreResponse
from tests.faults import browser, other_connection, post_scorecard, scorecard_study

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

KEY = "drop-0001-aaaa"


def _terminate_backend(pid: int) -> None:
    other = other_connection()
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            assert cursor.fetchone() == (True,)
    finally:
        other.close()


def test_connection_dropped_mid_submission_is_a_clean_503_and_the_retry_stores_one(
    postgres_only, builtin_rubrics
):
    study = scorecard_study()
    client, rater, assignment = browser(study)
    killed: list[int] = []

    def drop_connection(sender, instance, created, **kwargs):  # type: ignore[no-untyped-def]
        # The response row is written but not committed: the request's own backend goes away.
        if not killed:
            killed.append(connection.connection.get_backend_pid())
            _terminate_backend(killed[0])

    post_save.connect(drop_connection, sender=ScoreResponse, weak=False)
    try:
        response = post_scorecard(client, study, assignment, KEY)
    finally:
        post_save.disconnect(drop_connection, sender=ScoreResponse)

    assert killed, "the submission never reached the database"
    assert response.status_code == 503, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    assert response["Retry-After"] == "1"
    body = response.json()
    assert body["code"] == "database_unavailable"
    assert "retry" in body["message"]
    # Nothing of the interrupted transaction was kept.
    assert ScoreResponse.objects.count() == 0
    assert ScoreAnswer.objects.count() == 0
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.PENDING

    retry = post_scorecard(client, study, assignment, KEY)
    assert retry.status_code == 201
    assert retry.json()["replayed"] is False
    replay = post_scorecard(client, study, assignment, KEY)
    assert replay.status_code == 200
    assert replay.json()["replayed"] is True
    stored = ScoreResponse.objects.get()
    assert (stored.rater_id, stored.assignment_id, stored.idempotency_key) == (
        rater.pk,
        assignment.pk,
        KEY,
    )
    assert ScoreAnswer.objects.filter(response=stored).count() == 4
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.DONE
