"""The exports page, job creation, status and download: every role, and bad input refused."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from apps.analysis.services import study_aggregate
from apps.reports import services
from apps.reports.models import ExportJob
from apps.studies.services import study_create, study_member_add

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "non_member", "member", "admin")
ALLOWED = {"member", "admin"}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def study(demo_study):
    study_aggregate(study=demo_study, rounds=50)
    return demo_study


@pytest.fixture
def other_study(db):
    return study_create(slug="other", rubric_slug="humor")


@pytest.fixture
def login(client, django_user_model, study, other_study):
    def as_role(role: str):
        if role == "anonymous":
            return client
        if role == "admin":
            user = django_user_model.objects.create_superuser("boss", "boss@example.org", "pw")
        else:
            user = django_user_model.objects.create_user(role, password="pw")
            # A non-member is still a researcher: of another study.
            study_member_add(study=study if role == "member" else other_study, user=user)
        client.force_login(user)
        return client

    return as_role


def make_job(study, fmt: str = "json", *, run: bool = True, capture=None) -> ExportJob:
    if run:
        with capture(execute=True):
            job = services.export_job_create(study=study, user=None, fmt=fmt)
    else:
        job = services.export_job_create(study=study, user=None, fmt=fmt)
    job.refresh_from_db()
    return job


def assert_denied(response, role: str) -> None:
    if role == "anonymous":
        assert response.status_code == 302
        assert response["Location"].startswith(django_settings.LOGIN_URL)
    else:
        assert response.status_code == 404


@pytest.mark.parametrize("role", ROLES)
def test_exports_page_by_role(login, study, role):
    response = login(role).get(reverse("reports:exports", args=[study.slug]))
    if role in ALLOWED:
        assert response.status_code == 200
        assert b"Start export" in response.content
    else:
        assert_denied(response, role)


@pytest.mark.parametrize("role", ROLES)
def test_creating_an_export_job_by_role(login, study, role, django_capture_on_commit_callbacks):
    client = login(role)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("reports:exports", args=[study.slug]), {"format": "raw"})
    if role not in ALLOWED:
        assert_denied(response, role)
        assert ExportJob.objects.count() == 0
        return
    assert response.status_code == 302
    assert response["Location"] == reverse("reports:exports", args=[study.slug])
    job = ExportJob.objects.get()
    # Eager Celery in tests: the job ran when the request's transaction committed.
    assert (job.study, job.format, job.status, job.progress) == (study, "raw", "done", 100)
    assert job.requested_by is not None
    page = client.get(response["Location"])
    assert reverse("reports:download", args=[study.slug, job.pk]).encode() in page.content
    assert reverse("reports:status", args=[study.slug, job.pk]).encode() in page.content


@pytest.mark.parametrize("role", ROLES)
def test_job_status_by_role(login, study, role, django_capture_on_commit_callbacks):
    job = make_job(study, capture=django_capture_on_commit_callbacks)
    response = login(role).get(reverse("reports:status", args=[study.slug, job.pk]))
    if role not in ALLOWED:
        assert_denied(response, role)
        return
    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["status"], body["progress"], body["format"]) == (
        job.pk,
        "done",
        100,
        "json",
    )
    assert body["download_url"] == reverse("reports:download", args=[study.slug, job.pk])
    assert body["size"] == job.size > 0


@pytest.mark.parametrize("role", ROLES)
def test_job_download_by_role(login, study, role, django_capture_on_commit_callbacks):
    job = make_job(study, capture=django_capture_on_commit_callbacks)
    response = login(role).get(reverse("reports:download", args=[study.slug, job.pk]))
    if role not in ALLOWED:
        assert_denied(response, role)
        return
    assert response.status_code == 200
    assert 'attachment; filename="demo-copy-results.json"' in response["Content-Disposition"]
    document = json.loads(b"".join(response.streaming_content))
    assert document["input_hash"] == study.result.input_hash


@pytest.mark.parametrize("view", ["reports:status", "reports:download"])
def test_a_job_of_another_study_is_not_found(
    login, study, other_study, view, django_capture_on_commit_callbacks
):
    foreign = make_job(other_study, "raw", capture=django_capture_on_commit_callbacks)
    assert foreign.status == "done"
    for role in ("member", "admin"):
        response = login(role).get(reverse(view, args=[study.slug, foreign.pk]))
        assert response.status_code == 404


def test_a_job_that_does_not_exist_is_not_found(login, study):
    response = login("member").get(reverse("reports:status", args=[study.slug, 99999]))
    assert response.status_code == 404


def test_download_before_the_job_is_done_is_a_conflict(login, study):
    job = make_job(study, "xlsx", run=False)  # queued: the commit never happened
    client = login("member")
    status = client.get(reverse("reports:status", args=[study.slug, job.pk])).json()
    assert (status["status"], status["progress"], status["download_url"]) == ("queued", 0, None)
    response = client.get(reverse("reports:download", args=[study.slug, job.pk]))
    assert response.status_code == 409
    assert b"not ready" in response.content


@pytest.mark.parametrize("fmt", ["pdf", "", "../../etc/passwd", "raw; rm -rf /", "XLSX"])
def test_an_unknown_format_is_refused_with_400_and_creates_nothing(
    login, study, fmt, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = login("member").post(
            reverse("reports:exports", args=[study.slug]), {"format": fmt}
        )
    assert response.status_code == 400
    message = b"Choose a format" if fmt == "" else b"Unknown export format"
    assert message in response.content
    assert ExportJob.objects.count() == 0


def test_a_results_format_before_aggregation_is_refused_and_creates_nothing(
    client, django_user_model, other_study, django_capture_on_commit_callbacks
):
    user = django_user_model.objects.create_user("r", password="pw")
    study_member_add(study=other_study, user=user)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("reports:exports", args=[other_study.slug]), {"format": "report-pdf"}
        )
    assert response.status_code == 409
    assert b"no computed results yet" in response.content
    assert ExportJob.objects.count() == 0


def test_other_methods_are_not_allowed(login, study):
    response = login("member").put(reverse("reports:exports", args=[study.slug]))
    assert response.status_code == 405
    assert ExportJob.objects.count() == 0


@pytest.mark.parametrize("role", ROLES)
def test_direct_downloads_by_role(login, study, role):
    client = login(role)
    urls = [
        reverse("reports:direct", args=[study.slug, "json"]),
        reverse("reports:direct", args=[study.slug, "csv"]) + "?table=bradley_terry",
        reverse("reports:direct", args=[study.slug, "report-html"]),
    ]
    for url in urls:
        response = client.get(url)
        if role in ALLOWED:
            assert response.status_code == 200, url
        else:
            assert_denied(response, role)


def test_direct_downloads_carry_the_stored_numbers(login, study):
    client = login("member")
    payload = study.result.payload
    document = client.get(reverse("reports:direct", args=[study.slug, "json"])).json()
    assert document["bradley_terry"] == payload["bradley_terry"]
    assert document["seed"] == study.result.seed
    response = client.get(
        reverse("reports:direct", args=[study.slug, "csv"]) + "?table=bradley_terry"
    )
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8"))))
    assert [float(row["score"]) if row["score"] else None for row in rows] == [
        row["score"] for row in payload["bradley_terry"]
    ]
    report = client.get(reverse("reports:direct", args=[study.slug, "report-html"]))
    assert b"size: A4" in report.content
    assert study.result.input_hash.encode() in report.content


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("xlsx", b"unknown direct export"),
        ("csv?table=secrets", b"unknown table"),
        ("csv", b"unknown table"),
    ],
)
def test_direct_download_refuses_bad_input_with_400(login, study, path, message):
    fmt, _, query = path.partition("?")
    url = reverse("reports:direct", args=[study.slug, fmt]) + (f"?{query}" if query else "")
    response = login("member").get(url)
    assert response.status_code == 400
    assert message in response.content


def test_the_exports_tab_links_here(login, study):
    response = login("member").get(reverse("reports:exports", args=[study.slug]))
    assert (
        f'href="{reverse("reports:exports", args=[study.slug])}" aria-current="page"'.encode()
        in (response.content)
    )
