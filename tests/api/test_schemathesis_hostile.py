"""Schema fuzzing with hostile JSON: every API operation that takes a JSON body (researcher and
rater) gets schema-generated bodies turned hostile (nested 50,000 levels deep, a field nested 100
levels deep, NaN, Infinity, 1e999, a 5,000-digit integer) and answers each with a documented 4xx,
never a server error."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.conftest import token_client
from tests.api.test_schemathesis import CHECKS, EXAMPLES
from tests.api.test_schemathesis import wsgi_app as wsgi_app  # the fixture, shared
from tests.api.test_schemathesis_rater import rater_cookies as rater_cookies  # shared

pytestmark = pytest.mark.django_db

MARK = "__hostile_value__"
NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "9" * 5000, "-" + "9" * 5000]
VARIANTS = [("deep", ""), ("nested-field", ""), *(("number", n) for n in NUMBERS)]


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict) and value:
        return [p for key, child in value.items() for p in _leaves(child, (*path, key))]
    if isinstance(value, list) and value:
        return [p for n, child in enumerate(value) for p in _leaves(child, (*path, n))]
    return [path]


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


def hostile_body(body: Any, variant: tuple[str, str], pick: int) -> bytes:
    kind, number = variant
    if kind == "deep":
        return b"[" * 50_000
    body = body if isinstance(body, dict | list) and body else {"value": body}
    leaves = _leaves(body)
    path = leaves[pick % len(leaves)]
    if kind == "nested-field":
        return (
            json.dumps(_replace(body, path, MARK))
            .replace(json.dumps(MARK), "[" * 100 + "1" + "]" * 100)
            .encode()
        )
    return json.dumps(_replace(body, path, MARK)).replace(json.dumps(MARK), number).encode()


def _fuzz(schema: Any, call: Any, *, aim: Any) -> int:
    operations = [
        result.ok()
        for result in schema.get_all_operations()
        if any(alternative.media_type == "application/json" for alternative in result.ok().body)
    ]
    sent = itertools.count()
    for operation in operations:

        @given(
            case=operation.as_strategy(media_type="application/json"),
            variant=st.sampled_from(VARIANTS),
            pick=st.integers(min_value=0, max_value=50),
        )
        @settings(
            max_examples=2 * EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case, variant: tuple[str, str], pick: int) -> None:
            aim(case)
            case.body = hostile_body(case.body, variant, pick)
            response = call(case)
            next(sent)
            assert 400 <= response.status_code < 500, (variant, response.status_code)

        check()
    return next(sent)


def test_hostile_json_to_the_researcher_api_is_always_a_4xx(wsgi_app, done_job, member):
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", wsgi_app)
    schema = schema.include(path_regex=r"^/api/v1/studies")
    token = token_client(member)._credentials["HTTP_AUTHORIZATION"]

    def aim(case: schemathesis.Case) -> None:
        if "slug" in (case.path_parameters or {}):
            case.path_parameters["slug"] = done_job.study.slug

    def call(case: schemathesis.Case) -> Any:
        return case.call_and_validate(headers={"Authorization": token}, checks=CHECKS)

    assert _fuzz(schema, call, aim=aim) > 0


def test_hostile_json_to_the_rater_api_is_always_a_4xx(wsgi_app, rater_cookies):
    study, headers, cookies = rater_cookies
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", wsgi_app)
    schema = schema.include(path_regex=r"^/api/v1/rater/")

    def aim(case: schemathesis.Case) -> None:
        if "slug" in (case.path_parameters or {}):
            case.path_parameters["slug"] = study.slug

    def call(case: schemathesis.Case) -> Any:
        return case.call_and_validate(headers=headers, cookies=cookies, checks=CHECKS)

    assert _fuzz(schema, call, aim=aim) > 0
