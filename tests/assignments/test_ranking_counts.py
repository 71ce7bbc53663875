"""Counts kept per process for ranking task candidates (apps/assignments/ranking_counts.py):
reused within their age, added to as this process commits tasks, never trusted for a target or
for "nothing left"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.assignments import ranking_counts
from apps.assignments.models import Assignment
from apps.assignments.services import assignment_next
from apps.core.compiled import readable
from apps.raters.models import Rater, RaterSession
from apps.raters.services import rater_session_end
from apps.studies.models import Item, Study
from tests.assignments.helpers import enroll
from tests.factories import AssignmentFactory, ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def kept_counts(settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    settings.TASK_COUNTS_MAX_AGE_SECONDS = 60.0
    ranking_counts.forget_all()
    yield
    ranking_counts.forget_all()


def _study(kind: str, **fields: object) -> Study:
    values: dict[str, object] = {
        "task_mix": {kind: 1.0},
        "attention_check_rate": 0,
        "tasks_per_session": 40,
        "random_seed": 7,
    }
    values.update(fields)
    return StudyFactory(**values)


def _items(study: Study, n: int, **fields: object) -> list[Item]:
    return [ItemFactory(study=study, external_id=f"j{i:03d}", **fields) for i in range(n)]


def _next(rater: Rater, session: RaterSession, callbacks_fixture) -> Assignment | None:  # type: ignore[no-untyped-def]
    # The task is noted in the kept counts when its transaction commits, as in a request.
    with callbacks_fixture(execute=True):
        return assignment_next(rater=rater, session=session)


def test_kept_counts_are_reused_within_their_age_and_fresh_ones_replace_them(
    django_assert_num_queries,
):
    study = _study("scorecard")
    item = _items(study, 1)[0]
    first = ranking_counts.scorecards(study=study)
    assert not first.kept
    AssignmentFactory(study=study, item=item, kind="scorecard")  # another process's task
    with django_assert_num_queries(0):
        again = ranking_counts.scorecards(study=study)
    assert again.kept
    assert again.counts[0][item.pk] == 0  # not seen yet: at most the kept age behind
    fresh = ranking_counts.scorecards(study=study, fresh=True)
    assert (fresh.kept, fresh.counts[0][item.pk]) == (False, 1)
    assert ranking_counts.scorecards(study=study).counts[0][item.pk] == 1


def test_kept_counts_age_out(settings):
    settings.TASK_COUNTS_MAX_AGE_SECONDS = 0.05
    study = _study("turing")
    item = _items(study, 1)[0]
    assert ranking_counts.turing(study=study).counts[item.pk] == 0
    AssignmentFactory(study=study, item=item, kind="turing")
    started = timezone.now()
    while timezone.now() - started < timedelta(seconds=0.06):
        pass
    ranking = ranking_counts.turing(study=study)
    assert (ranking.kept, ranking.counts[item.pk]) == (False, 1)


def test_zero_age_counts_afresh_every_time(settings):
    settings.TASK_COUNTS_MAX_AGE_SECONDS = 0.0
    study = _study("scorecard")
    _items(study, 1)
    assert not ranking_counts.scorecards(study=study).kept
    assert not ranking_counts.scorecards(study=study).kept


@pytest.mark.parametrize("kind", ["scorecard", "turing", "pair"])
def test_this_process_adds_its_own_committed_tasks_to_the_kept_counts(
    kind, django_capture_on_commit_callbacks
):
    study = _study(kind)
    _items(study, 4, topic="cats")
    load = {
        "scorecard": ranking_counts.scorecards,
        "turing": ranking_counts.turing,
        "pair": ranking_counts.pairs,
    }[kind]
    load(study=study)  # kept from here on
    given = []
    for _ in range(3):
        rater, session = enroll(study)
        assignment = _next(rater, session, django_capture_on_commit_callbacks)
        assert assignment is not None
        given.append(assignment)
    kept = load(study=study)
    fresh = load(study=study, fresh=True)
    assert kept.kept
    assert kept.counts == fresh.counts  # exactly what counting the rows gives
    if kind == "scorecard":
        assert sum(kept.counts[0].values()) == 3
        group = given[0].rater.background_id
        assert sum(kept.counts[1][group].values()) == 3
    elif kind == "pair":
        assert sum(kept.counts[0].values()) == 6


def test_this_process_spreads_its_own_tasks_on_kept_counts(django_capture_on_commit_callbacks):
    # Four raters, four items, one kept count: each gets the item no one has yet, as with fresh
    # counts, because each task is added as it commits.
    study = _study("scorecard", target_scorecards_per_item=3)
    _items(study, 4)
    ranking_counts.scorecards(study=study)
    chosen = []
    for _ in range(4):
        rater, session = enroll(study)
        assignment = _next(rater, session, django_capture_on_commit_callbacks)
        assert assignment is not None
        chosen.append(assignment.item_id)
    assert len(set(chosen)) == 4


def test_a_target_holds_when_the_kept_counts_are_behind(django_capture_on_commit_callbacks):
    study = _study("scorecard", target_scorecards_per_item=1)
    first, second = _items(study, 2)
    ranking_counts.scorecards(study=study)  # kept: both items empty
    # Another process fills the first item; this one's kept counts do not know.
    AssignmentFactory(study=study, item=first, kind="scorecard", status="done")
    rater, session = enroll(study)
    given = _next(rater, session, django_capture_on_commit_callbacks)
    assert given is not None
    assert given.item_id == second.pk  # re-counted under the lock
    # Both full now, while the kept counts still show room on the first: no task, not a third
    # scorecard on it.
    rater, session = enroll(study)
    assert _next(rater, session, django_capture_on_commit_callbacks) is None
    per_item = Counter(
        Assignment.objects.filter(study=study, kind="scorecard").values_list("item_id", flat=True)
    )
    assert per_item == {first.pk: 1, second.pk: 1}


@pytest.mark.parametrize("kind", ["scorecard", "turing"])
def test_nothing_left_is_decided_on_fresh_counts(kind, django_capture_on_commit_callbacks):
    # The kept counts say the only item is full; its holder's session timed out since: the rater gets it.
    study = _study(kind, target_scorecards_per_item=1, turing_judgments_per_item=1)
    item = _items(study, 1)[0]
    holder, holder_session = enroll(study)
    held = _next(holder, holder_session, django_capture_on_commit_callbacks)
    assert held is not None
    assert held.item_id == item.pk
    load = ranking_counts.scorecards if kind == "scorecard" else ranking_counts.turing
    kept = load(study=study)
    counts = kept.counts[0] if kind == "scorecard" else kept.counts
    assert (kept.kept, counts[item.pk]) == (True, 1)
    rater_session_end(session=holder_session, reason=RaterSession.EndReason.TIMED_OUT)
    rater, session = enroll(study, "content_operations")
    given = _next(rater, session, django_capture_on_commit_callbacks)
    assert given is not None
    assert given.item_id == item.pk


def test_a_pair_is_still_found_when_the_kept_counts_say_every_item_is_paired_enough(
    django_capture_on_commit_callbacks,
):
    study = _study(
        "pair", pair_appearances_per_item=1, pair_min_opponents=1, adaptive_pairing=False
    )
    _items(study, 2, topic="cats")
    holder, holder_session = enroll(study)
    assert _next(holder, holder_session, django_capture_on_commit_callbacks) is not None
    assert ranking_counts.pairs(study=study).kept  # both items paired enough, as kept
    rater_session_end(session=holder_session, reason=RaterSession.EndReason.TIMED_OUT)
    rater, session = enroll(study)
    given = _next(rater, session, django_capture_on_commit_callbacks)
    assert given is not None
    assert given.kind == "pair"


def test_the_background_groups_are_counted_with_the_kept_counts_not_on_every_scorecard(
    django_capture_on_commit_callbacks,
):
    """The per-group target only orders candidates, so the number of groups is kept as the
    counts are: a statement on every scorecard handed out before."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    study = _study("scorecard")
    _items(study, 4)
    first_rater, first_session = enroll(study, "technical")
    assert _next(first_rater, first_session, django_capture_on_commit_callbacks) is not None
    rater, session = enroll(study, "content_operations")  # a second group: kept until aged
    with CaptureQueriesContext(connection) as queries:
        assert _next(rater, session, django_capture_on_commit_callbacks) is not None
    assert not [
        q for q in queries.captured_queries if "raters_backgroundgroup" in readable(q["sql"])
    ]


