"""A study's results cover its items (counted per model, rated or not), so every change to which
items are in the human study asks for fresh results, and changes outside it do not."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from django.contrib.admin import site
from django.db import connection
from django.utils import timezone

from apps.analysis.services import _EvidenceChanged
from apps.screening.models import ItemFeatures, OffenseTerm, ScreeningRun
from apps.screening.services.offense import item_offense_release, offense_rescan_study
from apps.screening.services.runs import screening_run_finish
from apps.studies.admin import ItemAdmin
from apps.studies.models import Item, Study
from apps.studies.services import study_create, study_items_import

pytestmark = pytest.mark.django_db


def jsonl(*texts: str, source: str = "gpt-x") -> bytes:
    rows = [
        {"id": f"{source}-{i}", "text": text, "source": source, "level": "single", "lang": "en"}
        for i, text in enumerate(texts)
    ]
    return "\n".join(json.dumps(row) for row in rows).encode()


@contextmanager
def committed() -> Iterator[list[Callable[[], object]]]:
    """The after-commit callbacks of what runs inside, then dropped as a commit drops them: each
    step is its own transaction, as in a request, though the test holds one open around all."""
    start = len(connection.run_on_commit)
    callbacks: list[Callable[[], object]] = []
    yield callbacks
    callbacks.extend(callback for _, callback, _ in connection.run_on_commit[start:])
    del connection.run_on_commit[start:]


def imported(study: Study, data: bytes, *, as_candidates: bool = False) -> None:
    with committed():
        study_items_import(
            study=study, data=data, filename="items.jsonl", as_candidates=as_candidates
        )


def marks(callbacks: list[Callable[[], object]], study: Study) -> int:
    """How many of the after-commit callbacks ask for this study's results."""
    return sum(1 for c in callbacks if isinstance(c, _EvidenceChanged) and c.study_id == study.pk)


@pytest.fixture
def owner(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def study(owner) -> Study:  # type: ignore[no-untyped-def]
    return study_create(slug="pilot", rubric_slug="humor", name="Pilot", owner=owner)


def test_importing_items_into_the_study_asks_for_fresh_results(study):
    with committed() as callbacks:
        study_items_import(study=study, data=jsonl("A pun.", "A quip."), filename="a.jsonl")
    assert marks(callbacks, study) == 1


def test_importing_nothing_new_or_only_candidates_does_not(study):
    imported(study, jsonl("A pun."))
    with committed() as callbacks:
        study_items_import(study=study, data=jsonl("A pun."), filename="a.jsonl")
        study_items_import(
            study=study, data=jsonl("B pun.", source="m2"), filename="b.jsonl", as_candidates=True
        )
    assert marks(callbacks, study) == 0


def _run_with_coherence(study: Study, coherence: float | None) -> list[object]:
    for item in Item.objects.filter(study=study, stage=Item.Stage.CANDIDATE):
        ItemFeatures.objects.create(
            item=item,
            coherence=coherence,
            coherence_missing="" if coherence is not None else "no embedding model",
            surprise_missing="no language model",
            valence_missing="no sentiment model",
            computed_at=timezone.now(),
        )
    run = ScreeningRun.objects.create(
        study=study, top_k=1, batch_size=250, batches_total=1, status="running"
    )
    return list(screening_run_finish(run=run))


def test_a_screening_run_that_promotes_candidates_asks_for_fresh_results(study):
    imported(study, jsonl("A.", "B."), as_candidates=True)
    with committed() as callbacks:
        outcomes = _run_with_coherence(study, 0.5)
    assert sum(1 for o in outcomes if o.kept) == 1  # type: ignore[attr-defined]
    assert Item.objects.filter(study=study, stage=Item.Stage.STUDY).count() == 1
    assert marks(callbacks, study) == 1


def test_a_screening_run_that_promotes_nothing_does_not(study):
    imported(study, jsonl("A.", "B."), as_candidates=True)
    with committed() as callbacks:
        outcomes = _run_with_coherence(study, None)  # no score: every candidate is dropped
    assert not any(o.kept for o in outcomes)  # type: ignore[attr-defined]
    assert marks(callbacks, study) == 0


def test_holding_and_releasing_a_study_item_each_ask_for_fresh_results(study, owner):
    imported(study, jsonl("A durian walks into a bar."))
    OffenseTerm.objects.create(language="en", term="durian", category="insult")
    with committed() as callbacks:
        offense_rescan_study(study=study)
    item = Item.objects.get(study=study)
    assert (item.stage, item.held_from_stage) == (Item.Stage.HELD, Item.Stage.STUDY)
    assert marks(callbacks, study) == 1

    with committed() as callbacks:
        item_offense_release(study=study, item_id=item.pk, user=owner)
    assert marks(callbacks, study) == 1


def test_a_rescan_that_changes_no_stage_does_not(study):
    imported(study, jsonl("A clean pun."))
    imported(study, jsonl("You moron.", source="m2"), as_candidates=True)
    with committed() as callbacks:
        offense_rescan_study(study=study)  # the candidate stays held, the clean item stays in
    assert marks(callbacks, study) == 0


def test_an_item_saved_in_the_admin_asks_for_fresh_results(study, owner, rf):
    imported(study, jsonl("A pun."))
    item = Item.objects.get(study=study)
    item.source = "renamed-model"
    form = SimpleNamespace(changed_data=["source"])
    with committed() as callbacks:
        ItemAdmin(Item, site).save_model(rf.post("/admin/"), item, form, change=True)
    assert marks(callbacks, study) == 1


def test_changing_the_culture_fdr_asks_for_fresh_results_and_other_settings_do_not(study):
    from apps.studies.services import study_configure

    with committed() as callbacks:
        study_configure(study=study, culture_fdr=0.05)
    assert marks(callbacks, study) == 1
    study.refresh_from_db()
    with committed() as callbacks:
        study_configure(study=study, culture_fdr=0.05, session_minutes=20)
    assert marks(callbacks, study) == 0


def test_the_admin_refuses_a_culture_fdr_outside_zero_to_one(study):
    from django.core.exceptions import ValidationError

    study.culture_fdr = 1.0
    with pytest.raises(ValidationError) as caught:
        study.full_clean()
    assert "greater than 0 and less than 1" in str(caught.value.message_dict["culture_fdr"])
    assert Study.objects.get(pk=study.pk).culture_fdr == 0.1
