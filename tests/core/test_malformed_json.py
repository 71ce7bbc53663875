"""Malformed JSON anywhere is a 4xx naming the problem, never a 500, and stores nothing: deep
nesting, NaN/Infinity, numbers out of range and oversized bodies, on the rater API, the
researcher API and JSONL/CSV uploads."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from apps.core import jsonsafe
from apps.core.errors import ImportRejected
from apps.judgments.models import ScoreResponse
from apps.studies.models import Item, Study
from apps.studies.services import study_items_import
from tests.api.conftest import token_client
from tests.factories import ItemFactory, StudyFactory
from tests.faults import FORM

pytestmark = pytest.mark.django_db
DEEP = "[" * 50_000
HUGE = "9" * 5000


def test_the_parser_names_where_a_non_finite_or_huge_number_is():
    for text, path in (
        ('{"a": {"b": NaN}}', "a.b"),
        ('{"a": [1, Infinity]}', "a[1]"),
        ('{"a": -Infinity}', "a"),
        ('{"a": 1e999}', "a"),
        ('{"x": ' + HUGE + "}", "x"),
    ):
        with pytest.raises(jsonsafe.JsonRejected) as caught:
            jsonsafe.loads(text)
        assert caught.value.path == path
    for deep in (DEEP, "[" * 950 + "]" * 950, '{"a":' * 40 + "1" + "}" * 40):
        with pytest.raises(jsonsafe.JsonRejected, match="nested more than"):
            jsonsafe.loads(deep)
    assert jsonsafe.loads('{"a": [-1.5, 12345678901234567, {"b": null}]}') == {
        "a": [-1.5, 12345678901234567, {"b": None}]
    }


def test_numbers_at_the_limits_are_judged_alike_with_or_without_an_exponent_in_sight():
    """Lines without a long run of digits or an exponent skip the per-number hooks; the limits
    hold on both sides of that line."""
    for text, path in (
        ('{"a": ' + "1" * 20 + "}", "a"),
        ('{"a": -' + "1" * 20 + "}", "a"),
        ('{"a": 1E400}', "a"),
        ('{"a": -1e999}', "a"),
        ('{"a": ' + "9" * 400 + ".5}", "a"),
        ('{"t": "e1 and 2e", "n": [NaN]}', "n[0]"),
    ):
        with pytest.raises(jsonsafe.JsonRejected) as caught:
            jsonsafe.loads(text)
        assert caught.value.path == path, text
    assert jsonsafe.loads('{"a": ' + "9" * 19 + ', "b": -' + "9" * 19 + "}") == {
        "a": 10**19 - 1,
        "b": -(10**19 - 1),
    }
    assert jsonsafe.loads('{"a": 1.5e3, "b": "x1e5", "c": 0.25}') == {
        "a": 1500.0,
        "b": "x1e5",
        "c": 0.25,
    }


def test_the_shared_decoder_parses_as_json_loads_does() -> None:
    """One decoder serves every call (json.loads with hooks built one per call): the same
    values, the same refusals, a str's byte-order mark refused as json.loads refuses it."""
    for text in ('{"a": [1, -2.5e-3, "x1e5", {"b": null}]}', '"\\u00e9"', "[]", "0"):
        assert jsonsafe.loads(text) == json.loads(text)
    assert jsonsafe.loads(b"\xef\xbb\xbf{}") == {}
    with pytest.raises(json.JSONDecodeError, match="BOM"):
        jsonsafe.loads("\ufeff{}")
    for bad in ('{"a": }', '{"a": 1} x', "{} {}", ' {"a": 1} ]', "", "  "):
        with pytest.raises(json.JSONDecodeError) as ours:
            jsonsafe.loads(bad)
        with pytest.raises(json.JSONDecodeError) as theirs:
            json.loads(bad)
        assert (ours.value.msg, ours.value.colno) == (theirs.value.msg, theirs.value.colno), bad
    for spaced in (' {"a": 1}', '{"a": 1}\t', "\n[1]\r"):
        assert jsonsafe.loads(spaced) == json.loads(spaced)


@pytest.fixture
def rater():
    study = StudyFactory(
        status=Study.Status.OPEN, task_mix={"scorecard": 1.0}, attention_check_rate=0
    )
    for n in range(3):
        ItemFactory(study=study, external_id=f"i{n}")
    client = Client()
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    assignment = int(page.split('data-assignment="')[1].split('"')[0])
    return client, study, assignment


def _post(client: Client, url: str, body: str):
    return client.post(
        url,
        body,
        content_type="application/json",
        headers={"X-CSRFToken": client.cookies["csrftoken"].value},
    )


