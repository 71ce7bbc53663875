"""What a rater is shown next: the scorecard whose explanation waits for a verdict, else their
open task or a new one. The task page asks for it, and so does an answer that carries the next
task (`with_next`), inside its own transaction; the views render what comes back."""

from __future__ import annotations

from dataclasses import dataclass

from apps.assignments.models import Assignment
from apps.assignments.selectors import rater_tasks, score_response_awaiting_verdict
from apps.assignments.services import assignment_next, assignment_next_in_transaction
from apps.core.errors import Busy, SessionExpired
from apps.judgments.models import ScoreResponse
from apps.raters.models import Rater, RaterSession
from apps.raters.services import rater_session_check_open
from apps.studies.models import Study


@dataclass(frozen=True)
class NextStep:
    """What the rater is shown next: the scorecard whose explanation waits for a verdict, else
    their open task or a new one (both None: nothing to show), and how many tasks the session
    has done."""

    awaiting: ScoreResponse | None
    assignment: Assignment | None
    done: int


_NOTHING_IN_PLACE = NextStep(None, None, 0)


def next_step(rater: Rater, session: RaterSession, *, in_transaction: bool = False) -> NextStep:
    """The next step in an open session of an open study; `in_transaction`: chosen in the
    caller's transaction, in one try (`assignment_next_in_transaction`)."""
    tasks = rater_tasks(rater=rater)
    done = tasks.done_in_session(session_id=session.pk)
    awaiting = score_response_awaiting_verdict(rater=rater, tasks=tasks, session_id=session.pk)
    if awaiting is not None:
        # The reveal comes on the task page itself, right after the scorecard: every answer is
        # followed by the same page, so the route says nothing about which items have one.
        return NextStep(awaiting, None, done)
    choose = assignment_next_in_transaction if in_transaction else assignment_next
    return NextStep(None, choose(rater=rater, session=session, tasks=tasks), done)


def next_step_in_transaction(study: Study, rater: Rater, session: RaterSession) -> NextStep:
    """The step after an answer, chosen in the answer's own transaction, so the answer and the
    task after it are one commit; `next_task_in_place` renders it once that commit is done.

    Nothing that happens here undoes the answer: no statement of it can fail but for the
    database itself failing, and every refusal is a returned value. When nothing is to be shown
    in place (a closed study, a session over, every candidate held by others this moment), the
    page loads `next`, as after any answer, and that page does what the case needs.
    """
    if study.status != Study.Status.OPEN:
        return _NOTHING_IN_PLACE
    try:
        rater_session_check_open(session=session)
        return next_step(rater, session, in_transaction=True)
    except (SessionExpired, Busy):
        return _NOTHING_IN_PLACE
