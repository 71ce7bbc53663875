"""The submit that answers with the next task (`with_next`): the page shows it in place, so the
next page is not a request of its own. The task it carries is the one the task page would have
shown (same assignment, same rendering, same progress): its items alone when the answering page
has its layout, else its whole form (another kind, a self-explanation to judge, a changed
rubric). The end and a closed study are left to the page at `next`, as before."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.assignments.models import Assignment
from apps.assignments.views import next_task_in_place
from apps.core.compiled import readable
from apps.judgments.models import ScoreResponse, TuringJudgment
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Item, Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}
ASSIGNMENT = re.compile(r'data-assignment="(\d+)"')
LAYOUT = re.compile(r'data-layout="([^"]*)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')


def _study(**fields: object) -> Study:
    values: dict[str, object] = {
        "task_mix": {"scorecard": 1.0},
        "attention_check_rate": 0,
        "tasks_per_session": 4,
        "random_seed": 5,
    }
    values.update(fields)
    study = StudyFactory(**values)
    for i in range(8):
        ItemFactory(study=study, external_id=f"j{i:02d}", text=f"Joke number {i} <b>&</b>")
    return study


def _enrol(study: Study, language: str = "en") -> tuple[Client, Rater, int]:
    client = Client()
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    rater = Rater.objects.get(pk=client.session[f"laughlab:rater:{study.pk}"])
    page = client.get(f"/s/{study.slug}/task/")
    assert page.status_code == 200
    return client, rater, int(ASSIGNMENT.search(page.content.decode()).group(1))  # type: ignore[union-attr]


def _post(client: Client, study: Study, endpoint: str, body: dict[str, Any]) -> Any:
    return client.post(
        f"/api/v1/rater/{study.slug}/{endpoint}",
        data=json.dumps(body),
        content_type="application/json",
    )


def _answer_scorecard(client: Client, study: Study, assignment: int, key: str, **extra: Any) -> Any:
    """Surprise and coherence first (the step that opens funniness), then the scorecard."""
    early = {"surprise": {"value": 3, "at_ms": 900}, "coherence": {"value": 4, "at_ms": 1000}}
    body = {"assignment": assignment, "active_ms": 1000, "answers": early}
    assert _post(client, study, "scorecards/early", body).status_code == 200
    answers = {"funniness": {"value": 5, "at_ms": 1500}, "offensive": {"value": 0, "at_ms": 1500}}
    body = {"assignment": assignment, "idempotency_key": key, "active_ms": 1500, "answers": answers}
    return _post(client, study, "scorecards", {**body, **extra})


def _layout(client: Client, study: Study) -> str:
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    return LAYOUT.search(page).group(1)  # type: ignore[union-attr]


def _unmasked(html_text: str) -> str:
    """The page without its CSRF token, which every rendering masks anew."""
    return CSRF.sub("", html_text)


def _pending(rater: Rater) -> list[int]:
    return list(
        Assignment.objects.filter(rater=rater, status="pending").values_list("pk", flat=True)
    )


def test_the_submit_carries_the_task_the_task_page_would_show() -> None:
    study = _study()
    client, rater, first = _enrol(study)
    layout = _layout(client, study)
    response = _answer_scorecard(
        client, study, first, "key-00000001", with_next=True, layout=layout
    )
    assert response.status_code == 201, response.content
    body = response.json()
    task = body["task"]
    assert body["next"] == f"/s/{study.slug}/task/"
    assert task["kind"] == "scorecard"
    assert task["layout"] == layout
    assert "form" not in task
    # One new open task, and it is the one carried.
    assert _pending(rater) == [task["id"]]
    item = Assignment.objects.get(pk=task["id"]).item
    assert item.pk != Assignment.objects.get(pk=first).item_id
    # Only what changes: the item (escaped as the page escapes it), never the questions.
    assert html.escape(item.text) in task["content"]
    assert "data-task-content" in task["content"]
    assert "data-question" not in task["content"]
    assert "1 of 4 done" in task["progress"]
    # The task page, loaded now (a reload), shows that same task and creates nothing.
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    assert f'data-assignment="{task["id"]}"' in page
    assert f'data-layout="{task["layout"]}"' in page
    assert task["content"].strip() in page
    assert _pending(rater) == [task["id"]]


def test_without_with_next_the_submit_chooses_nothing() -> None:
    study = _study()
    client, rater, first = _enrol(study)
    response = _answer_scorecard(client, study, first, "key-00000002")
    assert response.status_code == 201
    assert "task" not in response.json()
    assert _pending(rater) == []


def test_a_retry_carries_the_same_task_and_stores_nothing_new() -> None:
    study = _study()
    client, rater, first = _enrol(study)
    task = _answer_scorecard(client, study, first, "key-00000003", with_next=True).json()["task"]
    body = {
        "assignment": first,
        "idempotency_key": "key-00000003",
        "active_ms": 1500,
        "answers": {
            "funniness": {"value": 5, "at_ms": 1500},
            "offensive": {"value": 0, "at_ms": 1500},
        },
        "with_next": True,
    }
    again = _post(client, study, "scorecards", body)
    assert again.status_code == 200
    assert again.json()["replayed"] is True
    assert again.json()["task"]["id"] == task["id"]
    assert ScoreResponse.objects.filter(rater=rater).count() == 1
    assert _pending(rater) == [task["id"]]


def test_the_last_task_leaves_the_end_to_the_page() -> None:
    study = _study(tasks_per_session=1)
    client, rater, first = _enrol(study)
    body = _answer_scorecard(client, study, first, "key-00000004", with_next=True).json()
    assert body["task"] is None
    # The page then loads `next`, which ends the session as it always did.
    page = client.get(body["next"])
    assert page.status_code == 302
    assert page["Location"].endswith("/end/")
    assert RaterSession.objects.get(rater=rater).end_reason == RaterSession.EndReason.COMPLETED


def test_a_self_explanation_to_judge_comes_as_its_whole_form_and_its_verdict_brings_the_next_task() -> (
    None
):
    study = _study()
    Item.objects.filter(study=study).update(explanation="A pun on the word.")
    client, rater, first = _enrol(study)
    layout = _layout(client, study)
    body = _answer_scorecard(
        client, study, first, "key-00000005", with_next=True, layout=layout
    ).json()
    task = body["task"]
    response = ScoreResponse.objects.get(rater=rater)
    assert (task["kind"], task["id"], task["layout"]) == ("explanation", response.pk, "")
    assert "content" not in task
    assert 'data-task="explanation"' in task["form"]
    assert f'data-response="{response.pk}"' in task["form"]
    assert "A pun on the word." in task["form"]
    assert 'data-title="The writer&#x27;s explanation · LaughLab"' in task["form"]
    # The same form the task page shows, and no task is given while the verdict waits.
    page = client.get(body["next"]).content.decode()
    assert _unmasked(task["form"]).strip() in _unmasked(page)
    assert _pending(rater) == []
    verdict = {"response": response.pk, "verdict": "yes", "with_next": True}
    after = _post(client, study, "explanations", verdict).json()["task"]
    assert after["kind"] == "scorecard"
    assert _pending(rater) == [after["id"]]
    # From the explanation's page (no layout), the next scorecard comes whole, questions and all.
    assert 'data-question="funniness"' in after["form"]
    assert f'data-assignment="{after["id"]}"' in after["form"]


def test_a_task_of_another_kind_or_layout_comes_as_its_whole_form() -> None:
    study = _study(task_mix={"turing": 1.0})
    client, rater, first = _enrol(study)
    body = {"assignment": first, "idempotency_key": "key-00000008", "active_ms": 900}
    answered = _post(
        client, study, "turing", {**body, "guess": "ai", "with_next": True, "layout": "pair:x"}
    )
    task = answered.json()["task"]
    assert task["kind"] == "turing"
    assert task["layout"] == "turing"
    assert "content" not in task
    assert 'data-task="turing"' in task["form"]
    assert 'data-layout="turing"' in task["form"]
    assert _pending(rater) == [task["id"]]


def test_a_task_of_a_layout_the_page_keeps_comes_as_its_items_alone() -> None:
    """A page keeps the form of every layout it has shown (rater.js) and names them in
    `layouts`: a task of one of those comes as its items alone, even from a page of another
    layout; the page rebuilds the form from its own copy."""
    study = _study(task_mix={"turing": 1.0})
    client, rater, first = _enrol(study)
    body = {"assignment": first, "idempotency_key": "key-0000000a", "active_ms": 900}
    kept = {"layout": "pair:tie=0:neither=0", "layouts": ["scorecard:1:2.0", "turing"]}
    answered = _post(client, study, "turing", {**body, "guess": "ai", "with_next": True, **kept})
    assert answered.status_code == 201, answered.content
    task = answered.json()["task"]
    assert (task["kind"], task["layout"]) == ("turing", "turing")
    assert "form" not in task
    item = Assignment.objects.get(pk=task["id"]).item
    assert html.escape(item.text) in task["content"]
    assert "data-task-content" in task["content"]
    assert "1 of 4 done" in task["progress"]
    assert _pending(rater) == [task["id"]]
    # The form the page keeps, with these items and this assignment, is the task page's.
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    assert task["content"].strip() in page
    assert f'data-assignment="{task["id"]}"' in page


def test_layouts_the_page_does_not_keep_bring_the_whole_form() -> None:
    study = _study(task_mix={"turing": 1.0})
    client, _rater, first = _enrol(study)
    body = {"assignment": first, "idempotency_key": "key-0000000b", "active_ms": 900}
    kept = {"layout": "", "layouts": ["pair:tie=0:neither=0", "turing:other"]}
    answered = _post(client, study, "turing", {**body, "guess": "ai", "with_next": True, **kept})
    task = answered.json()["task"]
    assert "content" not in task
    assert 'data-layout="turing"' in task["form"]


def test_a_study_closed_meanwhile_leaves_the_next_page_to_say_so(rf: Any) -> None:
    study = _study()
    client, rater, first = _enrol(study)
    assert _answer_scorecard(client, study, first, "key-00000006").status_code == 201
    # Closed between the answer's commit and the choice of the next task.
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    study.refresh_from_db()
    rater.study = study
    assert next_task_in_place(rf.get("/"), study, rater) is None
    assert _pending(rater) == []
    assert client.get(f"/s/{study.slug}/task/").status_code == 409


def test_pairs_carry_both_sides_and_in_chinese_the_chinese_progress() -> None:
    study = _study(task_mix={"pair": 1.0})
    client, _rater, first = _enrol(study, language="zh-hans")
    body = {"assignment": first, "idempotency_key": "key-00000007", "active_ms": 900}
    answer = {"winner": "left", "with_next": True, "layout": _layout(client, study)}
    response = _post(client, study, "pairs", {**body, **answer})
    assert response.status_code == 201, response.content
    task = response.json()["task"]
    assert task["kind"] == "pair"
    assert task["layout"] == "pair:tie=0:neither=0"
    given = Assignment.objects.get(pk=task["id"])
    assert given.right_item is not None
    for item in (given.item, given.right_item):
        assert html.escape(item.text) in task["content"]
    assert task["content"].count('name="winner"') == 2
    assert "已完成1/4" in task["progress"]
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    assert f'data-layout="{task["layout"]}"' in page


def test_with_next_saves_the_next_pages_request_and_its_statements() -> None:
    """The answer and the next task in one request read the study, the session and the rater
    once: fewer statements than the submit and the next page apart."""
    study = _study(task_mix={"turing": 1.0})
    apart, _r1, first_apart = _enrol(study)
    together, _r2, first_together = _enrol(study)
    body = {"active_ms": 900, "guess": "ai"}
    with CaptureQueriesContext(connection) as two_requests:
        _post(
            apart, study, "turing", {**body, "assignment": first_apart, "idempotency_key": "k" * 8}
        )
        apart.get(f"/s/{study.slug}/task/")
    with CaptureQueriesContext(connection) as one_request:
        response = _post(
            together,
            study,
            "turing",
            {
                **body,
                "assignment": first_together,
                "idempotency_key": "j" * 8,
                "with_next": True,
                "layout": "turing",
            },
        )
    assert response.json()["task"]["content"]
    assert len(one_request) < len(two_requests), (len(one_request), len(two_requests))


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"with_next": "maybe"}, "with_next"),
        ({"layout": "x" * 201}, "layout"),
        ({"layouts": "turing"}, "layouts"),
        ({"layouts": ["x" * 201]}, "layouts.0"),
        ({"layouts": ["turing", ""]}, "layouts.1"),
        ({"layouts": [f"pair:{n}" for n in range(9)]}, "layouts"),
    ],
    ids=[
        "with_next-not-a-yes-or-no",
        "layout-too-long",
        "layouts-not-a-list",
        "a-kept-layout-too-long",
        "a-kept-layout-blank",
        "more-layouts-than-a-page-keeps",
    ],
)
def test_a_malformed_request_for_the_next_task_is_refused_whole(
    extra: dict[str, Any], field: str
) -> None:
    study = _study(task_mix={"turing": 1.0})
    client, rater, first = _enrol(study)
    body = {"assignment": first, "idempotency_key": "key-00000009", "active_ms": 900}
    response = _post(client, study, "turing", {**body, "guess": "ai", "with_next": True, **extra})
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert response.json()["message"]
    # Nothing stored, nothing handed out: the task is still open, and still the only one.
    assert not TuringJudgment.objects.filter(rater=rater).exists()
    assert _pending(rater) == [first]


def _reads_the_study_alone(queries: CaptureQueriesContext) -> list[str]:
    sent = [readable(q["sql"]) for q in queries.captured_queries]
    return [sql for sql in sent if re.match(r'SELECT .* FROM "studies_study"', sql)]


def test_the_study_is_read_with_the_rater_not_before_them() -> None:
    """Every rater request needs the study, its rubric and the rater: one statement, where the
    study by its slug used to be a statement of its own on every answer and every page."""
    study = _study()
    client, _rater, first = _enrol(study)
    with CaptureQueriesContext(connection) as early:
        body = {
            "assignment": first,
            "active_ms": 900,
            "answers": {"surprise": {"value": 3, "at_ms": 800}},
        }
        assert _post(client, study, "scorecards/early", body).status_code == 200
    with CaptureQueriesContext(connection) as page:
        assert client.get(f"/s/{study.slug}/task/").status_code == 200
    with CaptureQueriesContext(connection) as answer:
        response = _answer_scorecard(client, study, first, "s" * 8, with_next=True, layout="x")
    assert response.status_code == 201
    assert response.json()["task"]["form"]
    assert _reads_the_study_alone(early) == []
    assert _reads_the_study_alone(page) == []
    assert _reads_the_study_alone(answer) == []


def test_a_browser_enrolled_elsewhere_or_nowhere_is_told_which_is_missing() -> None:
    study, other = _study(), _study()
    enrolled_elsewhere, _rater, _first = _enrol(other)
    body = {"assignment": 1, "idempotency_key": "e" * 8, "active_ms": 900, "guess": "ai"}
    for client in (enrolled_elsewhere, Client()):
        refused = _post(client, study, "turing", body)
        assert refused.status_code == 404
        assert refused.json()["field"] == "rater"
        assert client.get(f"/s/{study.slug}/task/").status_code == 404
        missing = _post(client, Study(slug="no-such-study"), "turing", body)
        assert (missing.status_code, missing.json()["field"]) == (404, "study")
    assert not TuringJudgment.objects.exists()
