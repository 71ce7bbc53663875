"""Generated outputs and human jokes on the same topics go through the screening sieve together:
the top K per source enter the human study, with their provenance and flags intact."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from apps.generation.selectors import topic_coverage
from apps.generation.services import generation_run_start
from apps.screening.models import ItemFeatures, ScreeningRun
from apps.screening.services.runs import screening_run_finish
from apps.studies.models import Item
from apps.studies.services import study_create, study_items_import
from tests.generation.conftest import FakeProvider
from tests.generation.helpers import make_endpoint, make_set, single

pytestmark = pytest.mark.django_db


def test_generated_and_human_candidates_are_screened_together(
    provider: FakeProvider, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    study = study_create(slug="sieve", rubric_slug="humor")
    prompts = make_set(
        study,
        single("cats", "cats", topic="cats"),
        single("dogs", "dogs", topic="dogs"),
        single("no", "REFUSE", topic="cats"),
    )
    model = make_endpoint(study, provider.url)
    with django_capture_on_commit_callbacks(execute=True):
        generation_run_start(
            study=study,
            prompt_set_ids=[prompts.pk],
            endpoint_ids=[model.pk],
            samples_per_prompt=2,
            explain=False,
        )
    human = [
        {"id": f"h{n}", "text": f"A human joke {n}", "source": "human", "topic": topic}
        for n, topic in enumerate(["cats", "dogs", "cats"])
    ]
    study_items_import(
        study=study,
        data="\n".join(json.dumps(h) for h in human).encode(),
        filename="human.jsonl",
        as_candidates=True,
    )
    coverage = {row.topic: (row.machine, row.human) for row in topic_coverage(study=study)}
    assert coverage == {"cats": (4, 2), "dogs": (2, 1)}
    candidates = list(Item.objects.filter(study=study, stage=Item.Stage.CANDIDATE))
    assert len(candidates) == 9
    # Known features, so the order is plain: coherence decides (the default FunnyScore, b = 1).
    for rank, item in enumerate(sorted(candidates, key=lambda i: i.external_id)):
        ItemFeatures.objects.create(
            item=item,
            coherence=0.1 * rank,
            surprise=None,
            surprise_missing="no language model",
            valence=0.0,
            valence_penalty=0.0,
            computed_at=timezone.now(),
        )
    run = ScreeningRun.objects.create(
        study=study, top_k=2, batch_size=250, batches_total=1, status="running"
    )
    screening_run_finish(run=run)
    kept = Item.objects.filter(study=study, stage=Item.Stage.STUDY)
    assert sorted(kept.values_list("source", flat=True)) == [
        "human",
        "human",
        "jester-1",
        "jester-1",
    ]
    assert Item.objects.filter(study=study, stage=Item.Stage.DROPPED).count() == 5
    # Whatever the sieve decided, the provenance and the guardrail flag stay with the item.
    intercepted = Item.objects.filter(study=study, safety_intercepted=True)
    assert intercepted.count() == 2
    assert all(i.generation["intercept_reason"] == "refusal" for i in intercepted)
    assert all(i.generation["prompt_set"] == "set" for i in kept if i.source != "human")
