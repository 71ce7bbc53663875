"""Every researcher endpoint tried by every role: anonymous 401, a researcher of another study 404
(nothing changed either way), the study's owner, a member and an admin succeed."""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.exclusions.models import Exclusion
from apps.reports.models import ExportJob
from apps.studies.models import Study
from tests.api.conftest import snapshot, token_client


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # {slug} and {job} are filled in
    body: dict[str, Any] | None
    ok: int

    def send(self, client: APIClient, study: Study, job: ExportJob) -> Any:
        exclusion = Exclusion.objects.filter(study=study).order_by("pk").first()
        url = "/api/v1/" + self.path.format(
            slug=study.slug, job=job.pk, exclusion=exclusion.pk if exclusion else 0
        )
        send = getattr(client, self.method)
        if self.body is None:
            return send(url)
        return send(url, self.body, format="json")


STUDY_CALLS = [
    Call("get", "studies/{slug}/", None, 200),
    Call("patch", "studies/{slug}/", {"session_minutes": 25, "quotas": {"technical": 9}}, 200),
    Call("post", "studies/{slug}/open/", None, 200),
    Call("post", "studies/{slug}/close/", None, 200),
    Call("get", "studies/{slug}/items/", None, 200),
    Call(
        "post",
        "studies/{slug}/items/",
        {"items": [{"id": "new", "text": "t", "source": "human"}]},
        201,
    ),
    Call("get", "studies/{slug}/progress/", None, 200),
    Call("get", "studies/{slug}/results/", None, 200),
    Call("post", "studies/{slug}/results/recompute/", None, 202),
    Call("post", "studies/{slug}/exports/", {"format": "json"}, 201),
    Call("get", "studies/{slug}/exports/{job}/", None, 200),
    Call("get", "studies/{slug}/exports/{job}/download/", None, 200),
    Call("get", "studies/{slug}/exclusions/", None, 200),
    Call(
        "post",
        "studies/{slug}/exclusions/",
        {"target": "item", "subject": "j0", "reason": "ambiguous wording"},
        201,
    ),
    Call("post", "studies/{slug}/exclusions/{exclusion}/undo/", {"reason": "mistake"}, 200),
]
IDS = [f"{call.method.upper()} {call.path}" for call in STUDY_CALLS]


@pytest.mark.parametrize("call", STUDY_CALLS, ids=IDS)
def test_anonymous_is_asked_to_authenticate_and_changes_nothing(call, done_job):
    study = done_job.study
    before = snapshot(study)
    response = call.send(APIClient(), study, done_job)
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == "Token"
    assert snapshot(study) == before


@pytest.mark.parametrize("call", STUDY_CALLS, ids=IDS)
def test_researcher_of_another_study_gets_not_found_and_changes_nothing(call, done_job, outsider):
    study = done_job.study
    before = snapshot(study)
    response = call.send(token_client(outsider), study, done_job)
    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "not_found"
    assert body["field"] == "study"
    assert snapshot(study) == before


@pytest.mark.parametrize("call", STUDY_CALLS, ids=IDS)
def test_a_bad_token_is_refused_and_changes_nothing(call, done_job):
    study = done_job.study
    before = snapshot(study)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    response = call.send(client, study, done_job)
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"
    assert snapshot(study) == before


@pytest.mark.parametrize("role", ["owner", "member", "admin"])
@pytest.mark.parametrize("call", STUDY_CALLS, ids=IDS)
def test_the_study_researchers_and_an_admin_succeed(call, role, done_job, request):
    user: User = request.getfixturevalue(role)
    response = call.send(token_client(user), done_job.study, done_job)
    assert response.status_code == call.ok, response.content[:500]


def test_a_session_login_works_and_writes_need_the_csrf_token(study, member):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.get(f"/api/v1/studies/{study.slug}/").status_code == 200
    before = snapshot(study)
    response = client.patch(f"/api/v1/studies/{study.slug}/", {"name": "x"}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["message"]
    assert snapshot(study) == before


def test_the_study_list_holds_only_the_users_studies(study, member, outsider, admin):
    def slugs(user: User | None) -> Any:
        response = token_client(user).get("/api/v1/studies/")
        return response.status_code, [row["slug"] for row in response.json().get("results", [])]

    assert slugs(None)[0] == 401
    assert slugs(member) == (200, ["jokes"])
    assert slugs(outsider) == (200, ["elsewhere"])
    status, every = slugs(admin)
    assert status == 200
    assert sorted(every) == ["elsewhere", "jokes"]


def test_anonymous_cannot_create_a_study(study):
    before = snapshot(study)
    response = APIClient().post(
        "/api/v1/studies/", {"slug": "mine", "rubric": "humor"}, format="json"
    )
    assert response.status_code == 401
    assert snapshot(study) == before


def test_an_export_of_another_study_is_not_found_through_this_one(done_job, outsider):
    """Job ids are global; a job is reachable only under its own study's slug."""
    elsewhere = Study.objects.get(slug="elsewhere")
    client = token_client(outsider)
    for suffix in ("", "download/"):
        response = client.get(f"/api/v1/studies/{elsewhere.slug}/exports/{done_job.pk}/{suffix}")
        assert response.status_code == 404
        assert response.json()["field"] == "job"


def test_manage_py_hands_a_researcher_a_token_that_the_api_accepts(study, member):
    out = StringIO()
    call_command("drf_create_token", "member", stdout=out)
    key = Token.objects.get(user=member).key
    assert key in out.getvalue()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/studies/jokes/").status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/studies"),
        ("get", "/api/v1/nothing-here/"),
        ("get", "/api/v1/studies/not%20a%20slug/"),
        ("get", "/api/v1/studies/a%0Ab/"),
        ("get", "/api/v1/studies/jokes/exports/-1/"),
        ("post", "/api/v1/studies/bad%20slug/items/"),
        ("patch", "/api/v1/studies/jokes/exports/x/"),
    ],
)
def test_a_path_that_names_no_endpoint_is_a_json_404(study, member, method, path):
    before = snapshot(study)
    response = getattr(token_client(member), method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "not_found"
    assert "no API endpoint" in response.json()["message"]
    assert snapshot(study) == before


def test_a_missing_trailing_slash_is_pointed_out(study, member):
    client = token_client(member)
    assert (
        "did you mean /api/v1/studies/jokes/ ?"
        in client.get("/api/v1/studies/jokes").json()["message"]
    )
    assert "did you mean" not in client.get("/api/v1/nothing").json()["message"]
