"""Submitting answers: the rules the server enforces, through the services and the JSON endpoints."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.analysis.models import AggregationState
from apps.assignments.models import Assignment
from apps.assignments.selectors import scorecard_get_for_rater
from apps.assignments.services import assignment_next
from apps.core.compiled import readable
from apps.core.errors import Conflict, DomainError, NotFound, SessionExpired
from apps.judgments.models import (
    EarlyAnswer,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.judgments.submission import (
    AnswerIn,
    early_answers_submit,
    explanation_match_submit,
    score_response_submit,
)
from apps.raters.models import Rater, RaterSession
from apps.raters.services import rater_enroll
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}
ANSWERS: dict[str, dict[str, int]] = {
    "surprise": {"value": 3, "at_ms": 1000},
    "coherence": {"value": 4, "at_ms": 2000},
    "funniness": {"value": 5, "at_ms": 3000},
    "offensive": {"value": 0, "at_ms": 3500},
}
KEY = "key-0001-aaaa"


def _study(**fields: object) -> Study:
    values: dict[str, object] = {
        "task_mix": {"scorecard": 1.0},
        "attention_check_rate": 0,
        "tasks_per_session": 40,
        "random_seed": 99,
    }
    values.update(fields)
    study = StudyFactory(**values)
    for i in range(4):
        ItemFactory(study=study, external_id=f"j{i}", topic="cats")
    return study


def _stored() -> dict[str, Any]:
    return {
        "scorecards": ScoreResponse.objects.count(),
        "answers": ScoreAnswer.objects.count(),
        "pairs": PairJudgment.objects.count(),
        "turing": TuringJudgment.objects.count(),
        "raters": Rater.objects.count(),
        "assignments": sorted(Assignment.objects.values_list("pk", "status")),
        "explanations": sorted(ScoreResponse.objects.values_list("pk", "explanation_match")),
    }


# --- helpers: the browser ----------------------------------------------------------------------


def _browser(study: Study, client: Client | None = None) -> tuple[Client, Rater, Assignment]:
    """A browser that enrolled through the study link and opened its first task."""
    client = client or Client()
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    rater = Rater.objects.get(pk=client.session[f"laughlab:rater:{study.pk}"])
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    return client, rater, Assignment.objects.get(rater=rater, status=Assignment.Status.PENDING)


def _post(client: Client, study: Study, endpoint: str, body: Any, csrf: str = "") -> Any:
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(
        f"/api/v1/rater/{study.slug}/{endpoint}",
        data=data,
        content_type="application/json",
        headers={"X-CSRFToken": csrf} if csrf else {},
    )


def _scorecard(
    assignment: Assignment,
    answers: dict[str, dict[str, int]] | None = None,
    key: str = KEY,
    active_ms: int = 4000,
) -> dict[str, Any]:
    return {
        "assignment": assignment.pk,
        "idempotency_key": key,
        "active_ms": active_ms,
        "answers": ANSWERS if answers is None else answers,
    }


EARLY = ("surprise", "coherence")


def _post_scorecard(client: Client, study: Study, body: dict[str, Any], csrf: str = "") -> Any:
    """As the page sends a scorecard: surprise and coherence first (the step that opens
    funniness), then the whole scorecard."""
    answers = body.get("answers") if isinstance(body, dict) else None
    if isinstance(answers, dict) and all(name in answers for name in EARLY):
        _post(
            client,
            study,
            "scorecards/early",
            {
                "assignment": body.get("assignment"),
                "active_ms": body.get("active_ms"),
                "answers": {name: answers[name] for name in EARLY},
            },
            csrf,
        )
    return _post(client, study, "scorecards", body, csrf)


def _next_task(client: Client, study: Study, rater: Rater) -> Assignment:
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    return Assignment.objects.get(rater=rater, status=Assignment.Status.PENDING)


# --- helpers: the services ---------------------------------------------------------------------


def _enrolled(study: Study, background: str = "technical") -> tuple[Rater, Assignment]:
    enrollment = rater_enroll(study=study, background=background, age_band="25-34", consent=True)
    assignment = assignment_next(rater=enrollment.rater, session=enrollment.session)
    assert assignment is not None
    return enrollment.rater, assignment


def _answers(**changes: tuple[int, int] | None) -> dict[str, AnswerIn]:
    answers = {name: AnswerIn(a["value"], a["at_ms"]) for name, a in ANSWERS.items()}
    for name, change in changes.items():
        if change is None:
            answers.pop(name)
        else:
            answers[name] = AnswerIn(*change)
    return answers


def _submit(rater: Rater, assignment: Assignment, early: bool = True, **kwargs: Any) -> Any:
    """As the page does it: surprise and coherence first (unless `early` is off), then the
    scorecard. With an explicit `now`, the first step arrives a millisecond before it."""
    values: dict[str, Any] = {
        "rater": rater,
        "assignment_id": assignment.pk,
        "idempotency_key": KEY,
        "answers": _answers(),
        "active_ms": 4000,
    }
    values.update(kwargs)
    answers = values["answers"]
    if early and all(name in answers for name in EARLY):
        now = values.get("now")
        early_answers_submit(
            rater=rater,
            assignment_id=assignment.pk,
            answers={name: answers[name] for name in EARLY},
            active_ms=values["active_ms"],
            now=now - timedelta(milliseconds=1) if now is not None else None,
        )
    return score_response_submit(**values)


# --- the scorecard's order and scales: services ------------------------------------------------


def test_funniness_without_surprise_and_coherence_is_rejected_by_the_service():
    study = _study()
    rater, assignment = _enrolled(study)
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _submit(rater, assignment, answers=_answers(surprise=None, coherence=None))
    assert refused.value.status_code == 400
    assert refused.value.field == "answers.funniness"
    assert "funniness" in refused.value.message
    assert _stored() == before


def test_funniness_before_coherence_is_rejected_by_the_service():
    study = _study()
    rater, assignment = _enrolled(study)
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _submit(rater, assignment, early=False, answers=_answers(funniness=(5, 1500)))
    assert refused.value.field == "answers.funniness"
    assert "coherence" in refused.value.message
    assert _stored() == before


@pytest.mark.parametrize(
    ("name", "value"), [("funniness", 8), ("funniness", 0), ("surprise", 6), ("offensive", 2)]
)
def test_answer_outside_its_scale_is_rejected_by_the_service(name, value):
    study = _study()
    rater, assignment = _enrolled(study)
    before = _stored()
    at_ms = ANSWERS[name]["at_ms"]
    with pytest.raises(DomainError) as refused:
        _submit(rater, assignment, answers=_answers(**{name: (value, at_ms)}))
    assert refused.value.field == f"answers.{name}"
    assert name in refused.value.message
    assert _stored() == before


def test_unknown_question_is_rejected_by_the_service():
    study = _study()
    rater, assignment = _enrolled(study)
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _submit(rater, assignment, answers={**_answers(), "laughs": AnswerIn(1, 100)})
    assert refused.value.field == "answers.laughs"
    assert _stored() == before


def test_missing_required_answer_is_rejected_by_the_service():
    study = _study()
    rater, assignment = _enrolled(study)
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _submit(rater, assignment, answers=_answers(offensive=None))
    assert refused.value.field == "answers.offensive"
    assert _stored() == before


def test_answer_time_after_the_active_time_is_rejected_by_the_service():
    study = _study()
    rater, assignment = _enrolled(study)
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _submit(rater, assignment, answers=_answers(offensive=(0, 9000)), active_ms=4000)
    assert refused.value.field == "answers.offensive"
    assert _stored() == before


# --- who may answer what: services -------------------------------------------------------------


def test_answer_after_the_deadline_is_refused_and_the_session_times_out():
    study = _study()
    rater, first = _enrolled(study)
    _submit(rater, first)
    session = RaterSession.objects.get(rater=rater)
    second = assignment_next(rater=rater, session=session)
    assert second is not None
    before = _stored()
    with pytest.raises(SessionExpired) as refused:
        _submit(rater, second, idempotency_key="key-0002-bbbb", now=session.deadline)
    assert refused.value.status_code == 410
    session.refresh_from_db()
    assert session.end_reason == RaterSession.EndReason.TIMED_OUT
    assert session.ended_at == session.deadline
    assert ScoreResponse.objects.get().assignment_id == first.pk
    assert {k: v for k, v in _stored().items() if k != "assignments"} == {
        k: v for k, v in before.items() if k != "assignments"
    }
    second.refresh_from_db()
    assert second.status == Assignment.Status.EXPIRED


def test_someone_elses_assignment_looks_missing_to_the_service():
    study = _study()
    _, assignment = _enrolled(study)
    intruder, _ = _enrolled(study, "content_operations")
    before = _stored()
    with pytest.raises(NotFound):
        _submit(intruder, assignment)
    assert _stored() == before


def test_same_idempotency_key_twice_stores_one_judgment_and_replays_it():
    study = _study()
    rater, assignment = _enrolled(study)
    first = _submit(rater, assignment)
    after_first = _stored()
    again = _submit(rater, assignment, early=False)
    assert first.replayed is False
    assert again.replayed is True
    assert again.judgment_id == first.judgment_id
    assert _stored() == after_first
    assert ScoreResponse.objects.count() == 1


def test_a_retry_after_the_session_ended_is_a_replay_and_ends_nothing_again():
    study = _study()
    rater, assignment = _enrolled(study)
    first = _submit(rater, assignment)
    session = RaterSession.objects.get(rater=rater)
    after_first = _stored()
    again = _submit(rater, assignment, early=False, now=session.deadline + timedelta(minutes=5))
    assert (again.judgment_id, again.replayed) == (first.judgment_id, True)
    assert _stored() == after_first
    session.refresh_from_db()
    assert session.ended_at is None


def test_a_retry_after_the_study_closed_is_a_replay():
    study = _study()
    rater, assignment = _enrolled(study)
    first = _submit(rater, assignment)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    after_first = _stored()
    again = _submit(rater, assignment, early=False)
    assert (again.judgment_id, again.replayed) == (first.judgment_id, True)
    assert _stored() == after_first


def test_a_key_sent_again_with_another_task_replays_its_first_answer_and_stores_nothing():
    study = _study()
    rater, first_task = _enrolled(study)
    first = _submit(rater, first_task)
    second_task = assignment_next(rater=rater, session=RaterSession.objects.get(rater=rater))
    assert second_task is not None
    after_first = _stored()
    again = _submit(rater, second_task)
    assert (again.judgment_id, again.replayed) == (first.judgment_id, True)
    assert _stored() == after_first
    second_task.refresh_from_db()
    assert second_task.status == Assignment.Status.PENDING


@pytest.mark.parametrize("kind", ["scorecard", "pair", "turing"])
def test_a_first_answer_spends_no_statement_looking_up_its_key(kind):
    """The key's unique index answers a retry (see `_as_replay`); a look-up by key before
    every answer was a statement per answer spent on the rare retry."""

    from apps.judgments.submission import pair_judgment_submit, turing_judgment_submit

    study = _study(task_mix={kind: 1.0})
    rater, assignment = _enrolled(study)
    with CaptureQueriesContext(connection) as queries:
        if kind == "scorecard":
            result = _submit(rater, assignment)
        elif kind == "pair":
            result = pair_judgment_submit(
                rater=rater,
                assignment_id=assignment.pk,
                idempotency_key=KEY,
                winner="left",
                active_ms=900,
            )
        else:
            result = turing_judgment_submit(
                rater=rater,
                assignment_id=assignment.pk,
                idempotency_key=KEY,
                guess="ai",
                active_ms=900,
            )
    assert result.replayed is False
    sent = [readable(q["sql"]) for q in queries.captured_queries]
    looked_up = [sql for sql in sent if sql.startswith("SELECT") and KEY in sql]
    assert looked_up == []


def test_a_scorecards_rows_are_not_built_by_the_orm_on_each_answer(postgres_only):
    """A scorecard stores its early answers and then its answers, several rows each: their
    INSERTs are written once per process (apps/core/compiled.py `CompiledRows`), not compiled
    by the ORM for every request."""
    from django.db.models.sql.compiler import SQLInsertCompiler

    study = _study()
    first_rater, first = _enrolled(study)
    _submit(first_rater, first)  # the process's first: its statements are written here
    rater, assignment = _enrolled(study)
    with mock.patch.object(
        SQLInsertCompiler, "as_sql", autospec=True, side_effect=SQLInsertCompiler.as_sql
    ) as compiled:
        _submit(rater, assignment, idempotency_key="key-0002-bbbb")
    assert compiled.call_count == 0
    answers = ScoreAnswer.objects.filter(response__rater=rater)
    assert sorted(answers.values_list("question__name", "value")) == sorted(
        (name, float(a["value"])) for name, a in ANSWERS.items()
    )
    early = EarlyAnswer.objects.filter(assignment=assignment)
    assert sorted(early.values_list("question__name", "value")) == [
        ("coherence", 4.0),
        ("surprise", 3.0),
    ]


def test_same_idempotency_key_from_another_rater_is_a_conflict():
    study = _study()
    rater, assignment = _enrolled(study)
    _submit(rater, assignment)
    other, their_assignment = _enrolled(study, "content_operations")
    before = _stored()
    with pytest.raises(Conflict) as refused:
        _submit(other, their_assignment)
    assert refused.value.field == "idempotency_key"
    assert _stored() == before


def test_answering_an_answered_task_with_a_new_key_is_a_conflict():
    study = _study()
    rater, assignment = _enrolled(study)
    _submit(rater, assignment)
    before = _stored()
    with pytest.raises(Conflict):
        _submit(rater, assignment, idempotency_key="key-0002-bbbb")
    assert _stored() == before


def test_answer_of_the_wrong_kind_is_rejected_by_the_service():
    from apps.judgments.submission import pair_judgment_submit, turing_judgment_submit

    study = _study()
    rater, assignment = _enrolled(study)
    before = _stored()
    with pytest.raises(DomainError) as refused:
        pair_judgment_submit(
            rater=rater,
            assignment_id=assignment.pk,
            idempotency_key=KEY,
            winner="left",
            active_ms=1,
        )
    assert refused.value.field == "kind"
    with pytest.raises(DomainError):
        turing_judgment_submit(
            rater=rater, assignment_id=assignment.pk, idempotency_key=KEY, guess="ai", active_ms=1
        )
    assert _stored() == before


# --- what is stored: services ------------------------------------------------------------------


def _handed_out(assignment: Assignment, seconds_ago: float) -> datetime:
    """Date the task's hand-out back, as if the page had been on screen that long."""
    handed_out = timezone.now() - timedelta(seconds=seconds_ago)
    Assignment.objects.filter(pk=assignment.pk).update(created_at=handed_out)
    assignment.refresh_from_db()
    return handed_out


