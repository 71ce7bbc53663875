"""The method's behavioural signals (would you retell it, would you reply or ask a follow-up):
the built-in rubric asks them after funniness; the results give their rates per item, model and
background group, the model comparison takes them as questions, and their association with
funniness equals an independent computation."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from apps.analysis.services import study_aggregate
from apps.judgments.services import study_judgments_import
from apps.studies.models import Item, Question, Study
from apps.studies.services import study_create

pytestmark = pytest.mark.django_db

VARIANT = "humor-signals"


def test_the_builtin_variant_asks_both_signals_after_funniness_in_both_languages() -> None:
    questions = {q.name: q for q in Question.objects.filter(rubric__slug=VARIANT)}
    assert list(questions) == [
        "surprise",
        "coherence",
        "funniness",
        "offensive",
        "retell",
        "follow_up",
    ]
    for name in ("retell", "follow_up"):
        question = questions[name]
        assert (question.kind, question.min_value, question.max_value) == ("binary", 0, 1)
        assert [q.name for q in question.answered_after.all()] == ["funniness"]
        assert question.prompt["en"].startswith("Would you")
        assert "您" in question.prompt["zh"]


@pytest.fixture
def rated() -> tuple[Study, list[dict[str, Any]]]:
    study = study_create(
        slug="signals",
        rubric_slug=VARIANT,
        name="Signals",
        backgrounds=[("a", {"en": "A", "zh": "甲"}), ("b", {"en": "B", "zh": "乙"})],
    )
    for source in ("gpt-x", "quipster"):
        for i in range(4):
            Item.objects.create(
                study=study, external_id=f"{source}-{i}", text=f"{source} {i}", source=source
            )
    rng = np.random.default_rng(3)
    rows = []
    for r in range(12):
        for source in ("gpt-x", "quipster"):
            for i in range(4):
                funny = int(rng.integers(1, 8))
                rows.append(
                    {
                        "kind": "score",
                        "rater": f"r{r}",
                        "background": "a" if r < 6 else "b",
                        "item": f"{source}-{i}",
                        "surprise": 3,
                        "coherence": 3,
                        "funniness": funny,
                        "offensive": 0,
                        # Funnier jokes are retold more; quipster's get more replies.
                        "retell": int(rng.random() < funny / 8),
                        "follow_up": int(rng.random() < (0.6 if source == "quipster" else 0.2)),
                    }
                )
    data = "\n".join(json.dumps(row) for row in rows).encode()
    study_judgments_import(study=study, data=data, filename="signals.jsonl")
    return study, rows


def test_rates_and_association_equal_an_independent_computation(rated) -> None:
    study, rows = rated
    document = study_aggregate(study=study, rounds=100).payload
    retell = document["signals"]["retell"]
    said = np.array([row["retell"] for row in rows], dtype=float)
    funny = np.array([row["funniness"] for row in rows], dtype=float)
    assert retell["rate"]["value"] == pytest.approx(said.mean())
    assert retell["rate"]["ci_low"] <= said.mean() <= retell["rate"]["ci_high"]
    association = retell["association"]
    difference = funny[said == 1].mean() - funny[said == 0].mean()
    assert association["difference"]["value"] == pytest.approx(difference)
    assert association["correlation"]["value"] == pytest.approx(np.corrcoef(said, funny)[0, 1])
    assert association["correlation"]["ci_low"] > 0
    for name in ("difference", "correlation"):
        entry = association[name]
        assert entry["ci_low"] <= entry["value"] <= entry["ci_high"]
    # The rates per model and background are the group tables' question means.
    for source in ("gpt-x", "quipster"):
        mine = [row["follow_up"] for row in rows if row["item"].startswith(source)]
        table = document["groups"]["source"][source]["questions"]["follow_up"]
        assert table["value"] == pytest.approx(np.mean(mine))
    for group in ("a", "b"):
        mine = [row["retell"] for row in rows if row["background"] == group]
        table = document["groups"]["background"][group]["questions"]["retell"]
        assert table["value"] == pytest.approx(np.mean(mine))
    items = {item["item"]: item for item in document["items"]}
    mine = [row["retell"] for row in rows if row["item"] == "quipster-1"]
    assert items["quipster-1"]["questions"]["retell"]["value"] == pytest.approx(np.mean(mine))
    # The model comparison takes them as questions.
    for source in ("gpt-x", "quipster"):
        questions = document["models"]["by_model"][source]["questions"]
        assert {"retell", "follow_up"} <= set(questions)
    compared = {row["question"] for row in document["models"]["differences"]}
    assert {"retell", "follow_up"} <= compared


def test_a_study_without_the_signals_has_no_signals_section() -> None:
    study = study_create(slug="plain", rubric_slug="humor", name="Plain")
    Item.objects.create(study=study, external_id="a", text="a", source="m")
    assert "signals" not in study_aggregate(study=study, rounds=20).payload


def test_the_report_describes_the_signals_in_both_languages(rated) -> None:
    from apps.reports.services import study_report_html

    study, _ = rated
    study_aggregate(study=study, rounds=50)
    english = study_report_html(study=study, language="en")
    chinese = study_report_html(study=study, language="zh-hans")
    assert "retell" in english.lower()
    assert "follow-up" in english
    assert "复述给朋友" in chinese
    assert "会复述给朋友" in chinese
    assert "追问" in chinese


@pytest.mark.parametrize(
    ("language", "words"), [("en", "Behavioural signals"), ("zh-hans", "行为信号")]
)
def test_the_summary_page_shows_each_signal_with_its_rates(
    rated, django_user_model, language, words
):
    from django.test import Client

    from apps.studies.services import study_member_add

    study, rows = rated
    study_aggregate(study=study, rounds=50)
    user = django_user_model.objects.create_user("res", password="pw-res-12345")
    study_member_add(study=study, user=user)
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/results/?view=all")
    body = page.content.decode()
    assert page.status_code == 200
    assert words in body
    assert 'data-question="retell"' in body
    assert 'data-question="follow_up"' in body
    rate = np.mean([row["follow_up"] for row in rows if row["item"].startswith("quipster")])
    assert f"{100 * rate:.1f}%" in body


@pytest.fixture
def rated_on_quality() -> Study:
    """A custom rubric whose primary question is "quality", with both signals after it."""
    yes_no = {"kind": "binary", "min_value": 0, "max_value": 1, "answered_after": ["quality"]}
    spec = {
        "slug": "quality-signals",
        "name": "Quality and signals",
        "kind": "content",
        "primary": "quality",
        "questions": [
            {
                "name": "quality",
                "kind": "likert",
                "min_value": 1,
                "max_value": 5,
                "prompt": {"en": "How good is it?", "zh": "它有多好？"},
            },
            {**yes_no, "name": "retell", "prompt": {"en": "Retell?", "zh": "复述？"}},
            {**yes_no, "name": "follow_up", "prompt": {"en": "Reply?", "zh": "追问？"}},
        ],
    }
    study = study_create(slug="quality", rubric_spec=spec, name="Quality")
    for i in range(6):
        Item.objects.create(study=study, external_id=f"i{i}", text=f"text {i}", source="m")
    rows = [
        {
            "kind": "score",
            "rater": f"r{r}",
            "background": "technical",
            "item": f"i{i}",
            "quality": 1 + (i + r) % 5,
            "retell": int((i + r) % 5 >= 3),
            "follow_up": int(i % 2),
        }
        for r in range(8)
        for i in range(6)
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    study_judgments_import(study=study, data=data, filename="quality.jsonl")
    return study


def test_signals_are_set_against_the_rubrics_own_primary_question(rated_on_quality) -> None:
    from apps.reports.services import study_report_html

    study = rated_on_quality
    document = study_aggregate(study=study, rounds=50).payload
    entry = document["signals"]["retell"]
    assert entry["against"] == "quality"
    assert {"primary_if_yes", "primary_if_no"} <= set(entry["association"])
    english = study_report_html(study=study, language="en")
    chinese = study_report_html(study=study, language="zh-hans")
    assert "funniness" not in english.lower()
    assert "好笑程度" not in chinese
    assert "quality" in english.lower()


def test_the_summary_page_names_the_primary_question_not_funniness(
    rated_on_quality, django_user_model
) -> None:
    from django.test import Client

    from apps.studies.services import study_member_add

    study_aggregate(study=rated_on_quality, rounds=50)
    user = django_user_model.objects.create_user("res", password="pw-res-12345")
    study_member_add(study=rated_on_quality, user=user)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    body = client.get("/studies/quality/results/?view=all").content.decode()
    signals = body[body.index('id="signals"') :]
    signals = signals[: signals.index("</table>")]
    assert "funniness" not in signals.lower()
    assert "quality" in signals.lower()
