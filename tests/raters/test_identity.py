"""Who may resume a session: the browser that holds it, or (in a Prolific study) a browser with
the participant's own Prolific SESSION_ID. A PID alone is visible to anyone who sees the link,
so it is never a credential: another browser presenting it gets a page that says so, in both
languages, and nothing changes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from apps.assignments.models import Assignment
from apps.judgments.models import EarlyAnswer, ScoreAnswer, ScoreResponse
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.raters.services import ParticipantInUse, rater_enroll
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}
PID = "5f0c1e2d3b4a"
SESSION_ID = "se_0099"


def _stored() -> dict[str, Any]:
    return {
        "raters": sorted(
            Rater.objects.values_list("pk", "external_id", "prolific_session_id", "language")
        ),
        "sessions": sorted(RaterSession.objects.values_list("pk", "ended_at", "end_reason")),
        "filled": sorted(BackgroundGroup.objects.values_list("pk", "filled")),
        "assignments": sorted(Assignment.objects.values_list("pk", "status", "rater_id")),
        "scorecards": ScoreResponse.objects.count(),
        "answers": ScoreAnswer.objects.count(),
        "early": EarlyAnswer.objects.count(),
    }


def _study():  # type: ignore[no-untyped-def]
    study = StudyFactory(task_mix={"scorecard": 1.0}, attention_check_rate=0, tasks_per_session=5)
    for i in range(3):
        ItemFactory(study=study, external_id=f"j{i}")
    return study


def _participant(study, query: dict[str, str]) -> Client:  # type: ignore[no-untyped-def]
    """The real participant: opens the link from Prolific, enrols and is given a task."""
    client = Client()
    assert client.get(f"/s/{study.slug}/", query).status_code == 200
    assert client.post(f"/s/{study.slug}/?PROLIFIC_PID={PID}", FORM).status_code == 302
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    return client


def _answer(client: Client, study) -> Any:  # type: ignore[no-untyped-def]
    assignment = Assignment.objects.get(rater__external_id=PID, status="pending")
    csrf = client.cookies["csrftoken"].value if "csrftoken" in client.cookies else ""
    return client.post(
        f"/api/v1/rater/{study.slug}/scorecards/early",
        json.dumps(
            {
                "assignment": assignment.pk,
                "active_ms": 2000,
                "answers": {"surprise": {"value": 3, "at_ms": 900}},
            }
        ),
        content_type="application/json",
        headers={"X-CSRFToken": csrf},
    )


@pytest.mark.parametrize(
    ("lang", "heading"),
    [
        ("en", "This participant ID is already taking part"),
        ("zh-hans", "这个参与者ID已经在参加本研究"),
    ],
)
def test_a_fresh_browser_with_someone_elses_pid_gets_the_in_use_page_and_nothing_changes(
    lang: str, heading: str
):
    study = _study()
    owner = _participant(study, {"PROLIFIC_PID": PID, "SESSION_ID": SESSION_ID})
    before = _stored()
    intruder = Client(HTTP_ACCEPT_LANGUAGE=lang)
    response = intruder.get(f"/s/{study.slug}/", {"PROLIFIC_PID": PID})
    assert response.status_code == 409
    assert heading in response.content.decode()
    assert _stored() == before
    # The intruder holds no rater: its task page and the answer endpoints know nothing of it.
    assert intruder.get(f"/s/{study.slug}/task/").status_code == 404
    assert _answer(intruder, study).status_code in (403, 404)
    # Posting the enrolment form with that PID is refused the same way.
    refused = intruder.post(f"/s/{study.slug}/?PROLIFIC_PID={PID}", FORM)
    assert refused.status_code == 409
    assert heading in refused.content.decode()
    assert _stored() == before
    # The participant carries on in their own browser, undisturbed.
    assert owner.get(f"/s/{study.slug}/task/").status_code == 200
    assert _answer(owner, study).status_code == 200


def test_a_wrong_session_id_is_refused_like_none():
    study = _study()
    _participant(study, {"PROLIFIC_PID": PID, "SESSION_ID": SESSION_ID})
    before = _stored()
    response = Client().get(f"/s/{study.slug}/", {"PROLIFIC_PID": PID, "SESSION_ID": "se_other"})
    assert response.status_code == 409
    assert _stored() == before


def test_the_participant_in_a_new_browser_with_their_prolific_session_id_resumes():
    study = _study()
    _participant(study, {"PROLIFIC_PID": PID, "SESSION_ID": SESSION_ID})
    before = _stored()
    again = Client()
    response = again.get(f"/s/{study.slug}/", {"PROLIFIC_PID": PID, "SESSION_ID": SESSION_ID})
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/task/"
    assert again.get(f"/s/{study.slug}/task/").status_code == 200
    assert _stored() == before
    assert _answer(again, study).status_code == 200


def test_without_a_prolific_session_id_a_session_resumes_only_in_its_own_browser():
    study = _study()
    owner = _participant(study, {"PROLIFIC_PID": PID})
    before = _stored()
    assert Client().get(f"/s/{study.slug}/", {"PROLIFIC_PID": PID}).status_code == 409
    # Even a made-up SESSION_ID does not match the empty one stored.
    assert (
        Client()
        .get(f"/s/{study.slug}/", {"PROLIFIC_PID": PID, "SESSION_ID": "se_made_up"})
        .status_code
        == 409
    )
    assert _stored() == before
    response = owner.get(f"/s/{study.slug}/", {"PROLIFIC_PID": PID})
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/task/"


def test_the_service_refuses_a_used_id_without_its_session_id_and_stores_nothing():
    study = _study()
    rater_enroll(
        study=study,
        background="technical",
        age_band="25-34",
        consent=True,
        external_id=PID,
        prolific_session_id=SESSION_ID,
    )
    before = _stored()
    for session_id in ("", "se_other"):
        with pytest.raises(ParticipantInUse) as refused:
            rater_enroll(
                study=study,
                background="content_operations",
                age_band="35-44",
                consent=True,
                external_id=PID,
                prolific_session_id=session_id,
            )
        assert refused.value.status_code == 409
        assert refused.value.code == "participant_in_use"
        assert "already taking part" in refused.value.message
    assert _stored() == before


def test_a_new_pid_still_enrols_and_the_browser_keeps_its_prolific_ids():
    study = _study()
    client = Client()
    client.get(f"/s/{study.slug}/", {"PROLIFIC_PID": "newperson1", "SESSION_ID": "se-1"})
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    rater = Rater.objects.get(external_id="newperson1")
    assert rater.prolific_session_id == "se-1"


def test_a_browser_enrolled_in_two_studies_is_each_ones_rater_in_it():
    # One remembered rater is read by the compiled statement; two by the general read. Both
    # must find the rater of the study asked about, and no one in a study not enrolled in.
    from django.test import RequestFactory

    from apps.core.errors import NotFound
    from apps.raters.selectors import (
        rater_and_session_with_study_for_request,
        rater_with_study_for_request,
    )

    first, second, other = StudyFactory(), StudyFactory(), StudyFactory()
    client = Client()
    request = RequestFactory().get("/")
    for enrolled, study in enumerate((first, second), start=1):
        assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
        request.session = client.session
        assert len(Rater.objects.filter(pk__in=request.session.values())) == enrolled
        for asked in (first, second)[:enrolled]:
            rater = rater_with_study_for_request(request=request, slug=asked.slug)
            assert rater.study == asked
            assert rater.pk == request.session[f"laughlab:rater:{asked.pk}"]
            session_rater, session = rater_and_session_with_study_for_request(
                request=request, slug=asked.slug
            )
            assert session_rater.pk == rater.pk
            assert session.rater_id == rater.pk
        with pytest.raises(NotFound):
            rater_with_study_for_request(request=request, slug=other.slug)
