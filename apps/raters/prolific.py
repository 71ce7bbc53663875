"""Prolific's side of a study that are files and pasted ids (nothing here calls Prolific): the
researcher marking returned submissions, and the bulk-bonus file built from the study's rules.

Prolific tells the researcher, not us, when a participant returns a submission or it times out
there. Pasting those ids here ends their sessions as returned, which gives their quota places
back under the enrolment lock (`rater_session_end`). The bulk-bonus file is what Prolific's
"Bulk bonus payment" box takes: one `participant id,amount` line per participant, no header.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from apps.core.errors import DomainError, ImportRejected, LineError
from apps.core.sentences import Sentence
from apps.raters.models import Rater, RaterSession
from apps.raters.services import rater_session_end
from apps.studies.models import Study

# A Prolific id is 24 hexadecimal characters; other panels' ids vary, so any short token of
# letters, digits, '-' and '_' is taken, as the study link takes it.
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Column headings of Prolific's own exports, skipped when a file is pasted whole.
_HEADINGS = {"participant id", "participant_id", "participant", "prolific_pid", "id"}
MAX_RETURN_LINES = 10_000


@dataclass(frozen=True)
class ReturnsMarked:
    returned: int  # sessions ended as returned by this call
    already: int  # ids whose session had already ended as returned or timed out


def prolific_ids_from_text(text: str) -> list[tuple[int, str]]:
    """(line, id) of pasted ids or an uploaded file: each line's first comma- or tab-separated
    field; blank lines and a heading line skipped."""
    found: list[tuple[int, str]] = []
    lines = text.splitlines()
    if len(lines) > MAX_RETURN_LINES:
        raise DomainError(
            Sentence(
                gettext_noop("at most %(count)s lines at a time"), {"count": MAX_RETURN_LINES}
            ),
            field="participant_ids",
        )
    for number, line in enumerate(lines, start=1):
        first = line.replace("\t", ",").split(",", 1)[0].strip().strip('"')
        if not first or (number == 1 and first.lower() in _HEADINGS):
            continue
        found.append((number, first))
    return found


@transaction.atomic
def prolific_returns_mark(*, study: Study, ids: Sequence[tuple[int, str]]) -> ReturnsMarked:
    """End the sessions of the Prolific ids given, each with the line (or position) it came
    from, as returned.

    Every entry is checked first; one bad entry (not an id, not a Prolific participant of this
    study, or a participant who completed the study) refuses them all and changes nothing.
    Ids already ended as returned or timed out are counted and left as they are.
    """
    entries = list(ids)
    if not entries:
        raise DomainError("paste at least one Prolific participant id", field="participant_ids")
    raters = {
        rater.external_id: rater
        for rater in Rater.objects.filter(
            study=study, from_prolific=True, external_id__in=[pid for _, pid in entries]
        ).prefetch_related("sessions")
    }
    errors: list[LineError] = []
    sessions: list[RaterSession] = []
    already = 0
    for line, pid in entries:
        if not _ID.match(pid):
            errors.append(
                LineError.said(
                    line,
                    "participant_id",
                    Sentence(
                        gettext_noop("%(value)s is not a participant id"), {"value": repr(pid)}
                    ),
                )
            )
            continue
        rater = raters.get(pid)
        session = next(iter(rater.sessions.all()), None) if rater is not None else None
        if session is None:
            errors.append(
                LineError.said(
                    line,
                    "participant_id",
                    Sentence(
                        gettext_noop("no Prolific participant %(value)s took part in this study"),
                        {"value": repr(pid)},
                    ),
                )
            )
        elif session.end_reason == RaterSession.EndReason.COMPLETED:
            errors.append(
                LineError.said(
                    line,
                    "participant_id",
                    Sentence(
                        gettext_noop(
                            "participant %(value)s completed the study; a completed session is "
                            "not returned"
                        ),
                        {"value": repr(pid)},
                    ),
                )
            )
        elif session.ended_at is not None:
            already += 1
        else:
            sessions.append(session)
    if errors:
        raise ImportRejected(errors)
    now = timezone.now()
    for session in sessions:
        rater_session_end(session=session, reason=RaterSession.EndReason.RETURNED, now=now)
    return ReturnsMarked(returned=len(sessions), already=already)


@dataclass(frozen=True)
class Bonus:
    participant_id: str
    attention_passed: int
    completed: bool
    amount: Decimal


def prolific_bonuses(*, study: Study) -> list[Bonus]:
    """Each Prolific participant's bonus under the study's rules, largest first; those whose
    bonus comes to nothing are left out (Prolific refuses a zero payment)."""
    per_pass = study.prolific_bonus_per_attention_pass
    on_completion = study.prolific_bonus_on_completion
    rows = (
        Rater.objects.filter(study=study, from_prolific=True)
        .annotate(
            passed=Count(
                "assignments",
                filter=Q(assignments__is_attention_check=True, assignments__attention_passed=True),
                distinct=True,
            ),
            completed=Count(
                "sessions",
                filter=Q(sessions__end_reason=RaterSession.EndReason.COMPLETED),
                distinct=True,
            ),
        )
        .values_list("external_id", "passed", "completed")
    )
    bonuses = [
        Bonus(pid, passed, bool(completed), per_pass * passed + (on_completion if completed else 0))
        for pid, passed, completed in rows
    ]
    return sorted(
        (bonus for bonus in bonuses if bonus.amount > 0),
        key=lambda bonus: (-bonus.amount, bonus.participant_id),
    )


def prolific_bonus_csv(bonuses: list[Bonus]) -> str:
    """Prolific's bulk-bonus text: `participant id,amount` per line, amounts to the cent."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for bonus in bonuses:
        writer.writerow([bonus.participant_id, f"{bonus.amount:.2f}"])
    return out.getvalue()
