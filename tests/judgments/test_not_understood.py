""" "I don't get it": a rubric option per question (off by default, on funniness in the built-in
humor-not-understood rubric), stored as its own outcome and never as a number, from the rater
endpoint and from imports; left out of means and agreement; reported as a rate per item, model
and background group with intervals that an independent count reproduces."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.core.errors import ImportRejected
from apps.judgments.models import NotUnderstood, ScoreAnswer
from apps.judgments.services import study_judgments_import
from apps.reports.selectors import raw_judgment_rows
from apps.reports.tables import result_table
from apps.studies.models import Item, Question, Rubric, Study
from apps.studies.rubrics import RubricInvalid, rubric_spec_validate
from apps.studies.services import study_create
from tests.judgments.test_server_rules import _answers, _browser, _post, _scorecard, _stored, _study

pytestmark = pytest.mark.django_db

VARIANT = "humor-not-understood"


def test_the_builtin_variant_offers_it_on_funniness_only() -> None:
    offered = dict(
        Question.objects.filter(rubric__slug=VARIANT).values_list("name", "allow_not_understood")
    )
    assert offered == {
        "surprise": False,
        "coherence": False,
        "funniness": True,
        "offensive": False,
    }
    assert not Question.objects.filter(rubric__slug="humor", allow_not_understood=True).exists()


def _spec(**question: Any) -> dict[str, Any]:
    base = {"name": "grade", "min_value": 0, "max_value": 3, "prompt": {"en": "?", "zh": "？"}}
    return {"slug": "nu", "questions": [{**base, **question}]}


def test_a_rubric_may_offer_it_and_says_where_it_cannot() -> None:
    assert rubric_spec_validate(_spec(not_understood=True))["questions"][0]["allow_not_understood"]
    with pytest.raises(RubricInvalid) as caught:
        rubric_spec_validate(_spec(kind="binary", min_value=0, max_value=1, not_understood=True))
    assert caught.value.field == "questions[0].not_understood"
    chained = _spec(not_understood=True)
    chained["questions"].append(
        {**chained["questions"][0], "name": "later", "not_understood": False, "after": ["grade"]}
    )
    with pytest.raises(RubricInvalid) as caught:
        rubric_spec_validate(chained)
    assert caught.value.field == "questions[0].not_understood"
    assert "needs a value" in caught.value.message


def _variant_study() -> Study:
    return _study(rubric=Rubric.objects.get(slug=VARIANT))


def _early(client: Client, study: Study, assignment: Any) -> None:
    response = _post(
        client,
        study,
        "scorecards/early",
        {
            "assignment": assignment.pk,
            "active_ms": 1500,
            "answers": _answers(surprise=2, coherence=4),
        },
    )
    assert response.status_code == 200, response.content


def test_the_rater_endpoint_stores_it_as_its_own_outcome() -> None:
    study = _variant_study()
    client, _, assignment = _browser(study)
    _early(client, study, assignment)
    answers = {
        "funniness": {"not_understood": True, "at_ms": 1800},
        "offensive": {"value": 0, "at_ms": 1900},
    }
    response = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert response.status_code == 201, response.content
    said = NotUnderstood.objects.select_related("question").get()
    assert said.question.name == "funniness"
    assert said.answered_at is not None
    assert said.received_at is not None
    values = dict(ScoreAnswer.objects.values_list("question__name", "value"))
    assert values == {"surprise": 2, "coherence": 4, "offensive": 0}


@pytest.mark.parametrize(
    ("answers", "field", "message"),
    [
        (
            {"funniness": {"value": 3, "not_understood": True, "at_ms": 10}},
            "answers",
            "not both",
        ),
        ({"funniness": {"at_ms": 10}}, "answers", "value is required"),
        (
            {"offensive": {"not_understood": True, "at_ms": 10}, "funniness": _answers(f=3)["f"]},
            "answers.offensive",
            "does not offer",
        ),
    ],
)
def test_a_wrong_not_understood_is_refused_naming_it_and_stores_nothing(
    answers: dict[str, Any], field: str, message: str
) -> None:
    study = _variant_study()
    client, _, assignment = _browser(study)
    _early(client, study, assignment)
    before = _stored()
    response = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"].startswith(field)
    assert message in json.dumps(body)
    assert _stored() == before
    assert NotUnderstood.objects.count() == 0


def test_the_plain_humor_rubric_refuses_it() -> None:
    study = _study()
    client, _, assignment = _browser(study)
    _early(client, study, assignment)
    answers = {"funniness": {"not_understood": True, "at_ms": 10}, **_answers(offensive=0)}
    response = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert response.status_code == 400
    assert response.json()["field"] == "answers.funniness"


def _lines(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode()


@pytest.fixture
def rated() -> tuple[Study, list[dict[str, Any]]]:
    """Two models, three items each, 8 raters in two backgrounds; some raters do not get some
    jokes (deterministic), everyone else grades funniness."""
    study = study_create(
        slug="nu-study",
        rubric_slug=VARIANT,
        name="NU",
        backgrounds=[("a", {"en": "A", "zh": "甲"}), ("b", {"en": "B", "zh": "乙"})],
    )
    for source in ("gpt-x", "quipster"):
        for i in range(3):
            Item.objects.create(
                study=study, external_id=f"{source}-{i}", text=f"{source} {i}", source=source
            )
    rng = np.random.default_rng(7)
    rows = []
    for r in range(8):
        for source in ("gpt-x", "quipster"):
            for i in range(3):
                lost = (source == "quipster" and i == 0 and r % 2 == 0) or rng.random() < 0.1
                rows.append(
                    {
                        "kind": "score",
                        "rater": f"r{r}",
                        "background": "a" if r < 4 else "b",
                        "item": f"{source}-{i}",
                        "surprise": 3,
                        "coherence": 3,
                        "funniness": "not_understood" if lost else int(rng.integers(1, 8)),
                        "offensive": 0,
                    }
                )
    study_judgments_import(study=study, data=_lines(rows), filename="nu.jsonl")
    return study, rows


def test_imports_take_it_where_offered_and_refuse_it_elsewhere(rated) -> None:
    study, rows = rated
    assert NotUnderstood.objects.filter(response__study=study).count() == sum(
        row["funniness"] == "not_understood" for row in rows
    )
    bad = {**rows[0], "rater": "new", "surprise": "not_understood"}
    with pytest.raises(ImportRejected) as caught:
        study_judgments_import(study=study, data=_lines([bad]), filename="bad.jsonl")
    error = caught.value.errors[0]
    assert (error.line, error.field) == (1, "surprise")
    assert "does not offer" in error.message


def test_rates_and_means_equal_an_independent_count(rated) -> None:
    study, rows = rated
    document = study_aggregate(study=study, rounds=50).payload
    section = document["not_understood"]
    assert "never a number" in section["rule"]
    entry = section["questions"]["funniness"]
    said = [row for row in rows if row["funniness"] == "not_understood"]
    assert (entry["count"], entry["answers"]) == (len(said), len(rows))
    assert entry["overall"]["value"] == pytest.approx(len(said) / len(rows))
    low, high = entry["overall"]["ci_low"], entry["overall"]["ci_high"]
    assert low <= entry["overall"]["value"] <= high
    for source in ("gpt-x", "quipster"):
        mine = [row for row in rows if row["item"].startswith(source)]
        lost = sum(row["funniness"] == "not_understood" for row in mine)
        assert entry["by_source"][source]["count"] == lost
        assert entry["by_source"][source]["value"] == pytest.approx(lost / len(mine))
    for group in ("a", "b"):
        mine = [row for row in rows if row["background"] == group]
        lost = sum(row["funniness"] == "not_understood" for row in mine)
        assert entry["by_background"][group]["value"] == pytest.approx(lost / len(mine))
    items = {row["item"]: row for row in entry["items"]}
    hard = [row for row in rows if row["item"] == "quipster-0"]
    lost = sum(row["funniness"] == "not_understood" for row in hard)
    assert items["quipster-0"]["count"] == lost
    assert items["quipster-0"]["rate"]["value"] == pytest.approx(lost / len(hard))
    # Left out of the means: the item's mean funniness is over the graded answers only.
    graded = [row["funniness"] for row in hard if row["funniness"] != "not_understood"]
    item = next(row for row in document["items"] if row["item"] == "quipster-0")
    assert item["questions"]["funniness"]["value"] == pytest.approx(np.mean(graded))
    assert item["questions"]["funniness"]["n"] == len(graded)


def test_the_summary_page_and_the_raw_export_show_it(rated) -> None:
    study, rows = rated
    study_aggregate(study=study, rounds=20)
    exported = [row for row in raw_judgment_rows(study=study) if row[10] == "not_understood"]
    document = StudyResult.objects.get(study=study).payload
    diagnostics = result_table(document, "diagnostics").as_dicts()
    rates = {row["subject"]: row for row in diagnostics if row["measure"] == "not_understood_rate"}
    overall = document["not_understood"]["questions"]["funniness"]["overall"]
    assert rates["funniness"]["value"] == overall["value"]
    assert "funniness source=quipster" in rates
    assert "funniness item=quipster-0" in rates
    assert len(exported) == sum(row["funniness"] == "not_understood" for row in rows)
    client = Client()
    client.force_login(User.objects.create_superuser("boss", password="pw-boss-1"))
    page = client.get(reverse("dashboard:results", args=[study.slug])).content.decode()
    assert 'id="not-understood"' in page
    assert 'data-question="funniness"' in page


def test_the_report_gives_the_rate(rated) -> None:
    from apps.reports.services import study_report_html

    study, rows = rated
    study_aggregate(study=study, rounds=20)
    html = study_report_html(study=study)
    section = html[html.index('<section id="not-understood">') :]
    section = section[: section.index("</section>")]
    said = sum(row["funniness"] == "not_understood" for row in rows)
    assert f"{said} / {len(rows)}" in section
    assert "offers “I don't get it”" in html
