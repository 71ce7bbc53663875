"""Writes for raters and their sessions."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from apps.core.bulk import bulk_insert
from apps.core.errors import DomainError, LineError, SessionExpired
from apps.core.sentences import Sentence
from apps.raters.models import UNKNOWN_BACKGROUND, AgeBand, BackgroundGroup, Rater, RaterSession
from apps.raters.selectors import background_group_keys
from apps.studies.languages import normalise
from apps.studies.models import Study


class ImportedRater(NamedTuple):
    # A tuple, not a frozen dataclass: a crowd file makes one per line, and a frozen
    # dataclass sets each field through object.__setattr__.
    external_id: str
    background: str | None  # None: unknown
    age_band: str | None
    first_line: int
    # Bounds of the rater's activity in the file, to date the imported session.
    started_at: datetime
    last_at: datetime


def _stored_raters(study: Study) -> dict[str, tuple[int, str | None, str]]:
    """external id -> (pk, background code or None when unknown, age band), the whole study at
    once: one query, where filtering by 75,000 imported ids would be hundreds."""
    return {
        external_id: (pk, code, age_band)
        for pk, external_id, code, age_band in Rater.objects.filter(study=study).values_list(
            "pk", "external_id", "background__code", "age_band"
        )
    }


def raters_check_imported(*, study: Study, raters: list[ImportedRater]) -> list[LineError]:
    """Lines whose rater is already stored with another background or age band."""
    by_id = _stored_raters(study)
    errors: list[LineError] = []
    for spec in raters:
        stored = by_id.get(spec.external_id)
        if stored is None:
            continue
        _, code, age_band = stored
        if code != spec.background:
            errors.append(
                LineError.said(
                    spec.first_line,
                    "background",
                    Sentence(
                        gettext_noop("rater %(rater)s is stored with background %(background)s"),
                        {
                            "rater": repr(spec.external_id),
                            "background": repr(code or UNKNOWN_BACKGROUND),
                        },
                    ),
                )
            )
        elif spec.age_band is not None and age_band not in (
            spec.age_band,
            AgeBand.UNDISCLOSED,
        ):
            errors.append(
                LineError.said(
                    spec.first_line,
                    "age_band",
                    Sentence(
                        gettext_noop("rater %(rater)s is stored with age band %(age_band)s"),
                        {"rater": repr(spec.external_id), "age_band": repr(age_band)},
                    ),
                )
            )
    return errors


@transaction.atomic
def raters_ensure_imported(
    *, study: Study, raters: list[ImportedRater]
) -> dict[str, tuple[int, int]]:
    """(rater pk, session pk) for each imported rater, creating those that are missing.

    Imported raters consented elsewhere; each gets one closed session dated by their lines.
    A background of None is unknown (the rater belongs to no group of the study). Call
    raters_check_imported first: this does not re-check backgrounds.
    """
    stored = _stored_raters(study)
    existing = {ext: row[0] for ext, row in stored.items()}
    missing = [spec for spec in raters if spec.external_id not in existing]
    new_pks = _insert_raters(study, missing)
    # Only raters stored before can have a session: a first import of a file reads none.
    wanted = {existing[spec.external_id] for spec in raters if spec.external_id in existing}
    sessions = (
        {
            rater_id: pk
            for rater_id, pk in RaterSession.objects.filter(rater__study=study).values_list(
                "rater_id", "pk"
            )
            if rater_id in wanted
        }
        if wanted
        else {}
    )
    for spec, pk in zip(missing, new_pks, strict=True):
        existing[spec.external_id] = pk
    unsessioned = [
        (existing[spec.external_id], spec)
        for spec in raters
        if existing[spec.external_id] not in sessions
    ]
    for (rater_id, _), pk in zip(unsessioned, _insert_sessions(study, unsessioned), strict=True):
        sessions[rater_id] = pk
    return {
        spec.external_id: (existing[spec.external_id], sessions[existing[spec.external_id]])
        for spec in raters
    }


def raters_write_imported(
    *,
    study: Study,
    raters: Sequence[ImportedRater],
    keys: Sequence[tuple[int, int]],
    groups: Mapping[str, int] | None = None,
) -> None:
    """New imported raters and their sessions, under keys drawn ahead (`draw_keys`): (rater
    key, session key) for each. For an import that writes its judgments while its file is read
    (apps/judgments/import_stream.py): each rater is written as read so far, and
    `raters_mend_imported` brings them up to date once the whole file is read. `groups`: the
    study's background groups by code (`background_group_keys`), if the caller has them."""
    _insert_raters(study, raters, [rater for rater, _ in keys], groups)
    _insert_sessions(
        study,
        [(rater, spec) for (rater, _), spec in zip(keys, raters, strict=True)],
        [session for _, session in keys],
    )


