"""An imported judgment's idempotency key is `import:` and its own id (apps.judgments.import_rows).

The key only has to be unique. Made from the id, it is unique as the id is, it can never be a
rater's key (a rater's holds no colon), and new keys come in the order of the ids, so the unique
index takes each at its right edge instead of at a random page.
"""

from __future__ import annotations

import json

import pytest

from apps.core.errors import DomainError
from apps.judgments import submission
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.judgments.services import study_judgments_import
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db(transaction=True)


GRADES = {"surprise": 4, "coherence": 4, "funniness": 5, "offensive": 0}


def _lines(raters: range) -> bytes:
    lines = []
    for r in raters:
        rater = {"rater": f"r{r:03d}", "background": "technical"}
        lines.append({"kind": "score", **rater, "item": "j1", **GRADES})
        lines.append({"kind": "score", **rater, "item": "j2", **GRADES})
        lines.append({"kind": "pair", **rater, "left": "j1", "right": "j2", "winner": "j2"})
        lines.append({"kind": "turing", **rater, "item": "j3", "guess": "ai"})
    return "\n".join(json.dumps(line) for line in lines).encode()


def _study():  # type: ignore[no-untyped-def]
    study = StudyFactory()
    for item in ("j1", "j2", "j3"):
        ItemFactory(study=study, external_id=item)
    return study


MODELS = (ScoreResponse, PairJudgment, TuringJudgment)


def test_each_imported_key_is_made_from_its_own_id_in_the_order_of_the_ids():
    first, second = _study(), _study()
    study_judgments_import(study=first, data=_lines(range(5)), filename="a.jsonl")
    study_judgments_import(study=second, data=_lines(range(5)), filename="b.jsonl")
    study_judgments_import(study=first, data=_lines(range(5, 9)), filename="c.jsonl")
    for model in MODELS:
        stored = list(model.objects.order_by("pk").values_list("pk", "idempotency_key"))
        assert len(stored) == (28 if model is ScoreResponse else 14)
        assert [key for _, key in stored] == [f"import:{pk:019d}" for pk, _ in stored]
        # Zero-padded: the keys sort as their ids do, and each new one is the greatest yet.
        assert sorted(key for _, key in stored) == [key for _, key in stored]


def test_a_reimport_keeps_the_stored_keys():
    study = _study()
    study_judgments_import(study=study, data=_lines(range(3)), filename="a.jsonl")
    before = {m: dict(m.objects.values_list("pk", "idempotency_key")) for m in MODELS}
    summary = study_judgments_import(study=study, data=_lines(range(4)), filename="a.jsonl")
    assert summary.unchanged == 12
    assert summary.total_created == 4
    for model in MODELS:
        after = dict(model.objects.values_list("pk", "idempotency_key"))
        assert {pk: after[pk] for pk in before[model]} == before[model]


def test_no_rater_can_send_an_imported_key():
    study = _study()
    study_judgments_import(study=study, data=_lines(range(1)), filename="a.jsonl")
    key = ScoreResponse.objects.get(item__external_id="j1").idempotency_key
    with pytest.raises(DomainError, match="letters, digits or hyphens"):
        submission._check_key(key)
