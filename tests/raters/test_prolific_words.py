"""Prolific's words only for raters who came from Prolific: the completion code, the screen-out code
and the "Return to Prolific" button are shown to a rater who arrived with a PROLIFIC_PID, and to
no one else (a rater with the study's plain link has no Prolific submission to return to)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en"]}
PROLIFIC = "?PROLIFIC_PID=5f3a9c0d&STUDY_ID=st-9&SESSION_ID=se-77"
PROLIFIC_WORDS = ("Return to Prolific", "app.prolific.com", "completion code", "Your code")


def _study() -> Study:
    study = StudyFactory(
        languages=["en"],
        prolific_completion_code="DONE4242",
        prolific_screenout_code="SCREEN42",
        task_mix={"turing": 1},
    )
    ItemFactory(study=study)
    return study


def _end_page(study: Study, query: str, *, end_query: str = "") -> str:
    client = Client()
    client.get(f"/s/{study.slug}/{query}")
    enrolled = client.post(f"/s/{study.slug}/{query}", FORM)
    assert enrolled.status_code == 302
    past = timezone.now() - timedelta(minutes=1)
    RaterSession.objects.update(started_at=past - timedelta(minutes=30), deadline=past)
    response = client.get(f"/s/{study.slug}/end/{end_query}")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Time is up" in body
    return body


def test_a_rater_from_prolific_gets_the_completion_code_and_the_way_back():
    study = _study()
    body = _end_page(study, PROLIFIC)
    assert "Your completion code:" in body
    assert "DONE4242" in body
    assert "https://app.prolific.com/submissions/complete?cc=DONE4242" in body
    assert "Return to Prolific" in body
    assert Rater.objects.get(study=study).from_prolific


def test_a_rater_with_the_plain_link_gets_no_code_and_no_prolific_button():
    study = _study()
    body = _end_page(study, "")
    assert "DONE4242" not in body
    for words in PROLIFIC_WORDS:
        assert words not in body
    assert not Rater.objects.get(study=study).from_prolific


def test_a_prolific_id_added_after_enrolment_shows_no_code():
    study = _study()
    body = _end_page(study, "", end_query="?PROLIFIC_PID=5f3a9c0d")
    assert "DONE4242" not in body
    assert "Return to Prolific" not in body


def _full_page(query: str) -> str:
    study = _study()
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=0)
    client = Client()
    client.get(f"/s/{study.slug}/{query}")
    response = client.post(f"/s/{study.slug}/{query}", FORM)
    assert response.status_code == 409
    assert not Rater.objects.filter(study=study).exists()
    return response.content.decode()


def test_the_full_page_gives_a_prolific_rater_the_screenout_code():
    body = _full_page(PROLIFIC)
    assert "This study is full for your group" in body
    assert "SCREEN42" in body
    assert "Return to Prolific" in body


def test_the_full_page_gives_a_rater_with_the_plain_link_no_code_and_no_prolific_button():
    body = _full_page("")
    assert "This study is full for your group" in body
    assert "SCREEN42" not in body
    for words in PROLIFIC_WORDS:
        assert words not in body
