"""The API's judgments import and import-job status: every role, inline and background, the
import's warnings in the response, and nothing stored on an error or a denial."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.imports.models import ImportJob
from apps.judgments.models import ScoreResponse
from apps.studies.models import Item
from tests.api.conftest import assert_error, token_client
from tests.imports.data import item_lines, jsonl, person_scores, positional_scores

pytestmark = pytest.mark.django_db

URL = "/api/v1/studies/crowd/judgments/"


def file_body(content: bytes, name: str = "g.jsonl") -> dict:
    return {"file": SimpleUploadedFile(name, content)}


def test_a_judgments_file_is_imported_with_its_warnings(study, owner):
    response = token_client(owner).post(
        URL, file_body(jsonl(positional_scores(30))), format="multipart"
    )
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    assert body["created"] == {"score": 90, "pair": 0, "turing": 0}
    assert body["unchanged"] == 0
    assert body["raters_created"] == 3
    [warning] = body["warnings"]
    assert warning["code"] == "positional_rater_ids"
    assert warning["params"]["n_items"] == 30
    assert "several times too wide" in warning["message"]
    assert ScoreResponse.objects.filter(study=study).count() == 90
    # The same file again stores nothing new.
    again = token_client(owner).post(
        URL, file_body(jsonl(positional_scores(30))), format="multipart"
    )
    assert again.status_code == 200
    assert again.json()["unchanged"] == 90


def test_a_json_body_of_judgments_is_imported(study, member):
    response = token_client(member).post(URL, {"judgments": person_scores(30)}, format="json")
    assert response.status_code == 201, response.content[:300]
    assert response.json()["warnings"] == []
    assert ScoreResponse.objects.filter(study=study).count() == 60


def test_bad_lines_reject_the_whole_import_naming_line_and_field(study, owner):
    lines = person_scores(30)
    lines[0]["kind"] = "vote"
    lines[9]["item"] = "missing"
    response = token_client(owner).post(URL, file_body(jsonl(lines)), format="multipart")
    body = assert_error(response, 400, None, "import_rejected")
    assert [(e["line"], e["field"]) for e in body["errors"]] == [(1, "kind"), (10, "item")]
    assert not ScoreResponse.objects.filter(study=study).exists()
    response = token_client(owner).post(URL, {"judgments": [1, *lines[1:3]]}, format="json")
    body = assert_error(response, 400, None, "import_rejected")
    assert body["errors"][0] == {
        "line": 1,
        "field": "(judgment)",
        "message": "must be a JSON object",
    }
    assert not ScoreResponse.objects.filter(study=study).exists()


def test_a_csv_file_of_judgments_keeps_its_meta_cell_and_extra_columns(study, owner):
    content = (
        b"kind,rater,background,item,funniness,meta,worker\n"
        b'score,p1,technical,t001,4,"{""row"": 1}",w-1\n'
        b'score,p2,technical,t002,3,"{""row"": ",w-2\n'
    )
    response = token_client(owner).post(URL, file_body(content, "g.csv"), format="multipart")
    body = assert_error(response, 400, None, "import_rejected")
    assert body["errors"] == [{"line": 3, "field": "meta", "message": "is not valid JSON"}]
    assert not ScoreResponse.objects.filter(study=study).exists()
    fixed = content.replace(b'"{""row"": ",', b'"{""row"": 2}",')
    response = token_client(owner).post(URL, file_body(fixed, "g.csv"), format="multipart")
    assert response.status_code == 201, response.content[:300]
    stored = ScoreResponse.objects.get(study=study, item__external_id="t002")
    assert stored.meta == {"row": 2, "worker": "w-2"}


def test_a_large_file_becomes_a_job_whose_status_shows_the_outcome(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    client = token_client(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, file_body(jsonl(positional_scores(30))), format="multipart")
    assert response.status_code == 202, response.content[:300]
    accepted = response.json()
    job = ImportJob.objects.get()
    assert accepted["id"] == job.pk
    assert accepted["kind"] == "judgments"
    assert response["Location"].endswith(f"/api/v1/studies/crowd/imports/{job.pk}/")
    status = client.get(accepted["status_url"])
    assert status.status_code == 200
    body = status.json()
    assert body["status"] == "done"
    assert (body["lines_read"], body["lines_total"], body["percent"]) == (90, 90, 100)
    assert body["summary"]["created"]["score"] == 90
    assert [w["code"] for w in body["warnings"]] == ["positional_rater_ids"]
    assert body["errors"] == []
    assert body["error"] == ""
    assert ScoreResponse.objects.filter(study=study).count() == 90


def test_a_queued_job_reports_its_state(study, owner, settings, monkeypatch):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    monkeypatch.setattr("apps.imports.services._enqueue", lambda job_id: None)
    response = token_client(owner).post(
        URL, file_body(jsonl(person_scores(30))), format="multipart"
    )
    assert response.status_code == 202
    body = response.json()
    assert (body["status"], body["stage"], body["lines_read"], body["lines_total"]) == (
        "queued",
        "waiting",
        0,
        60,
    )
    assert body["percent"] == 0
    assert not ScoreResponse.objects.filter(study=study).exists()


def test_a_failed_job_lists_its_bad_lines(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    lines = person_scores(30)
    lines[20]["funniness"] = "very"
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(owner).post(URL, file_body(jsonl(lines)), format="multipart")
    body = token_client(owner).get(response.json()["status_url"]).json()
    assert body["status"] == "failed"
    assert body["error"] == "1 bad line; nothing was imported"
    assert [(e["line"], e["field"]) for e in body["errors"]] == [(21, "funniness")]
    assert body["error_count"] == 1
    assert not ScoreResponse.objects.filter(study=study).exists()


def test_a_large_items_file_becomes_a_job(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    lines = [dict(line, id=f"n{i}") for i, line in enumerate(item_lines(20))]
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(owner).post(
            "/api/v1/studies/crowd/items/", file_body(jsonl(lines)), format="multipart"
        )
    assert response.status_code == 202, response.content[:300]
    body = token_client(owner).get(response.json()["status_url"]).json()
    assert body["summary"] == {"created": 20, "unchanged": 0, "held": 0}
    assert Item.objects.get(study=study, external_id="n10").meta == {"split": "dev", "row": 10}


def test_a_file_larger_than_the_request_limit_goes_through_as_a_job(
    study, owner, settings, django_capture_on_commit_callbacks
):
    """Above UPLOAD_MAX_BYTES (and Django's in-memory size: streamed to a temporary file) a file
    is still taken, up to IMPORT_UPLOAD_MAX_BYTES."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 2048
    settings.IMPORT_INLINE_MAX_BYTES = 2048
    content = jsonl(person_scores(30, per_item=10))
    assert len(content) > 10 * 2048
    with django_capture_on_commit_callbacks(execute=True):
        response = token_client(owner).post(URL, file_body(content), format="multipart")
    assert response.status_code == 202, response.content[:300]
    assert ImportJob.objects.get().status == ImportJob.Status.DONE
    assert ScoreResponse.objects.filter(study=study).count() == 300


def test_a_file_over_the_import_limit_is_refused(study, owner, settings):
    settings.IMPORT_UPLOAD_MAX_BYTES = 2048
    content = jsonl(person_scores(30))
    assert len(content) > 2048
    response = token_client(owner).post(URL, file_body(content), format="multipart")
    assert_error(response, 413, "file", code="too_large")
    assert not ImportJob.objects.exists()
    assert not ScoreResponse.objects.filter(study=study).exists()


@pytest.mark.parametrize("who", ["anonymous", "outsider"])
def test_only_the_studys_researchers_may_import_or_see_a_job(
    study, owner, outsider, who, settings, monkeypatch
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    monkeypatch.setattr("apps.imports.services._enqueue", lambda job_id: None)
    token_client(owner).post(URL, file_body(jsonl(person_scores(30))), format="multipart")
    job = ImportJob.objects.get()
    user: User | None = outsider if who == "outsider" else None
    client = token_client(user)
    expected = 404 if user else 401
    response = client.post(URL, file_body(jsonl(person_scores(30))), format="multipart")
    assert response.status_code == expected
    assert client.get(f"/api/v1/studies/crowd/imports/{job.pk}/").status_code == expected
    if user:
        # Not through a study of their own either.
        mine = client.get(f"/api/v1/studies/elsewhere/imports/{job.pk}/")
        assert mine.status_code == 404
        assert json.loads(mine.content)["code"] == "not_found"
    assert ImportJob.objects.count() == 1
    assert not ScoreResponse.objects.filter(study=study).exists()
