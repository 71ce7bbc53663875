"""The target counts the task chooser ranks by (written in SQL for speed) against the same
counts made row by row in Python from the models: live claims and imported scores count, ended
or expired claims, other kinds and other studies do not."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.assignments.selectors import scorecard_counts, scorecard_totals
from apps.judgments.models import ScoreResponse
from apps.raters.models import RaterSession
from apps.studies.models import Study
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    RaterFactory,
    RaterSessionFactory,
    ScoreResponseFactory,
    StudyFactory,
)

pytestmark = pytest.mark.django_db


def _by_hand(study: Study) -> tuple[Counter[int], dict[int, Counter[int]]]:
    now = timezone.now()
    total: Counter[int] = Counter()
    by_group: dict[int, Counter[int]] = defaultdict(Counter)
    for a in Assignment.objects.filter(study=study).select_related("session", "rater"):
        live = a.status == "done" or (
            a.status == "pending" and a.session.ended_at is None and a.session.deadline > now
        )
        if a.kind == "scorecard" and live:
            total[a.item_id] += 1
            by_group[a.rater.background_id][a.item_id] += 1
    for r in ScoreResponse.objects.filter(study=study, assignment__isnull=True).select_related(
        "rater"
    ):
        total[r.item_id] += 1
        by_group[r.rater.background_id][r.item_id] += 1
    return total, by_group


def test_scorecard_counts_equal_the_counts_made_row_by_row(builtin_rubrics):
    study = StudyFactory()
    items = [ItemFactory(study=study) for _ in range(5)]
    groups = list(study.background_groups.order_by("position"))
    now = timezone.now()
    for n in range(8):
        rater = RaterFactory(study=study, background=groups[n % 2])
        # Sessions: live, ended, and past their deadline.
        session = RaterSessionFactory(rater=rater)
        if n == 5:
            RaterSession.objects.filter(pk=session.pk).update(
                ended_at=now, end_reason=RaterSession.EndReason.COMPLETED
            )
        if n == 6:
            RaterSession.objects.filter(pk=session.pk).update(
                started_at=now - timedelta(hours=2), deadline=now - timedelta(hours=1)
            )
        session.refresh_from_db()
        for item in items[: 1 + n % 4]:
            AssignmentFactory(session=session, item=item)
        AssignmentFactory(session=session, item=items[4], status="pending" if n % 3 else "expired")
        AssignmentFactory(session=session, item=items[n % 4], kind="turing")
        # Imported scores (no assignment) count too.
        ScoreResponseFactory(session=session, item=items[n % 2])
    # Another study's claims and scores must not leak in.
    other = StudyFactory()
    other_item = ItemFactory(study=other)
    other_rater = RaterFactory(study=other)
    other_session = RaterSessionFactory(rater=other_rater)
    AssignmentFactory(session=other_session, item=other_item)
    ScoreResponseFactory(session=other_session, item=other_item)

    total, by_group = scorecard_counts(study=study)
    expected_total, expected_by_group = _by_hand(study)
    assert total == expected_total
    assert {g: dict(c) for g, c in by_group.items()} == {
        g: dict(c) for g, c in expected_by_group.items()
    }
    assert sum(total.values()) > 0
    assert len(by_group) == 2

    some = [items[0].pk, items[2].pk]
    assert scorecard_totals(study=study, item_ids=some) == Counter(
        {pk: expected_total[pk] for pk in some if expected_total[pk]}
    )
    assert scorecard_totals(study=study, item_ids=[]) == Counter()
