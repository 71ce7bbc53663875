"""The rubric's primary question drives every stage that used to assume `funniness`: the LLM
judge's sieve and comparison, the FunnyScore calibration, the tiers, the results document and
the pages that name it; the judge asks the rubric's own questions in the item's language."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.analysis.services import study_aggregate
from apps.core.errors import DomainError
from apps.judgments.services import study_judgments_import
from apps.screening.llm_judge import build_messages, rubric_scales
from apps.screening.models import JudgeVerdict
from apps.screening.services import runs
from apps.screening.services.calibration import funnyscore_calibrate_request
from apps.screening.services.judge import judge_comparison_compute
from apps.studies.models import Item, Rubric, Study
from apps.studies.rubrics import RubricInvalid, rubric_spec, rubric_spec_validate
from apps.studies.selectors import study_questions
from apps.studies.services import study_create
from tests.screening import test_judge
from tests.screening.test_runs import features_for
from tests.screening.test_sieve import add, outcomes, run_past_features

pytestmark = pytest.mark.django_db

fake_judge = test_judge.fake_judge
configured = test_judge.configured

# A researcher's own humor rubric: its headline question is "grade" (0-3), asked after "mood".
RUBRIC: dict[str, Any] = {
    "slug": "crowd-grade",
    "name": "Crowd grade",
    "kind": "humor",
    "primary": "grade",
    "questions": [
        {
            "name": "mood",
            "kind": "likert",
            "min_value": 1,
            "max_value": 5,
            "prompt": {"en": "How cheerful is it?", "zh": "有多欢快？"},
        },
        {
            "name": "grade",
            "kind": "likert",
            "min_value": 0,
            "max_value": 3,
            "prompt": {"en": "How funny is it?", "zh": "有多好笑？"},
            "anchors": {
                "en": {"0": "Not funny", "3": "Very funny"},
                "zh": {"0": "不好笑", "3": "很好笑"},
            },
        },
    ],
}


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def custom(owner) -> Study:
    return study_create(slug="crowd", rubric_spec=RUBRIC, name="Crowd", owner=owner)


def graded(study: Study, n_items: int, raters: int = 3) -> None:
    """n_items human items in the study, each graded by `raters` raters."""
    lines = []
    for i in range(n_items):
        Item.objects.create(
            study=study, external_id=f"t{i}", text=f"joke number {i}", source="human"
        )
        for r in range(raters):
            lines.append(
                {
                    "kind": "score",
                    "rater": f"r{r}",
                    "background": "unknown",
                    "item": f"t{i}",
                    "grade": (i + r) % 4,
                    "mood": 3,
                }
            )
    study_judgments_import(
        study=study, data="\n".join(json.dumps(line) for line in lines).encode(), filename="j.jsonl"
    )


def test_a_rubric_names_its_primary_question_and_the_builtins_name_theirs(custom) -> None:
    assert custom.rubric.primary_question == "grade"
    assert Rubric.objects.get(slug="humor").primary_question == "funniness"
    assert Rubric.objects.get(slug="content").primary_question == "overall"
    assert rubric_spec(custom.rubric)["primary"] == "grade"
    # Without a name: funniness, else overall, else the last scale question.
    unnamed = {key: value for key, value in RUBRIC.items() if key != "primary"}
    assert rubric_spec_validate(unnamed)["primary"] == "grade"


@pytest.mark.parametrize(
    ("primary", "message"),
    [
        ("nope", "must name one of the rubric's questions"),
        ("flag", "'flag' is a binary question"),
        (3, "must name one of the rubric's questions"),
    ],
)
def test_a_primary_question_that_is_not_a_scale_of_the_rubric_is_refused(
    primary: object, message: str
) -> None:
    spec = json.loads(json.dumps(RUBRIC))
    spec["questions"].append(
        {"name": "flag", "kind": "binary", "prompt": {"en": "Offensive?", "zh": "冒犯吗？"}}
    )
    spec["primary"] = primary
    with pytest.raises(RubricInvalid) as caught:
        rubric_spec_validate(spec)
    assert caught.value.field == "primary"
    assert message in caught.value.message


def test_the_calibration_counts_ratings_of_the_primary_question(custom) -> None:
    graded(custom, 5)
    with pytest.raises(DomainError) as caught:
        funnyscore_calibrate_request(study=custom)
    # Before: "only 0 items have human funniness ratings".
    assert "only 5 items have human ratings of grade" in caught.value.message


def test_the_judge_comparison_follows_the_primary_question(custom) -> None:
    graded(custom, 6)
    for item in Item.objects.filter(study=custom):
        JudgeVerdict.objects.create(
            item=item,
            model_name="jester-judge-1",
            status=JudgeVerdict.Status.OK,
            scores={"mood": 3, "grade": int(item.external_id[1:]) % 4},
        )
    comparison = judge_comparison_compute(
        study=custom, model_name="jester-judge-1", seed=1, rounds=50
    )
    assert comparison.payload["question"] == "grade"
    assert comparison.payload["overall"]["n"] == 6


def test_the_judge_sieves_on_the_primary_question_on_its_own_scale(
    owner, configured, django_capture_on_commit_callbacks
) -> None:
    study = study_create(slug="sieve-grade", rubric_spec=RUBRIC, name="Sieve", owner=owner)
    for i in range(3):
        features_for(add(study, f"m-{i}", "quipster", f"joke {i}"), 3.0 - i, 0.5, 0.0)

    def respond(text: str) -> test_judge.Reply:
        grade = 0 if "joke 1" in text else 3
        return test_judge.Reply(content=json.dumps({"mood": 2, "grade": grade}))

    configured.respond = respond
    # The default minimum sits a third of the way up the primary question's own scale.
    default = runs.sieve_settings_parse(study=study, judge_model="m")
    assert default.judge_min == pytest.approx(1.0)
    with pytest.raises(DomainError) as caught:
        runs.sieve_settings_parse(study=study, judge_model="m", judge_min=7)
    assert "judge_min must be from 0 to 3" in caught.value.message

    run = run_past_features(study, top_k=5, l1_keep=3, judge_min=1)
    with django_capture_on_commit_callbacks(execute=True):
        runs._advance(run.pk)
    got = outcomes(run)
    assert (got["m-1"].kept, got["m-1"].stage, got["m-1"].judge_score) == (False, "judge", 0.0)
    assert got["m-1"].reason == f"LLM judge {test_judge.MODEL}: grade 0 below 1"
    assert got["m-0"].judge_score == 3.0
    assert "did not sieve" not in got["m-0"].reason


def test_the_judge_asks_the_rubric_in_the_items_language(custom) -> None:
    scales = rubric_scales(study_questions(study=custom))
    chinese = Item(text="程序员的笑话", language="zh", level="single", context=None, scenario="")
    content = build_messages(item=chinese, scales=scales)[1]["content"]
    assert '"grade": 有多好笑？ (0 到 3 的整数; 0 = 不好笑，3 = 很好笑)' in content
    assert "请为下面这条笑话打分" in content
    english = Item(text="A joke", language="en", level="single", context=None, scenario="")
    content = build_messages(item=english, scales=scales)[1]["content"]
    assert '"grade": How funny is it? (an integer from 0 to 3; 0 = Not funny, 3 = Very funny)' in (
        content
    )


def test_results_and_pages_name_the_primary_question(custom, owner) -> None:
    graded(custom, 4)
    result = study_aggregate(study=custom)
    assert result.payload["primary_question"] == "grade"
    client = Client()
    client.force_login(owner)
    page = client.get(reverse("dashboard:results_section", args=[custom.slug, "agreement"]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "flagged on grade" in text
    assert "flagged on funniness" not in text
