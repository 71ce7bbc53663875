"""The target counts the task chooser ranks by (written in SQL for speed) against the same
counts made row by row in Python from the models: live claims and imported scores count, ended
or expired claims, other kinds and other studies do not."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.assignments.selectors import (
    pair_counts,
    scorecard_counts,
    scorecard_totals,
    turing_counts,
)
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import RaterSession
from apps.studies.models import Study
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    PairJudgmentFactory,
    RaterFactory,
    RaterSessionFactory,
    ScoreResponseFactory,
    StudyFactory,
    TuringJudgmentFactory,
)

pytestmark = pytest.mark.django_db


def _is_live(a: Assignment, now: datetime) -> bool:
    return a.status == "done" or (
        a.status == "pending" and a.session.ended_at is None and a.session.deadline > now
    )


def _by_hand(study: Study) -> tuple[Counter[int], dict[int, Counter[int]]]:
    now = timezone.now()
    total: Counter[int] = Counter()
    by_group: dict[int, Counter[int]] = defaultdict(Counter)
    for a in Assignment.objects.filter(study=study).select_related("session", "rater"):
        if a.kind == "scorecard" and _is_live(a, now):
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


def _sessions_live_ended_and_past_deadline(study: Study, n: int) -> list[RaterSession]:
    now = timezone.now()
    sessions = []
    for i in range(n):
        session = RaterSessionFactory(rater=RaterFactory(study=study))
        if i % 3 == 1:
            RaterSession.objects.filter(pk=session.pk).update(
                ended_at=now, end_reason=RaterSession.EndReason.COMPLETED
            )
        if i % 3 == 2:
            RaterSession.objects.filter(pk=session.pk).update(
                started_at=now - timedelta(hours=2), deadline=now - timedelta(hours=1)
            )
        session.refresh_from_db()
        sessions.append(session)
    return sessions


def test_turing_and_pair_counts_equal_the_counts_made_row_by_row(builtin_rubrics):
    study = StudyFactory()
    items = [ItemFactory(study=study) for _ in range(5)]
    for i, session in enumerate(_sessions_live_ended_and_past_deadline(study, 6)):
        AssignmentFactory(session=session, item=items[i % 5], kind="turing")
        AssignmentFactory(
            session=session,
            item=items[(i + 1) % 5],
            kind="turing",
            status="pending" if i % 2 else "expired",
        )
        AssignmentFactory(
            session=session, item=items[i % 5], right_item=items[(i + 2) % 5], kind="pair"
        )
        # Imported judgments (no assignment) count too.
        TuringJudgmentFactory(session=session, item=items[i % 3])
        PairJudgmentFactory(session=session, left=items[4], right=items[i % 4])
    other = StudyFactory()
    other_session = RaterSessionFactory(rater=RaterFactory(study=other))
    AssignmentFactory(session=other_session, item=ItemFactory(study=other), kind="turing")
    TuringJudgmentFactory(session=other_session, item=ItemFactory(study=other))
    PairJudgmentFactory(session=other_session)

    now = timezone.now()
    turing: Counter[int] = Counter()
    appearances: Counter[int] = Counter()
    opponents: dict[int, set[int]] = defaultdict(set)
    for a in Assignment.objects.filter(study=study).select_related("session"):
        if not _is_live(a, now):
            continue
        if a.kind == "turing":
            turing[a.item_id] += 1
        if a.kind == "pair":
            appearances[a.item_id] += 1
            appearances[a.right_item_id] += 1
            opponents[a.item_id].add(a.right_item_id)
            opponents[a.right_item_id].add(a.item_id)
    for t in TuringJudgment.objects.filter(study=study, assignment__isnull=True):
        turing[t.item_id] += 1
    for p in PairJudgment.objects.filter(study=study, assignment__isnull=True):
        appearances[p.left_id] += 1
        appearances[p.right_id] += 1
        opponents[p.left_id].add(p.right_id)
        opponents[p.right_id].add(p.left_id)

    assert turing_counts(study=study) == turing
    some = [items[0].pk, items[1].pk]
    assert turing_counts(study=study, item_ids=some) == Counter(
        {pk: turing[pk] for pk in some if turing[pk]}
    )
    assert turing_counts(study=study, item_ids=[]) == Counter()
    counted_appearances, counted_opponents = pair_counts(study=study)
    assert counted_appearances == appearances
    assert dict(counted_opponents) == dict(opponents)
    assert sum(turing.values()) > 0
    assert sum(appearances.values()) > 0
