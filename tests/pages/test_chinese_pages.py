"""Chinese everywhere a researcher or a rater looks: every page of both demo studies, rendered
in Simplified Chinese, shows no interface string in English.

Item texts, study names, model names, topics and other values the researcher entered are left
out (they are data, in whatever language they were written); what remains must be Chinese,
numbers, or one of the method's proper names (Bradley-Terry, Krippendorff, ...).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from apps.judgments.models import ScoreResponse
from apps.raters.models import BackgroundGroup
from apps.studies.models import Study
from apps.studies.selectors import study_questions
from tests.pages.conftest import SITE_PAGES, researcher_pages, task_kinds
from tests.pages.untranslated import untranslated

pytestmark = pytest.mark.django_db


# A fixed participant id: the kind of each task is drawn from (study seed, rater id, position),
# so the session replays and reaches every kind the study gives.
PID = "chinese-pages"
TASK = re.compile(r'data-task="(\w+)"[^>]*?data-(?:assignment|response)="(\d+)"', re.S)


def _scorecard_answers(study: Study) -> list[dict[str, dict[str, int]]]:
    """The middle point of every question, in the steps the page sends them: first the answers
    others depend on (one step per level of the chain), then the whole scorecard."""
    questions = study_questions(study=study)
    timed = {
        q.name: {"value": (q.min_value + q.max_value) // 2, "at_ms": 100 * (i + 1)}
        for i, q in enumerate(questions)
    }
    needed = {p.name for q in questions for p in q.answered_after.all()}
    steps: list[dict[str, dict[str, int]]] = []
    sent: set[str] = set()
    while ready := {
        q.name: timed[q.name]
        for q in questions
        if q.name in needed
        and q.name not in sent
        and all(p.name in sent for p in q.answered_after.all())
    }:
        steps.append(ready)
        sent |= set(ready)
    return [*steps, timed]


def _answer(client: Client, study: Study, kind: str, ident: int) -> str:
    """Answer the task on the page as the rater page does; the page to show next."""
    csrf = client.cookies[settings.CSRF_COOKIE_NAME].value

    def post(endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        response = client.post(
            f"/api/v1/rater/{study.slug}/{endpoint}",
            json.dumps(body),
            content_type="application/json",
            headers={"X-CSRFToken": csrf},
        )
        assert response.status_code in (200, 201), response.content
        return dict(response.json())

    key = {"assignment": ident, "idempotency_key": uuid.uuid4().hex, "active_ms": 9000}
    if kind == "scorecard":
        *early, answers = _scorecard_answers(study)
        for step in early:
            post("scorecards/early", {"assignment": ident, "active_ms": 2500, "answers": step})
        reply = post("scorecards", {**key, "answers": answers})
    elif kind == "pair":
        reply = post("pairs", {**key, "winner": "left"})
    elif kind == "turing":
        reply = post("turing", {**key, "guess": "ai"})
    else:
        reply = post("explanations", {"response": ident, "verdict": "unsure"})
    return str(reply["next"])


def _rater_pages(client: Client, study: Study) -> dict[str, str]:
    """The enrolment page, then a page of every kind of task the study gives (scorecard, pair,
    Turing and the self-explanation after a scorecard), and the end page."""
    entry = f"/s/{study.slug}/?PROLIFIC_PID={PID}"
    pages = {f"/s/{study.slug}/": client.get(entry).content.decode()}
    group = BackgroundGroup.objects.filter(study=study).order_by("position").first()
    assert group is not None
    response = client.post(
        entry,
        {
            "background": group.code,
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
        follow=True,
    )
    expected = task_kinds(study)
    for _ in range(study.tasks_per_session * 2):
        match = TASK.search(html := response.content.decode())
        if match is None or not expected - {url.rsplit("#", 1)[-1] for url in pages}:
            break
        kind, ident = match.group(1), int(match.group(2))
        pages.setdefault(f"/s/{study.slug}/task/#{kind}", html)
        response = client.get(_answer(client, study, kind, ident), follow=True)
    shown = {url.rsplit("#", 1)[-1] for url in pages if "#" in url}
    assert shown == expected, f"task pages shown: {sorted(shown)}, expected {sorted(expected)}"
    pages[f"/s/{study.slug}/end/"] = client.get(f"/s/{study.slug}/end/").content.decode()
    return pages


def _page_texts(study: Study) -> dict[str, str]:
    researcher = get_user_model().objects.get(username=settings.DEMO_RESEARCHER_USERNAME)
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(researcher)
    pages = {}
    for url in [*SITE_PAGES, *researcher_pages(study)]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["Content-Language"] == "zh-hans", url
        pages[url] = response.content.decode()
    pages.update(_rater_pages(Client(HTTP_ACCEPT_LANGUAGE="zh-hans"), study))
    return pages


@pytest.mark.parametrize("which", ["humor", "content"])
def test_every_page_of_the_demo_studies_is_chinese_in_chinese(demo_site, which):
    study = getattr(demo_site, which)
    assert ScoreResponse.objects.filter(study=study).exists()
    found = untranslated(_page_texts(study))
    report = "\n".join(f"{url}\n  " + "\n  ".join(lines) for url, lines in found.items())
    assert not found, "English on Chinese pages:\n" + report
