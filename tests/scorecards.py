"""Answering a scorecard as the rater page does: first the answers other questions depend on
(the step that opens them), then the scorecard."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from apps.assignments.models import Assignment
from apps.judgments.submission import AnswerIn, early_answers_submit, score_response_submit
from apps.raters.models import Rater
from apps.studies.selectors import study_questions


def send_early_answers(
    *,
    rater: Rater,
    assignment_id: int,
    answers: dict[str, AnswerIn],
    active_ms: int,
    now: datetime | None = None,
) -> None:
    """One step per level of the rubric's `answered_after` chain, for the answers given."""
    assignment = Assignment.objects.select_related("study__rubric").get(pk=assignment_id)
    questions = study_questions(study=assignment.study)
    needed = {p.name for q in questions for p in q.answered_after.all()}
    sent: set[str] = set()
    step = 0
    while True:
        ready = {
            q.name: answers[q.name]
            for q in questions
            if q.name in needed
            and q.name in answers
            and q.name not in sent
            and all(p.name in sent for p in q.answered_after.all())
        }
        if not ready:
            return
        step += 1
        early_answers_submit(
            rater=rater,
            assignment_id=assignment_id,
            answers=ready,
            active_ms=active_ms,
            now=None if now is None else now - timedelta(milliseconds=10 - step),
        )
        sent |= set(ready)


def submit_scorecard(**kwargs: Any) -> Any:
    """score_response_submit's arguments; the early answers go first, as the page sends them."""
    send_early_answers(
        rater=kwargs["rater"],
        assignment_id=kwargs["assignment_id"],
        answers=kwargs["answers"],
        active_ms=kwargs["active_ms"],
        now=kwargs.get("now"),
    )
    return score_response_submit(**kwargs)