def test_each_answers_time_is_placed_by_the_page_within_the_servers_bounds():
    study = _study()
    rater, assignment = _enrolled(study)
    handed_out = _handed_out(assignment, 60)
    first_step = handed_out + timedelta(seconds=3)
    now = handed_out + timedelta(seconds=6)
    early_answers_submit(
        rater=rater,
        assignment_id=assignment.pk,
        answers={"surprise": AnswerIn(2, 500), "coherence": AnswerIn(3, 2500)},
        active_ms=3000,
        now=first_step,
    )
    answers = {"offensive": AnswerIn(0, 3000), "funniness": AnswerIn(6, 5000)}
    result = _submit(rater, assignment, early=False, answers=answers, active_ms=6000, now=now)
    stored = {
        a.question.name: a
        for a in ScoreAnswer.objects.filter(response_id=result.judgment_id).select_related(
            "question"
        )
    }
    assert {name: a.value for name, a in stored.items()} == {
        "surprise": 2,
        "coherence": 3,
        "offensive": 0,
        "funniness": 6,
    }
    ms = timedelta(milliseconds=1)
    assert {name: a.answered_at - handed_out for name, a in stored.items()} == {
        "surprise": 500 * ms,
        "coherence": 2500 * ms,
        "offensive": 3000 * ms,
        "funniness": 5000 * ms,
    }
    assert {name: a.received_at for name, a in stored.items()} == {
        "surprise": first_step,
        "coherence": first_step,
        "offensive": now,
        "funniness": now,
    }


