"""A rubric's questions are kept per process under the rubric's last change: read once, and
never served stale after an edit of any kind."""

from __future__ import annotations

import pytest

from apps.studies.models import Question, Rubric, Study
from apps.studies.selectors import study_get_by_slug, study_questions
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db


def _fresh(study: Study) -> Study:
    # As a request reads it: the study with its rubric, in one query.
    return study_get_by_slug(slug=study.slug)


def _names(study: Study) -> list[str]:
    return [q.name for q in study_questions(study=_fresh(study))]


def _groan(rubric: Rubric) -> Question:
    """A third question for a rubric that has two (unsaved)."""
    return Question(
        rubric=rubric, name="groan", position=3, kind=Question.Kind.BINARY, min_value=0, max_value=1
    )


def _own_rubric() -> Study:
    rubric = Rubric.objects.create(slug="own", name="Own", kind=Rubric.Kind.HUMOR)
    for position, name in enumerate(["wit", "punch"], start=1):
        Question.objects.create(
            rubric=rubric,
            name=name,
            position=position,
            kind=Question.Kind.LIKERT,
            min_value=1,
            max_value=5,
        )
    return StudyFactory(rubric=rubric)


def test_the_second_read_asks_the_database_nothing(django_assert_num_queries):
    study = _own_rubric()
    assert _names(study) == ["wit", "punch"]
    loaded = _fresh(study)
    with django_assert_num_queries(0):
        again = study_questions(study=loaded)
    assert [q.name for q in again] == ["wit", "punch"]
    # Callers get their own list: changing it does not change what the next caller gets.
    again.clear()
    assert _names(study) == ["wit", "punch"]


def test_saving_adding_and_deleting_a_question_are_seen_at_once():
    study = _own_rubric()
    assert _names(study) == ["wit", "punch"]
    wit = Question.objects.get(rubric=study.rubric, name="wit")
    wit.max_value = 7
    wit.save()
    assert [q.max_value for q in study_questions(study=_fresh(study))] == [7, 5]
    _groan(study.rubric).save()
    assert _names(study) == ["wit", "punch", "groan"]
    Question.objects.get(rubric=study.rubric, name="punch").delete()
    assert _names(study) == ["wit", "groan"]


def test_changing_what_a_question_is_answered_after_is_seen_at_once():
    study = _own_rubric()
    wit, punch = study_questions(study=_fresh(study))
    assert list(punch.answered_after.all()) == []
    Question.objects.get(pk=punch.pk).answered_after.add(wit)
    punch_again = study_questions(study=_fresh(study))[1]
    assert [q.name for q in punch_again.answered_after.all()] == ["wit"]
    Question.objects.get(pk=punch.pk).answered_after.clear()
    assert list(study_questions(study=_fresh(study))[1].answered_after.all()) == []


def test_two_studies_on_different_rubrics_keep_their_own_questions():
    own = _own_rubric()
    humor = StudyFactory()
    assert _names(own) == ["wit", "punch"]
    assert _names(humor) == ["surprise", "coherence", "funniness", "offensive"]
    assert _names(own) == ["wit", "punch"]


def test_bulk_updates_and_bulk_creates_are_seen_at_once():
    study = _own_rubric()
    assert [q.max_value for q in study_questions(study=_fresh(study))] == [5, 5]
    Question.objects.filter(rubric=study.rubric).update(max_value=6)
    assert [q.max_value for q in study_questions(study=_fresh(study))] == [6, 6]
    wit = Question.objects.get(rubric=study.rubric, name="wit")
    wit.max_value = 4
    Question.objects.bulk_update([wit], ["max_value"])
    assert [q.max_value for q in study_questions(study=_fresh(study))] == [4, 6]
    Question.objects.bulk_create([_groan(study.rubric)])
    assert _names(study) == ["wit", "punch", "groan"]


def test_a_question_moved_to_another_rubric_in_bulk_leaves_both_up_to_date():
    own = _own_rubric()
    other = StudyFactory(
        rubric=Rubric.objects.create(slug="other", name="Other", kind=Rubric.Kind.HUMOR)
    )
    assert (_names(own), _names(other)) == (["wit", "punch"], [])
    Question.objects.filter(rubric=own.rubric, name="punch").update(rubric=other.rubric)
    assert (_names(own), _names(other)) == (["wit"], ["punch"])
