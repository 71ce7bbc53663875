"""Blinding: nothing a rater can reach names an item's source, model, generation settings, or
anyone else's answers. A whole session is walked with a real browser session (test client) and
every response body, the static assets included, is searched."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client

from apps.raters.models import Rater
from apps.studies.models import Item

pytestmark = pytest.mark.django_db

TASK_MARKERS = (
    'data-task="scorecard"',
    'data-task="pair"',
    'data-task="turing"',
    'data-task="explanation"',
)
TASK = re.compile(r'data-task="(\w+)"[^>]*?data-(?:assignment|response)="(\d+)"', re.S)


def _walk_session(client: Client, slug: str, bodies: list[str]) -> None:
    response = client.get(f"/s/{slug}/")
    bodies.append(response.content.decode())
    response = client.post(
        f"/s/{slug}/",
        {
            "background": "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
        follow=True,
    )
    bodies.append(response.content.decode())
    csrf = client.cookies[settings.CSRF_COOKIE_NAME].value
    for _ in range(60):
        html = response.content.decode()
        match = TASK.search(html)
        if match is None:
            assert "/end/" in response.request["PATH_INFO"]
            return
        kind, ident = match.group(1), int(match.group(2))
        key = uuid.uuid4().hex
        if kind == "scorecard":
            url, body = (
                "scorecards",
                {
                    "assignment": ident,
                    "idempotency_key": key,
                    "active_ms": 9000,
                    "answers": {
                        "surprise": {"value": 3, "at_ms": 1000},
                        "coherence": {"value": 4, "at_ms": 2000},
                        "funniness": {"value": 5, "at_ms": 3000},
                        "offensive": {"value": 0, "at_ms": 4000},
                    },
                },
            )
        elif kind == "pair":
            url, body = (
                "pairs",
                {"assignment": ident, "idempotency_key": key, "active_ms": 5000, "winner": "left"},
            )
        elif kind == "turing":
            url, body = (
                "turing",
                {"assignment": ident, "idempotency_key": key, "active_ms": 4000, "guess": "ai"},
            )
        else:
            url, body = "explanations", {"response": ident, "verdict": "no"}
        answer = client.post(
            f"/api/v1/rater/{slug}/{url}",
            json.dumps(body),
            content_type="application/json",
            headers={"X-CSRFToken": csrf},
        )
        assert answer.status_code in (200, 201), answer.content
        bodies.append(answer.content.decode())
        response = client.get(answer.json()["next"], follow=True)
        bodies.append(response.content.decode())
    pytest.fail("the session did not end within 60 tasks")


def test_nothing_a_rater_can_reach_reveals_sources_models_or_other_raters(demo_study):
    demo_study.status = "open"
    demo_study.tasks_per_session = 25
    demo_study.target_scorecards_per_item = 40
    demo_study.turing_judgments_per_item = 12
    demo_study.adaptive_pairing = True
    demo_study.save()
    bodies: list[str] = []
    # Raters get random ids, and the task mix is drawn per rater: a session may happen to hold
    # no Turing task, so further raters walk theirs until every kind has been seen.
    for _ in range(6):
        client = Client()
        _walk_session(client, demo_study.slug, bodies)
        if all(marker in "\n".join(bodies) for marker in TASK_MARKERS):
            break
    for asset in ("laughlab/rater.js", "laughlab/rater.css"):
        bodies.append(Path(finders.find(asset)).read_text())
    bodies.append(client.get(f"/s/{demo_study.slug}/end/").content.decode())

    models = set(
        Item.objects.filter(study=demo_study)
        .exclude(source="human")
        .values_list("source", flat=True)
    )
    assert models == {"laughter-7b", "quipster-v2"}
    others = set(
        Rater.objects.filter(study=demo_study, origin="imported").values_list(
            "external_id", flat=True
        )
    )
    forbidden = [
        *models,
        "laughter",
        "quipster",
        "temperature",
        "top_p",
        "generation",
        "is_human",
        "safety_intercepted",
        '"source"',
        "source=",
        "explanation_match",
        'funniness":',
    ]
    text = "\n".join(bodies)
    assert len(bodies) > 20, "the walk must have covered a real session"
    for token in forbidden:
        assert token not in text, f"a rater-reachable response contains {token!r}"
    for other in others:
        assert not re.search(rf"\b{re.escape(other)}\b", text), (
            f"another rater's id {other!r} is visible"
        )
    # The walk saw every kind of task (and a self-explanation, which is shown only after scoring).
    for marker in TASK_MARKERS:
        assert marker in text
