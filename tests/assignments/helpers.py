"""What the task-choice tests share."""

from __future__ import annotations

from apps.raters.models import Rater, RaterSession
from apps.raters.services import rater_enroll
from apps.studies.models import Study


def enroll(
    study: Study, background: str = "technical", external_id: str | None = None
) -> tuple[Rater, RaterSession]:
    """A new rater in the study and their session.

    A fixed id rather than a generated one: the draws depend on it, and tests must not vary."""
    n = Rater.objects.filter(study=study).count() + 1
    enrollment = rater_enroll(
        study=study,
        background=background,
        age_band="25-34",
        consent=True,
        external_id=external_id or f"PID-{n:03d}",
    )
    return enrollment.rater, enrollment.session
