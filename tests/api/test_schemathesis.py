"""Property-based check of the researcher API against its own schema (schemathesis): generated
requests, valid and invalid, sent with a researcher's token, never cause a server error, and every
response matches what the schema promises (status code, content type, body)."""

from __future__ import annotations

import itertools

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.conftest import token_client

CHECKS = [
    schemathesis.checks.not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES = 10  # per operation and generation mode: bounded, so the test stays in CI's budget


@pytest.fixture
def wsgi_app():  # type: ignore[no-untyped-def]
    """Django's WSGI app, minus the closing of the database connection after each request (as
    Django's test client does): the requests run inside this test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_generated_requests_never_fail_the_server_and_match_the_schema(
    mode, wsgi_app, done_job, member
):
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", wsgi_app)
    schema = schema.include(path_regex=r"^/api/v1/studies")
    token = token_client(member)._credentials["HTTP_AUTHORIZATION"]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 34
    # Every other case aims at the member's study, so writes get past the 404.
    counter = itertools.count()

    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            if next(counter) % 2 == 0 and "slug" in (case.path_parameters or {}):
                case.path_parameters["slug"] = done_job.study.slug
            case.call_and_validate(headers={"Authorization": token}, checks=CHECKS)

        check()
