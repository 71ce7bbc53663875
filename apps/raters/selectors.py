"""Reads for raters: who the browser is, for one study."""

from __future__ import annotations

from django.db.models import Q
from django.http import HttpRequest

from apps.core.errors import NotFound
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Study

_SESSION_KEY = "laughlab:rater:{study_id}"


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
