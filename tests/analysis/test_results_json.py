"""The results document is sent to the database as compact JSON and read back unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from apps.analysis.models import CompactJSONEncoder, StudyResult
from tests.factories import StudyFactory

DOCUMENT = {"items": [{"item": "t1", "value": 1.5, "ci": [None, 2]}], "标题": "好笑", "n": 3}


def test_the_text_has_no_spaces_after_separators():
    text = json.dumps(DOCUMENT, cls=CompactJSONEncoder)
    assert ", " not in text
    assert ": " not in text
    assert json.loads(text) == DOCUMENT


def _stored(payload: dict[str, Any]) -> StudyResult:
    return StudyResult.objects.create(
        study=StudyFactory(),
        payload=payload,
        input_hash="0" * 64,
        seed=1,
        rounds=10,
        computed_at="2026-12-06T19:00:00Z",
        duration_seconds=0.1,
    )


@pytest.mark.django_db
def test_a_stored_document_reads_back_as_it_was():
    stored = _stored(DOCUMENT)
    assert StudyResult.objects.get(pk=stored.pk).payload == DOCUMENT


@pytest.mark.django_db
def test_a_large_document_is_compressed_with_lz4_where_the_server_has_it(postgres_only):
    """The payload column is compressed with LZ4 (faster to store and read than pglz) when the
    server is built with it; a large document, compressed on its way to TOAST, reads back
    whole."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        (has_lz4,) = cursor.fetchone()
        cursor.execute(
            "SELECT attcompression FROM pg_attribute "
            "WHERE attrelid = 'analysis_studyresult'::regclass AND attname = 'payload'"
        )
        (method,) = cursor.fetchone()
    assert method == ("l" if has_lz4 else "")
    large = {"items": [{"item": f"t{k}", "value": k / 7, "ci": [k, k + 1]} for k in range(20_000)]}
    stored = _stored(large)
    assert StudyResult.objects.get(pk=stored.pk).payload == large
    if has_lz4:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_column_compression(payload) FROM analysis_studyresult WHERE id = %s",
                [stored.pk],
            )
            assert cursor.fetchone()[0] == "lz4"


@pytest.mark.django_db
def test_the_document_is_stored_as_checked_text_not_a_parsed_tree(postgres_only):
    """`json`, not `jsonb`: the document is written and read whole, never queried inside, and
    `jsonb` spent most of a large document's storing parsing it into a tree. The text is kept
    as sent, so the keys come back in the document's own order (`jsonb` sorts them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'analysis_studyresult'::regclass AND attname = 'payload'"
        )
        assert cursor.fetchone()[0] == "json"
    document = {"zeta": 1, "alpha": {"second": [0.1, None, True], "first": "好笑"}, "m": 1e-05}
    stored = _stored(document)
    with connection.cursor() as cursor:
        cursor.execute("SELECT payload::text FROM analysis_studyresult WHERE id = %s", [stored.pk])
        assert cursor.fetchone()[0] == json.dumps(document, cls=CompactJSONEncoder)
    back = StudyResult.objects.get(pk=stored.pk).payload
    assert back == document
    assert list(back) == ["zeta", "alpha", "m"]
    assert list(back["alpha"]) == ["second", "first"]


@pytest.mark.django_db
def test_a_document_is_replaced_whole_and_read_with_the_other_fields_or_alone():
    stored = _stored(DOCUMENT)
    StudyResult.objects.filter(pk=stored.pk).update(payload={"n": 4})
    assert StudyResult.objects.get(pk=stored.pk).payload == {"n": 4}
    assert StudyResult.objects.values_list("payload", flat=True).get(pk=stored.pk) == {"n": 4}
    deferred = StudyResult.objects.defer("payload").get(pk=stored.pk)
    assert deferred.payload == {"n": 4}
