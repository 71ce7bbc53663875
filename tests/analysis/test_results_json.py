"""The results document is sent to the database as compact JSON and read back unchanged."""

from __future__ import annotations

import json

import pytest

from apps.analysis.models import CompactJSONEncoder, StudyResult
from tests.factories import StudyFactory

DOCUMENT = {"items": [{"item": "t1", "value": 1.5, "ci": [None, 2]}], "标题": "好笑", "n": 3}


def test_the_text_has_no_spaces_after_separators():
    text = json.dumps(DOCUMENT, cls=CompactJSONEncoder)
    assert ", " not in text
    assert ": " not in text
    assert json.loads(text) == DOCUMENT


@pytest.mark.django_db
def test_a_stored_document_reads_back_as_it_was():
    study = StudyFactory()
    StudyResult.objects.create(
        study=study,
        payload=DOCUMENT,
        input_hash="0" * 64,
        seed=1,
        rounds=10,
        computed_at="2026-12-06T19:00:00Z",
        duration_seconds=0.1,
    )
    assert StudyResult.objects.get(study=study).payload == DOCUMENT