def test_seconds_into_session_and_active_seconds_are_stored():
    study = _study()
    rater, assignment = _enrolled(study)
    session = RaterSession.objects.get(rater=rater)
    now = session.started_at + timedelta(seconds=90)
    result = _submit(rater, assignment, active_ms=4250, now=now)
    response = ScoreResponse.objects.get(pk=result.judgment_id)
    assert response.seconds_into_session == pytest.approx(90.0)
    assert response.active_seconds == pytest.approx(4.25)
    assert response.submitted_at == now
    assert response.session_id == session.pk
    assert response.assignment_id == assignment.pk
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.DONE


def test_a_run_claimed_by_an_answer_is_due_a_debounce_after_the_answer_was_submitted(
    monkeypatch, settings, django_capture_on_commit_callbacks
):
    # The request's time between the judgment and its commit is not added to the results' lag:
    # the run it claims is due a debounce after the judgment's own time.
    from apps.analysis import services as analysis

    settings.AGGREGATE_DEBOUNCE_SECONDS = 10
    claims: list[datetime] = []
    monkeypatch.setattr(
        analysis, "_enqueue", lambda study_id, claimed_at: claims.append(claimed_at) or True
    )
    monkeypatch.setattr(analysis, "_tasks_run_eagerly", lambda: False)
    analysis.queued_runs.forget()
    study = _study()
    rater, assignment = _enrolled(study)
    submitted = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        _submit(rater, assignment, now=submitted)
    analysis.queued_runs.forget()
    assert claims == [submitted]
    state = AggregationState.objects.get(study=study)
    assert state.scheduled_at == submitted
    assert state.requested_at > submitted  # marked at the real time, after the commit