def test_the_rater_api_refuses_malformed_json_with_a_400_naming_the_field(rater):
    client, study, assignment = rater
    url = f"/api/v1/rater/{study.slug}/scorecards"
    answer = (
        '{"assignment": %d, "idempotency_key": "key-0001-aaaa", "active_ms": 4000, '
        '"answers": {"surprise": {"value": %s, "at_ms": 1000}}}'
    )
    deep = _post(client, url, DEEP)
    assert deep.status_code == 400
    assert "nested more than" in deep.json()["message"]
    for bad in ("NaN", "Infinity", "1e999", HUGE):
        response = _post(client, url, answer % (assignment, bad))
        assert response.status_code == 400, (bad, response.content[:300])
        body = response.json()
        assert body["field"] == "answers.surprise.value"
        assert body["message"].startswith("answers.surprise.value: ")
    too_big = _post(client, url, json.dumps({"assignment": assignment, "pad": "x" * 70_000}))
    assert too_big.status_code == 413
    assert not ScoreResponse.objects.filter(study=study).exists()


@pytest.fixture
def researcher(django_user_model):
    from apps.studies.services import study_create, study_member_add

    user = django_user_model.objects.create_user("res", password="x")
    study = study_create(slug="jsonfuzz", rubric_slug="humor")
    study_member_add(study=study, user=user)
    return token_client(user), study


def test_the_researcher_api_refuses_malformed_json_with_a_400(researcher):
    client, study = researcher
    items = f"/api/v1/studies/{study.slug}/items/"
    deep = client.generic("POST", items, DEEP, content_type="application/json")
    assert deep.status_code == 400
    assert "nested more than" in deep.json()["message"]
    for bad, field in (("NaN", "items[0].generation.temperature"), (HUGE, None)):
        body = (
            '{"items": [{"id": "a", "text": "t", "source": "human", '
            '"generation": {"temperature": ' + bad + "}}]}"
        )
        response = client.generic("POST", items, body, content_type="application/json")
        assert response.status_code == 400, response.content[:300]
        assert response.json()["field"] == (field or "items[0].generation.temperature")
    patch = client.generic(
        "PATCH",
        f"/api/v1/studies/{study.slug}/",
        '{"session_minutes": ' + HUGE + "}",
        content_type="application/json",
    )
    assert patch.status_code == 400
    assert patch.json()["field"] == "session_minutes"
    assert not Item.objects.filter(study=study).exists()


def _rejected(data: bytes, filename: str) -> list[str]:
    study = Study.objects.get(slug="jsonfuzz")
    with pytest.raises(ImportRejected) as caught:
        study_items_import(study=study, data=data, filename=filename)
    assert not Item.objects.filter(study=study).exists()
    return [f"{e.line}:{e.field}:{e.message}" for e in caught.value.errors]


def test_uploads_refuse_deep_nesting_and_non_finite_or_huge_numbers(researcher):
    good = '{"id": "ok", "text": "t", "source": "human"}'
    deep = '{"id": "a", "text": "t", "source": "human", "generation": %s}' % ("[" * 950 + "]" * 950)
    nan = '{"id": "b", "text": "t", "source": "human", "attention_expected": {"funniness": NaN}}'
    huge = '{"id": "c", "text": "t", "source": "human", "generation": {"seed": ' + HUGE + "}}"
    errors = _rejected("\n".join([good, deep, nan, huge, DEEP]).encode(), "items.jsonl")
    assert errors[0] == "2:(line):is nested more than 32 levels deep"
    assert errors[1].startswith("3:attention_expected:attention_expected.funniness ")
    assert errors[2].startswith("4:generation:generation.seed is too large")
    assert errors[3] == "5:(line):is nested more than 32 levels deep"

    csv_text = 'id,text,source,generation\nok,t,human,{}\nx,t,human,"{""t"": NaN}"\n'
    csv_errors = _rejected(csv_text.encode(), "items.csv")
    assert csv_errors == ["3:generation:generation.t must be a finite number (NaN is not JSON)"]


def test_an_uploaded_file_of_deep_json_through_the_api_is_a_400(researcher):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client, study = researcher
    upload = SimpleUploadedFile("items.jsonl", DEEP.encode(), content_type="application/jsonl")
    response = client.post(
        f"/api/v1/studies/{study.slug}/items/", {"file": upload}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["line"] == 1
    assert not Item.objects.filter(study=study).exists()


def test_the_new_study_form_refuses_a_deeply_nested_custom_rubric():
    from apps.dashboard.forms import CUSTOM_RUBRIC, StudyCreateForm

    form = StudyCreateForm(
        data={"slug": "deep", "name": "Deep", "rubric": CUSTOM_RUBRIC, "rubric_spec": DEEP}
    )
    assert not form.is_valid()
    assert "nested more than" in str(form.errors["rubric_spec"])


def test_judge_verdict_files_refuse_non_finite_numbers_naming_the_line(researcher):
    from apps.core.errors import DomainError
    from apps.screening.services.judge import judge_verdicts_load

    _, study = researcher
    ItemFactory(study=study, external_id="v1")
    line = '{"item": "v1", "model": "m", "scores": {"funniness": 3}, "latency_ms": NaN}'
    with pytest.raises(DomainError) as caught:
        judge_verdicts_load(study=study, data=line.encode(), seed=1, rounds=20)
    assert caught.value.message.startswith("line 1: latency_ms: must be a finite number")
    assert caught.value.field == "latency_ms"
