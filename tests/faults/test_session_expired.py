"""A rater's session passes its deadline between the task being shown and the answer arriving."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.judgments.models import ScoreAnswer, ScoreResponse
from apps.raters.models import RaterSession
from tests.faults import browser, next_task, post_scorecard, scorecard_study

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_deadline_passing_mid_answer_is_410_keeps_two_earlier_answers_and_times_out(
    postgres_only, builtin_rubrics
):
    study = scorecard_study()
    client, rater, first = browser(study)
    assert post_scorecard(client, study, first, "exp-0001-aaaa").status_code == 201
    second = next_task(client, study, rater)
    assert post_scorecard(client, study, second, "exp-0002-bbbb").status_code == 201
    third = next_task(client, study, rater)  # shown to the rater ...
    now = timezone.now()
    # ... who answers after the deadline.
    RaterSession.objects.filter(rater=rater).update(
        started_at=now - timedelta(minutes=31), deadline=now - timedelta(seconds=1)
    )

    response = post_scorecard(client, study, third, "exp-0003-cccc")

    assert response.status_code == 410
    body = response.json()
    assert body["code"] == "session_timed_out"
    assert "time" in body["message"].lower()
    kept = ScoreResponse.objects.filter(rater=rater).order_by("submitted_at")
    assert list(kept.values_list("assignment_id", flat=True)) == [first.pk, second.pk]
    assert ScoreAnswer.objects.filter(response__rater=rater).count() == 2 * 4
    session = RaterSession.objects.get(rater=rater)
    assert session.end_reason == RaterSession.EndReason.TIMED_OUT
    assert session.ended_at is not None
    third.refresh_from_db()
    assert third.status == Assignment.Status.EXPIRED
    # A retry of the late answer is refused the same way and stores nothing.
    again = post_scorecard(client, study, third, "exp-0003-cccc")
    assert again.status_code == 410
    assert ScoreResponse.objects.filter(rater=rater).count() == 2
    assert client.get(f"/s/{study.slug}/task/")["Location"] == f"/s/{study.slug}/end/"