def test_explanation_verdict_is_stored_once_by_the_service():
    study = _study()
    study.items.update(explanation="A pun on 'byte'.")
    rater, assignment = _enrolled(study)
    result = _submit(rater, assignment)
    stored = explanation_match_submit(rater=rater, response_id=result.judgment_id, verdict="no")
    answered_at = stored.explanation_answered_at
    assert stored.explanation_match == "no"
    again = explanation_match_submit(rater=rater, response_id=result.judgment_id, verdict="no")
    assert again.explanation_answered_at == answered_at
    with pytest.raises(Conflict):
        explanation_match_submit(rater=rater, response_id=result.judgment_id, verdict="yes")
    assert ScoreResponse.objects.get().explanation_match == "no"


# --- the JSON endpoints ------------------------------------------------------------------------


def test_scorecard_through_the_endpoint_is_stored_and_points_to_the_next_task():
    study = _study()
    client, rater, assignment = _browser(study)
    response = _post_scorecard(client, study, _scorecard(assignment))
    assert response.status_code == 201
    assert response.json() == {
        "kind": "scorecard",
        "replayed": False,
        "next": f"/s/{study.slug}/task/",
    }
    stored = ScoreResponse.objects.get()
    assert (stored.rater_id, stored.item_id, stored.assignment_id) == (
        rater.pk,
        assignment.item_id,
        assignment.pk,
    )
    assert stored.answers.count() == 4


