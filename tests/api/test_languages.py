"""The cross-language pairs setting and the study's languages through the API: off by default,
on only for a study with several languages; bad input a 400 naming the field, nothing saved."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.studies.models import Study
from tests.api.conftest import assert_error, snapshot, token_client


@pytest.fixture
def client(member) -> APIClient:  # type: ignore[no-untyped-def]
    return token_client(member)


def test_cross_language_pairs_are_off_by_default_and_can_be_allowed(client, study):
    assert client.get("/api/v1/studies/jokes/").json()["allow_cross_language_pairs"] is False
    response = client.patch(
        "/api/v1/studies/jokes/", {"allow_cross_language_pairs": True}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["allow_cross_language_pairs"] is True
    study.refresh_from_db()
    assert study.allow_cross_language_pairs is True


@pytest.mark.parametrize("value", ["perhaps", 2, None])
def test_a_cross_language_setting_that_is_not_a_boolean_is_refused(client, study, value):
    before = snapshot(study)
    assert_error(
        client.patch(
            "/api/v1/studies/jokes/", {"allow_cross_language_pairs": value}, format="json"
        ),
        400,
        "allow_cross_language_pairs",
    )
    assert snapshot(study) == before


def test_cross_language_pairs_are_refused_for_a_study_with_one_language(client, study):
    Study.objects.filter(pk=study.pk).update(languages=["en"])
    before = snapshot(study)
    body = assert_error(
        client.patch(
            "/api/v1/studies/jokes/",
            {"allow_cross_language_pairs": True, "session_minutes": 20},
            format="json",
        ),
        400,
        "allow_cross_language_pairs",
    )
    assert "several languages" in body["message"]
    assert snapshot(study) == before


@pytest.mark.parametrize("languages", [["en", "en"], ["en", "zh", "en"]], ids=["twice", "thrice"])
def test_a_language_listed_twice_is_refused_at_creation(client, study, languages):
    before = snapshot(study)
    assert_error(
        client.post(
            "/api/v1/studies/",
            {"slug": "twice", "rubric": "humor", "languages": languages},
            format="json",
        ),
        400,
        "languages",
    )
    assert snapshot(study) == before
