"""The database itself refuses a second judgment of the same task and values out of range."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction

from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.raters.models import BackgroundGroup, RaterSession
from apps.studies.models import Item, Question
from tests.factories import (
    ItemFactory,
    PairJudgmentFactory,
    RaterSessionFactory,
    ScoreAnswerFactory,
    ScoreResponseFactory,
    StudyFactory,
    TuringJudgmentFactory,
)

pytestmark = pytest.mark.django_db


def _refused(create) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_second_scorecard_for_same_rater_and_item_is_refused_by_database():
    first = ScoreResponseFactory()
    _refused(
        lambda: ScoreResponse.objects.create(
            study=first.study,
            rater=first.rater,
            session=first.session,
            item=first.item,
            idempotency_key="other",
        )
    )
    assert ScoreResponse.objects.count() == 1


def test_pair_judged_again_in_swapped_placement_is_refused_by_database():
    first = PairJudgmentFactory()
    _refused(
        lambda: PairJudgment.objects.create(
            study=first.study,
            rater=first.rater,
            session=first.session,
            left=first.right,
            right=first.left,
            outcome="left",
            winner=first.right,
            idempotency_key=uuid.uuid4().hex,
        )
    )
    assert PairJudgment.objects.count() == 1


def test_pair_winner_must_be_one_of_the_shown_items():
    first = PairJudgmentFactory()
    other = ItemFactory(study=first.study)
    _refused(lambda: PairJudgment.objects.filter(pk=first.pk).update(winner=other))
    assert PairJudgment.objects.get().winner_id == first.left_id


def test_pair_winner_must_match_its_outcome():
    first = PairJudgmentFactory()  # outcome "left", winner the left item
    # The winner on the other side, a tie with a winner, a side without one: all refused.
    _refused(lambda: PairJudgment.objects.filter(pk=first.pk).update(winner=first.right))
    _refused(lambda: PairJudgment.objects.filter(pk=first.pk).update(outcome="tie"))
    _refused(lambda: PairJudgment.objects.filter(pk=first.pk).update(winner=None))
    _refused(lambda: PairJudgment.objects.filter(pk=first.pk).update(outcome="bogus", winner=None))
    stored = PairJudgment.objects.get()
    assert (stored.outcome, stored.winner_id) == ("left", first.left_id)
    # A tie and "neither" carry no winner.
    PairJudgment.objects.filter(pk=first.pk).update(outcome="neither", winner=None)
    assert PairJudgment.objects.get().winner_id is None


def test_pair_of_an_item_with_itself_is_refused():
    session = RaterSessionFactory()
    item = ItemFactory(study=session.rater.study)
    _refused(
        lambda: PairJudgment.objects.create(
            study=item.study,
            rater=session.rater,
            session=session,
            left=item,
            right=item,
            outcome="left",
            winner=item,
            idempotency_key="k",
        )
    )


def test_second_turing_judgment_for_same_item_is_refused():
    first = TuringJudgmentFactory()
    _refused(
        lambda: TuringJudgment.objects.create(
            study=first.study,
            rater=first.rater,
            session=first.session,
            item=first.item,
            guess="human",
            idempotency_key="other",
        )
    )


def test_reused_idempotency_key_is_refused():
    first = TuringJudgmentFactory()
    item = ItemFactory(study=first.study)
    _refused(
        lambda: TuringJudgment.objects.create(
            study=first.study,
            rater=first.rater,
            session=first.session,
            item=item,
            guess="ai",
            idempotency_key=first.idempotency_key,
        )
    )


def test_answer_outside_every_scale_is_refused():
    answer = ScoreAnswerFactory()
    # Scales may be any integer range (0-based, -3..3, 0..100) within +-1000.
    _refused(lambda: ScoreAnswer.objects.filter(pk=answer.pk).update(value=1001))
    _refused(lambda: ScoreAnswer.objects.filter(pk=answer.pk).update(value=-1001))
    assert ScoreAnswer.objects.get().value == 3


def test_second_answer_to_the_same_question_is_refused():
    answer = ScoreAnswerFactory()
    _refused(
        lambda: ScoreAnswer.objects.create(
            response=answer.response, question=answer.question, value=2
        )
    )


def test_negative_seconds_into_session_is_refused():
    response = ScoreResponseFactory()
    _refused(lambda: ScoreResponse.objects.filter(pk=response.pk).update(seconds_into_session=-3))


def test_a_rater_has_one_session():
    session = RaterSessionFactory()
    _refused(
        lambda: RaterSession.objects.create(
            rater=session.rater, started_at=session.started_at, deadline=session.deadline
        )
    )


def test_session_deadline_must_follow_start():
    session = RaterSessionFactory()
    _refused(
        lambda: RaterSession.objects.filter(pk=session.pk).update(
            deadline=session.started_at - timedelta(1)
        )
    )


def test_quota_cannot_be_overfilled():
    study = StudyFactory()
    group = study.background_groups.first()
    BackgroundGroup.objects.filter(pk=group.pk).update(quota=2, filled=2)
    _refused(lambda: BackgroundGroup.objects.filter(pk=group.pk).update(filled=3))


def test_item_ids_are_unique_within_a_study_only():
    item = ItemFactory()
    _refused(
        lambda: Item.objects.create(
            study=item.study, external_id=item.external_id, text="x", source="human"
        )
    )
    other = ItemFactory(study=StudyFactory(), external_id=item.external_id)
    assert other.pk != item.pk


def test_question_scale_must_fit_answer_range():
    question = Question.objects.filter(rubric__slug="humor").first()
    assert question is not None
    _refused(lambda: Question.objects.filter(pk=question.pk).update(max_value=1001))
    _refused(lambda: Question.objects.filter(pk=question.pk).update(min_value=-1001))
    _refused(lambda: Question.objects.filter(pk=question.pk).update(max_value=question.min_value))


def test_builtin_humor_rubric_orders_funniness_after_surprise_and_coherence():
    questions = list(Question.objects.filter(rubric__slug="humor").order_by("position"))
    assert [q.name for q in questions] == ["surprise", "coherence", "funniness", "offensive"]
    funniness = questions[2]
    assert sorted(q.name for q in funniness.answered_after.all()) == ["coherence", "surprise"]
    assert (questions[0].min_value, questions[0].max_value) == (1, 5)
    assert (funniness.min_value, funniness.max_value) == (1, 7)
    assert funniness.anchors["en"]["7"] == "Laughed out loud"
    assert funniness.anchors["en"]["4"] == "A knowing smile"
    assert (questions[3].kind, questions[3].min_value, questions[3].max_value) == ("binary", 0, 1)
    content = list(Question.objects.filter(rubric__slug="content").values_list("name", flat=True))
    assert content == ["fluency", "informativeness", "originality", "overall"]