def raters_mend_imported(
    *,
    study: Study,
    written: Mapping[str, ImportedRater],
    raters: Sequence[ImportedRater],
    keys: Mapping[str, tuple[int, int]],
) -> None:
    """Raters written by `raters_write_imported` as `written` gave them, mended to `raters`,
    as the whole file gives them: the age band a later line gave, and the session's bounds a
    later dated line moved. `keys`: their (rater key, session key)."""
    by_band: dict[str, list[int]] = {}
    moved: list[ImportedRater] = []
    for spec in raters:
        before = written[spec.external_id]
        if spec.age_band != before.age_band:
            by_band.setdefault(spec.age_band or AgeBand.UNDISCLOSED, []).append(
                keys[spec.external_id][0]
            )
        if (spec.started_at, spec.last_at) != (before.started_at, before.last_at):
            moved.append(spec)
    for band, pks in by_band.items():
        Rater.objects.filter(study=study, pk__in=pks).update(age_band=band)
    deadline = _deadlines(study)
    for offset in range(0, len(moved), 5_000):
        RaterSession.objects.bulk_update(
            [
                RaterSession(
                    pk=keys[spec.external_id][1],
                    started_at=spec.started_at,
                    deadline=deadline(spec.started_at, spec.last_at),
                    ended_at=spec.last_at,
                )
                for spec in moved[offset : offset + 5_000]
            ],
            ["started_at", "deadline", "ended_at"],
        )


def _insert_raters(
    study: Study,
    raters: Sequence[ImportedRater],
    keys: Sequence[int] | None = None,
    groups: Mapping[str, int] | None = None,
) -> list[int]:
    groups = background_group_keys(study=study) if groups is None else groups
    now = timezone.now()
    # Read once: a model's pk is a property, and a choice a class attribute, per rater.
    study_id, imported, undisclosed = study.pk, Rater.Origin.IMPORTED, AgeBand.UNDISCLOSED
    return bulk_insert(
        Rater,
        (
            "study_id",
            "external_id",
            "background_id",
            "age_band",
            "language",
            "languages",
            "origin",
            "prolific_study_id",
            "prolific_session_id",
            "from_prolific",
            "created_at",
            "updated_at",
        ),
        (
            (
                study_id,
                spec.external_id,
                None if spec.background is None else groups[spec.background],
                spec.age_band or undisclosed,
                "",
                [],
                imported,
                "",
                "",
                False,
                now,
                now,
            )
            for spec in raters
        ),
        returning=True,
        keys=keys,
    )


def _deadlines(study: Study) -> Callable[[datetime, datetime], datetime]:
    """An imported session's deadline from its bounds: one session length after its start, and
    after its last line. Raters share a few bounds (every undated rater the import's own time):
    each pair's deadline is worked out once."""
    session_length = timedelta(minutes=study.session_minutes)
    second = timedelta(seconds=1)
    known: dict[tuple[datetime, datetime], datetime] = {}

    def deadline(started: datetime, last: datetime) -> datetime:
        found = known.get((started, last))
        if found is None:
            found = known[(started, last)] = max(started + session_length, last + second)
        return found

    return deadline


