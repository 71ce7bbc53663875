"""Submitting answers from the rater pages: the rules the server enforces whatever the page did.

- the task must be the rater's own open task (someone else's is 404), in a live session
  (after the deadline: 410, and the session ends);
- a scorecard answers every required question, within its scale, and each question only after
  the questions it depends on (funniness after surprise and coherence). That order is held by
  the server: the answers others depend on come first, on their own (`early_answers_submit`,
  the first step), and a dependent answer is accepted only in a later request than theirs.
  The page's reported times are never what decides it;
- times come from the server: time on task is at most the time from hand-out to arrival, and
  each answer time lies between the hand-out (or the arrival of the answers it depends on) and
  its own arrival. The page's reported times only place an answer within those bounds;
- a retry with the same idempotency key returns the first result and stores nothing new. No
  look-up by key comes first: a retry finds its task answered, or breaks the key's unique index
  (the same key on another task), and is then answered from the stored judgment
  (`_as_replay`), so a first answer spends no statement on it;
- everything is one transaction: a refused answer stores nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.analysis.services import study_results_request
from apps.assignments.models import Assignment
from apps.assignments.selectors import assignment_get_for_rater, scorecard_get_for_rater
from apps.assignments.services import assignment_complete
from apps.core.compiled import CompiledInsert, CompiledRows
from apps.core.errors import Conflict, DomainError, NotFound, SessionExpired
from apps.judgments.models import (
    EarlyAnswer,
    NotUnderstood,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.raters.models import Rater, RaterSession
from apps.raters.services import StudyNotOpen, rater_session_check_open
from apps.studies import scales
from apps.studies.models import Question, Study
from apps.studies.selectors import study_questions

MAX_ACTIVE_MS = 6 * 60 * 60 * 1000

_Submit = TypeVar("_Submit", bound=Callable[..., Any])


_Judgment = type[ScoreResponse] | type[PairJudgment] | type[TuringJudgment]
# What runs after a new answer, in its transaction (see _atomic_submission).
Then = Callable[["SubmitResult"], object]


def _atomic_submission(model: _Judgment | None) -> Callable[[_Submit], _Submit]:
    """`transaction.atomic` for a submission, with the two outcomes that need a fresh start:

    - a session past its deadline stays ended: refusing a late answer rolls the whole
      submission back, and with it the session's end that rater_session_check_open wrote, so
      the end is written again after the rollback;
    - a retry of a stored answer (the task is found done, or the insert breaks the key's
      unique index), earlier or concurrent, returns that answer, as a replay. The whole
      submission is rolled back first; no savepoint is spent on it on every answer.

    `then(result)`, when given, runs in the same transaction after a new answer is stored (the
    rater's next task, chosen in the answer's commit: two statements fewer than a transaction
    of its own); what it returns is the result's `following`. It must not raise: an exception
    would undo the answer.
    """

    def decorate(func: _Submit) -> _Submit:
        @functools.wraps(func)
        def wrapper(*, rater: Rater, now: datetime | None = None, **kwargs: Any) -> Any:
            now = now or timezone.now()
            then: Then | None = kwargs.pop("then", None)
            try:
                with transaction.atomic():
                    result = func(rater=rater, now=now, **kwargs)
                    if then is not None and not result.replayed:
                        result = replace(result, following=then(result))
                    return result
            except SessionExpired:
                session = RaterSession.objects.filter(rater=rater).first()
                if session is not None:
                    with suppress(SessionExpired):
                        rater_session_check_open(session=session, now=now)
                raise
            except (IntegrityError, AlreadyAnswered):
                if model is None:
                    raise
                return _as_replay(model, rater, kwargs["idempotency_key"])

        return wrapper  # type: ignore[return-value]

    return decorate


class AlreadyAnswered(Conflict):
    """The task is done. When the answer that finished it carries this request's idempotency
    key, this request is its retry (earlier, or concurrent: it found the task done once the
    first's lock was released), and is answered as a replay."""


@dataclass(frozen=True)
class AnswerIn:
    # None when the rater said "I don't get it" (`not_understood`).
    value: float | None
    # Milliseconds from when the task was shown to when this answer was last set, as the page
    # measured them: they place the answer within the server's bounds, never outside them.
    at_ms: int
    not_understood: bool = False


@dataclass(frozen=True)
class SubmitResult:
    judgment_id: int
    kind: str
    replayed: bool
    # The rater's session as the submission read it (None for a replay), so that choosing the
    # next task in the same request need not read it again.
    session: RaterSession | None = None
    # What the submission's `then` returned in the answer's transaction (None without one, and
    # for a replay).
    following: object = None


def _replay(
    model: type[ScoreResponse | PairJudgment | TuringJudgment], rater: Rater, key: str
) -> Any:
    existing = model.objects.filter(idempotency_key=key).first()
    if existing is None:
        return None
    if existing.rater_id != rater.pk:
        raise Conflict("this idempotency key was already used", field="idempotency_key")
    return existing


def _open_scorecard(
    rater: Rater, assignment_id: int, now: datetime
) -> tuple[Assignment, list[EarlyAnswer]]:
    """`_open_assignment` of a scorecard, with the answers received for it in earlier requests
    (read with it: its first step and its submit both need them)."""
    assignment, early = scorecard_get_for_rater(rater=rater, assignment_id=assignment_id)
    _check_open(assignment, Assignment.Kind.SCORECARD, now)
    return assignment, early


def _open_assignment(rater: Rater, assignment_id: int, kind: str, now: datetime) -> Assignment:
    assignment = assignment_get_for_rater(rater=rater, assignment_id=assignment_id)
    _check_open(assignment, kind, now)
    return assignment


def _check_open(assignment: Assignment, kind: str, now: datetime) -> None:
    if assignment.kind != kind:
        raise DomainError(f"this task is a {assignment.kind}, not a {kind}", field="kind")
    # Answered before the session and the study are checked: a retry of that answer is found
    # by its key (_as_replay) and replayed after the session ended or the study closed too.
    if assignment.status == Assignment.Status.DONE:
        raise AlreadyAnswered("this task has already been answered", field="assignment")
    rater_session_check_open(session=assignment.session, now=now)
    if assignment.study.status != Study.Status.OPEN:
        raise StudyNotOpen("this study is no longer collecting answers", code="study_closed")
    if assignment.status != Assignment.Status.PENDING:
        raise Conflict("this task is no longer open", field="assignment")


_KEY = re.compile(r"^[A-Za-z0-9-]{8,64}$")


def _check_key(key: str) -> None:
    if not _KEY.match(key):
        raise DomainError(
            "idempotency_key must be 8 to 64 letters, digits or hyphens", field="idempotency_key"
        )


def _check_active(active_ms: int) -> None:
    if not 0 <= active_ms <= MAX_ACTIVE_MS:
        raise DomainError("active_ms must be from 0 to 21600000", field="active_ms")


def _check_answers(
    questions: list[Question], answers: dict[str, AnswerIn], active_ms: int
) -> dict[str, Question]:
    """Each answer names a question of this scorecard and lies within its scale and the page's
    own time on task."""
    known = {q.name: q for q in questions}
    for name, answer in answers.items():
        question = known.get(name)
        if question is None:
            raise DomainError(
                f"{name!r} is not a question of this scorecard", field=f"answers.{name}"
            )
        if answer.not_understood or answer.value is None:
            if not question.allow_not_understood:
                raise DomainError(
                    f'{name} does not offer "I don\'t get it": send a value',
                    field=f"answers.{name}",
                )
        else:
            wrong = scales.problem(
                kind=question.kind,
                low=question.min_value,
                high=question.max_value,
                step=question.step,
                value=answer.value,
            )
            if wrong:
                raise DomainError(f"{name} {wrong}", field=f"answers.{name}")
        if not 0 <= answer.at_ms <= active_ms:
            raise DomainError(
                f"{name}: answer time must lie between 0 and active_ms", field=f"answers.{name}"
            )
    return known


def _prerequisites(question: Question) -> list[Question]:
    return list(question.answered_after.all())


def _order_error(question: Question, missing: list[Question]) -> DomainError:
    names = " and ".join(q.name for q in missing)
    return DomainError(
        f"{question.name} may only be answered after {names} reached the server: send "
        f"{names} first, on their own (scorecards/early), then {question.name}",
        field=f"answers.{question.name}",
        code="order",
    )


# The judgment each answer stores, its INSERT compiled once (apps/core/compiled.py).
_NEW_SCORE_RESPONSE = CompiledInsert(ScoreResponse)
_NEW_PAIR_JUDGMENT = CompiledInsert(PairJudgment)
_NEW_TURING_JUDGMENT = CompiledInsert(TuringJudgment)
_NEW_SCORE_ANSWERS = CompiledRows(
    ScoreAnswer, ("response_id", "question_id", "value", "answered_at", "received_at")
)
# Sent again, an early answer replaces the one stored (its value and times).
_EARLY_ANSWERS_STORED = CompiledRows(
    EarlyAnswer,
    ("assignment_id", "question_id", "value", "answered_at", "received_at"),
    upsert=(("assignment", "question"), ("value", "answered_at", "received_at")),
)


def _early(
    received: list[EarlyAnswer], questions: list[Question], now: datetime
) -> dict[str, EarlyAnswer]:
    """The answers received for this task in earlier requests (strictly before `now`), by
    question name."""
    names = {q.pk: q.name for q in questions}
    return {
        names[early.question_id]: early
        for early in received
        if early.received_at < now and early.question_id in names
    }


def _placed(answer: AnswerIn, active_ms: int, now: datetime, earliest: datetime) -> datetime:
    """When the answer was set: the page's estimate, held within [earliest, now]."""
    estimate = now - timedelta(milliseconds=active_ms - answer.at_ms)
    return min(now, max(earliest, estimate))


def _bounded_active_seconds(assignment: Assignment, active_ms: int, now: datetime) -> float:
    """The page's time on task, never more than the server saw from hand-out to arrival."""
    seen = max(0.0, (now - assignment.created_at).total_seconds())
    return min(active_ms / 1000, seen)


def _attention_passed(assignment: Assignment, values: dict[str, float]) -> bool | None:
    if not assignment.is_attention_check:
        return None
    expected: dict[str, list[int]] = assignment.item.attention_expected or {}
    return all(name in values and values[name] in allowed for name, allowed in expected.items())


def _common(assignment: Assignment, key: str, active_ms: int, now: datetime) -> dict[str, Any]:
    # Both times are the server's: the session start and the hand-out are its own records.
    return {
        "study_id": assignment.study_id,
        "rater_id": assignment.rater_id,
        "session_id": assignment.session_id,
        "assignment": assignment,
        "idempotency_key": key,
        "seconds_into_session": max(0.0, (now - assignment.session.started_at).total_seconds()),
        "active_seconds": _bounded_active_seconds(assignment, active_ms, now),
        "submitted_at": now,
    }


def _finish(assignment: Assignment, now: datetime, attention_passed: bool | None = None) -> None:
    if not assignment_complete(assignment=assignment, attention_passed=attention_passed):
        raise AlreadyAnswered("this task has already been answered", field="assignment")
    if not assignment.is_attention_check:
        # Since the judgment's own time: the results' lag counts from when it was submitted.
        study_results_request(study_id=assignment.study_id, since=now)


@_atomic_submission(None)
def early_answers_submit(
    *,
    rater: Rater,
    assignment_id: int,
    answers: dict[str, AnswerIn],
    active_ms: int,
    now: datetime | None = None,
) -> list[str]:
    """The first step of a scorecard: store the answers other questions depend on, and return
    the questions now open (every question whose prerequisites have all arrived).

    An answer is accepted here only if its own prerequisites arrived in an earlier request, so
    a chain of dependencies (a after b after c) takes one step per link. Sending an answer again
    replaces it; the dependent answers are only ever judged against what is stored.
    """
    now = now or timezone.now()
    if not answers:
        raise DomainError("send at least one answer", field="answers")
    _check_active(active_ms)
    assignment, received = _open_scorecard(rater, assignment_id, now)
    questions = study_questions(study=assignment.study)
    known = _check_answers(questions, answers, active_ms)
    for name, answer in answers.items():
        if answer.value is None:
            # Nothing depends on a question that offers it (rubrics.py): it comes with the card.
            raise DomainError(
                f'{name}: "I don\'t get it" is sent with the scorecard, not before it',
                field=f"answers.{name}",
            )
    early = _early(received, questions, now)
    for name in answers:
        missing = [q for q in _prerequisites(known[name]) if q.name not in early]
        if missing:
            raise _order_error(known[name], missing)
    handed_out = assignment.created_at
    _EARLY_ANSWERS_STORED(
        [
            (
                assignment.pk,
                known[name].pk,
                float(answer.value or 0),
                _placed(
                    answer,
                    active_ms,
                    now,
                    max(
                        [handed_out]
                        + [early[q.name].received_at for q in _prerequisites(known[name])]
                    ),
                ),
                now,
            )
            for name, answer in answers.items()
        ]
    )
    stored = set(early) | set(answers)
    return [
        q.name
        for q in questions
        if q.name not in stored
        and _prerequisites(q)
        and all(p.name in stored for p in _prerequisites(q))
    ]


@_atomic_submission(ScoreResponse)
def score_response_submit(
    *,
    rater: Rater,
    assignment_id: int,
    idempotency_key: str,
    answers: dict[str, AnswerIn],
    active_ms: int,
    now: datetime | None = None,
    then: Then | None = None,  # taken by _atomic_submission
) -> SubmitResult:
    """The scorecard. Answers that arrived in the first step may be sent again (they must be
    unchanged) or left out; every answer that depends on others needs them to have arrived in
    an earlier request."""
    _check_key(idempotency_key)
    now = now or timezone.now()
    _check_active(active_ms)
    assignment, received = _open_scorecard(rater, assignment_id, now)
    questions = study_questions(study=assignment.study)
    _check_answers(questions, answers, active_ms)
    early = _early(received, questions, now) if any(_prerequisites(q) for q in questions) else {}
    for name, answer in answers.items():
        stored = early.get(name)
        if stored is not None and stored.value != answer.value:
            raise DomainError(
                f"{name} is {answer.value} here but {stored.value} was received before; "
                f"send the change on its own first (scorecards/early)",
                field=f"answers.{name}",
                code="order",
            )
    # The order rule first: an answer given without the questions it depends on (funniness
    # without surprise and coherence) is refused for breaking that rule, not for the gaps.
    for question in questions:
        if question.name not in answers or question.name in early:
            continue
        missing = [q for q in _prerequisites(question) if q.name not in early]
        if missing:
            raise _order_error(question, missing)
    for question in questions:
        if question.required and question.name not in answers and question.name not in early:
            raise DomainError(f"{question.name} must be answered", field=f"answers.{question.name}")
    values = {name: early_answer.value for name, early_answer in early.items()}
    values.update(
        {name: answer.value for name, answer in answers.items() if answer.value is not None}
    )
    response = _NEW_SCORE_RESPONSE(
        item=assignment.item, **_common(assignment, idempotency_key, active_ms, now)
    )
    rows: list[tuple[int, int, float, datetime, datetime]] = []
    not_understood = []
    for question in questions:
        if question.name in early:
            stored = early[question.name]
            rows.append(
                (response.pk, question.pk, stored.value, stored.answered_at, stored.received_at)
            )
        elif question.name in answers:
            # After the hand-out, and after its prerequisites arrived (a microsecond after:
            # it was set once they had been accepted).
            earliest = max(
                [assignment.created_at]
                + [
                    early[q.name].received_at + timedelta(microseconds=1)
                    for q in _prerequisites(question)
                ]
            )
            answer = answers[question.name]
            answered_at = _placed(answer, active_ms, now, earliest)
            if answer.value is None:
                not_understood.append(
                    NotUnderstood(
                        response=response,
                        question=question,
                        answered_at=answered_at,
                        received_at=now,
                    )
                )
                continue
            rows.append((response.pk, question.pk, answer.value, answered_at, now))
    _NEW_SCORE_ANSWERS(rows)
    NotUnderstood.objects.bulk_create(not_understood)
    _finish(assignment, now, _attention_passed(assignment, values))
    return SubmitResult(response.pk, "scorecard", False, assignment.session)


def _as_replay(
    model: type[ScoreResponse | PairJudgment | TuringJudgment], rater: Rater, key: str
) -> SubmitResult:
    """A retry: the answer with this key is stored (by this request's first try, or a
    concurrent one); return it, as a replay."""
    existing = _replay(model, rater, key)
    if existing is None:
        raise Conflict("this task has already been answered", field="assignment")
    kind = {ScoreResponse: "scorecard", PairJudgment: "pair", TuringJudgment: "turing"}[model]
    return SubmitResult(existing.pk, kind, True)


@_atomic_submission(PairJudgment)
def pair_judgment_submit(
    *,
    rater: Rater,
    assignment_id: int,
    idempotency_key: str,
    winner: str,
    active_ms: int,
    now: datetime | None = None,
    then: Then | None = None,  # taken by _atomic_submission
) -> SubmitResult:
    _check_key(idempotency_key)
    if winner not in PairJudgment.Outcome.values:
        raise DomainError("winner must be 'left', 'right', 'tie' or 'neither'", field="winner")
    now = now or timezone.now()
    _check_active(active_ms)
    assignment = _open_assignment(rater, assignment_id, Assignment.Kind.PAIR, now)
    _check_pair_answer_offered(assignment.study, winner)
    right_id = assignment.right_item_id
    assert right_id is not None  # a pair assignment always has both (database check)
    judgment = _NEW_PAIR_JUDGMENT(
        left=assignment.item,
        right_id=right_id,
        outcome=winner,
        winner_id={"left": assignment.item_id, "right": right_id}.get(winner),
        **_common(assignment, idempotency_key, active_ms, now),
    )
    _finish(assignment, now)
    return SubmitResult(judgment.pk, "pair", False, assignment.session)


def _check_pair_answer_offered(study: Study, winner: str) -> None:
    """A tie or "neither" only where the study offers it: a forced choice stays forced."""
    if winner == PairJudgment.Outcome.TIE and not study.pair_offers_tie:
        raise DomainError("this study does not offer 'about the same' (tie)", field="winner")
    if winner == PairJudgment.Outcome.NEITHER and not study.pair_offers_neither:
        raise DomainError("this study does not offer 'neither'", field="winner")


@_atomic_submission(TuringJudgment)
def turing_judgment_submit(
    *,
    rater: Rater,
    assignment_id: int,
    idempotency_key: str,
    guess: str,
    active_ms: int,
    now: datetime | None = None,
    then: Then | None = None,  # taken by _atomic_submission
) -> SubmitResult:
    _check_key(idempotency_key)
    if guess not in TuringJudgment.Guess.values:
        raise DomainError("guess must be 'ai' or 'human'", field="guess")
    now = now or timezone.now()
    _check_active(active_ms)
    assignment = _open_assignment(rater, assignment_id, Assignment.Kind.TURING, now)
    judgment = _NEW_TURING_JUDGMENT(
        item=assignment.item,
        guess=guess,
        **_common(assignment, idempotency_key, active_ms, now),
    )
    _finish(assignment, now)
    return SubmitResult(judgment.pk, "turing", False, assignment.session)


@_atomic_submission(None)
def explanation_match_submit(
    *, rater: Rater, response_id: int, verdict: str, now: datetime | None = None
) -> ScoreResponse:
    """The rater's verdict on the model's self-explanation, asked only after the item was scored."""
    if verdict not in ("yes", "no", "unsure"):
        raise DomainError("verdict must be 'yes', 'no' or 'unsure'", field="verdict")
    response = (
        ScoreResponse.objects.select_related("item", "session")
        .filter(pk=response_id, rater=rater)
        .first()
    )
    if response is None or not response.item.explanation:
        raise NotFound("no such scorecard with an explanation for you", field="response")
    if response.explanation_match:
        if response.explanation_match == verdict:
            return response
        raise Conflict("the explanation has already been judged", field="verdict")
    now = now or timezone.now()
    rater_session_check_open(session=response.session, now=now)
    ScoreResponse.objects.filter(pk=response.pk, explanation_match="").update(
        explanation_match=verdict, explanation_answered_at=now
    )
    study_results_request(study_id=response.study_id, since=now)
    response.refresh_from_db()
    return response
