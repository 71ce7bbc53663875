"""Progress, results, recomputation and export jobs through the API."""

from __future__ import annotations

import json

import pytest
from django.test import TestCase
from rest_framework.test import APIClient

from apps.analysis.models import AggregationState
from apps.reports.models import ExportJob
from tests.api.conftest import assert_error, snapshot, token_client
from tests.factories import RaterFactory, ScoreAnswerFactory

BASE = "/api/v1/studies/jokes"


@pytest.fixture
def client(member) -> APIClient:  # type: ignore[no-untyped-def]
    return token_client(member)


# --- progress ------------------------------------------------------------------------------------


def test_progress_reports_the_dashboard_numbers_without_the_heat_map(client, study):
    rater = RaterFactory(study=study)
    ScoreAnswerFactory(
        response__session__rater=rater, response__item=study.items.get(external_id="j0")
    )
    response = client.get(f"{BASE}/progress/")
    assert response.status_code == 200
    body = response.json()
    assert body["items"] == 3
    assert body["scorecards"]["done"] == 1
    assert body["scorecards"]["target"] == study.target_scorecards_per_item
    assert body["groups"][0]["code"] == "technical"
    assert body["coverage"] == {
        "groups": [g["code"] for g in body["groups"]],
        "per_group_target": 4,
    }
    assert "rows" not in body["coverage"]
    # JSON-safe throughout: it round-trips.
    assert json.loads(json.dumps(body)) == body


# --- results -------------------------------------------------------------------------------------


def test_results_before_aggregation_say_how_to_compute_them(client, study):
    body = assert_error(client.get(f"{BASE}/results/"), 404, "results", "not_found")
    assert "no computed results yet" in body["message"]
    assert f"{BASE}/results/recompute/" in body["message"]


def test_results_return_the_stored_document(client, computed):
    response = client.get(f"{BASE}/results/")
    assert response.status_code == 200
    document = response.json()
    assert document["study"] == "jokes"
    assert document["seed"] == 1
    assert document["rounds"] == 10
    for key in ("bradley_terry", "agreement", "items", "groups", "warnings", "input_hash"):
        assert key in document
    assert [row["item"] for row in document["items"]] == ["j0", "j1", "j2"]


def test_recompute_queues_an_aggregation_run(client, study):
    with TestCase.captureOnCommitCallbacks() as callbacks:
        response = client.post(f"{BASE}/results/recompute/")
    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    state = AggregationState.objects.get(study=study)
    assert state.scheduled
    assert state.requested_at is not None
    assert len(callbacks) == 1


def test_recompute_while_a_run_is_queued_queues_no_second_one(client, study):
    client.post(f"{BASE}/results/recompute/")
    with TestCase.captureOnCommitCallbacks() as callbacks:
        assert client.post(f"{BASE}/results/recompute/").status_code == 202
    assert callbacks == []


# --- exports -------------------------------------------------------------------------------------


def test_an_export_is_queued_then_polled_then_downloaded(client, computed, media):
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(f"{BASE}/exports/", {"format": "json"}, format="json")
    assert response.status_code == 201, response.content
    job = response.json()
    assert job["format"] == "json"
    assert response["Location"].endswith(f"{BASE}/exports/{job['id']}/")
    # CELERY_TASK_ALWAYS_EAGER: the job ran when the request's transaction committed.
    status = client.get(f"{BASE}/exports/{job['id']}/").json()
    assert status["status"] == "done"
    assert status["progress"] == 100
    assert status["size"] > 0
    assert status["download_url"].endswith(f"{BASE}/exports/{job['id']}/download/")
    download = client.get(status["download_url"])
    assert download.status_code == 200
    assert download["Content-Type"] == "application/json"
    assert 'filename="jokes-results.json"' in download["Content-Disposition"]
    document = json.loads(b"".join(download.streaming_content))
    assert document["study"] == "jokes"


def test_a_raw_download_is_csv_whatever_the_client_accepts(client, done_job):
    url = f"{BASE}/exports/{done_job.pk}/download/"
    for accept in ("text/csv", "application/pdf", "*/*"):
        response = client.get(url, HTTP_ACCEPT=accept)
        assert response.status_code == 200
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        assert b"".join(response.streaming_content).startswith(b"kind,rater")


def test_a_queued_export_cannot_be_downloaded_yet(client, computed):
    job = client.post(f"{BASE}/exports/", {"format": "raw"}, format="json").json()
    status = client.get(f"{BASE}/exports/{job['id']}/").json()
    assert (status["status"], status["download_url"]) == ("queued", None)
    body = assert_error(
        client.get(f"{BASE}/exports/{job['id']}/download/", HTTP_ACCEPT="text/csv"),
        409,
        "job",
        "conflict",
    )
    assert "not ready" in body["message"]


def test_a_missing_export_is_not_found(client, study):
    assert_error(client.get(f"{BASE}/exports/999999/"), 404, "job", "not_found")
    assert_error(client.get(f"{BASE}/exports/{2**70}/download/"), 404, "job", "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"format": "docx"}, "format"),
        ({"format": ""}, "format"),
        ({"format": ["raw"]}, "format"),
        ({}, "format"),
        ({"format": "raw", "email": "me@example.org"}, "email"),
    ],
)
def test_a_bad_export_request_is_refused_and_queues_nothing(client, computed, body, field):
    before = snapshot(computed)
    assert_error(client.post(f"{BASE}/exports/", body, format="json"), 400, field)
    assert snapshot(computed) == before


def test_a_results_export_before_aggregation_is_a_conflict(client, study):
    before = snapshot(study)
    body = assert_error(
        client.post(f"{BASE}/exports/", {"format": "xlsx"}, format="json"),
        409,
        "format",
        "conflict",
    )
    assert "no computed results" in body["message"]
    assert snapshot(study) == before
    # The raw judgments need no results.
    assert client.post(f"{BASE}/exports/", {"format": "raw"}, format="json").status_code == 201
    assert ExportJob.objects.filter(study=study).count() == 1
