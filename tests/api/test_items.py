"""Bulk item import (JSON body or a file upload), all or nothing, and the paginated item list."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from apps.studies.models import Item
from tests.api.conftest import assert_error, snapshot, token_client

URL = "/api/v1/studies/jokes/items/"


@pytest.fixture
def client(member) -> APIClient:  # type: ignore[no-untyped-def]
    return token_client(member)


def line(**fields: object) -> dict[str, object]:
    return {"id": "n1", "text": "A new joke", "source": "model-a", **fields}


def test_a_json_body_imports_items(client, study):
    items = [
        line(id="n1", level="single", humor_type="pun", topic="cats", lang="en"),
        line(
            id="n2",
            level="multi_turn",
            context=[{"role": "user", "text": "Knock knock"}],
            generation={"temperature": 1.1},
        ),
    ]
    response = client.post(URL, {"items": items}, format="json")
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 2, "unchanged": 0, "total": 2, "held": 0}
    stored = Item.objects.get(study=study, external_id="n2")
    assert stored.context == [{"role": "user", "text": "Knock knock"}]
    assert stored.generation == {"temperature": 1.1}


def test_importing_the_same_items_again_changes_nothing(client, study):
    client.post(URL, {"items": [line()]}, format="json")
    before = snapshot(study)
    response = client.post(URL, {"items": [line()]}, format="json")
    assert response.status_code == 200
    assert response.json() == {"created": 0, "unchanged": 1, "total": 1, "held": 0}
    assert snapshot(study) == before


@pytest.mark.parametrize(
    ("filename", "content"),
    [
        ("items.jsonl", b'{"id": "f1", "text": "From a file", "source": "human"}\n'),
        ("items.csv", b'id,text,source,generation\nf1,From a file,human,"{""top_p"": 0.9}"\n'),
    ],
)
def test_a_file_upload_imports_items(client, study, filename, content):
    response = client.post(URL, {"file": SimpleUploadedFile(filename, content)}, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["created"] == 1
    assert Item.objects.get(study=study, external_id="f1").text == "From a file"


def test_bad_lines_reject_the_whole_import_and_name_each_line_and_field(client, study):
    before = snapshot(study)
    items = [
        line(id="ok"),
        {"id": "no-text", "source": "human"},
        line(id="bad-level", level="haiku"),
        "not an object",
        line(id="ok"),
        line(id="chatty", colour="red"),
    ]
    body = assert_error(
        client.post(URL, {"items": items}, format="json"), 400, None, "import_rejected"
    )
    assert body["message"] == "5 bad lines; nothing was imported"
    errors = [(e["line"], e["field"]) for e in body["errors"]]
    assert errors == [(2, "text"), (3, "level"), (4, "(item)"), (5, "id"), (6, "colour")]
    assert all(e["message"] for e in body["errors"])
    assert snapshot(study) == before


def test_a_changed_item_is_an_error_on_its_line(client, study):
    before = snapshot(study)
    body = assert_error(
        client.post(
            URL, {"items": [line(id="j0", text="Different text", source="model-a")]}, format="json"
        ),
        400,
        None,
        "import_rejected",
    )
    assert body["errors"][0]["line"] == 1
    assert body["errors"][0]["field"] in {"text", "humor_type", "topic"}
    assert "already in the study" in body["errors"][0]["message"]
    assert snapshot(study) == before


@pytest.mark.parametrize("escaped", ["nul\\u0000byte", "lone \\ud800 surrogate"])
def test_text_a_database_cannot_store_is_a_line_error(client, study, escaped):
    """PostgreSQL refuses NUL and unpaired surrogates in text: a line error, not a server error."""
    before = snapshot(study)
    raw = '{"items": [{"id": "n1", "text": "TEXT", "source": "human"}]}'.replace("TEXT", escaped)
    body = assert_error(
        client.post(URL, raw, content_type="application/json"), 400, None, "import_rejected"
    )
    assert [(e["line"], e["field"]) for e in body["errors"]] == [(1, "text")]
    assert snapshot(study) == before


def test_nul_inside_a_nested_value_is_a_line_error(client, study):
    before = snapshot(study)
    body = assert_error(
        client.post(URL, {"items": [line(generation={"note": "a\x00b"})]}, format="json"),
        400,
        None,
        "import_rejected",
    )
    assert body["errors"][0]["field"] == "generation"
    assert snapshot(study) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "items"),
        ({"items": []}, "items"),
        ({"items": {"id": "x"}}, "items"),
        ({"items": "id,text,source"}, "items"),
        ({"items": [line()], "replace": True}, "replace"),
    ],
)
def test_a_malformed_json_import_is_refused(client, study, body, field):
    before = snapshot(study)
    assert_error(client.post(URL, body, format="json"), 400, field)
    assert snapshot(study) == before


@pytest.mark.parametrize(
    ("filename", "content", "field"),
    [
        ("items.txt", b'{"id": "x", "text": "t", "source": "human"}\n', "(file)"),
        ("items.jsonl", b'{"id": "x", "text": "t", "source": "human"\n', "(line)"),
        ("items.jsonl", b'{"id": "x", "text": "\\u0000", "source": "human"}\n', "text"),
        ("items.jsonl", b"\xff\xfe not utf-8", "(file)"),
        ("items.csv", b"id,text\nx\n", "(line)"),
        ("items.jsonl", b"\n\n", "(file)"),
    ],
)
def test_a_bad_file_is_rejected_by_line(client, study, filename, content, field):
    before = snapshot(study)
    response = client.post(URL, {"file": SimpleUploadedFile(filename, content)}, format="multipart")
    body = assert_error(response, 400, None, "import_rejected")
    assert body["errors"][0]["field"] == field
    assert snapshot(study) == before


def test_an_upload_without_a_file_is_refused(client, study):
    before = snapshot(study)
    assert_error(client.post(URL, {"items": "x"}, format="multipart"), 400, "file")
    assert_error(
        client.post(URL, {"file": SimpleUploadedFile("items.jsonl", b"")}, format="multipart"),
        400,
        "file",
    )
    assert snapshot(study) == before


def test_a_body_over_the_upload_limit_is_refused(client, study, settings):
    # A JSON body is held to UPLOAD_MAX_BYTES, a file to IMPORT_UPLOAD_MAX_BYTES.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    settings.IMPORT_UPLOAD_MAX_BYTES = 2048
    before = snapshot(study)
    big = [line(id=f"n{n}", text="x" * 500) for n in range(200)]
    assert_error(client.post(URL, {"items": big}, format="json"), 413, "items", code="too_large")
    content = b"".join(
        json.dumps(line(id=f"n{n}", text="x" * 200)).encode() + b"\n" for n in range(20)
    )
    assert len(content) > 2048
    assert_error(
        client.post(URL, {"file": SimpleUploadedFile("items.jsonl", content)}, format="multipart"),
        413,
        "file",
        code="too_large",
    )
    assert snapshot(study) == before


def test_a_wrong_content_type_is_unsupported(client, study):
    before = snapshot(study)
    assert_error(
        client.post(URL, "id,text,source\n", content_type="text/csv"),
        415,
        None,
        "unsupported_media_type",
    )
    assert snapshot(study) == before


def test_the_item_list_is_paginated_by_id(client, study):
    response = client.get(URL, {"limit": 2})
    assert response.status_code == 200
    page = response.json()
    assert page["count"] == 3
    assert [row["id"] for row in page["results"]] == ["j0", "j1"]
    assert set(page["results"][0]) == {
        "id",
        "text",
        "source",
        "level",
        "humor_type",
        "topic",
        "lang",
        "meta",
    }
    assert page["results"][0]["lang"] == "en"
    assert page["results"][0]["meta"] == {}
    assert page["previous"] is None
    following = client.get(page["next"]).json()
    assert [row["id"] for row in following["results"]] == ["j2"]
    assert following["next"] is None


@pytest.mark.parametrize("query", [{"limit": "many"}, {"offset": -5}, {"limit": 10**9}])
def test_odd_page_parameters_fall_back_to_defaults(client, study, query):
    response = client.get(URL, query)
    assert response.status_code == 200
    assert response.json()["count"] == 3


def test_a_crowd_sized_item_file_uploads_within_the_request_limits(client, study):
    # 15,000 short texts with metadata, the size of the public crowd sets (about 1.6 MB).
    content = "\n".join(
        json.dumps(
            {
                "id": f"t{i:05d}",
                "text": f"short humorous text {i}",
                "source": "human",
                "meta": {"split": "train" if i % 5 else "dev"},
            }
        )
        for i in range(15_000)
    ).encode()
    response = client.post(
        URL, {"file": SimpleUploadedFile("crowd.jsonl", content)}, format="multipart"
    )
    assert response.status_code == 201, response.content[:300]
    assert Item.objects.filter(study=study, external_id__startswith="t").count() == 15_000
    assert Item.objects.get(study=study, external_id="t00005").meta == {"split": "dev"}
