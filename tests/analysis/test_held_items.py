"""Items the offense filter holds after they were rated: counted and marked "held" wherever
their ratings count, or left out with every rating when the study says so."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.analysis.services import study_aggregate
from apps.judgments.services import study_judgments_import
from apps.studies.models import Item, Study
from apps.studies.services import study_configure, study_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def study() -> Study:
    study = study_create(slug="held", rubric_slug="humor", name="Held", backgrounds=[])
    for i in range(4):
        Item.objects.create(study=study, external_id=f"j{i}", text=f"joke {i}", source="gpt-x")
    rows = [
        {
            "kind": "score",
            "rater": f"r{r}",
            "background": "unknown",
            "item": f"j{i}",
            "surprise": 3,
            "coherence": 3,
            "funniness": 1 + (i + r) % 7,
            "offensive": 0,
        }
        for r in range(5)
        for i in range(4)
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    study_judgments_import(study=study, data=data, filename="held.jsonl")
    # The offense filter holds j0 after people rated it.
    Item.objects.filter(study=study, external_id="j0").update(stage=Item.Stage.HELD)
    return study


def test_a_held_item_that_was_rated_counts_and_is_marked(study: Study) -> None:
    document = study_aggregate(study=study, rounds=20).payload
    flags = {item["item"]: item["flags"] for item in document["items"]}
    assert "held" in flags["j0"]
    assert not any("held" in f for name, f in flags.items() if name != "j0")
    assert document["groups"]["source"]["gpt-x"]["questions"]["funniness"]["n"] == 20
    warning = next(w for w in document["warnings"] if w["code"] == "held_items_counted")
    assert warning["params"]["count"] == 1

    client = Client()
    client.force_login(User.objects.create_superuser("boss", password="pw-boss-1"))
    summary = client.get(reverse("dashboard:results", args=[study.slug])).content.decode()
    assert "1 item held by the offense filter is counted" in summary
    items = client.get(
        reverse("dashboard:results_section", args=[study.slug, "items"])
    ).content.decode()
    assert "held by the offense filter" in items


def test_the_study_can_leave_held_items_out_with_their_ratings(study: Study) -> None:
    study = study_configure(study=study, count_held_items=False)
    document = study_aggregate(study=study, rounds=20).payload
    assert {item["item"] for item in document["items"]} == {"j1", "j2", "j3"}
    assert document["groups"]["source"]["gpt-x"]["questions"]["funniness"]["n"] == 15
    assert not any(w["code"] == "held_items_counted" for w in document["warnings"])