def _item_reads(queries) -> list[str]:  # type: ignore[no-untyped-def]
    # The read of every item raters may be given (selectors.study_items_to_rank).
    sent = [readable(q["sql"]) for q in queries.captured_queries]
    return [
        sql
        for sql in sent
        if sql.startswith('SELECT "studies_item"."id" AS "pk", "studies_item"."external_id"')
    ]


def test_the_study_items_are_kept_like_the_counts(django_capture_on_commit_callbacks):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    study = _study("scorecard")
    _items(study, 4)
    first_rater, first_session = enroll(study)
    with CaptureQueriesContext(connection) as queries:
        assert _next(first_rater, first_session, django_capture_on_commit_callbacks) is not None
    assert len(_item_reads(queries)) == 1
    rater, session = enroll(study)
    with CaptureQueriesContext(connection) as queries:
        assert _next(rater, session, django_capture_on_commit_callbacks) is not None
    assert _item_reads(queries) == []


@pytest.mark.parametrize("change", ["held", "dropped", "deleted"])
@pytest.mark.parametrize("kind", ["scorecard", "turing", "pair"])
def test_an_item_out_of_the_study_since_it_was_kept_is_never_given(
    kind, change, django_capture_on_commit_callbacks
):
    # The offense filter holds an item, or screening drops it, after this process kept the
    # study's items: the lock that gives an item out reads the row itself.
    study = _study(kind, adaptive_pairing=False)
    items = _items(study, 3, topic="cats")
    assert len(ranking_counts.study_items(study=study).counts) == 3  # kept from here on
    gone = items[0].pk
    if change == "deleted":
        items[0].delete()
    else:
        Item.objects.filter(pk=gone).update(
            stage=Item.Stage.HELD if change == "held" else Item.Stage.DROPPED
        )
    for _ in range(6):
        rater, session = enroll(study)
        given = _next(rater, session, django_capture_on_commit_callbacks)
        assert given is not None
        assert gone not in (given.item_id, given.right_item_id)
    assert ranking_counts.study_items(study=study).kept  # still the kept list that named it


@pytest.mark.parametrize("kind", ["scorecard", "turing", "pair"])
def test_nothing_left_is_decided_on_the_study_items_as_they_are_now(
    kind, django_capture_on_commit_callbacks
):
    # Every kept item is done for this rater; items imported since are given, not "nothing left".
    study = _study(kind, adaptive_pairing=False)
    first = _items(study, 2, topic="cats")
    assert len(ranking_counts.study_items(study=study).counts) == 2
    rater, session = enroll(study)
    answered = _next(rater, session, django_capture_on_commit_callbacks)
    assert answered is not None
    Assignment.objects.filter(pk=answered.pk).update(status="done")
    if kind != "pair":
        again = _next(rater, session, django_capture_on_commit_callbacks)
        assert again is not None
        Assignment.objects.filter(pk=again.pk).update(status="done")
    new = [ItemFactory(study=study, external_id=f"new{i}", topic="dogs") for i in range(2)]
    given = _next(rater, session, django_capture_on_commit_callbacks)
    assert given is not None
    assert given.item_id in {item.pk for item in new}
    assert {given.item_id, given.right_item_id} - {None} <= {item.pk for item in new}
    assert {item.pk for item in first}.isdisjoint({given.item_id, given.right_item_id})
