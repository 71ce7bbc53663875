"""Enrolment: consent, background quotas, returning participants, the session clock; and the study link."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.assignments.services import assignment_next
from apps.core.errors import DomainError, SessionExpired
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.raters.services import (
    StudyFull,
    StudyNotOpen,
    rater_enroll,
    rater_session_check_open,
    rater_session_end,
)
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}


def _enroll(study: Study, **overrides: object) -> object:
    values: dict[str, object] = {
        "study": study,
        "background": "technical",
        "age_band": "25-34",
        "consent": True,
    }
    values.update(overrides)
    return rater_enroll(**values)  # type: ignore[arg-type]


def _group(study: Study, code: str = "technical") -> BackgroundGroup:
    return BackgroundGroup.objects.get(study=study, code=code)


def _stored() -> tuple[int, int, list[int]]:
    return (
        Rater.objects.count(),
        RaterSession.objects.count(),
        list(BackgroundGroup.objects.order_by("pk").values_list("filled", flat=True)),
    )


# --- the service -------------------------------------------------------------------------------


def test_enrolment_without_consent_is_refused_and_stores_nothing():
    study = StudyFactory()
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _enroll(study, consent=False)
    assert refused.value.field == "consent"
    assert _stored() == before


def test_unknown_background_is_refused_naming_the_field_and_stores_nothing():
    study = StudyFactory()
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _enroll(study, background="astronaut")
    assert refused.value.field == "background"
    assert "astronaut" in refused.value.message
    assert _stored() == before


def test_background_of_another_study_is_refused():
    study = StudyFactory()
    other = StudyFactory(backgrounds=[("sailors", {"en": "Sailors"})])
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _enroll(study, background="sailors")
    assert refused.value.field == "background"
    assert _stored() == before
    assert _group(other, "sailors").filled == 0


def test_unknown_age_band_is_refused_naming_the_field_and_stores_nothing():
    study = StudyFactory()
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _enroll(study, age_band="17")
    assert refused.value.field == "age_band"
    assert _stored() == before


def test_enrolment_takes_a_place_in_the_raters_own_group_only():
    study = StudyFactory()
    enrollment = _enroll(study, background="content_operations", age_band="45-54")
    assert enrollment.resumed is False
    assert enrollment.rater.background.code == "content_operations"
    assert enrollment.rater.age_band == "45-54"
    assert enrollment.rater.consent_at is not None
    assert {g.code: g.filled for g in BackgroundGroup.objects.filter(study=study)} == {
        "technical": 0,
        "content_operations": 1,
        "administrative_support": 0,
        "traditional_industries": 0,
    }


def test_full_group_refuses_with_study_full_and_filled_is_unchanged():
    study = StudyFactory()
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=2)
    _enroll(study)
    _enroll(study)
    before = _stored()
    with pytest.raises(StudyFull) as refused:
        _enroll(study)
    assert refused.value.status_code == 409
    assert refused.value.field == "background"
    assert _stored() == before
    assert _group(study).filled == 2


def test_full_group_leaves_other_groups_open():
    study = StudyFactory()
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=0)
    with pytest.raises(StudyFull):
        _enroll(study)
    enrollment = _enroll(study, background="administrative_support")
    assert enrollment.rater.background.code == "administrative_support"


def test_group_without_quota_takes_any_number_of_raters():
    study = StudyFactory()
    assert _group(study).quota is None
    for _ in range(30):
        _enroll(study)
    assert _group(study).filled == 30
    assert Rater.objects.filter(study=study).count() == 30


def test_returning_participant_gets_the_same_rater_and_session_and_takes_no_second_place():
    study = StudyFactory()
    first = _enroll(study, external_id="PID123", prolific_session_id="SE1")
    again = _enroll(study, external_id="PID123", prolific_session_id="SE1")
    assert again.resumed is True
    assert again.rater.pk == first.rater.pk
    assert again.session.pk == first.session.pk
    assert _group(study).filled == 1
    assert Rater.objects.count() == 1
    assert RaterSession.objects.count() == 1


def test_returning_participant_gets_their_session_back_even_when_their_group_has_filled():
    study = StudyFactory()
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=1)
    first = _enroll(study, external_id="PID123", prolific_session_id="SE1")
    again = _enroll(study, external_id="PID123", prolific_session_id="SE1")
    assert again.session.pk == first.session.pk
    assert _group(study).filled == 1


def test_same_external_id_in_another_study_is_another_rater():
    one, two = StudyFactory(), StudyFactory()
    first = _enroll(one, external_id="PID123")
    second = _enroll(two, external_id="PID123")
    assert second.resumed is False
    assert second.rater.pk != first.rater.pk


@pytest.mark.parametrize("status", [Study.Status.DRAFT, Study.Status.CLOSED])
def test_study_that_is_not_open_refuses_enrolment(status):
    study = StudyFactory(status=status)
    before = _stored()
    with pytest.raises(StudyNotOpen) as refused:
        _enroll(study)
    assert refused.value.status_code == 409
    assert refused.value.code == ("study_draft" if status == "draft" else "study_closed")
    assert _stored() == before


def test_session_deadline_is_start_plus_the_studys_session_minutes():
    study = StudyFactory(session_minutes=17)
    start = timezone.now() - timedelta(minutes=3)
    session = _enroll(study, now=start).session
    assert session.started_at == start
    assert session.deadline == start + timedelta(minutes=17)
    assert session.ended_at is None
    assert session.end_reason == ""


def test_session_end_records_the_first_reason_only():
    study = StudyFactory()
    session = _enroll(study).session
    ended = rater_session_end(session=session, reason=RaterSession.EndReason.WITHDRAWN)
    first_end = ended.ended_at
    assert ended.end_reason == RaterSession.EndReason.WITHDRAWN
    again = rater_session_end(
        session=session,
        reason=RaterSession.EndReason.COMPLETED,
        now=timezone.now() + timedelta(minutes=5),
    )
    assert again.end_reason == RaterSession.EndReason.WITHDRAWN
    assert again.ended_at == first_end


def test_check_open_before_the_deadline_leaves_the_session_open():
    study = StudyFactory()
    session = _enroll(study).session
    rater_session_check_open(session=session, now=session.deadline - timedelta(seconds=1))
    session.refresh_from_db()
    assert session.ended_at is None


def test_check_open_after_the_deadline_ends_the_session_as_timed_out_and_raises():
    study = StudyFactory(task_mix={"scorecard": 1.0}, attention_check_rate=0)
    ItemFactory(study=study)
    enrollment = _enroll(study)
    session = enrollment.session
    pending = assignment_next(rater=enrollment.rater, session=session)
    assert pending is not None
    with pytest.raises(SessionExpired) as refused:
        rater_session_check_open(session=session, now=session.deadline + timedelta(minutes=9))
    assert refused.value.status_code == 410
    assert refused.value.code == "session_timed_out"
    session.refresh_from_db()
    assert session.end_reason == RaterSession.EndReason.TIMED_OUT
    # Ended at the deadline, not when someone happened to notice.
    assert session.ended_at == session.deadline
    pending.refresh_from_db()
    assert pending.status == Assignment.Status.EXPIRED


def test_check_open_on_a_completed_session_raises_without_changing_its_reason():
    study = StudyFactory()
    session = _enroll(study).session
    rater_session_end(session=session, reason=RaterSession.EndReason.COMPLETED)
    with pytest.raises(SessionExpired) as refused:
        rater_session_check_open(session=session, now=session.deadline + timedelta(minutes=1))
    assert refused.value.code == "session_ended"
    session.refresh_from_db()
    assert session.end_reason == RaterSession.EndReason.COMPLETED


# --- the study link ----------------------------------------------------------------------------


def test_study_link_shows_the_consent_form():
    study = StudyFactory(session_minutes=25)
    response = Client().get(f"/s/{study.slug}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="consent"' in body
    assert 'name="background"' in body
    assert 'name="age_band"' in body
    assert "csrfmiddlewaretoken" in body
    assert "25 minutes" in body


def test_posting_the_consent_form_enrolls_and_redirects_to_the_task_page():
    study = StudyFactory(task_mix={"scorecard": 1.0}, attention_check_rate=0)
    ItemFactory(study=study)
    client = Client()
    response = client.post(f"/s/{study.slug}/", FORM)
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/task/"
    rater = Rater.objects.get(study=study)
    assert rater.background.code == "technical"
    assert rater.age_band == "25-34"
    assert rater.origin == Rater.Origin.ENROLLED
    assert _group(study).filled == 1
    # The browser now holds the rater: the task page shows their task, the link sends them on.
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    assert Assignment.objects.filter(rater=rater).count() == 1
    assert client.get(f"/s/{study.slug}/")["Location"] == f"/s/{study.slug}/task/"
    assert Rater.objects.count() == 1


def test_consent_form_without_consent_is_refused_and_stores_nothing():
    study = StudyFactory()
    before = _stored()
    response = Client().post(f"/s/{study.slug}/", {**FORM, "consent": ""})
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode()
    assert _stored() == before


def test_consent_form_with_unknown_background_is_refused_and_stores_nothing():
    study = StudyFactory()
    before = _stored()
    response = Client().post(f"/s/{study.slug}/", {**FORM, "background": "astronaut"})
    assert response.status_code == 400
    assert _stored() == before


def test_prolific_parameters_are_stored_on_the_rater():
    study = StudyFactory()
    client = Client()
    entry = f"/s/{study.slug}/"
    response = client.get(
        entry, {"PROLIFIC_PID": "5f3a9c", "STUDY_ID": "st-1", "SESSION_ID": "se_2"}
    )
    assert response.status_code == 200
    # The parameters survive the form post, which goes to the bare link.
    assert client.post(entry, FORM).status_code == 302
    rater = Rater.objects.get(study=study)
    assert rater.external_id == "5f3a9c"
    assert rater.prolific_study_id == "st-1"
    assert rater.prolific_session_id == "se_2"


def test_malformed_prolific_parameters_are_ignored():
    study = StudyFactory()
    client = Client()
    client.get(f"/s/{study.slug}/", {"PROLIFIC_PID": "<script>", "STUDY_ID": "x" * 65})
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    rater = Rater.objects.get(study=study)
    assert rater.external_id != "<script>"
    assert rater.prolific_study_id == ""


def test_returning_prolific_participant_in_a_new_browser_resumes_without_a_second_place():
    study = StudyFactory()
    first = Client()
    prolific = {"PROLIFIC_PID": "5f3a9c", "SESSION_ID": "se-77"}
    first.get(f"/s/{study.slug}/", prolific)
    first.post(f"/s/{study.slug}/", FORM)
    before = _stored()
    response = Client().get(f"/s/{study.slug}/", prolific)
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/task/"
    assert _stored() == before


def test_full_group_renders_the_full_page_with_409_and_the_screenout_code():
    study = StudyFactory(prolific_screenout_code="SCREEN42")
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=0)
    before = _stored()
    # The screen-out code is for a participant sent by Prolific (tests/raters/test_prolific_words.py).
    response = Client().post(f"/s/{study.slug}/?PROLIFIC_PID=5f3a9c", FORM)
    assert response.status_code == 409
    body = response.content.decode()
    assert "full" in body
    assert "SCREEN42" in body
    assert _stored() == before


def test_full_page_without_a_screenout_code_shows_no_code():
    study = StudyFactory(prolific_screenout_code="")
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=0)
    response = Client().post(f"/s/{study.slug}/", FORM)
    assert response.status_code == 409
    assert "Your code" not in response.content.decode()


@pytest.mark.parametrize("method", ["get", "post"])
def test_closed_study_says_it_has_closed_with_409(method):
    study = StudyFactory(status=Study.Status.CLOSED)
    before = _stored()
    response = getattr(Client(), method)(f"/s/{study.slug}/", FORM if method == "post" else None)
    assert response.status_code == 409
    assert "has closed" in response.content.decode()
    assert _stored() == before


def test_draft_study_says_it_is_not_open_yet_with_409():
    study = StudyFactory(status=Study.Status.DRAFT)
    before = _stored()
    response = Client().post(f"/s/{study.slug}/", FORM)
    assert response.status_code == 409
    assert "not open yet" in response.content.decode()
    assert _stored() == before


@pytest.mark.parametrize(
    "path", ["/s/no-such-study/", "/s/no-such-study/task/", "/s/no-such-study/end/"]
)
def test_unknown_study_slug_is_404(path):
    client = Client(raise_request_exception=False)
    assert client.get(path).status_code == 404
    assert client.post(path, FORM).status_code == 404
    assert Rater.objects.count() == 0


def test_task_page_without_enrolment_is_404():
    study = StudyFactory()
    response = Client(raise_request_exception=False).get(f"/s/{study.slug}/task/")
    assert response.status_code == 404
    assert Assignment.objects.count() == 0


def test_opening_the_end_page_with_time_left_does_not_end_the_session():
    from django.test import Client

    from apps.raters.models import RaterSession
    from tests.factories import ItemFactory, StudyFactory

    study = StudyFactory(status="open", attention_check_rate=0)
    ItemFactory(study=study)
    client = Client()
    client.post(
        f"/s/{study.slug}/",
        {
            "background": "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    response = client.get(f"/s/{study.slug}/end/")
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/task/"
    session = RaterSession.objects.get(rater__study=study)
    assert session.ended_at is None