def test_funniness_without_surprise_and_coherence_is_rejected():
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    answers = {k: v for k, v in ANSWERS.items() if k not in ("surprise", "coherence")}
    response = _post_scorecard(client, study, _scorecard(assignment, answers))
    assert response.status_code == 400
    assert "funniness" in response.json()["message"]
    assert _stored() == before


def test_funniness_before_coherence_is_rejected():
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    answers = {**ANSWERS, "funniness": {"value": 5, "at_ms": 1500}}
    response = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "answers.funniness"
    assert "coherence" in body["message"]
    assert _stored() == before


@pytest.mark.parametrize(("name", "value"), [("funniness", 9), ("surprise", 11), ("coherence", -1)])
def test_out_of_range_value_is_rejected_naming_the_field(name, value):
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    answers = {**ANSWERS, name: {"value": value, "at_ms": ANSWERS[name]["at_ms"]}}
    response = _post_scorecard(client, study, _scorecard(assignment, answers))
    assert response.status_code == 400
    body = response.json()
    assert name in body["field"]
    assert name in body["message"]
    assert _stored() == before


def test_unknown_question_is_rejected():
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    answers = {**ANSWERS, "laughs": {"value": 1, "at_ms": 100}}
    response = _post_scorecard(client, study, _scorecard(assignment, answers))
    assert response.status_code == 400
    assert response.json()["field"] == "answers.laughs"
    assert _stored() == before


def test_missing_required_answer_is_rejected():
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    answers = {k: v for k, v in ANSWERS.items() if k != "offensive"}
    response = _post_scorecard(client, study, _scorecard(assignment, answers))
    assert response.status_code == 400
    assert "offensive" in response.json()["message"]
    assert _stored() == before


@pytest.mark.parametrize("missing", ["assignment", "idempotency_key", "active_ms", "answers"])
def test_missing_required_field_of_the_body_is_rejected(missing):
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    body = _scorecard(assignment)
    del body[missing]
    response = _post_scorecard(client, study, body)
    assert response.status_code == 400
    assert response.json()["field"] == missing
    assert _stored() == before


def test_answer_after_the_deadline_is_410_and_earlier_answers_are_kept():
    study = _study()
    client, rater, first = _browser(study)
    assert _post_scorecard(client, study, _scorecard(first)).status_code == 201
    second = _next_task(client, study, rater)
    now = timezone.now()
    RaterSession.objects.filter(rater=rater).update(
        started_at=now - timedelta(minutes=31), deadline=now - timedelta(minutes=1)
    )
    response = _post_scorecard(client, study, _scorecard(second, key="key-0002-bbbb"))
    assert response.status_code == 410
    assert response.json()["code"] == "session_timed_out"
    session = RaterSession.objects.get(rater=rater)
    assert session.end_reason == RaterSession.EndReason.TIMED_OUT
    assert session.ended_at == session.deadline
    assert list(ScoreResponse.objects.values_list("assignment_id", flat=True)) == [first.pk]
    second.refresh_from_db()
    assert second.status == Assignment.Status.EXPIRED
    # The page then shows the end, saying the time is up.
    assert client.get(f"/s/{study.slug}/task/")["Location"] == f"/s/{study.slug}/end/"
    assert "Time is up" in client.get(f"/s/{study.slug}/end/").content.decode()


def test_someone_elses_assignment_is_404_and_nothing_is_stored():
    study = _study()
    _, _, theirs = _browser(study)
    intruder, _, _ = _browser(study)
    before = _stored()
    response = _post(intruder, study, "scorecards", _scorecard(theirs))
    assert response.status_code == 404
    assert _stored() == before


