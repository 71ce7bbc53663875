"""Creating, configuring, opening and closing studies through the API, and every kind of bad input
to those writes: a 4xx JSON error naming the field, and nothing stored."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.raters.models import BackgroundGroup
from apps.studies.models import Item, Study, StudyMembership
from tests.api.conftest import assert_error, snapshot, token_client


@pytest.fixture
def client(member) -> APIClient:  # type: ignore[no-untyped-def]
    return token_client(member)


# --- create --------------------------------------------------------------------------------------


def test_creating_a_study_makes_the_creator_its_owner(client, member):
    response = client.post(
        "/api/v1/studies/",
        {"slug": "puns", "rubric": "humor", "name": "Puns", "languages": ["en"]},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["slug"] == "puns"
    assert body["status"] == "draft"
    assert body["rubric"] == "humor"
    assert body["languages"] == ["en"]
    assert [g["code"] for g in body["groups"]] == [
        "technical",
        "content_operations",
        "administrative_support",
        "traditional_industries",
    ]
    assert response["Location"].endswith("/api/v1/studies/puns/")
    membership = StudyMembership.objects.get(study__slug="puns")
    assert (membership.user, membership.role) == (member, StudyMembership.Role.OWNER)
    assert client.get("/api/v1/studies/puns/").status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "field", "code"),
    [
        ({"slug": "x", "rubric": "limericks"}, 400, "rubric", "invalid"),
        ({"slug": "Bad Slug", "rubric": "humor"}, 400, "slug", "invalid"),
        ({"slug": "UPPER", "rubric": "humor"}, 400, "slug", "invalid"),
        ({"rubric": "humor"}, 400, "slug", "invalid"),
        ({"slug": "jokes", "rubric": "humor"}, 409, "slug", "conflict"),
        ({"slug": "x", "rubric": "humor", "colour": "red"}, 400, "colour", "invalid"),
        ({"slug": "x", "rubric": "humor", "status": "open"}, 400, "status", "invalid"),
        (
            {"slug": "x", "rubric": "humor", "languages": ["English!"]},
            400,
            "languages.0",
            "invalid",
        ),
        ({"slug": "x", "rubric": "humor", "languages": []}, 400, "languages", "invalid"),
        ({"slug": "x", "rubric": "humor", "name": "n" * 201}, 400, "name", "invalid"),
        ({"slug": "x", "rubric": "humor", "name": "a\x00b"}, 400, "name", "invalid"),
    ],
)
def test_bad_study_creation_is_refused_and_stores_nothing(client, study, body, status, field, code):
    before = snapshot(study)
    assert_error(client.post("/api/v1/studies/", body, format="json"), status, field, code)
    assert snapshot(study) == before


def test_a_study_body_that_is_not_an_object_is_refused(client, study):
    before = snapshot(study)
    body = assert_error(client.post("/api/v1/studies/", ["jokes"], format="json"), 400, None)
    assert "dictionary" in body["message"]
    assert snapshot(study) == before


# --- transport errors, on every JSON write -------------------------------------------------------

JSON_WRITES = [
    ("post", "/api/v1/studies/"),
    ("patch", "/api/v1/studies/jokes/"),
    ("post", "/api/v1/studies/jokes/items/"),
    ("post", "/api/v1/studies/jokes/exports/"),
]


@pytest.mark.parametrize(("method", "url"), JSON_WRITES)
def test_malformed_json_is_a_parse_error(client, study, method, url):
    before = snapshot(study)
    response = getattr(client, method)(url, '{"slug": "x",', content_type="application/json")
    body = assert_error(response, 400, None, code="parse_error")
    assert "JSON" in body["message"]
    assert snapshot(study) == before


@pytest.mark.parametrize(("method", "url"), JSON_WRITES)
def test_nan_is_not_json(client, study, method, url):
    before = snapshot(study)
    response = getattr(client, method)(
        url, '{"attention_check_rate": NaN}', content_type="application/json"
    )
    assert_error(response, 400, None, code="parse_error")
    assert snapshot(study) == before


@pytest.mark.parametrize(("method", "url"), JSON_WRITES)
def test_a_wrong_content_type_is_unsupported(client, study, method, url):
    before = snapshot(study)
    response = getattr(client, method)(url, "slug=x", content_type="text/plain")
    body = assert_error(response, 415, None, code="unsupported_media_type")
    assert "text/plain" in body["message"]
    assert snapshot(study) == before


@pytest.mark.parametrize(
    ("method", "url"), [("post", "/api/v1/studies/"), ("patch", "/api/v1/studies/jokes/")]
)
def test_a_form_post_is_unsupported_on_json_endpoints(client, study, method, url):
    before = snapshot(study)
    response = getattr(client, method)(
        url, "slug=x&rubric=humor", content_type="application/x-www-form-urlencoded"
    )
    assert_error(response, 415, None, code="unsupported_media_type")
    assert snapshot(study) == before


# --- configure -----------------------------------------------------------------------------------


def test_configuring_changes_settings_task_mix_and_quotas(client, study):
    response = client.patch(
        "/api/v1/studies/jokes/",
        {
            "session_minutes": 20,
            "attention_check_rate": 0.1,
            "pair_appearances_per_item": 4,
            "pair_min_opponents": 3,
            "task_mix": {"scorecard": 0.5, "pair": 0.5},
            "quotas": {"technical": 10, "content_operations": None},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["session_minutes"] == 20
    assert body["task_mix"] == {"scorecard": 0.5, "pair": 0.5, "turing": 0.0}
    quotas = {g["code"]: g["quota"] for g in body["groups"]}
    assert quotas["technical"] == 10
    assert quotas["content_operations"] is None
    study.refresh_from_db()
    assert (study.session_minutes, study.pair_min_opponents) == (20, 3)
    assert BackgroundGroup.objects.get(study=study, code="technical").quota == 10


def test_an_empty_patch_changes_nothing(client, study):
    before = snapshot(study)
    response = client.patch("/api/v1/studies/jokes/", {}, format="json")
    assert response.status_code == 200
    assert response.json()["name"] == "Jokes"
    assert snapshot(study) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"session_minutes": 0}, "session_minutes"),
        ({"session_minutes": 241}, "session_minutes"),
        ({"session_minutes": 100_000}, "session_minutes"),
        ({"session_minutes": "half an hour"}, "session_minutes"),
        ({"tasks_per_session": 501}, "tasks_per_session"),
        ({"attention_check_rate": 0.9}, "attention_check_rate"),
        ({"attention_check_rate": -0.1}, "attention_check_rate"),
        ({"attention_check_rate": "lots"}, "attention_check_rate"),
        ({"pair_min_opponents": 5}, "pair_min_opponents"),
        ({"pair_min_opponents": 0}, "pair_min_opponents"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"adaptive_pairing": "perhaps"}, "adaptive_pairing"),
        ({"prolific_completion_code": "c" * 65}, "prolific_completion_code"),
        ({"task_mix": {"scorecard": -1}}, "task_mix.scorecard"),
        ({"task_mix": {"dance": 1}}, "task_mix.dance"),
        ({"task_mix": {"scorecard": 0, "pair": 0, "turing": 0}}, "task_mix"),
        ({"task_mix": [0.5, 0.5]}, "task_mix"),
        ({"quotas": {"astronauts": 5}}, "quotas.astronauts"),
        ({"quotas": {"technical": -1}}, "quotas.technical"),
        ({"quotas": {"technical": "many"}}, "quotas.technical"),
        ({"quotas": [5]}, "quotas"),
        ({"status": "open"}, "status"),
        ({"slug": "renamed"}, "slug"),
        ({"random_seed": 1}, "random_seed"),
        # A good setting beside a bad quota: the two are saved together or not at all.
        ({"session_minutes": 10, "quotas": {"astronauts": 5}}, "quotas.astronauts"),
        ({"quotas": {"technical": 5}, "session_minutes": 0}, "session_minutes"),
    ],
)
def test_bad_settings_are_refused_and_nothing_is_saved(client, study, body, field):
    before = snapshot(study)
    assert_error(client.patch("/api/v1/studies/jokes/", body, format="json"), 400, field)
    assert snapshot(study) == before


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.1, "often"])
def test_a_culture_fdr_outside_zero_to_one_is_refused_with_a_message(client, study, value):
    before = snapshot(study)
    body = assert_error(
        client.patch("/api/v1/studies/jokes/", {"culture_fdr": value}, format="json"),
        400,
        "culture_fdr",
    )
    if not isinstance(value, str):
        assert "greater than 0 and less than 1" in body["message"]
    assert snapshot(study) == before
    study.refresh_from_db()
    assert study.culture_fdr == 0.1


def test_the_culture_fdr_is_a_setting_of_the_study(client, study):
    assert client.get("/api/v1/studies/jokes/").json()["culture_fdr"] == 0.1
    response = client.patch("/api/v1/studies/jokes/", {"culture_fdr": 0.05}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["culture_fdr"] == 0.05
    study.refresh_from_db()
    assert study.culture_fdr == 0.05


def test_a_quota_below_the_places_taken_is_refused(client, study):
    BackgroundGroup.objects.filter(study=study, code="technical").update(quota=10, filled=4)
    before = snapshot(study)
    body = assert_error(
        client.patch("/api/v1/studies/jokes/", {"quotas": {"technical": 3}}, format="json"),
        400,
        "quotas.technical",
    )
    assert "already enrolled" in body["message"]
    assert snapshot(study) == before


# --- open and close ------------------------------------------------------------------------------


def test_opening_and_closing_a_study(client, study):
    response = client.post("/api/v1/studies/jokes/open/")
    assert (response.status_code, response.json()["status"]) == (200, "open")
    response = client.post("/api/v1/studies/jokes/close/")
    assert (response.status_code, response.json()["status"]) == (200, "closed")
    response = client.post("/api/v1/studies/jokes/open/")
    assert (response.status_code, response.json()["status"]) == (200, "open")
    assert Study.objects.get(pk=study.pk).status == "open"


def test_a_study_without_items_cannot_open(client, study):
    Item.objects.filter(study=study).delete()
    before = snapshot(study)
    body = assert_error(client.post("/api/v1/studies/jokes/open/"), 400, "status")
    assert "items" in body["message"]
    assert snapshot(study) == before


def test_open_takes_no_other_method(client, study):
    response = client.get("/api/v1/studies/jokes/open/")
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