def _insert_sessions(
    study: Study,
    raters: Sequence[tuple[int, ImportedRater]],
    keys: Sequence[int] | None = None,
) -> list[int]:
    """One closed session for each (rater pk, rater), dated by the rater's lines."""
    deadline = _deadlines(study)
    ended = RaterSession.EndReason.IMPORTED
    return bulk_insert(
        RaterSession,
        ("rater_id", "started_at", "deadline", "ended_at", "end_reason"),
        (
            (rater, spec.started_at, deadline(spec.started_at, spec.last_at), spec.last_at, ended)
            for rater, spec in raters
        ),
        returning=True,
        keys=keys,
    )


class StudyFull(DomainError):
    status_code = 409
    code = "group_full"


class StudyNotOpen(DomainError):
    status_code = 409
    code = "study_not_open"


class ParticipantInUse(DomainError):
    """A participant id already enrolled, presented by a browser that cannot prove it is theirs."""

    status_code = 409
    code = "participant_in_use"


@dataclass(frozen=True)
class Enrollment:
    rater: Rater
    session: RaterSession
    resumed: bool


def _existing_enrollment(
    study: Study, external_id: str, prolific_session_id: str
) -> Enrollment | None:
    """The participant's own enrolment, if they can show it is theirs; None if there is none.

    A participant id alone (a Prolific PID is visible to anyone who sees the link) is not a
    credential: a new browser resumes a session only with the Prolific SESSION_ID stored with
    it. Otherwise ParticipantInUse, and nothing changes.
    """
    rater = Rater.objects.filter(study=study, external_id=external_id).first()
    if rater is None:
        return None
    if not (rater.prolific_session_id and rater.prolific_session_id == prolific_session_id):
        raise ParticipantInUse(
            "this participant id is already taking part in this study in another browser",
            field="external_id",
        )
    session = RaterSession.objects.filter(rater=rater).first()
    if session is None:
        return None
    return Enrollment(rater=rater, session=session, resumed=True)


def _reading_languages(study: Study, languages: Sequence[str] | None) -> list[str]:
    """The study languages a rater reads, in the study's order. A study with one language
    asks nothing (its one language); one with several needs at least one of them. None (a
    caller that did not ask, such as a script) means every language of the study."""
    if languages is None:
        return list(study.languages)
    chosen = [normalise(code) for code in languages if isinstance(code, str)]
    if len(chosen) != len(languages):
        raise DomainError("languages must be language codes such as 'en'", field="languages")
    unknown = sorted(set(chosen) - set(study.languages))
    if unknown:
        raise DomainError(
            f"unknown language {unknown[0]!r}; this study's languages are "
            + ", ".join(study.languages),
            field="languages",
        )
    if not chosen:
        if study.asks_languages:
            raise DomainError(
                "choose at least one of the study's languages that you read", field="languages"
            )
        return list(study.languages)
    return [code for code in study.languages if code in chosen]


def _places_by_language(group: BackgroundGroup) -> Counter[str]:
    """Places held in each language by the group's enrolled raters (call under its lock)."""
    per_language: Counter[str] = Counter()
    holding = Rater.objects.filter(
        background=group, origin=Rater.Origin.ENROLLED, place_released_at__isnull=True
    )
    for codes in holding.values_list("languages", flat=True):
        per_language.update(codes or ())
    return per_language


def _take_places(study: Study, group: BackgroundGroup, languages: list[str]) -> list[str]:
    """Take this rater's places in their group's quota; the languages they got a place in.

    With one language the quota counts raters, taken by a conditional UPDATE (`filled <
    quota`). With several it counts per language: up to `quota` raters of the group for each
    language, so readers of one language cannot fill the places the other's items need. A
    bilingual rater takes a place in each of their languages that has room and is given work
    in those. Counted under the group's row lock (enrolments in one group queue for a moment),
    quota or not, so `filled` always means the places held in the group's fullest language.
    """
    if not study.asks_languages:
        taken = (
            BackgroundGroup.objects.filter(pk=group.pk)
            .filter(Q(quota__isnull=True) | Q(filled__lt=F("quota")))
            .update(filled=F("filled") + 1)
        )
        return languages if taken else []
    locked = BackgroundGroup.objects.select_for_update().get(pk=group.pk)
    per_language = _places_by_language(locked)
    quota = locked.quota
    room = [code for code in languages if quota is None or per_language[code] < quota]
    if room:
        per_language.update(room)
        fullest = max(per_language[code] for code in study.languages)
        BackgroundGroup.objects.filter(pk=locked.pk).update(filled=fullest)
    return room


