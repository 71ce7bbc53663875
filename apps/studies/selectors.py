"""Reads for studies and items."""

from __future__ import annotations

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


def study_questions(*, study: Study) -> list[Question]:
    """The rubric's questions in scorecard order, with their 'answered after' prerequisites."""
    return list(
        Question.objects.filter(rubric_id=study.rubric_id)
        .prefetch_related("answered_after")
        .order_by("position")
    )


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
