"""Blinding: nothing a rater can reach names an item's source, model, generation settings, or
anyone else's answers. A whole session is walked with a real browser session (test client) and
every response body, the static assets included, is searched.

And nothing a rater is routed through depends on whether an item has a self-explanation (in
practice: whether a model wrote it), except the reveal itself after scoring: every answer leads
to the same page, the sequence of tasks is the same with and without explanations up to the
first reveal, and an item whose explanation was revealed never reaches that rater again."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client

from apps.assignments.models import Assignment
from apps.judgments.models import ScoreResponse
from apps.raters.models import Rater
from apps.studies.models import Item
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

TASK_MARKERS = (
    'data-task="scorecard"',
    'data-task="pair"',
    'data-task="turing"',
    'data-task="explanation"',
)
TASK = re.compile(r'data-task="(\w+)"[^>]*?data-(?:assignment|response)="(\d+)"', re.S)


SCORES = {"surprise": 3, "coherence": 4, "funniness": 5, "offensive": 0}


def _walk_session(
    client: Client,
    slug: str,
    bodies: list[str],
    *,
    pid: str | None = None,
    log: list[dict[str, Any]] | None = None,
) -> None:
    """Enrol and answer every task until the end page. With `log`, each page and each answer's
    route is recorded: the page's kind and items, the endpoint, its status and its reply."""
    query = f"?PROLIFIC_PID={pid}" if pid else ""
    response = client.get(f"/s/{slug}/{query}")
    bodies.append(response.content.decode())
    response = client.post(
        f"/s/{slug}/{query}",
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
        replies: list[tuple[str, int, Any]] = []

        def post(url: str, body: dict[str, Any], replies: list[Any] = replies) -> Any:
            answer = client.post(
                f"/api/v1/rater/{slug}/{url}",
                json.dumps(body),
                content_type="application/json",
                headers={"X-CSRFToken": csrf},
            )
            assert answer.status_code in (200, 201), answer.content
            bodies.append(answer.content.decode())
            replies.append((url, answer.status_code, answer.json()))
            return answer

        if kind == "scorecard":
            # As the page does: surprise and coherence first (they open funniness), then all.
            timed = {
                name: {"value": v, "at_ms": 1000 * (i + 1)}
                for i, (name, v) in enumerate(SCORES.items())
            }
            early = {name: timed[name] for name in ("surprise", "coherence")}
            post("scorecards/early", {"assignment": ident, "active_ms": 2500, "answers": early})
            answer = post(
                "scorecards",
                {"assignment": ident, "idempotency_key": key, "active_ms": 9000, "answers": timed},
            )
        elif kind == "pair":
            answer = post(
                "pairs",
                {"assignment": ident, "idempotency_key": key, "active_ms": 5000, "winner": "left"},
            )
        elif kind == "turing":
            answer = post(
                "turing",
                {"assignment": ident, "idempotency_key": key, "active_ms": 4000, "guess": "ai"},
            )
        else:
            answer = post("explanations", {"response": ident, "verdict": "no"})
        if log is not None:
            log.append(
                {
                    "kind": kind,
                    "items": _items_of(kind, ident),
                    "path": response.request["PATH_INFO"],
                    "replies": replies,
                }
            )
        response = client.get(answer.json()["next"], follow=True)
        bodies.append(response.content.decode())
    pytest.fail("the session did not end within 60 tasks")


def _items_of(kind: str, ident: int) -> tuple[str, ...]:
    """External ids of the item(s) a page showed."""
    if kind == "explanation":
        return (ScoreResponse.objects.get(pk=ident).item.external_id,)
    task = Assignment.objects.select_related("item", "right_item").get(pk=ident)
    shown = [task.item.external_id]
    if task.right_item is not None:
        shown.append(task.right_item.external_id)
    return tuple(shown)


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


def _twin_study(*, explained: bool) -> Any:
    """A study whose model items have self-explanations (or, its twin, the same study without
    any): same seed, same items, same external ids."""
    study = StudyFactory(
        task_mix={"scorecard": 0.5, "pair": 0.3, "turing": 0.2},
        attention_check_rate=0,
        tasks_per_session=16,
        target_scorecards_per_item=3,
        turing_judgments_per_item=3,
        random_seed=4242,
    )
    for i in range(10):
        model = i % 2 == 0
        ItemFactory(
            study=study,
            external_id=f"it{i:02d}",
            topic="cats",
            source="model-a" if model else "human",
            explanation=f"Why joke {i} works." if model and explained else "",
        )
    return study


def test_routing_and_the_task_sequence_do_not_depend_on_explanations_until_the_reveal():
    with_log: list[dict[str, Any]] = []
    without_log: list[dict[str, Any]] = []
    explained, plain = _twin_study(explained=True), _twin_study(explained=False)
    _walk_session(Client(), explained.slug, [], pid="5f0c1e2d3b4a", log=with_log)
    _walk_session(Client(), plain.slug, [], pid="5f0c1e2d3b4a", log=without_log)

    # Every page the rater is sent to is the task page, after every kind of answer, with or
    # without an explanation; and each answer's reply is the same.
    for log, study in ((with_log, explained), (without_log, plain)):
        task_url = f"/s/{study.slug}/task/"
        assert {entry["path"] for entry in log} == {task_url}
        for entry in log:
            for url, status, body in entry["replies"]:
                if url == "scorecards/early":
                    assert (status, body) == (
                        200,
                        {"received": ["coherence", "surprise"], "unlocked": ["funniness"]},
                    )
                else:
                    assert status in (200, 201)
                    assert body["next"] == task_url

    def replies(log: list[dict[str, Any]], slug: str) -> list[str]:
        return [
            json.dumps(entry["replies"]).replace(slug, "<slug>")
            for entry in log
            if entry["kind"] != "explanation"
        ]

    tasks_with = [(e["kind"], e["items"]) for e in with_log if e["kind"] != "explanation"]
    tasks_without = [(e["kind"], e["items"]) for e in without_log]
    reveals = [i for i, e in enumerate(with_log) if e["kind"] == "explanation"]
    assert reveals, "the walk must have met a self-explanation"
    # Up to the first reveal the two raters were given the same tasks, in the same order, and
    # got the same replies (routes included).
    first = reveals[0]
    assert tasks_with[:first] == tasks_without[:first]
    assert replies(with_log, explained.slug)[:first] == replies(without_log, plain.slug)[:first]
    # The reveal comes right after the item's scorecard, and that item never comes back.
    for index in reveals:
        (item,) = with_log[index]["items"]
        assert with_log[index - 1]["kind"] == "scorecard"
        assert with_log[index - 1]["items"] == (item,)
        later = [shown for entry in with_log[index + 1 :] for shown in entry["items"]]
        assert item not in later, f"{item} came back after its explanation was revealed"
    # Without explanations nothing is revealed, and scored items may well come back (in pairs).
    assert all(entry["kind"] != "explanation" for entry in without_log)


def test_an_item_revealed_to_a_rater_reaches_no_task_kind_of_theirs_again(demo_study):
    demo_study.status = "open"
    demo_study.tasks_per_session = 40
    demo_study.target_scorecards_per_item = 40
    demo_study.turing_judgments_per_item = 12
    demo_study.attention_check_rate = 0
    demo_study.save()
    for n in range(3):
        log: list[dict[str, Any]] = []
        _walk_session(Client(), demo_study.slug, [], pid=f"walker{n}", log=log)
        revealed: set[str] = set()
        for entry in log:
            if entry["kind"] == "explanation":
                revealed.update(entry["items"])
            else:
                assert not revealed & set(entry["items"]), (entry, revealed)
        rater = Rater.objects.get(study=demo_study, external_id=f"walker{n}")
        scored_with_explanation = set(
            ScoreResponse.objects.filter(rater=rater)
            .exclude(item__explanation="")
            .values_list("item__external_id", flat=True)
        )
        assert revealed == scored_with_explanation
