"""Custom rubrics through the API: a built-in one read as a spec, copied, edited, and created with
a study; a bad spec is a 400 naming the field, with nothing stored."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from apps.studies.models import Question, Rubric, Study
from tests.api.conftest import token_client


@pytest.fixture
def client(member) -> APIClient:  # type: ignore[no-untyped-def]
    return token_client(member)


def test_a_builtin_rubric_is_copied_edited_and_used_for_a_new_study(client: APIClient) -> None:
    spec = client.get("/api/v1/rubrics/humor/").json()
    assert spec["builtin"] is True
    assert spec["questions"][2]["answered_after"] == ["surprise", "coherence"]
    spec.pop("builtin")
    spec["slug"] = "humor-0-based"
    for question in spec["questions"]:
        if question["kind"] == "likert":
            question["min_value"], question["max_value"] = 0, 4
            question["anchors"] = {}
    response = client.post(
        "/api/v1/studies/",
        {
            "slug": "copied",
            "rubric_spec": spec,
            "backgrounds": [{"code": "students", "labels": {"en": "Students", "zh": "学生"}}],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["rubric"] == "humor-0-based"
    assert [g["code"] for g in response.json()["groups"]] == ["students"]
    funniness = Question.objects.get(rubric__slug="humor-0-based", name="funniness")
    assert (funniness.min_value, funniness.max_value) == (0, 4)
    assert sorted(q.name for q in funniness.answered_after.all()) == ["coherence", "surprise"]
    # The built-in one is untouched.
    builtin = Question.objects.get(rubric__slug="humor", name="funniness")
    assert (builtin.min_value, builtin.max_value) == (1, 7)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"questions": []}, "questions"),
        (
            {
                "questions": [
                    {
                        "name": "q",
                        "kind": "likert",
                        "min_value": 3,
                        "max_value": 1,
                        "prompt": {"en": "Q?", "zh": "问？"},
                    }
                ]
            },
            "questions[0].max_value",
        ),
        (
            {
                "questions": [
                    {
                        "name": "q",
                        "kind": "likert",
                        "min_value": 0,
                        "max_value": 3,
                        "prompt": {"en": "Q?"},
                    }
                ]
            },
            "questions[0].prompt.zh",
        ),
        (
            {
                "questions": [
                    {
                        "name": "q",
                        "kind": "likert",
                        "min_value": 0,
                        "max_value": 3,
                        "prompt": {"en": "Q?", "zh": "问？"},
                        "answered_after": ["later"],
                    }
                ]
            },
            "questions[0].answered_after",
        ),
        (
            {
                "questions": [
                    {
                        "name": "q",
                        "kind": "likert",
                        "min_value": 0,
                        "max_value": 3,
                        "prompt": {"en": "Q?", "zh": "问？"},
                        "anchors": {"en": {"9": "x"}, "zh": {"9": "x"}},
                    }
                ]
            },
            "questions[0].anchors.en.9",
        ),
        # Texts the database cannot store: refused naming the field, never a 500 at the insert.
        (
            {
                "questions": [
                    {
                        "name": "q",
                        "kind": "likert",
                        "min_value": 0,
                        "max_value": 3,
                        "prompt": {"en": "Q?\u0000", "zh": "问？"},
                    }
                ]
            },
            "questions[0].prompt.en",
        ),
        (
            {
                "questions": [
                    {
                        "name": "mood",
                        "kind": "choice",
                        "prompt": {"en": "Mood?", "zh": "情绪？"},
                        "choices": [
                            {"en": "Gentle", "zh": "温和\ud800"},
                            {"en": "Dry", "zh": "冷"},
                        ],
                    }
                ]
            },
            "questions[0].choices[0].zh",
        ),
        ({"name": "Bad\u0000", "questions": []}, "name"),
    ],
)
def test_a_bad_rubric_spec_is_refused_naming_the_field(
    client: APIClient, change: dict[str, object], field: str
) -> None:
    spec = {"slug": "bad", "name": "Bad", **change}
    # json.dumps escapes a lone surrogate as \\ud800, as a client in any language would send it.
    body = json.dumps({"slug": "s", "rubric_spec": spec})
    response = client.post("/api/v1/studies/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert response.json()["message"].startswith(field)
    assert not Study.objects.filter(slug="s").exists()
    assert not Rubric.objects.filter(slug="bad").exists()


def test_rubric_and_rubric_spec_together_are_refused(client: APIClient) -> None:
    spec = client.get("/api/v1/rubrics/content/").json()
    spec.pop("builtin")
    spec["slug"] = "other"
    response = client.post(
        "/api/v1/studies/", {"slug": "s", "rubric": "humor", "rubric_spec": spec}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["field"] == "rubric"


def test_an_unknown_rubric_is_not_found(client: APIClient) -> None:
    assert client.get("/api/v1/rubrics/nope/").status_code == 404


def test_rubrics_need_a_signed_in_researcher() -> None:
    assert APIClient().get("/api/v1/rubrics/humor/").status_code in (401, 403)
