"""Races on PostgreSQL with real threads: quotas and item targets hold when everyone comes at once."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, transaction

from apps.assignments import ranking_counts
from apps.assignments.models import Assignment
from apps.assignments.services import assignment_next
from apps.core.compiled import readable
from apps.core.errors import Busy
from apps.judgments.models import ScoreResponse
from apps.judgments.submission import AnswerIn, score_response_submit
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.raters.services import Enrollment, ParticipantInUse, StudyFull, rater_enroll
from apps.studies.models import Item
from tests.factories import ItemFactory, StudyFactory
from tests.scorecards import send_early_answers, submit_scorecard

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

ANSWERS = {
    "surprise": AnswerIn(3, 100),
    "coherence": AnswerIn(3, 200),
    "funniness": AnswerIn(4, 300),
    "offensive": AnswerIn(0, 400),
}


def _in_threads(n: int, work: Callable[[int], Any]) -> tuple[list[Any], list[BaseException]]:
    """Run work(i) in n threads released together; each thread uses and closes its own connection."""
    barrier = threading.Barrier(n, timeout=30)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return results, errors


@contextlib.contextmanager
def _held_open(work: Callable[[], Any]) -> Iterator[Any]:
    """Run work() in another thread inside a transaction kept open (holding whatever locks it
    took, as a slow request would) while the body runs; yields what work() returned."""
    holding, release = threading.Event(), threading.Event()
    result: list[Any] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                result.append(work())
                holding.set()
                release.wait(timeout=30)
        finally:
            holding.set()  # never leave the main thread waiting if work() failed
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(timeout=30)
        assert result, "the held transaction's work failed"
        yield result[0]
    finally:
        release.set()
        holder.join(timeout=30)


@pytest.fixture
def no_aggregation(monkeypatch):  # type: ignore[no-untyped-def]
    """Aggregation runs eagerly after each commit in tests; it is not what these tests race."""
    queued: list[int] = []
    monkeypatch.setattr(
        "apps.analysis.services._enqueue", lambda study_id, claimed_at: queued.append(study_id)
    )
    return queued


def test_fifty_people_enrolling_at_once_fill_a_quota_of_four_exactly(
    postgres_only, builtin_rubrics
):
    study = StudyFactory(backgrounds=[("technical", {"en": "Technical"})])
    BackgroundGroup.objects.filter(study=study).update(quota=4)

    def enroll(_: int) -> str:
        try:
            rater_enroll(study=study, background="technical", age_band="25-34", consent=True)
        except StudyFull:
            return "full"
        return "enrolled"

    results, errors = _in_threads(50, enroll)
    assert errors == []
    assert Counter(results) == {"enrolled": 4, "full": 46}
    assert Rater.objects.filter(study=study).count() == 4
    assert RaterSession.objects.filter(rater__study=study).count() == 4
    assert BackgroundGroup.objects.get(study=study).filled == 4


def test_the_same_participant_enrolling_in_two_tabs_at_once_gets_one_place(
    postgres_only, builtin_rubrics
):
    study = StudyFactory(backgrounds=[("technical", {"en": "Technical"})])

    def enroll(_: int) -> int:
        enrollment = rater_enroll(
            study=study,
            background="technical",
            age_band="25-34",
            consent=True,
            external_id="PID-twice",
            prolific_session_id="SE-twice",
        )
        return enrollment.session.pk

    results, errors = _in_threads(8, enroll)
    assert errors == []
    assert len(set(results)) == 1
    assert Rater.objects.filter(study=study).count() == 1
    # The losers' places were given back with their rolled-back transactions.
    assert BackgroundGroup.objects.get(study=study).filled == 1


def test_the_same_pid_without_a_session_id_enrolling_at_once_gets_one_place_and_in_use(
    postgres_only, builtin_rubrics
):
    """Without Prolific's SESSION_ID nothing proves two requests are the same person: one
    enrols, the others are told the ID is in use (and give their places back)."""
    study = StudyFactory(backgrounds=[("technical", {"en": "Technical"})])

    def enroll(_: int) -> str:
        try:
            rater_enroll(
                study=study,
                background="technical",
                age_band="25-34",
                consent=True,
                external_id="PID-bare",
            )
        except ParticipantInUse:
            return "in_use"
        return "enrolled"

    results, errors = _in_threads(8, enroll)
    assert errors == []
    assert Counter(results) == {"enrolled": 1, "in_use": 7}
    assert Rater.objects.filter(study=study).count() == 1
    assert BackgroundGroup.objects.get(study=study).filled == 1


# With kept counts (60 s), every thread ranks on the counts the first one read, plus the tasks
# this process committed since: the lock's re-count alone keeps the targets.
@pytest.mark.parametrize("max_age", [0.0, 60.0], ids=["fresh-counts", "kept-counts"])
def test_raters_asking_at_once_never_push_an_item_past_its_scorecard_target(
    postgres_only, builtin_rubrics, no_aggregation, settings, max_age
):
    settings.TASK_COUNTS_MAX_AGE_SECONDS = max_age
    ranking_counts.forget_all()
    target = 3
    study = StudyFactory(
        task_mix={"scorecard": 1.0},
        attention_check_rate=0,
        target_scorecards_per_item=target,
        tasks_per_session=10,
        random_seed=5,
    )
    items = [ItemFactory(study=study, external_id=f"j{i}") for i in range(4)]
    backgrounds = [
        code for (code,) in BackgroundGroup.objects.filter(study=study).values_list("code")
    ]
    raters = [
        rater_enroll(
            study=study,
            background=backgrounds[i % len(backgrounds)],
            age_band="25-34",
            consent=True,
            external_id=f"PID-{i:02d}",
        )
        for i in range(20)
    ]

    def work(i: int) -> int:
        rater, session = raters[i].rater, raters[i].session
        answered = 0
        for _ in range(4):
            assignment = assignment_next(rater=rater, session=session)
            if assignment is None:
                break
            submit_scorecard(
                rater=rater,
                assignment_id=assignment.pk,
                idempotency_key=uuid.uuid4().hex,
                answers=ANSWERS,
                active_ms=500,
            )
            answered += 1
        return answered

    results, errors = _in_threads(20, work)
    assert errors == []

    def over_target() -> tuple[Counter[int], Counter[int]]:
        assigned = Counter(
            Assignment.objects.filter(
                study=study,
                kind=Assignment.Kind.SCORECARD,
                status__in=[Assignment.Status.PENDING, Assignment.Status.DONE],
            ).values_list("item_id", flat=True)
        )
        scored = Counter(
            ScoreResponse.objects.filter(study=study).values_list("item_id", flat=True)
        )
        return assigned, scored

    assigned, scored = over_target()
    assert max(assigned.values()) <= target
    assert max(scored.values()) <= target
    assert sum(results) == sum(scored.values())
    # A rater who found every candidate locked may have stopped early; asking again one by one
    # fills what is left, and still not one place more.
    for enrollment in raters:
        while (
            task := assignment_next(rater=enrollment.rater, session=enrollment.session)
        ) is not None:
            submit_scorecard(
                rater=enrollment.rater,
                assignment_id=task.pk,
                idempotency_key=uuid.uuid4().hex,
                answers=ANSWERS,
                active_ms=500,
            )
    assigned, scored = over_target()
    assert assigned == {item.pk: target for item in items}
    assert scored == {item.pk: target for item in items}
    ranking_counts.forget_all()


def _one_rater_in_a_scorecard_study(*, items: int, external_id: str) -> Enrollment:
    study = StudyFactory(task_mix={"scorecard": 1.0}, attention_check_rate=0, random_seed=3)
    for i in range(items):
        ItemFactory(study=study, external_id=f"j{i}")
    background = BackgroundGroup.objects.filter(study=study).values_list("code", flat=True)[0]
    return rater_enroll(
        study=study, background=background, age_band="25-34", consent=True, external_id=external_id
    )


def test_one_rater_asking_in_several_tabs_at_once_gets_one_task(
    postgres_only, builtin_rubrics, no_aggregation
):
    enrollment = _one_rater_in_a_scorecard_study(items=6, external_id="PID-tabs")

    def ask(_: int) -> int:
        task = assignment_next(rater=enrollment.rater, session=enrollment.session)
        assert task is not None
        return task.pk

    results, errors = _in_threads(6, ask)
    assert errors == []
    assert len(set(results)) == 1
    assert list(Assignment.objects.filter(rater=enrollment.rater).values_list("pk", flat=True)) == [
        results[0]
    ]


def test_an_answer_and_its_retry_arriving_at_once_store_one_judgment(
    postgres_only, builtin_rubrics, no_aggregation
):
    enrollment = _one_rater_in_a_scorecard_study(items=1, external_id="PID-retry")
    study = enrollment.rater.study
    task = assignment_next(rater=enrollment.rater, session=enrollment.session)
    assert task is not None
    key = uuid.uuid4().hex
    send_early_answers(
        rater=enrollment.rater, assignment_id=task.pk, answers=ANSWERS, active_ms=500
    )

    def submit(_: int) -> tuple[int, bool]:
        result = score_response_submit(
            rater=enrollment.rater,
            assignment_id=task.pk,
            idempotency_key=key,
            answers=ANSWERS,
            active_ms=500,
        )
        return result.judgment_id, result.replayed

    results, errors = _in_threads(4, submit)
    assert errors == []
    stored = list(ScoreResponse.objects.filter(study=study).values_list("pk", flat=True))
    assert len(stored) == 1
    assert {judgment for judgment, _ in results} == {stored[0]}
    assert sorted(replayed for _, replayed in results) == [False, True, True, True]


def test_a_moment_when_every_item_is_held_by_others_is_busy_not_the_end(
    postgres_only, builtin_rubrics, no_aggregation
):
    enrollment = _one_rater_in_a_scorecard_study(items=3, external_id="PID-busy")
    study = enrollment.rater.study

    def hold_every_item() -> list[Item]:
        # Another request's transaction, holding every item's lock while it chooses.
        return list(Item.objects.select_for_update().filter(study=study))

    with _held_open(hold_every_item), pytest.raises(Busy):
        assignment_next(rater=enrollment.rater, session=enrollment.session)
    enrollment.session.refresh_from_db()
    assert enrollment.session.ended_at is None
    assert not Assignment.objects.filter(rater=enrollment.rater).exists()
    # Once the locks are gone the same request gets its task.
    task = assignment_next(rater=enrollment.rater, session=enrollment.session)
    assert task is not None


def test_a_task_choice_holds_only_the_item_it_gives_and_lets_answers_about_it_in(
    postgres_only, builtin_rubrics, no_aggregation
):
    enrollment = _one_rater_in_a_scorecard_study(items=4, external_id="PID-lock")
    study = enrollment.rater.study
    background = enrollment.rater.background.code
    other = rater_enroll(
        study=study, background=background, age_band="25-34", consent=True, external_id="PID-b"
    )

    def choose() -> int:
        # A task page's transaction, kept open after its choice as a slow request would.
        task = assignment_next(rater=enrollment.rater, session=enrollment.session)
        assert task is not None
        return task.item_id

    with _held_open(choose) as chosen:
        with transaction.atomic():
            # Every other candidate is free for other raters' choices...
            free = set(
                Item.objects.select_for_update(skip_locked=True, no_key=True)
                .filter(study=study)
                .values_list("pk", flat=True)
            )
            assert free == set(Item.objects.filter(study=study).values_list("pk", flat=True)) - {
                chosen
            }
        with transaction.atomic():
            # ...and a write that refers to the chosen item (its foreign-key check takes a
            # KEY SHARE lock) goes through at once instead of waiting for the choice to commit.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            Assignment.objects.create(
                study=study,
                rater=other.rater,
                session=other.session,
                kind=Assignment.Kind.SCORECARD,
                item_id=chosen,
                position=1,
                reason="coverage",
            )
    assert Assignment.objects.filter(item_id=chosen).count() == 2


@pytest.mark.parametrize("kind", ["scorecard", "turing", "pair"])
def test_the_item_given_out_is_read_by_its_lock_not_again_after_the_insert(
    postgres_only, builtin_rubrics, no_aggregation, kind
):
    """The page shows the item the lock chose: the lock reads its row whole, so no statement
    reads it again after the task is stored. The item shown is the one stored, field by field."""
    from django.test.utils import CaptureQueriesContext

    study = StudyFactory(task_mix={kind: 1.0}, attention_check_rate=0, random_seed=3)
    for i in range(4):
        ItemFactory(study=study, external_id=f"j{i}", topic="cats", image_alt={"en": f"a{i}"})
    background = BackgroundGroup.objects.filter(study=study).values_list("code", flat=True)[0]
    enrollment = rater_enroll(
        study=study, background=background, age_band="25-34", consent=True, external_id="PID-read"
    )
    with CaptureQueriesContext(connection) as queries:
        task = assignment_next(rater=enrollment.rater, session=enrollment.session)
    assert task is not None
    statements = [readable(q["sql"]) for q in queries.captured_queries]
    inserted = next(i for i, sql in enumerate(statements) if sql.startswith("INSERT"))
    assert not [sql for sql in statements[inserted:] if '"studies_item"' in sql]
    shown = [task.item] if kind != "pair" else [task.item, task.right_item]
    for item in shown:
        assert item is not None
        stored = Item.objects.get(pk=item.pk)
        assert [getattr(item, f.attname) for f in Item._meta.concrete_fields] == [
            getattr(stored, f.attname) for f in Item._meta.concrete_fields
        ]


def test_the_lock_and_the_recount_of_each_task_given_are_planned_once_per_connection(
    postgres_only, builtin_rubrics, no_aggregation
):
    """The two statements every task choice sends beside its insert, written in SQL, are
    prepared on the connection's first choice and only executed after it."""
    from django.test.utils import CaptureQueriesContext

    study = StudyFactory(task_mix={"scorecard": 1.0}, attention_check_rate=0, random_seed=3)
    for i in range(4):
        ItemFactory(study=study, external_id=f"j{i}", topic="cats")
    background = BackgroundGroup.objects.filter(study=study).values_list("code", flat=True)[0]
    sent = []
    for n in range(2):
        enrollment = rater_enroll(
            study=study, background=background, age_band="25-34", consent=True, external_id=f"P{n}"
        )
        with CaptureQueriesContext(connection) as queries:
            assert assignment_next(rater=enrollment.rater, session=enrollment.session) is not None
        sent.append([q["sql"] for q in queries.captured_queries])
    for statements, start in ((sent[0], "PREPARE "), (sent[1], "EXECUTE ")):
        lock = [s for s in statements if "FOR NO KEY UPDATE" in readable(s)]
        recount = [s for s in statements if "FROM assignments_assignment a" in readable(s)]
        assert len(lock) == 1, statements
        assert lock[0].startswith(start), statements
        # The ranking's counts and the re-count under the lock alike.
        assert recount, statements
        assert all(s.startswith(start) for s in recount), statements
