"""Prolific's lifecycle: a returned or timed-out session gives its quota place and its tasks back
at once; a declined consent leaves with a code; the researcher marks returns and builds the
bulk-bonus file."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.core.errors import ImportRejected, SessionExpired
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.raters.prolific import (
    prolific_bonus_csv,
    prolific_bonuses,
    prolific_ids_from_text,
    prolific_returns_mark,
)
from apps.raters.services import (
    StudyFull,
    rater_enroll,
    rater_session_check_open,
    rater_session_end,
    sessions_release_timed_out,
)
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}


def _study(quota: int | None = 1, **fields: object) -> Study:
    values: dict[str, object] = {
        "task_mix": {"scorecard": 1.0},
        "attention_check_rate": 0,
        "random_seed": 3,
    }
    values.update(fields)
    study = StudyFactory(**values)
    for i in range(6):
        ItemFactory(study=study, external_id=f"j{i}")
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=quota)
    return study


def _enroll(study: Study, pid: str, *, now=None, languages=None):  # type: ignore[no-untyped-def]
    return rater_enroll(
        study=study,
        background="technical",
        age_band="25-34",
        consent=True,
        external_id=pid,
        prolific_session_id=f"s-{pid}",
        from_prolific=True,
        languages=languages,
        now=now,
    )


def _filled(study: Study) -> int:
    return BackgroundGroup.objects.get(study=study, code="technical").filled


# --- places given back -------------------------------------------------------------------------


def test_a_returned_session_gives_its_place_and_its_open_tasks_back_at_once():
    study = _study(quota=1)
    first = _enroll(study, "p1")
    Assignment.objects.create(
        study=study,
        rater=first.rater,
        session=first.session,
        kind="scorecard",
        item=study.items.first(),
        position=1,
    )
    with pytest.raises(StudyFull):
        _enroll(study, "p2")
    rater_session_end(session=first.session, reason=RaterSession.EndReason.RETURNED)
    assert _filled(study) == 0
    assert Rater.objects.get(pk=first.rater.pk).place_released_at is not None
    assert not Assignment.objects.filter(rater=first.rater, status="pending").exists()
    second = _enroll(study, "p2")
    assert second.resumed is False
    assert _filled(study) == 1


def test_a_place_is_given_back_once_however_often_the_session_is_ended():
    study = _study(quota=2)
    first = _enroll(study, "p1")
    _enroll(study, "p2")
    for reason in ("returned", "returned", "timed_out", "completed"):
        rater_session_end(session=first.session, reason=reason)
    assert _filled(study) == 1
    assert RaterSession.objects.get(pk=first.session.pk).end_reason == "returned"


def test_a_completed_session_keeps_its_place():
    study = _study(quota=1)
    first = _enroll(study, "p1")
    rater_session_end(session=first.session, reason=RaterSession.EndReason.COMPLETED)
    assert _filled(study) == 1
    with pytest.raises(StudyFull):
        _enroll(study, "p2")


def test_a_full_group_ends_the_sessions_whose_time_ran_out_before_refusing_anyone():
    study = _study(quota=1, session_minutes=30)
    start = timezone.now() - timedelta(minutes=45)
    first = _enroll(study, "p1", now=start)
    second = _enroll(study, "p2")
    assert second.resumed is False
    session = RaterSession.objects.get(pk=first.session.pk)
    assert session.end_reason == "timed_out"
    assert session.ended_at == session.deadline
    assert _filled(study) == 1
    # The rater who walked away comes back: their session is over, and says why.
    with pytest.raises(SessionExpired) as refused:
        rater_session_check_open(session=session)
    assert refused.value.code == "session_timed_out"


def test_the_periodic_sweep_ends_overdue_sessions_and_leaves_the_others():
    study = _study(quota=None, session_minutes=30)
    old = _enroll(study, "p1", now=timezone.now() - timedelta(minutes=31))
    fresh = _enroll(study, "p2")
    assert sessions_release_timed_out() == 1
    assert sessions_release_timed_out() == 0
    assert RaterSession.objects.get(pk=old.session.pk).end_reason == "timed_out"
    assert RaterSession.objects.get(pk=fresh.session.pk).ended_at is None
    assert _filled(study) == 1


def test_in_a_study_of_two_languages_a_returned_reader_frees_their_language_only():
    study = _study(quota=1, languages=["en", "zh"])
    english = _enroll(study, "p1", languages=["en"])
    _enroll(study, "p2", languages=["zh"])
    with pytest.raises(StudyFull):
        _enroll(study, "p3", languages=["en"])
    rater_session_end(session=english.session, reason=RaterSession.EndReason.RETURNED)
    again = _enroll(study, "p3", languages=["en"])
    assert again.rater.languages == ["en"]
    with pytest.raises(StudyFull):
        _enroll(study, "p4", languages=["zh"])
    assert _filled(study) == 1


def test_a_late_answer_from_a_returned_session_is_410_naming_the_return_and_stores_nothing():
    study = _study(quota=None)
    client = Client()
    client.get(f"/s/{study.slug}/", {"PROLIFIC_PID": "pidlate", "SESSION_ID": "s1"})
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    assignment = Assignment.objects.get(status="pending")
    assert client.get(f"/s/{study.slug}/return/").status_code == 200
    response = client.post(f"/s/{study.slug}/return/")
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/end/"
    late = client.post(
        f"/api/v1/rater/{study.slug}/scorecards/early",
        data=json.dumps(
            {
                "assignment": assignment.pk,
                "active_ms": 1500,
                "answers": {"surprise": {"value": 3, "at_ms": 1000}},
            }
        ),
        content_type="application/json",
    )
    assert late.status_code == 410
    assert late.json()["code"] == "session_returned"
    assert "returned" in late.json()["message"]
    assert Assignment.objects.get(pk=assignment.pk).status == "expired"
    # The task page sends them to the end page, which says what happened, without a code.
    assert client.get(f"/s/{study.slug}/task/")["Location"] == f"/s/{study.slug}/end/"
    end = client.get(f"/s/{study.slug}/end/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "您已退回这项研究" in end
    assert "LAUGHDEMO" not in end


def test_only_a_prolific_participant_is_offered_the_return_page():
    study = _study(quota=None)
    client = Client()
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    assert "/return/" not in page
    assert client.post(f"/s/{study.slug}/return/")["Location"] == f"/s/{study.slug}/task/"
    assert RaterSession.objects.get().ended_at is None


# --- consent declined --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "words"), [("en", "You chose not to take part"), ("zh-hans", "您选择了不参加")]
)
def test_declining_consent_stores_nothing_and_gives_a_prolific_participant_the_code(
    language, words
):
    study = _study(quota=None, prolific_no_consent_code="NOCONSENT9")
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.get(f"/s/{study.slug}/", {"PROLIFIC_PID": "pid9", "SESSION_ID": "s9"})
    response = client.post(f"/s/{study.slug}/", {"decline": "1"})
    body = response.content.decode()
    assert response.status_code == 200
    assert words in body
    assert "NOCONSENT9" in body
    assert "submissions/complete?cc=NOCONSENT9" in body
    assert not Rater.objects.exists()


def test_declining_without_a_prolific_link_shows_no_code():
    study = _study(quota=None, prolific_no_consent_code="NOCONSENT9")
    body = Client().post(f"/s/{study.slug}/", {"decline": "1"}).content.decode()
    assert "NOCONSENT9" not in body
    assert not Rater.objects.exists()


# --- the researcher marks returns --------------------------------------------------------------


def test_marking_returns_ends_sessions_and_gives_places_back():
    study = _study(quota=3)
    one, two = _enroll(study, "aa1"), _enroll(study, "aa2")
    done = _enroll(study, "aa3")
    rater_session_end(session=done.session, reason="completed")
    marked = prolific_returns_mark(
        study=study, ids=prolific_ids_from_text("Participant id,status\naa1,RETURNED\n\naa2\n")
    )
    assert (marked.returned, marked.already) == (2, 0)
    assert _filled(study) == 1
    assert {
        s.end_reason for s in RaterSession.objects.filter(pk__in=[one.session.pk, two.session.pk])
    } == {"returned"}
    again = prolific_returns_mark(study=study, ids=prolific_ids_from_text("aa1"))
    assert (again.returned, again.already) == (0, 1)
    assert _filled(study) == 1


def test_a_bad_line_refuses_the_whole_list_naming_each_line_and_changes_nothing():
    study = _study(quota=3)
    _enroll(study, "aa1")
    done = _enroll(study, "aa3")
    rater_session_end(session=done.session, reason="completed")
    with pytest.raises(ImportRejected) as refused:
        prolific_returns_mark(study=study, ids=prolific_ids_from_text("aa1\nnobody\naa3\nbad id!"))
    assert [(e.line, e.field) for e in refused.value.errors] == [
        (2, "participant_id"),
        (3, "participant_id"),
        (4, "participant_id"),
    ]
    assert "completed" in refused.value.errors[1].message
    assert RaterSession.objects.filter(ended_at__isnull=True).count() == 1
    assert _filled(study) == 2


def test_the_prolific_page_marks_returns_and_lists_bad_lines_in_both_languages(researcher_client):
    client, study = researcher_client(_study(quota=2))
    _enroll(study, "aa1")
    url = f"/studies/{study.slug}/prolific/"
    refused = client.post(url, {"participant_ids": "aa1\nghost"}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert refused.status_code == 400
    assert "没有" in refused.content.decode()
    assert RaterSession.objects.get().ended_at is None
    empty = client.post(url, {"participant_ids": "  "})
    assert empty.status_code == 400
    assert "Paste at least one" in empty.content.decode()
    done = client.post(url, {"participant_ids": "aa1"})
    assert done.status_code == 302
    assert RaterSession.objects.get().end_reason == "returned"
    assert _filled(study) == 0


def test_the_returns_api_is_all_or_nothing(researcher_client):
    client, study = researcher_client(_study(quota=2))
    _enroll(study, "aa1")
    url = f"/api/v1/studies/{study.slug}/prolific/returns/"
    bad = client.post(url, {"participant_ids": ["aa1", "ghost"]}, content_type="application/json")
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["line"] == 2
    assert RaterSession.objects.get().ended_at is None
    assert (
        client.post(url, {"participant_ids": []}, content_type="application/json").status_code
        == 400
    )
    # A list is ids only: an entry spelled like a heading is an id, and refused as one.
    heading = client.post(url, {"participant_ids": ["id"]}, content_type="application/json")
    assert heading.status_code == 400
    assert heading.json()["errors"][0]["line"] == 1
    ok = client.post(url, {"participant_ids": ["aa1"]}, content_type="application/json")
    assert ok.status_code == 200
    assert ok.json() == {"returned": 1, "already": 0}


# --- bonuses -----------------------------------------------------------------------------------


def _attention(enrollment, passed: bool) -> None:  # type: ignore[no-untyped-def]
    done = Assignment.objects.filter(session=enrollment.session)
    Assignment.objects.create(
        position=done.count() + 1,
        study=enrollment.rater.study,
        rater=enrollment.rater,
        session=enrollment.session,
        kind="scorecard",
        item=enrollment.rater.study.items.all()[done.count()],
        is_attention_check=True,
        status="done",
        attention_passed=passed,
    )


def test_bonuses_follow_the_studys_rules_in_prolifics_bulk_format():
    study = _study(
        quota=None,
        prolific_bonus_per_attention_pass=Decimal("0.25"),
        prolific_bonus_on_completion=Decimal("1.00"),
    )
    keen, lapsed, idle = _enroll(study, "aa1"), _enroll(study, "aa2"), _enroll(study, "aa3")
    _attention(keen, True)
    _attention(keen, True)
    _attention(lapsed, False)
    _attention(lapsed, True)
    rater_session_end(session=keen.session, reason="completed")
    rater_enroll(study=study, background="technical", age_band="25-34", consent=True)
    bonuses = prolific_bonuses(study=study)
    assert [(b.participant_id, b.attention_passed, b.completed, b.amount) for b in bonuses] == [
        ("aa1", 2, True, Decimal("1.50")),
        ("aa2", 1, False, Decimal("0.25")),
    ]
    assert prolific_bonus_csv(bonuses) == "aa1,1.50\naa2,0.25\n"
    assert idle.rater.external_id not in prolific_bonus_csv(bonuses)


def test_the_prolific_page_previews_the_bonuses_and_downloads_the_file(researcher_client):
    client, study = researcher_client(
        _study(quota=None, prolific_bonus_per_attention_pass=Decimal("0.50"))
    )
    _attention(_enroll(study, "aa1"), True)
    page = client.get(f"/studies/{study.slug}/prolific/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    body = page.content.decode()
    assert page.status_code == 200
    assert "aa1" in body
    assert "0.50" in body
    assert "奖金" in body
    csv = client.get(f"/studies/{study.slug}/prolific/bonuses.csv")
    assert csv["Content-Disposition"].endswith('-prolific-bonuses.csv"')
    assert csv.content.decode() == "aa1,0.50\n"
    api = client.get(f"/api/v1/studies/{study.slug}/prolific/bonuses/").json()
    assert api == [
        {"participant_id": "aa1", "attention_passed": 1, "completed": False, "amount": "0.50"}
    ]


@pytest.mark.parametrize("amount", ["-1", "100.01", "0.005", "NaN"])
def test_a_bonus_rule_out_of_range_is_refused_naming_the_field(researcher_client, amount):
    client, study = researcher_client(_study(quota=None))
    response = client.patch(
        f"/api/v1/studies/{study.slug}/",
        {"prolific_bonus_per_attention_pass": amount},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "prolific_bonus_per_attention_pass" in json.dumps(response.json())
    study.refresh_from_db()
    assert study.prolific_bonus_per_attention_pass == 0


@pytest.fixture
def researcher_client(django_user_model):  # type: ignore[no-untyped-def]
    """A logged-in researcher of the study given."""
    from apps.studies.services import study_member_add

    def make(study: Study) -> tuple[Client, Study]:
        user = django_user_model.objects.create_user("res", password="pw-res-12345")
        study_member_add(study=study, user=user)
        client = Client()
        client.force_login(user)
        return client, study

    return make


# --- races on PostgreSQL, with real threads ----------------------------------------------------


def _holding(study: Study) -> int:
    return Rater.objects.filter(study=study, place_released_at__isnull=True).count()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("languages", [["en"], ["en", "zh"]], ids=["one-language", "two"])
def test_returns_and_enrolments_at_once_never_give_a_place_twice(
    postgres_only, builtin_rubrics, languages
):
    from tests.assignments.test_concurrency import _in_threads

    study = _study(quota=3, languages=languages)
    reads = ["en"]
    leaving = [_enroll(study, f"old{i}", languages=reads).session for i in range(3)]

    def work(i: int) -> str:
        if i < 3:
            rater_session_end(session=leaving[i], reason=RaterSession.EndReason.RETURNED)
            return "returned"
        try:
            _enroll(study, f"new{i}", languages=reads)
        except StudyFull:
            return "full"
        return "enrolled"

    results, errors = _in_threads(23, work)
    assert errors == []
    enrolled = results.count("enrolled")
    assert 0 <= enrolled <= 3
    assert _holding(study) == enrolled
    assert _filled(study) == enrolled
    # Whatever the order, the places given back are there for the next participants.
    for i in range(3 - enrolled):
        _enroll(study, f"late{i}", languages=reads)
    with pytest.raises(StudyFull):
        _enroll(study, "one-too-many", languages=reads)
    assert _filled(study) == 3


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_one_session_returned_from_many_requests_at_once_gives_back_one_place(
    postgres_only, builtin_rubrics
):
    from tests.assignments.test_concurrency import _in_threads

    study = _study(quota=2)
    leaving = _enroll(study, "p1").session
    _enroll(study, "p2")

    def work(i: int) -> str:
        reason = RaterSession.EndReason.RETURNED if i % 2 else RaterSession.EndReason.TIMED_OUT
        return rater_session_end(session=leaving, reason=reason).end_reason

    results, errors = _in_threads(10, work)
    assert errors == []
    assert len(set(results)) == 1
    assert _filled(study) == 1
    assert _holding(study) == 1
