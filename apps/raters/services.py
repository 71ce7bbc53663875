"""Writes for raters and their sessions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from apps.core.errors import LineError
from apps.raters.models import AgeBand, BackgroundGroup, Rater, RaterSession
from apps.studies.models import Study


@dataclass(frozen=True)
class ImportedRater:
    external_id: str
    background: str
    age_band: str | None
    first_line: int
    # Bounds of the rater's activity in the file, to date the imported session.
    started_at: datetime
    last_at: datetime


def raters_check_imported(*, study: Study, raters: list[ImportedRater]) -> list[LineError]:
    """Lines whose rater is already stored with another background or age band."""
    stored = Rater.objects.filter(
        study=study, external_id__in=[r.external_id for r in raters]
    ).select_related("background")
    by_id = {rater.external_id: rater for rater in stored}
    errors: list[LineError] = []
    for spec in raters:
        rater = by_id.get(spec.external_id)
        if rater is None:
            continue
        if rater.background.code != spec.background:
            errors.append(
                LineError(
                    spec.first_line,
                    "background",
                    f"rater {spec.external_id!r} is stored with background {rater.background.code!r}",
                )
            )
        elif spec.age_band is not None and rater.age_band not in (
            spec.age_band,
            AgeBand.UNDISCLOSED,
        ):
            errors.append(
                LineError(
                    spec.first_line,
                    "age_band",
                    f"rater {spec.external_id!r} is stored with age band {rater.age_band!r}",
                )
            )
    return errors


@transaction.atomic
def raters_ensure_imported(
    *, study: Study, raters: list[ImportedRater]
) -> dict[str, tuple[Rater, RaterSession]]:
    """The stored rater and session for each imported rater, creating those that are missing.

    Imported raters consented elsewhere; each gets one closed session dated by their lines.
    Call raters_check_imported first: this does not re-check backgrounds.
    """
    groups = {group.code: group for group in BackgroundGroup.objects.filter(study=study)}
    ids = [spec.external_id for spec in raters]
    existing = {
        rater.external_id: rater for rater in Rater.objects.filter(study=study, external_id__in=ids)
    }
    missing = [spec for spec in raters if spec.external_id not in existing]
    created = Rater.objects.bulk_create(
        [
            Rater(
                study=study,
                external_id=spec.external_id,
                background=groups[spec.background],
                age_band=spec.age_band or AgeBand.UNDISCLOSED,
                origin=Rater.Origin.IMPORTED,
            )
            for spec in missing
        ],
        batch_size=1000,
    )
    for rater in created:
        existing[rater.external_id] = rater
    session_length = timedelta(minutes=study.session_minutes)
    sessions = {
        session.rater_id: session
        for session in RaterSession.objects.filter(rater__in=list(existing.values()))
    }
    new_sessions = []
    for spec in raters:
        rater = existing[spec.external_id]
        if rater.pk in sessions:
            continue
        deadline = max(spec.started_at + session_length, spec.last_at + timedelta(seconds=1))
        new_sessions.append(
            RaterSession(
                rater=rater,
                started_at=spec.started_at,
                deadline=deadline,
                ended_at=spec.last_at,
                end_reason=RaterSession.EndReason.IMPORTED,
            )
        )
    for session in RaterSession.objects.bulk_create(new_sessions, batch_size=1000):
        sessions[session.rater_id] = session
    return {ext: (rater, sessions[rater.pk]) for ext, rater in existing.items()}
