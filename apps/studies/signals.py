"""Edits to a rubric's questions mark the rubric as changed.

`selectors.study_questions` keeps each rubric's questions per process under the rubric's
`updated_at`; these receivers make every change to a question (the admin's forms, a shell)
move that stamp, so no process keeps serving the old questions. Bulk writes send no signal:
`QuestionQuerySet` moves the stamp for `update`, `bulk_update` and `bulk_create` itself.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save

from apps.studies.models import Question, Rubric


def _question_saved_or_deleted(sender: type[Question], instance: Question, **kwargs: Any) -> None:
    if not kwargs.get("raw"):
        Rubric.mark_changed([instance.rubric_id])


def _prerequisites_changed(sender: Any, instance: Any, action: str, **kwargs: Any) -> None:
    if action.startswith("post_") and isinstance(instance, Question):
        Rubric.mark_changed([instance.rubric_id])


def connect() -> None:
    post_save.connect(_question_saved_or_deleted, sender=Question, dispatch_uid="question_saved")
    post_delete.connect(
        _question_saved_or_deleted, sender=Question, dispatch_uid="question_deleted"
    )
    m2m_changed.connect(
        _prerequisites_changed,
        sender=Question.answered_after.through,
        dispatch_uid="question_prerequisites",
    )
