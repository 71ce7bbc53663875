"""The rules the server holds on its own, whatever the page reports: the scorecard's order (by
the arrival of the answers others depend on, never by client times) and the time bounds (time on
task and answer times within what the server saw, from hand-out to arrival). Through the JSON
endpoints, as a browser or a bot would send them; every refusal is a 4xx naming the problem,
with nothing stored."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.core.errors import DomainError
from apps.exclusions.models import ExclusionProposal
from apps.exclusions.services import exclusion_proposals_refresh
from apps.judgments.models import EarlyAnswer, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.judgments.submission import AnswerIn, early_answers_submit, score_response_submit
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Question, Rubric, Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}
SIX_HOURS_MS = 6 * 60 * 60 * 1000


def _study(**fields: object) -> Study:
    values: dict[str, object] = {
        "task_mix": {"scorecard": 1.0},
        "attention_check_rate": 0,
        "tasks_per_session": 12,
        "random_seed": 5,
    }
    values.update(fields)
    study = StudyFactory(**values)
    for i in range(12):
        ItemFactory(study=study, external_id=f"j{i:02d}", topic="cats")
    return study


def _browser(study: Study) -> tuple[Client, Rater, Assignment]:
    client = Client()
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    rater = Rater.objects.get(pk=client.session[f"laughlab:rater:{study.pk}"])
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    return client, rater, Assignment.objects.get(rater=rater, status="pending")


def _post(client: Client, study: Study, endpoint: str, body: Any) -> Any:
    return client.post(
        f"/api/v1/rater/{study.slug}/{endpoint}",
        data=body if isinstance(body, str) else json.dumps(body),
        content_type="application/json",
    )


def _answers(**values: int) -> dict[str, dict[str, int]]:
    return {name: {"value": value, "at_ms": 1000} for name, value in values.items()}


def _stored() -> dict[str, Any]:
    return {
        "scorecards": ScoreResponse.objects.count(),
        "answers": ScoreAnswer.objects.count(),
        "early": sorted(
            EarlyAnswer.objects.values_list("assignment_id", "question__name", "value")
        ),
        "assignments": sorted(Assignment.objects.values_list("pk", "status")),
    }


def _scorecard(assignment: Assignment, answers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "assignment": assignment.pk,
        "idempotency_key": f"key-{assignment.pk:04d}-{len(answers)}",
        "active_ms": 4000,
        "answers": answers,
        **extra,
    }


# --- order --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "times",
    [
        {"surprise": 1000, "coherence": 1000, "funniness": 1000, "offensive": 1000},  # all equal
        {"surprise": 500, "coherence": 900, "funniness": 2000, "offensive": 2500},  # forged order
    ],
    ids=["equal-times", "forged-order"],
)
def test_a_whole_scorecard_in_one_request_is_refused_whatever_times_it_claims(times):
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    values = {"surprise": 3, "coherence": 4, "funniness": 5, "offensive": 0}
    answers = {name: {"value": values[name], "at_ms": at} for name, at in times.items()}
    response = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "order"
    assert body["field"] == "answers.funniness"
    assert "surprise and coherence" in body["message"]
    assert _stored() == before


def test_the_first_step_stores_surprise_and_coherence_and_opens_funniness():
    study = _study()
    client, _, assignment = _browser(study)
    only_surprise = _post(
        client,
        study,
        "scorecards/early",
        {"assignment": assignment.pk, "active_ms": 1200, "answers": _answers(surprise=3)},
    )
    assert only_surprise.status_code == 200
    assert only_surprise.json() == {"received": ["surprise"], "unlocked": []}
    both = _post(
        client,
        study,
        "scorecards/early",
        {
            "assignment": assignment.pk,
            "active_ms": 1500,
            "answers": _answers(surprise=2, coherence=4),
        },
    )
    assert both.json() == {"received": ["coherence", "surprise"], "unlocked": ["funniness"]}
    assert _stored()["early"] == [
        (assignment.pk, "coherence", 4),
        (assignment.pk, "surprise", 2),
    ]
    final = _post(
        client, study, "scorecards", _scorecard(assignment, _answers(funniness=6, offensive=0))
    )
    assert final.status_code == 201
    stored = {a.question.name: a for a in ScoreAnswer.objects.select_related("question").all()}
    assert {name: a.value for name, a in stored.items()} == {
        "surprise": 2,
        "coherence": 4,
        "funniness": 6,
        "offensive": 0,
    }
    # The server's own clock orders them: funniness set after both earlier answers arrived.
    assert stored["funniness"].answered_at > stored["surprise"].received_at
    assert stored["funniness"].answered_at > stored["coherence"].received_at
    assert stored["surprise"].received_at < stored["funniness"].received_at


def test_funniness_in_the_first_step_before_its_prerequisites_arrived_is_refused():
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    response = _post(
        client,
        study,
        "scorecards/early",
        {
            "assignment": assignment.pk,
            "active_ms": 3000,
            "answers": _answers(surprise=3, coherence=4, funniness=5),
        },
    )
    assert response.status_code == 400
    assert response.json()["field"] == "answers.funniness"
    assert response.json()["code"] == "order"
    assert _stored() == before


def test_a_prerequisite_changed_in_the_scorecard_but_not_sent_first_is_refused():
    study = _study()
    client, _, assignment = _browser(study)
    body = {
        "assignment": assignment.pk,
        "active_ms": 1500,
        "answers": _answers(surprise=3, coherence=4),
    }
    assert _post(client, study, "scorecards/early", body).status_code == 200
    before = _stored()
    answers = _answers(surprise=5, coherence=4, funniness=6, offensive=0)
    response = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert response.status_code == 400
    assert response.json()["field"] == "answers.surprise"
    assert "received before" in response.json()["message"]
    assert _stored() == before
    # Sent again first (as the page does when the rater changes their mind), it is accepted.
    body["answers"] = _answers(surprise=5, coherence=4)
    assert _post(client, study, "scorecards/early", body).status_code == 200
    assert _post(client, study, "scorecards", _scorecard(assignment, answers)).status_code == 201
    assert ScoreAnswer.objects.get(question__name="surprise").value == 5


def test_an_answer_arriving_at_the_same_moment_as_its_prerequisites_is_refused():
    """A bot sending both steps at once: the scorecard is judged against what had arrived in
    requests before its own, not by the order the database happens to see them in."""
    study = _study()
    _, rater, assignment = _browser(study)
    now = timezone.now() + timedelta(seconds=5)
    early_answers_submit(
        rater=rater,
        assignment_id=assignment.pk,
        answers={"surprise": AnswerIn(3, 100), "coherence": AnswerIn(4, 200)},
        active_ms=300,
        now=now,
    )
    before = _stored()
    with pytest.raises(DomainError) as refused:
        score_response_submit(
            rater=rater,
            assignment_id=assignment.pk,
            idempotency_key="same-moment-1",
            answers={"funniness": AnswerIn(5, 300), "offensive": AnswerIn(0, 300)},
            active_ms=400,
            now=now,
        )
    assert refused.value.code == "order"
    assert _stored() == before


def _chain_rubric() -> Rubric:
    """A custom rubric: setup, then delivery after setup, then verdict after delivery; and an
    independent flag."""
    rubric = Rubric.objects.create(slug="chain", name="Chain", kind=Rubric.Kind.HUMOR)
    made = {}
    for position, name in enumerate(["setup", "delivery", "verdict", "flag"], start=1):
        made[name] = Question.objects.create(
            rubric=rubric,
            name=name,
            position=position,
            kind=Question.Kind.BINARY if name == "flag" else Question.Kind.LIKERT,
            min_value=0 if name == "flag" else 1,
            max_value=1 if name == "flag" else 5,
        )
    made["delivery"].answered_after.set([made["setup"]])
    made["verdict"].answered_after.set([made["delivery"]])
    return rubric


def test_a_custom_rubrics_chain_is_held_one_step_per_link():
    study = _study(rubric=_chain_rubric())
    client, _, assignment = _browser(study)
    early = lambda **answers: _post(  # noqa: E731
        client,
        study,
        "scorecards/early",
        {"assignment": assignment.pk, "active_ms": 3000, "answers": _answers(**answers)},
    )
    before = _stored()
    # delivery with setup in the same request: setup had not arrived before it.
    refused = early(setup=3, delivery=4)
    assert refused.status_code == 400
    assert refused.json()["field"] == "answers.delivery"
    assert "setup" in refused.json()["message"]
    assert _stored() == before
    assert early(setup=3).json() == {"received": ["setup"], "unlocked": ["delivery"]}
    # verdict is not open yet: delivery has not arrived.
    whole = _answers(setup=3, delivery=4, verdict=2, flag=0)
    refused = _post(client, study, "scorecards", _scorecard(assignment, whole))
    assert refused.status_code == 400
    assert refused.json()["field"] == "answers.verdict"
    assert early(delivery=4).json() == {"received": ["delivery"], "unlocked": ["verdict"]}
    accepted = _post(client, study, "scorecards", _scorecard(assignment, whole))
    assert accepted.status_code == 201
    values = dict(ScoreAnswer.objects.values_list("question__name", "value"))
    assert values == {"setup": 3, "delivery": 4, "verdict": 2, "flag": 0}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"answers": {"laughs": {"value": 1, "at_ms": 10}}}, 400, "answers.laughs"),
        ({"answers": {"surprise": {"value": 9, "at_ms": 10}}}, 400, "answers.surprise"),
        ({"answers": {"surprise": {"value": 3, "at_ms": 5000}}}, 400, "answers.surprise"),
        ({"answers": {}}, 400, "answers"),
        ({"answers": {"surprise": {"value": "x", "at_ms": 10}}}, 400, "answers"),
        ({"active_ms": -1}, 400, "active_ms"),
        ({"assignment": 10**6}, 404, "assignment"),
        ({"assignment": None}, 400, "assignment"),
    ],
    ids=[
        "unknown-question",
        "out-of-scale",
        "time-after-active",
        "no-answers",
        "not-a-number",
        "negative-time",
        "someone-elses-task",
        "no-task",
    ],
)
def test_bad_input_to_the_first_step_is_a_4xx_naming_it_and_stores_nothing(body, status, field):
    study = _study()
    client, _, assignment = _browser(study)
    before = _stored()
    payload = {
        "assignment": assignment.pk,
        "active_ms": 2000,
        "answers": _answers(surprise=3),
        **body,
    }
    response = _post(client, study, "scorecards/early", payload)
    assert response.status_code == status, response.content
    assert response.json()["field"].startswith(field)
    assert response.json()["message"]
    assert _stored() == before


def test_the_first_step_for_an_answered_task_is_a_conflict_and_stores_nothing():
    study = _study()
    client, _, assignment = _browser(study)
    body = {
        "assignment": assignment.pk,
        "active_ms": 1500,
        "answers": _answers(surprise=3, coherence=4),
    }
    assert _post(client, study, "scorecards/early", body).status_code == 200
    whole = _answers(surprise=3, coherence=4, funniness=5, offensive=0)
    assert _post(client, study, "scorecards", _scorecard(assignment, whole)).status_code == 201
    before = _stored()
    response = _post(client, study, "scorecards/early", body)
    assert response.status_code == 409
    assert response.json()["field"] == "assignment"
    assert _stored() == before


def test_the_first_step_of_another_browser_is_404_and_stores_nothing():
    study = _study()
    _, _, assignment = _browser(study)
    intruder, _, _ = _browser(study)
    before = _stored()
    body = {"assignment": assignment.pk, "active_ms": 1500, "answers": _answers(surprise=3)}
    assert _post(intruder, study, "scorecards/early", body).status_code == 404
    assert _post(Client(), study, "scorecards/early", body).status_code == 404
    assert _stored() == before


def test_the_first_step_after_the_deadline_is_410_and_stores_nothing():
    study = _study()
    client, rater, assignment = _browser(study)
    now = timezone.now()
    RaterSession.objects.filter(rater=rater).update(
        started_at=now - timedelta(minutes=31), deadline=now - timedelta(minutes=1)
    )
    body = {"assignment": assignment.pk, "active_ms": 1500, "answers": _answers(surprise=3)}
    response = _post(client, study, "scorecards/early", body)
    assert response.status_code == 410
    assert not EarlyAnswer.objects.exists()


# --- time ---------------------------------------------------------------------------------------


def _bot_answers(client: Client, study: Study, rater: Rater, tasks: int) -> None:
    """A bot: every answer 10-30 ms after its task was handed out, each claiming six hours."""
    for _ in range(tasks):
        assignment = Assignment.objects.get(rater=rater, status="pending")
        at = SIX_HOURS_MS - 1000
        early = {"surprise": {"value": 3, "at_ms": 1}, "coherence": {"value": 3, "at_ms": 2}}
        body = {"assignment": assignment.pk, "active_ms": SIX_HOURS_MS, "answers": early}
        assert _post(client, study, "scorecards/early", body).status_code == 200
        rest = {"funniness": {"value": 4, "at_ms": at}, "offensive": {"value": 0, "at_ms": at}}
        card = _scorecard(assignment, rest, active_ms=SIX_HOURS_MS)
        assert _post(client, study, "scorecards", card).status_code == 201
        page = client.get(f"/s/{study.slug}/task/")
        if page.status_code != 200:
            return


def test_a_bot_claiming_six_hours_is_stored_with_the_time_the_server_saw():
    study = _study()
    client, rater, _ = _browser(study)
    session = RaterSession.objects.get(rater=rater)
    _bot_answers(client, study, rater, 3)
    responses = list(ScoreResponse.objects.filter(rater=rater).select_related("assignment"))
    assert len(responses) == 3
    for response in responses:
        seen = (response.submitted_at - response.assignment.created_at).total_seconds()
        assert response.active_seconds is not None
        assert 0 <= response.active_seconds <= seen
        assert response.active_seconds < 60, "six claimed hours must not be stored"
        for answer in response.answers.all():
            assert answer.answered_at is not None
            assert answer.received_at is not None
            assert session.started_at <= response.assignment.created_at <= answer.answered_at
            assert answer.answered_at <= answer.received_at <= response.submitted_at


def test_a_bot_claiming_long_times_is_proposed_as_a_speeder():
    study = _study(tasks_per_session=8)
    client, rater, _ = _browser(study)
    _bot_answers(client, study, rater, 8)
    assert ScoreResponse.objects.filter(rater=rater).count() == 8
    exclusion_proposals_refresh(study=study, request_results=False)
    proposal = ExclusionProposal.objects.get(study=study, rater=rater, rule="speeder")
    assert proposal.evidence["median_seconds"] < study.exclusion_speeder_seconds


def test_client_time_refines_within_the_bounds_and_never_beyond():
    study = _study()
    _, rater, assignment = _browser(study)
    handed_out = timezone.now() - timedelta(seconds=20)
    Assignment.objects.filter(pk=assignment.pk).update(created_at=handed_out)
    first = handed_out + timedelta(seconds=8)
    now = handed_out + timedelta(seconds=12)
    early_answers_submit(
        rater=rater,
        assignment_id=assignment.pk,
        answers={"surprise": AnswerIn(3, 2000), "coherence": AnswerIn(4, 7000)},
        active_ms=3_000_000,  # claims 50 minutes; the server saw 8 seconds
        now=first,
    )
    result = score_response_submit(
        rater=rater,
        assignment_id=assignment.pk,
        idempotency_key="bounded-0001",
        # funniness claims to be set before surprise arrived; offensive within bounds
        answers={"funniness": AnswerIn(5, 100), "offensive": AnswerIn(0, 11_000)},
        active_ms=12_500,
        now=now,
    )
    response = ScoreResponse.objects.get(pk=result.judgment_id)
    assert response.active_seconds == pytest.approx(12.0)  # not 12.5: the server saw 12
    at = {a.question.name: a.answered_at for a in response.answers.select_related("question")}
    # Claimed 50 minutes before arrival: held at the hand-out.
    assert at["surprise"] == handed_out
    assert at["coherence"] == handed_out
    # Funniness cannot precede the arrival of what it depends on.
    assert at["funniness"] == first + timedelta(microseconds=1)
    # Within bounds, the page's time stands: 12.5 s - 11 s before arrival.
    assert at["offensive"] == now - timedelta(milliseconds=1500)


def test_pair_and_turing_time_on_task_is_bounded_by_the_server_too():
    study = _study(task_mix={"turing": 1.0})
    client, _, assignment = _browser(study)
    body = {
        "assignment": assignment.pk,
        "idempotency_key": "turing-bound-1",
        "active_ms": SIX_HOURS_MS,
        "guess": "ai",
    }
    assert _post(client, study, "turing", body).status_code == 201
    judgment = TuringJudgment.objects.get()
    assert judgment.active_seconds is not None
    assert (
        judgment.active_seconds <= (judgment.submitted_at - assignment.created_at).total_seconds()
    )


def _wide_scale_rubric() -> Rubric:
    """A custom rubric on scales the built-in ones never use: -3..3 and 0..100."""
    rubric = Rubric.objects.create(slug="wide", name="Wide", kind=Rubric.Kind.HUMOR)
    for position, (name, low, high) in enumerate(
        [("valence", -3, 3), ("percent", 0, 100)], start=1
    ):
        Question.objects.create(
            rubric=rubric,
            name=name,
            position=position,
            kind=Question.Kind.LIKERT,
            min_value=low,
            max_value=high,
        )
    return rubric


def test_a_custom_rubrics_own_scale_is_what_the_rater_endpoint_accepts():
    study = _study(rubric=_wide_scale_rubric())
    client, _, assignment = _browser(study)
    before = _stored()
    refused = _post(
        client, study, "scorecards", _scorecard(assignment, _answers(valence=-3, percent=101))
    )
    assert refused.status_code == 400
    assert refused.json()["field"] == "answers.percent"
    assert "0 to 100" in refused.json()["message"]
    assert _stored() == before
    accepted = _post(
        client, study, "scorecards", _scorecard(assignment, _answers(valence=-3, percent=87))
    )
    assert accepted.status_code == 201, accepted.content
    values = dict(ScoreAnswer.objects.values_list("question__name", "value"))
    assert values == {"valence": -3, "percent": 87}
