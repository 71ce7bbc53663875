"""Reads for raters: who the browser is, for one study."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpRequest

from apps.core.compiled import CompiledRead
from apps.core.errors import NotFound
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.studies.models import Study
from apps.studies.selectors import study_for_raters

_SESSION_KEY = "laughlab:rater:{study_id}"


def background_group_keys(*, study: Study) -> dict[str, int]:
    """The study's background groups: code -> key."""
    return dict(BackgroundGroup.objects.filter(study=study).values_list("code", "pk"))


def rater_session_entry(*, study: Study) -> str:
    """The key under which a browser session remembers its rater in this study."""
    return _SESSION_KEY.format(study_id=study.pk)


def rater_remember(*, request: HttpRequest, study: Study, rater: Rater) -> None:
    # A new session key on enrolment, so a fixated pre-login key cannot follow the rater in.
    request.session.cycle_key()
    request.session[_SESSION_KEY.format(study_id=study.pk)] = rater.pk


def rater_for_request(*, request: HttpRequest, study: Study) -> Rater | None:
    rater_id = request.session.get(_SESSION_KEY.format(study_id=study.pk))
    if rater_id is None:
        return None
    rater = Rater.objects.filter(pk=rater_id, study=study).first()
    if rater is not None:
        rater.study = study  # already loaded by the caller; saves a join on every request
    return rater


def rater_get_for_request(*, request: HttpRequest, study: Study) -> Rater:
    rater = rater_for_request(request=request, study=study)
    if rater is None:
        raise NotFound("you are not enrolled in this study in this browser", field="rater")
    return rater


def _remembered_rater_ids(request: HttpRequest) -> list[int]:
    """The raters this browser session enrolled as, in any study."""
    prefix = _SESSION_KEY.format(study_id="")
    return [
        value
        for key, value in request.session.items()
        if key.startswith(prefix) and isinstance(value, int)
    ]


def _remembered(request: HttpRequest, rater: Rater) -> bool:
    return request.session.get(rater_session_entry(study=rater.study)) == rater.pk


# The reads every rater request starts with, compiled once (apps/core/compiled.py): a browser
# enrolled in one study remembers one rater, so these take that rater's id.
_RATER_WITH_STUDY = CompiledRead(
    lambda rater_id, slug: Rater.objects.select_related("study__rubric").filter(
        pk=rater_id, study__slug=slug
    )[:1]
)
_SESSION_WITH_STUDY = CompiledRead(
    lambda rater_id, slug: RaterSession.objects.select_related("rater__study__rubric").filter(
        rater_id=rater_id, rater__study__slug=slug
    )[:1]
)


def _remembered_read(
    ids: list[int],
    slug: str,
    compiled: CompiledRead[Any],
    general: Callable[[list[int]], QuerySet[Any]],
) -> Any:
    """The row of the study `slug` among this browser's raters: compiled for the usual one
    rater, the general read for a browser enrolled in several studies."""
    if len(ids) == 1:
        rows = compiled(ids[0], slug)
        return rows[0] if rows else None
    return general(ids).first() if ids else None


def rater_with_study_for_request(*, request: HttpRequest, slug: str) -> Rater:
    """The browser's rater in the study `slug`, read with the study and its rubric in one
    statement: every answer needs all three, and reading the study first cost a statement of
    its own. When none is found, the study alone is read to say which is missing (no such
    study, or not enrolled in it), as reading them one by one does."""
    rater = _remembered_read(
        _remembered_rater_ids(request),
        slug,
        _RATER_WITH_STUDY,
        lambda ids: Rater.objects.select_related("study__rubric").filter(
            pk__in=ids, study__slug=slug
        ),
    )
    if rater is None or not _remembered(request, rater):
        return rater_get_for_request(request=request, study=study_for_raters(slug=slug))
    return rater


def rater_and_session_with_study_for_request(
    *, request: HttpRequest, slug: str
) -> tuple[Rater, RaterSession]:
    """The browser's rater in the study `slug` and their session, with the study and its
    rubric, in one statement (the task page's); `rater.study` is the study. The same errors as
    `rater_with_study_for_request` otherwise."""
    session = _remembered_read(
        _remembered_rater_ids(request),
        slug,
        _SESSION_WITH_STUDY,
        lambda ids: RaterSession.objects.select_related("rater__study__rubric").filter(
            rater_id__in=ids, rater__study__slug=slug
        ),
    )
    if session is None or not _remembered(request, session.rater):
        return rater_and_session_for_request(request=request, study=study_for_raters(slug=slug))
    return session.rater, session


def rater_session_get(*, rater: Rater) -> RaterSession:
    session = RaterSession.objects.filter(rater=rater).first()
    if session is None:
        raise NotFound("no session for you", field="session")
    return session


def rater_and_session_for_request(
    *, request: HttpRequest, study: Study
) -> tuple[Rater, RaterSession]:
    """The browser's rater in this study and their session, in one query (the task page's)."""
    rater_id = request.session.get(rater_session_entry(study=study))
    session = (
        RaterSession.objects.select_related("rater")
        .filter(rater_id=rater_id, rater__study=study)
        .first()
        if rater_id is not None
        else None
    )
    if session is None:
        # Not enrolled, or enrolled without a session: the same errors as asking one by one.
        rater = rater_get_for_request(request=request, study=study)
        return rater, rater_session_get(rater=rater)
    session.rater.study = study
    return session.rater, session


def item_image_for_rater(*, rater: Rater, name: str) -> str | None:
    """The storage name of the picture `name` (its hash and extension) when an item of a task
    given to this rater shows it; None otherwise."""
    from apps.assignments.models import Assignment
    from apps.studies.images import STORAGE_FOLDER

    stored = f"{STORAGE_FOLDER}/{name}"
    given = Assignment.objects.filter(rater=rater).filter(
        Q(item__image=stored) | Q(right_item__image=stored)
    )
    return stored if given.exists() else None