# Ends of a session that give its quota place back: the rater left the study (returned it on
# Prolific) or ran out of time, so the group's data needs someone else. A completed or
# withdrawn-by-closing session keeps its place.
RELEASING_ENDS = frozenset({RaterSession.EndReason.TIMED_OUT, RaterSession.EndReason.RETURNED})


def _release_place(rater_id: int, now: datetime) -> bool:
    """Give back the rater's place in their group's quota, at most once; True if this call did.

    Under the same lock as enrolment: the group row, which the one-language enrolment's
    conditional UPDATE and the several-language count both lock. The rater's mark is a
    conditional UPDATE in the same transaction, so two concurrent releases give back one place.
    """
    rater = Rater.objects.select_related("study").filter(pk=rater_id).first()
    if rater is None or rater.origin != Rater.Origin.ENROLLED or rater.background_id is None:
        return False
    with transaction.atomic():
        if rater.study.asks_languages:
            locked = BackgroundGroup.objects.select_for_update().get(pk=rater.background_id)
        marked = Rater.objects.filter(pk=rater_id, place_released_at__isnull=True).update(
            place_released_at=now
        )
        if not marked:
            return False
        if rater.study.asks_languages:
            per_language = _places_by_language(locked)
            fullest = max((per_language[code] for code in rater.study.languages), default=0)
            BackgroundGroup.objects.filter(pk=locked.pk).update(filled=fullest)
        else:
            BackgroundGroup.objects.filter(pk=rater.background_id, filled__gt=0).update(
                filled=F("filled") - 1
            )
    return True


def sessions_release_timed_out(
    *, study: Study | None = None, group: BackgroundGroup | None = None, now: datetime | None = None
) -> int:
    """End the open sessions whose deadline has passed (of a group, a study, or all), giving
    their places back; how many ended. Run before a full group refuses someone, and by the
    periodic sweep, so a rater who walks away does not hold a place until they come back."""
    now = now or timezone.now()
    overdue = RaterSession.objects.filter(ended_at__isnull=True, deadline__lte=now)
    if group is not None:
        overdue = overdue.filter(rater__background=group)
    elif study is not None:
        overdue = overdue.filter(rater__study=study)
    ended = 0
    for session in overdue.order_by("pk"):
        # Another request may have ended it meanwhile, another way: only a time-out counts.
        session = rater_session_end(
            session=session, reason=RaterSession.EndReason.TIMED_OUT, now=now
        )
        ended += session.end_reason == RaterSession.EndReason.TIMED_OUT
    return ended


def rater_resume(*, study: Study, external_id: str, prolific_session_id: str) -> Enrollment | None:
    """A returning participant in a new browser: their session (with a matching Prolific
    SESSION_ID), None if the id is not enrolled, ParticipantInUse otherwise."""
    return _existing_enrollment(study, external_id, prolific_session_id)