def test_missing_assignment_is_404_like_someone_elses():
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    body = {**_scorecard(assignment), "assignment": assignment.pk + 1000}
    response = _post_scorecard(client, study, body)
    assert response.status_code == 404
    assert _stored() == before


def test_anonymous_browser_cannot_answer():
    study = _study()
    _, _, assignment = _browser(study)
    before = _stored()
    response = _post(Client(), study, "scorecards", _scorecard(assignment))
    assert response.status_code == 404
    assert _stored() == before


def test_rater_of_another_study_cannot_answer_here():
    study, other = _study(), _study()
    _, _, assignment = _browser(study)
    outsider, _, _ = _browser(other)
    before = _stored()
    assert _post(outsider, study, "scorecards", _scorecard(assignment)).status_code == 404
    # Not even their own task, through this study's address.
    assert _stored() == before


def test_answer_to_an_unknown_study_is_404():
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    response = client.post(
        "/api/v1/rater/no-such-study/scorecards",
        data=json.dumps(_scorecard(assignment)),
        content_type="application/json",
    )
    assert response.status_code == 404
    assert _stored() == before


def test_same_idempotency_key_twice_gives_one_judgment_and_a_replay():
    study = _study()
    client, _, assignment = _browser(study)
    first = _post_scorecard(client, study, _scorecard(assignment))
    after_first = _stored()
    again = _post_scorecard(client, study, _scorecard(assignment))
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["replayed"] is True
    assert first.json()["replayed"] is False
    assert again.json()["next"] == first.json()["next"]
    assert _stored() == after_first
    assert ScoreResponse.objects.count() == 1


def test_same_idempotency_key_from_another_rater_is_409():
    study = _study()
    client, _, assignment = _browser(study)
    assert _post_scorecard(client, study, _scorecard(assignment)).status_code == 201
    other, _, theirs = _browser(study)
    before = _stored()
    response = _post_scorecard(other, study, _scorecard(theirs))
    assert response.status_code == 409
    assert response.json()["field"] == "idempotency_key"
    assert _stored() == before


def test_answering_an_already_answered_task_with_a_new_key_is_409():
    study = _study()
    client, _, assignment = _browser(study)
    assert _post_scorecard(client, study, _scorecard(assignment)).status_code == 201
    before = _stored()
    response = _post_scorecard(client, study, _scorecard(assignment, key="key-0002-bbbb"))
    assert response.status_code == 409
    assert _stored() == before


@pytest.mark.parametrize(
    ("endpoint", "extra"), [("pairs", {"winner": "left"}), ("turing", {"guess": "human"})]
)
def test_answer_sent_to_the_endpoint_of_another_kind_is_rejected(endpoint, extra):
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    body = {"assignment": assignment.pk, "idempotency_key": KEY, "active_ms": 100, **extra}
    response = _post(client, study, endpoint, body)
    assert response.status_code == 400
    assert response.json()["field"] == "kind"
    assert _stored() == before


@pytest.mark.parametrize(
    "body",
    [
        "{not json",
        "",
        "[1, 2]",
        '"a string"',
        json.dumps({"assignment": "one", "idempotency_key": KEY, "active_ms": 1, "answers": {}}),
        json.dumps({"assignment": 1, "idempotency_key": KEY, "active_ms": 1, "answers": [1]}),
        json.dumps(
            {
                "assignment": 1,
                "idempotency_key": KEY,
                "active_ms": 1,
                "answers": {"surprise": "three"},
            }
        ),
    ],
)
def test_malformed_body_is_400_never_500(body):
    study = _study()
    client, _, _ = _browser(study)
    client.raise_request_exception = False
    before = _stored()
    response = _post_scorecard(client, study, body)
    assert response.status_code == 400
    assert "message" in response.json()
    assert _stored() == before


@pytest.mark.parametrize("key", ["short", "has spaces in it", "semi;colon;key", "x" * 65])
def test_malformed_idempotency_key_is_rejected(key):
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    response = _post_scorecard(client, study, _scorecard(assignment, key=key))
    assert response.status_code == 400
    assert response.json()["field"] == "idempotency_key"
    assert _stored() == before


