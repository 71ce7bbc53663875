"""Reads for studies and items."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from apps.core.errors import NotFound
from apps.studies.models import Item, Question, Study


def study_get_by_slug(*, slug: str) -> Study:
    try:
        return Study.objects.select_related("rubric").get(slug=slug)
    except Study.DoesNotExist:
        raise NotFound(f"no study with slug {slug!r}", field="study") from None


def study_items(*, study: Study) -> QuerySet[Item]:
    return Item.objects.filter(study=study).order_by("external_id")


# A rubric's questions, per process, under the rubric's last change: every scorecard shown and
# every one submitted needs them (two queries), and they change only when someone edits the
# rubric. Saving or deleting a question, changing its prerequisites, or a bulk write bumps the
# rubric's `updated_at` (apps/studies/signals.py, models.QuestionQuerySet), and the study is read
# with its rubric on every request, so a stale entry is never used. Entries are shared between
# threads: callers must not mutate them.
_QUESTIONS: dict[int, tuple[datetime, tuple[Question, ...]]] = {}


def study_questions(*, study: Study) -> list[Question]:
    """The rubric's questions in scorecard order, with their 'answered after' prerequisites."""
    rubric = study.rubric
    cached = _QUESTIONS.get(rubric.pk)
    if cached is not None and cached[0] == rubric.updated_at:
        return list(cached[1])
    questions = tuple(
        Question.objects.filter(rubric_id=rubric.pk)
        .prefetch_related("answered_after")
        .order_by("position")
    )
    _QUESTIONS[rubric.pk] = (rubric.updated_at, questions)
    return list(questions)


def study_primary_question(*, study: Study) -> Question | None:
    """The question the study's headline results, judge, calibration and screening follow (the
    rubric names it); None for a rubric without a scale question."""
    name = study.rubric.primary_question
    return next((q for q in study_questions(study=study) if q.name == name), None)


def study_primary_name(*, study: Study) -> str:
    """The primary question's name, "" when the rubric has none."""
    question = study_primary_question(study=study)
    return question.name if question is not None else ""


def study_for_raters(*, slug: str) -> Study:
    """A study as raters may see it: any status (closed and draft studies say so), never more."""
    return study_get_by_slug(slug=slug)


def studies_for_user(*, user: User | AnonymousUser) -> QuerySet[Study]:
    """Admins see every study; a researcher only those they own or are a member of."""
    if not user.is_authenticated:
        return Study.objects.none()
    if getattr(user, "is_superuser", False):
        return Study.objects.all()
    return Study.objects.filter(memberships__user=user).distinct()


def study_get_for_user(*, user: User | AnonymousUser, slug: str) -> Study:
    """The study if this user may see it; otherwise not found (404), so slugs leak nothing."""
    study = studies_for_user(user=user).select_related("rubric").filter(slug=slug).first()
    if study is None:
        raise NotFound(f"no study with slug {slug!r}", field="study")
    return study