def rater_enroll(
    *,
    study: Study,
    background: str,
    age_band: str,
    consent: bool,
    languages: Sequence[str] | None = None,
    language: str = "",
    external_id: str | None = None,
    prolific_study_id: str = "",
    prolific_session_id: str = "",
    from_prolific: bool = False,
    now: datetime | None = None,
) -> Enrollment:
    """Enrol a participant: consent, a place in their background group's quota, a session.

    A participant who comes back (same external id, e.g. a Prolific PID, with the same Prolific
    SESSION_ID) gets their own session back and takes no second place; the same id without
    it is refused (ParticipantInUse). The quota is taken by a conditional UPDATE
    (`filled < quota`), or per language under the group's lock in a study with several
    languages (_take_places), so with N places left and more than N people enrolling at once,
    exactly N succeed.

    `languages` are the study languages the rater reads (required when the study has several);
    `language` is the interface language they enrolled in. `from_prolific`: the participant came
    with a Prolific link (their `external_id` is the PROLIFIC_PID).
    """
    now = now or timezone.now()
    if external_id:
        existing = _existing_enrollment(study, external_id, prolific_session_id)
        if existing is not None:
            return existing
    if study.status != Study.Status.OPEN:
        raise StudyNotOpen(
            "this study is not open"
            if study.status == Study.Status.DRAFT
            else "this study has closed",
            code="study_closed" if study.status == Study.Status.CLOSED else "study_draft",
        )
    if not consent:
        raise DomainError("consent is required to take part", field="consent")
    if age_band not in AgeBand.values:
        raise DomainError(f"unknown age band {age_band!r}", field="age_band")
    group = BackgroundGroup.objects.filter(study=study, code=background).first()
    if group is None:
        raise DomainError(f"unknown background group {background!r}", field="background")
    reads = _reading_languages(study, languages)
    if group.quota is not None and group.filled >= group.quota:
        # Places held by sessions whose time ran out are given back before anyone is refused.
        sessions_release_timed_out(group=group, now=now)
    try:
        with transaction.atomic():
            places = _take_places(study, group, reads)
            if not places:
                raise StudyFull("this study is full for your group", field="background")
            rater = Rater.objects.create(
                study=study,
                external_id=external_id or uuid.uuid4().hex,
                background=group,
                age_band=age_band,
                language=language[:16],
                languages=places,
                origin=Rater.Origin.ENROLLED,
                consent_at=now,
                prolific_study_id=prolific_study_id[:64],
                prolific_session_id=prolific_session_id[:64],
                from_prolific=from_prolific,
            )
            session = RaterSession.objects.create(
                rater=rater, started_at=now, deadline=now + timedelta(minutes=study.session_minutes)
            )
    except IntegrityError:
        # The same participant enrolling twice at once: the other request won; use its session.
        if external_id:
            existing = _existing_enrollment(study, external_id, prolific_session_id)
            if existing is not None:
                return existing
        raise
    return Enrollment(rater=rater, session=session, resumed=False)


def rater_session_end(
    *, session: RaterSession, reason: str, now: datetime | None = None
) -> RaterSession:
    """End a session once; later calls leave the first end in place. Open tasks expire, and a
    returned or timed-out session gives its quota place back in the same transaction."""
    from apps.assignments.services import assignments_expire_for_session

    now = now or timezone.now()
    ended_at = min(now, session.deadline) if reason == RaterSession.EndReason.TIMED_OUT else now
    with transaction.atomic():
        ended = RaterSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(
            ended_at=ended_at, end_reason=reason
        )
        if ended and reason in RELEASING_ENDS:
            _release_place(session.rater_id, now)
        assignments_expire_for_session(session=session)
    session.refresh_from_db()
    return session


_ENDED_MESSAGES = {
    RaterSession.EndReason.TIMED_OUT: (
        "your session's time is up; answers can no longer be submitted",
        "session_timed_out",
    ),
    RaterSession.EndReason.RETURNED: (
        "you returned this study, so your place was given to someone else; answers can no "
        "longer be submitted",
        "session_returned",
    ),
}


def rater_session_check_open(*, session: RaterSession, now: datetime | None = None) -> None:
    """Raise SessionExpired when the session is over (ending it as timed out if the deadline passed)."""
    now = now or timezone.now()
    if session.ended_at is None and now >= session.deadline:
        rater_session_end(session=session, reason=RaterSession.EndReason.TIMED_OUT, now=now)
    if session.ended_at is not None:
        message, code = _ENDED_MESSAGES.get(
            RaterSession.EndReason(session.end_reason),
            ("your session has ended; answers can no longer be submitted", "session_ended"),
        )
        raise SessionExpired(message, code=code)
