"""Continuous (slider) questions: a rubric kind with min, max and step; answers on its grid
accepted exactly, from the rater endpoint and from imports, stored without loss and refused
elsewhere naming the line, field and step; statistics that fit a continuous answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.analysis.services import study_aggregate
from apps.core.errors import ImportRejected
from apps.judgments.models import ScoreAnswer
from apps.judgments.services import study_judgments_import
from apps.studies.models import Item, Question, Study
from apps.studies.rubrics import RubricInvalid, rubric_create, rubric_spec, rubric_spec_validate
from apps.studies.scales import problem, step_text
from apps.studies.services import study_create
from tests.judgments.test_server_rules import _browser, _post, _scorecard, _stored, _study

pytestmark = pytest.mark.django_db

SLIDER: dict[str, Any] = {
    "slug": "jester",
    "name": "Jester",
    "questions": [
        {
            "name": "rating",
            "kind": "slider",
            "min_value": -10,
            "max_value": 10,
            "step": "1/32",
            "prompt": {"en": "How funny is it?", "zh": "有多好笑？"},
            "anchors": {
                "en": {"-10": "Not funny", "10": "Very funny"},
                "zh": {"-10": "不好笑", "10": "很好笑"},
            },
        }
    ],
}


def jsonl(rows: list[dict[str, object]]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode()


@pytest.fixture
def jester() -> Study:
    study = study_create(slug="jester", rubric_spec=SLIDER, name="Jester", backgrounds=[])
    for i in range(3):
        Item.objects.create(study=study, external_id=f"j{i}", text=f"joke {i}", source="human")
    return study


def test_a_slider_question_keeps_its_step_as_given() -> None:
    clean = rubric_spec_validate(SLIDER)["questions"][0]
    assert (clean["kind"], clean["step"]) == ("slider", 0.03125)
    assert step_text(0.03125) == "1/32"
    assert step_text(0.01) == "0.01"


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"step": None}, "questions[0].step", "a slider needs a step"),
        ({"step": 0}, "questions[0].step", "a positive number"),
        ({"step": "a/b"}, "questions[0].step", "a positive number"),
        ({"step": 3}, "questions[0].step", "must divide the scale"),
        ({"step": 1e-7}, "questions[0].step", "at most 1000000 points"),
        ({"kind": "likert", "step": 1}, "questions[0].step", "only slider questions"),
    ],
)
def test_a_bad_slider_is_refused_naming_the_field(change, field, message) -> None:
    spec = json.loads(json.dumps(SLIDER))
    spec["questions"][0].update(change)
    if change.get("step", 1) is None:
        del spec["questions"][0]["step"]
    with pytest.raises(RubricInvalid) as caught:
        rubric_spec_validate(spec)
    assert caught.value.field == field
    assert message in caught.value.message


def test_the_stored_spec_gives_the_step_back(jester: Study) -> None:
    question = Question.objects.get(rubric=jester.rubric)
    assert (question.kind, question.step) == ("slider", 0.03125)
    assert rubric_spec(jester.rubric)["questions"][0]["step"] == 0.03125


def test_the_grid_rule() -> None:
    rule = {"kind": "slider", "low": -10, "high": 10, "step": 0.03125}
    assert problem(**rule, value=0.21875) == ""
    assert problem(**rule, value=-10) == ""
    assert "steps of 1/32" in problem(**rule, value=0.219)
    assert "from -10 to 10" in problem(**rule, value=10.03125)
    integer = {"kind": "likert", "low": 1, "high": 7, "step": None}
    assert problem(**integer, value=4.0) == ""
    assert "must be an integer" in problem(**integer, value=4.5)


def test_decimal_ratings_on_the_grid_import_exactly(jester: Study) -> None:
    values = [0.21875, -9.96875, 10.0, 3.5, -0.03125, 7.0]
    lines = [
        {
            "kind": "score",
            "rater": f"r{k}",
            "background": "unknown",
            "item": f"j{k % 3}",
            "rating": value,
        }
        for k, value in enumerate(values)
    ]
    summary = study_judgments_import(study=jester, data=jsonl(lines), filename="j.jsonl")
    assert summary.created["score"] == len(values)
    stored = sorted(ScoreAnswer.objects.values_list("value", flat=True))
    assert stored == sorted(values)
    # A CSV gives the same numbers as text.
    csv = b"kind,rater,background,item,rating\nscore,c1,unknown,j0,-2.53125\n"
    study_judgments_import(study=jester, data=csv, filename="j.csv")
    assert ScoreAnswer.objects.filter(response__rater__external_id="c1").get().value == -2.53125


def test_a_value_off_the_grid_is_refused_naming_line_field_and_step(jester: Study) -> None:
    lines = [
        {"kind": "score", "rater": "r1", "background": "unknown", "item": "j0", "rating": 0.21875},
        {"kind": "score", "rater": "r2", "background": "unknown", "item": "j1", "rating": 0.219},
    ]
    with pytest.raises(ImportRejected) as caught:
        study_judgments_import(study=jester, data=jsonl(lines), filename="j.jsonl")
    (error,) = caught.value.errors
    assert (error.line, error.field) == (2, "rating")
    assert "steps of 1/32" in error.message
    assert "0.219" in error.message
    assert ScoreAnswer.objects.count() == 0


def test_an_integer_question_refuses_decimals_naming_them(owner_study_with_grade) -> None:
    study = owner_study_with_grade
    line = {"kind": "score", "rater": "r1", "background": "unknown", "item": "t0", "grade": 2.5}
    with pytest.raises(ImportRejected) as caught:
        study_judgments_import(study=study, data=jsonl([line]), filename="j.jsonl")
    assert "must be an integer from 0 to 3, got 2.5" in caught.value.errors[0].message


@pytest.fixture
def owner_study_with_grade() -> Study:
    spec = {
        "slug": "grade",
        "questions": [
            {
                "name": "grade",
                "min_value": 0,
                "max_value": 3,
                "prompt": {"en": "How funny?", "zh": "多好笑？"},
            }
        ],
    }
    study = study_create(slug="graded", rubric_spec=spec, name="Graded")
    Item.objects.create(study=study, external_id="t0", text="joke", source="human")
    return study


def test_the_rater_endpoint_takes_a_slider_value_on_its_grid_only() -> None:
    study = _study(rubric=rubric_create(spec={**SLIDER, "slug": "live-slider"}))
    client, _, assignment = _browser(study)
    before = _stored()
    answers = {"rating": {"value": 0.2, "at_ms": 900}}
    refused = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert refused.status_code == 400
    assert refused.json()["field"] == "answers.rating"
    assert "steps of 1/32" in refused.json()["message"]
    assert _stored() == before
    answers = {"rating": {"value": -3.65625, "at_ms": 900}}
    accepted = _post(client, study, "scorecards", _scorecard(assignment, answers))
    assert accepted.status_code == 201, accepted.content
    assert ScoreAnswer.objects.get().value == -3.65625


def test_a_slider_is_analysed_as_an_interval_scale(jester: Study) -> None:
    lines = [
        {
            "kind": "score",
            "rater": f"r{r}",
            "background": "unknown",
            "item": f"j{i}",
            "rating": (i * 3 + r) / 32 - 1,
        }
        for r in range(4)
        for i in range(3)
    ]
    study_judgments_import(study=jester, data=jsonl(lines), filename="j.jsonl")
    document = study_aggregate(study=jester, rounds=20).payload
    agreement = document["agreement"]["rating"]
    # A continuous answer has no categories: interval alpha only, and the document says why.
    assert agreement["alpha_level"] == "interval"
    assert set(agreement["krippendorff_alpha"]) == {"interval"}
    assert agreement.get("fleiss_kappa") is None
    assert "no categories" in agreement["categories_note"]
    item = next(row for row in document["items"] if row["item"] == "j1")
    expected = sum((3 + r) / 32 - 1 for r in range(4)) / 4
    assert item["questions"]["rating"]["value"] == pytest.approx(expected)


def test_a_slider_is_a_scale_on_the_results_pages_and_for_the_judge(jester: Study) -> None:
    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    from apps.screening.llm_judge import MalformedReply, build_messages, parse_scores, rubric_scales
    from apps.studies.selectors import study_questions

    lines = [
        {"kind": "score", "rater": f"r{r}", "background": "unknown", "item": f"j{i}", "rating": r}
        for r in range(3)
        for i in range(3)
    ]
    study_judgments_import(study=jester, data=jsonl(lines), filename="j.jsonl")
    study_aggregate(study=jester, rounds=20)
    client = Client()
    client.force_login(User.objects.create_superuser("boss", password="pw-boss-1"))
    page = client.get(reverse("dashboard:results_section", args=[jester.slug, "items"]))
    assert page.status_code == 200
    # The slider's column: a sortable heading of its own (before, sliders were left out).
    assert "sort=rating" in page.content.decode()

    scales = rubric_scales(study_questions(study=jester))
    item = Item(text="A joke", language="en", level="single", context=None, scenario="")
    prompt = build_messages(item=item, scales=scales)[1]["content"]
    assert "a number from -10 to 10 in steps of 1/32" in prompt
    assert '"rating": <number>' in prompt
    assert parse_scores('{"rating": -3.65625}', scales) == {"rating": -3.65625}
    with pytest.raises(MalformedReply, match="steps of 1/32"):
        parse_scores('{"rating": 0.2}', scales)


def test_the_report_describes_the_slider_with_its_step(jester: Study) -> None:
    from apps.reports.services import study_report_html

    lines = [
        {"kind": "score", "rater": f"r{r}", "background": "unknown", "item": "j0", "rating": r / 4}
        for r in range(4)
    ]
    study_judgments_import(study=jester, data=jsonl(lines), filename="j.jsonl")
    study_aggregate(study=jester, rounds=20)
    assert "slider -10–10, steps of 1/32" in study_report_html(study=jester, language="en")
    assert "滑块 -10–10，步长 1/32" in study_report_html(study=jester, language="zh-hans")


@pytest.mark.parametrize(
    ("low", "high", "entry", "shown"),
    [
        (1, 7, "", "keys"),
        (0, 100, "", "field"),
        (1, 7, "field", "field"),
        (0, 100, "points", "typed"),
    ],
)
def test_the_study_chooses_points_or_a_field_for_a_likert_question(
    low: int, high: int, entry: str, shown: str
) -> None:
    from apps.assignments.views import _question_view

    spec = {
        "slug": "entry",
        "questions": [
            {
                "name": "q",
                "min_value": low,
                "max_value": high,
                "prompt": {"en": "?", "zh": "？"},
                **({"entry": entry} if entry else {}),
            }
        ],
    }
    rubric = rubric_create(spec=spec)
    question = rubric.questions.get()
    assert _question_view(question)["entry"] == shown
    assert rubric_spec(rubric)["questions"][0].get("entry", "") == entry


def test_only_a_likert_question_chooses_its_entry() -> None:
    spec = json.loads(json.dumps(SLIDER))
    spec["questions"][0]["entry"] = "points"
    with pytest.raises(RubricInvalid) as caught:
        rubric_spec_validate(spec)
    assert caught.value.field == "questions[0].entry"
