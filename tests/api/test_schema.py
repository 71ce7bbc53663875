"""The OpenAPI 3 schema covers the researcher and rater endpoints and validates; the docs page
loads only the project's own static files."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

RESEARCHER_OPERATIONS = {
    ("/api/v1/studies/", "get"),
    ("/api/v1/studies/", "post"),
    ("/api/v1/studies/{slug}/", "get"),
    ("/api/v1/studies/{slug}/", "patch"),
    ("/api/v1/studies/{slug}/open/", "post"),
    ("/api/v1/studies/{slug}/close/", "post"),
    ("/api/v1/studies/{slug}/items/", "get"),
    ("/api/v1/studies/{slug}/items/", "post"),
    ("/api/v1/studies/{slug}/judgments/", "post"),
    ("/api/v1/studies/{slug}/imports/{job_id}/", "get"),
    ("/api/v1/studies/{slug}/progress/", "get"),
    ("/api/v1/studies/{slug}/results/", "get"),
    ("/api/v1/studies/{slug}/results/recompute/", "post"),
    ("/api/v1/studies/{slug}/exports/", "post"),
    ("/api/v1/studies/{slug}/exports/{job_id}/", "get"),
    ("/api/v1/studies/{slug}/exports/{job_id}/download/", "get"),
    ("/api/v1/studies/{slug}/exclusions/", "get"),
    ("/api/v1/studies/{slug}/exclusions/", "post"),
    ("/api/v1/studies/{slug}/exclusions/{exclusion_id}/undo/", "post"),
    ("/api/v1/studies/{slug}/prolific/returns/", "post"),
    ("/api/v1/studies/{slug}/prolific/bonuses/", "get"),
    ("/api/v1/studies/{slug}/prompt-sets/", "get"),
    ("/api/v1/studies/{slug}/prompt-sets/", "post"),
    ("/api/v1/studies/{slug}/prompt-sets/{set_id}/", "get"),
    ("/api/v1/studies/{slug}/models/", "get"),
    ("/api/v1/studies/{slug}/models/", "post"),
    ("/api/v1/studies/{slug}/generation-runs/", "get"),
    ("/api/v1/studies/{slug}/generation-runs/", "post"),
    ("/api/v1/studies/{slug}/generation-runs/{run_id}/", "get"),
    ("/api/v1/studies/{slug}/generation-runs/{run_id}/cancel/", "post"),
    ("/api/v1/studies/{slug}/generation-runs/{run_id}/resume/", "post"),
    ("/api/v1/studies/{slug}/judge/", "get"),
    ("/api/v1/studies/{slug}/judge/", "put"),
    ("/api/v1/studies/{slug}/judge/", "delete"),
    ("/api/v1/rubrics/{slug}/", "get"),
}
RATER_OPERATIONS = {
    ("/api/v1/rater/{slug}/scorecards", "post"),
    ("/api/v1/rater/{slug}/scorecards/early", "post"),
    ("/api/v1/rater/{slug}/pairs", "post"),
    ("/api/v1/rater/{slug}/turing", "post"),
    ("/api/v1/rater/{slug}/explanations", "post"),
}
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def schema(db):  # type: ignore[no-untyped-def]
    response = APIClient().get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    return response.json()


def test_the_schema_is_valid_openapi_3(schema):
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)  # raises on any violation of the OpenAPI 3 specification


def test_the_schema_lists_every_researcher_and_rater_operation(schema):
    operations = {
        (path, method)
        for path, item in schema["paths"].items()
        for method in item
        if method in METHODS
    }
    assert operations == RESEARCHER_OPERATIONS | RATER_OPERATIONS


def test_researcher_operations_need_a_token_or_session_and_say_so(schema):
    assert set(schema["components"]["securitySchemes"]) == {"tokenAuth", "cookieAuth"}
    for path, method in RESEARCHER_OPERATIONS:
        operation = schema["paths"][path][method]
        assert {name for entry in operation["security"] for name in entry} == {
            "tokenAuth",
            "cookieAuth",
        }
        assert "401" in operation["responses"], (path, method)
        if "{slug}" in path:
            assert "404" in operation["responses"], (path, method)
        if "requestBody" in operation:
            assert "400" in operation["responses"], (path, method)
    for path, method in RATER_OPERATIONS:
        assert not schema["paths"][path][method].get("security"), path


def test_the_import_documents_both_bodies_and_the_line_errors(schema):
    operation = schema["paths"]["/api/v1/studies/{slug}/items/"]["post"]
    assert set(operation["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    bad = operation["responses"]["400"]["content"]["application/json"]["schema"]["$ref"]
    errors = schema["components"]["schemas"][bad.rsplit("/", 1)[1]]["properties"]["errors"]
    assert errors["anyOf"][0]["items"]["required"] == ["line", "field", "message"]


def test_the_export_formats_are_an_enum(schema):
    export_in = schema["components"]["schemas"]["ExportCreateIn"]["properties"]["format"]
    enum = schema["components"]["schemas"][export_in["$ref"].rsplit("/", 1)[1]]["enum"]
    assert set(enum) == {"raw", "json", "tables", "xlsx", "report-html", "report-pdf"}


def test_the_docs_page_loads_only_local_static_files(db):
    response = APIClient().get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "SwaggerUIBundle" in html
    assert "https://" not in html
    assert "http://" not in html
    assert "//cdn" not in html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(assets) >= 3
    for asset in assets:
        assert asset.startswith("/static/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not a static file"
    assert 'url: "/api/v1/schema/"' in html
