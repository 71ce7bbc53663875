"""The exclusions endpoints: create, list, undo; bad input is a 4xx naming the field."""

from __future__ import annotations

import pytest

from apps.exclusions.models import Exclusion
from tests.api.conftest import assert_error, snapshot, token_client

pytestmark = pytest.mark.django_db


def url(study, suffix: str = "") -> str:
    return f"/api/v1/studies/{study.slug}/exclusions/{suffix}"


def test_exclude_list_and_undo(study, member):
    client = token_client(member)
    response = client.post(
        url(study), {"target": "item", "subject": "j2", "reason": "duplicate"}, format="json"
    )
    assert response.status_code == 201
    created = response.json()
    assert created["subject"] == "j2"
    assert created["active"] is True
    assert created["created_by"] == "member"
    listed = client.get(url(study)).json()
    assert [row["id"] for row in listed] == [created["id"]]
    response = client.post(url(study, f"{created['id']}/undo/"), {"reason": "oops"}, format="json")
    assert response.status_code == 200
    assert response.json()["active"] is False
    assert response.json()["undo_reason"] == "oops"
    assert Exclusion.objects.get(pk=created["id"]).undone_at is not None


@pytest.mark.parametrize(
    ("body", "status", "field", "code"),
    [
        ({"target": "item", "subject": "j2"}, 400, "reason", "invalid"),
        ({"target": "item", "subject": "j2", "reason": "  "}, 400, "reason", "invalid"),
        ({"target": "team", "subject": "j2", "reason": "x"}, 400, "target", "invalid"),
        ({"target": "item", "subject": "j9", "reason": "x"}, 404, "subject", "not_found"),
        ({"target": "item", "subject": "j2", "reason": "x", "why": 1}, 400, "why", "invalid"),
        (
            {"target": "judgment", "subject": "12", "judgment_kind": "essay", "reason": "x"},
            400,
            "judgment_kind",
            "invalid",
        ),
    ],
)
def test_bad_exclusions_are_refused_and_change_nothing(study, member, body, status, field, code):
    before = snapshot(study)
    response = token_client(member).post(url(study), body, format="json")
    assert_error(response, status, field, code)
    assert snapshot(study) == before


def test_twice_is_a_conflict(study, member):
    client = token_client(member)
    body = {"target": "item", "subject": "j2", "reason": "duplicate"}
    first = client.post(url(study), body, format="json").json()
    before = snapshot(study)
    assert client.post(url(study), body, format="json").status_code == 409
    client.post(url(study, f"{first['id']}/undo/"), {}, format="json")
    again = snapshot(study)
    assert client.post(url(study, f"{first['id']}/undo/"), {}, format="json").status_code == 409
    assert snapshot(study) == again != before
    assert (
        client.post(url(study, "999999999999999999999/undo/"), {}, format="json").status_code == 404
    )