def test_answer_times_are_stored_in_the_order_the_page_reports_within_the_servers_bounds():
    study = _study()
    client, _, assignment = _browser(study)
    handed_out = _handed_out(assignment, 10)
    answers = {
        "coherence": {"value": 4, "at_ms": 800},
        "surprise": {"value": 3, "at_ms": 1200},
        "offensive": {"value": 1, "at_ms": 1300},
        "funniness": {"value": 5, "at_ms": 2900},
    }
    assert _post_scorecard(client, study, _scorecard(assignment, answers)).status_code == 201
    stored = list(ScoreAnswer.objects.select_related("question").order_by("answered_at"))
    assert [a.question.name for a in stored] == ["coherence", "surprise", "offensive", "funniness"]
    response = ScoreResponse.objects.get()
    for answer in stored:
        assert handed_out <= answer.answered_at <= answer.received_at <= response.submitted_at
    early = {a.question.name: a.received_at for a in stored if a.question.name in EARLY}
    funniness = stored[-1]
    assert funniness.answered_at > max(early.values())


def test_seconds_into_session_and_active_seconds_are_stored_from_the_endpoint():
    study = _study()
    client, rater, assignment = _browser(study)
    started = timezone.now() - timedelta(minutes=2)
    RaterSession.objects.filter(rater=rater).update(
        started_at=started, deadline=started + timedelta(minutes=30)
    )
    _handed_out(assignment, 60)
    response = _post_scorecard(client, study, _scorecard(assignment, active_ms=3750))
    assert response.status_code == 201
    stored = ScoreResponse.objects.get()
    assert stored.active_seconds == pytest.approx(3.75)
    assert 120 <= stored.seconds_into_session < 150


def test_pair_and_turing_answers_through_their_endpoints_are_stored_as_shown():
    study = _study(task_mix={"pair": 1.0})
    client, rater, pair = _browser(study)
    response = _post(
        client,
        study,
        "pairs",
        {"assignment": pair.pk, "idempotency_key": KEY, "active_ms": 2000, "winner": "right"},
    )
    assert response.status_code == 201
    assert response.json()["kind"] == "pair"
    judgment = PairJudgment.objects.get()
    assert (judgment.left_id, judgment.right_id, judgment.winner_id) == (
        pair.item_id,
        pair.right_item_id,
        pair.right_item_id,
    )

    Study.objects.filter(pk=study.pk).update(task_mix={"turing": 1.0})
    turing = _next_task(client, study, rater)
    assert turing.kind == Assignment.Kind.TURING
    before = _stored()
    refused = _post(
        client,
        study,
        "turing",
        {"assignment": turing.pk, "idempotency_key": "key-0002-bbbb", "active_ms": 1, "guess": "x"},
    )
    assert refused.status_code == 400
    assert refused.json()["field"] == "guess"
    assert _stored() == before
    response = _post(
        client,
        study,
        "turing",
        {
            "assignment": turing.pk,
            "idempotency_key": "key-0002-bbbb",
            "active_ms": 1,
            "guess": "ai",
        },
    )
    assert response.status_code == 201
    assert TuringJudgment.objects.get().guess == "ai"


def test_after_a_scorecard_on_an_item_with_an_explanation_the_task_page_reveals_it():
    study = _study()
    study.items.update(explanation="It puns on 'byte' and 'bite'.")
    client, _, assignment = _browser(study)
    task_url = f"/s/{study.slug}/task/"
    response = _post_scorecard(client, study, _scorecard(assignment))
    scorecard = ScoreResponse.objects.get()
    # The same answer as for an item without one: the reveal is on the task page itself.
    assert response.json() == {"kind": "scorecard", "replayed": False, "next": task_url}
    page = client.get(task_url)
    assert page.status_code == 200
    assert "It puns on" in page.content.decode()
    assert f'data-response="{scorecard.pk}"' in page.content.decode()
    # Until it is judged, the task page shows it again (a reload does not skip it).
    assert "It puns on" in client.get(task_url).content.decode()

    answered = _post(client, study, "explanations", {"response": scorecard.pk, "verdict": "yes"})
    assert answered.status_code == 200
    assert answered.json()["next"] == task_url
    scorecard.refresh_from_db()
    assert scorecard.explanation_match == "yes"
    answered_at = scorecard.explanation_answered_at
    assert answered_at is not None

    again = _post(client, study, "explanations", {"response": scorecard.pk, "verdict": "yes"})
    assert again.status_code == 200
    before = _stored()
    changed = _post(client, study, "explanations", {"response": scorecard.pk, "verdict": "no"})
    assert changed.status_code == 409
    assert _stored() == before
    scorecard.refresh_from_db()
    assert (scorecard.explanation_match, scorecard.explanation_answered_at) == ("yes", answered_at)
    # Judged: the task page moves on to a new task instead of asking again.
    next_page = client.get(task_url).content.decode()
    assert 'data-task="scorecard"' in next_page
    assert "It puns on" not in next_page  # an explanation is only ever shown after scoring


def test_explanation_of_someone_elses_scorecard_is_404():
    study = _study()
    study.items.update(explanation="It puns on 'byte' and 'bite'.")
    client, _, assignment = _browser(study)
    assert _post_scorecard(client, study, _scorecard(assignment)).status_code == 201
    scorecard = ScoreResponse.objects.get()
    intruder, _, _ = _browser(study)
    before = _stored()
    body = {"response": scorecard.pk, "verdict": "no"}
    assert _post(intruder, study, "explanations", body).status_code == 404
    assert 'data-task="explanation"' not in intruder.get(f"/s/{study.slug}/task/").content.decode()
    assert _stored() == before


def test_item_without_an_explanation_has_no_explanation_to_judge():
    study = _study()
    client, _, assignment = _browser(study)
    response = _post_scorecard(client, study, _scorecard(assignment))
    assert response.json()["next"] == f"/s/{study.slug}/task/"
    scorecard = ScoreResponse.objects.get()
    before = _stored()
    body = {"response": scorecard.pk, "verdict": "yes"}
    assert _post(client, study, "explanations", body).status_code == 404
    assert _stored() == before


# --- CSRF --------------------------------------------------------------------------------------


def test_answer_without_the_csrf_token_is_403_and_with_it_is_stored():
    study = _study()
    client = Client(enforce_csrf_checks=True)
    entry = f"/s/{study.slug}/"
    assert client.get(entry).status_code == 200
    # The consent form itself is protected too.
    assert client.post(entry, FORM).status_code == 403
    assert Rater.objects.count() == 0
    token = client.cookies["csrftoken"].value
    assert client.post(entry, {**FORM, "csrfmiddlewaretoken": token}).status_code == 302
    rater = Rater.objects.get()
    assignment = _next_task(client, study, rater)

    before = _stored()
    refused = _post_scorecard(client, study, _scorecard(assignment))
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["message"]
    assert _stored() == before
    forged = _post_scorecard(client, study, _scorecard(assignment), csrf="x" * 32)
    assert forged.status_code == 403
    assert _stored() == before

    token = client.cookies["csrftoken"].value
    accepted = _post_scorecard(client, study, _scorecard(assignment), csrf=token)
    assert accepted.status_code == 201
    assert ScoreResponse.objects.get().assignment_id == assignment.pk


# --- the task and its early answers, read together ---------------------------------------------


def test_a_scorecards_steps_read_the_task_with_its_early_answers_in_one_statement() -> None:
    """The first step and the submit each need the task and the answers received for it; they
    come in one read (no statement of their own), and are the stored rows, field by field."""
    study = _study()
    client, rater, assignment = _browser(study)
    early = {name: ANSWERS[name] for name in EARLY}
    body = {"assignment": assignment.pk, "active_ms": 2500, "answers": early}
    with CaptureQueriesContext(connection) as first_step:
        assert _post(client, study, "scorecards/early", body).status_code == 200
    read, received = scorecard_get_for_rater(rater=rater, assignment_id=assignment.pk)
    fields = ("id", "assignment_id", "question_id", "value", "answered_at", "received_at")
    stored = EarlyAnswer.objects.filter(assignment=assignment).order_by("pk")
    assert [tuple(getattr(e, f) for f in fields) for e in received] == [
        tuple(getattr(e, f) for f in fields) for e in stored
    ]
    assert len(received) == 2
    assert all(e.received_at.tzinfo is not None for e in received)
    assert read == assignment
    assert read.item == assignment.item
    assert read.session == assignment.session
    with CaptureQueriesContext(connection) as submit:
        assert _post(client, study, "scorecards", _scorecard(assignment)).status_code == 201
    for queries in (first_step, submit):
        reads_of_early = [
            q["sql"]
            for q in queries.captured_queries
            if readable(q["sql"]).startswith("SELECT")
            and '"judgments_earlyanswer"' in readable(q["sql"])
        ]
        assert len(reads_of_early) == 1, reads_of_early
        assert '"assignments_assignment"' in readable(reads_of_early[0])
    # The submit stored the early answers as they were received.
    answers = {
        a.question.name: a for a in ScoreAnswer.objects.filter(response__assignment=assignment)
    }
    for e in stored:
        assert answers[e.question.name].value == e.value
        assert answers[e.question.name].received_at == e.received_at


def test_a_task_read_with_no_early_answers_has_none_and_someone_elses_task_is_not_found() -> None:
    study = _study()
    _client, rater, assignment = _browser(study)
    read, received = scorecard_get_for_rater(rater=rater, assignment_id=assignment.pk)
    assert (read, received) == (assignment, [])
    _other_client, other, _ = _browser(study)
    with pytest.raises(NotFound):
        scorecard_get_for_rater(rater=other, assignment_id=assignment.pk)
