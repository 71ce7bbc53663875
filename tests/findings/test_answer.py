"""The study's answer in words (apps/findings/answer.py): what it says for separated and
unseparated sources, its caveats, both languages, and on the Models page every number in it is
the differences table's."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import translation

from apps.analysis.services import study_aggregate
from apps.findings.answer import strength_of, study_answer
from apps.findings.charts import fmt, fmt_p_stated
from apps.findings.document import default_items_view, shown_document
from apps.reports import services
from apps.studies.services import study_member_add


def _interval(value: float, low: float, high: float, **extra: Any) -> dict[str, Any]:
    return {"value": value, "ci_low": low, "ci_high": high, **extra}


def _view() -> dict[str, Any]:
    """Three sources: laughter-7b clearly above quipster-v2; quipster-v2 and the human items
    not separated; laughter-7b's P(beats) stored the other way round (b − a)."""
    return {
        "by_model": {
            "laughter-7b": {"n_raters": 30, "questions": {"funniness": _interval(3.61, 3.3, 3.9)}},
            "quipster-v2": {"n_raters": 30, "questions": {"funniness": _interval(2.67, 2.3, 3.0)}},
            "human": {"n_raters": 30, "questions": {"funniness": _interval(2.80, 2.5, 3.1)}},
        },
        "differences": [
            {"a": "laughter-7b", "b": "quipster-v2", "question": "funniness",
             **_interval(0.94, 0.45, 1.42), "p_holm": 0.0004},
            {"a": "quipster-v2", "b": "human", "question": "funniness",
             **_interval(-0.13, -0.52, 0.26), "p_holm": 0.51},
            {"a": "laughter-7b", "b": "human", "question": "funniness",
             **_interval(0.81, 0.10, 1.52), "p_holm": 0.03},
            {"a": "quipster-v2", "b": "laughter-7b", "question": "bt",
             **_interval(-0.8, -1.2, -0.4), "p_holm": 0.001,
             "p_a_beats_b": _interval(0.31, 0.20, 0.42)},
        ],
    }  # fmt: skip


def _answer(**overrides: Any):  # type: ignore[no-untyped-def]
    kwargs: dict[str, Any] = {
        "question": "funniness",
        "scale": (1.0, 7.0),
        "humor": True,
        "view_label": "the whole study",
        "warnings": [
            {"code": "too_few_items", "subject": "laughter-7b",
             "params": {"model": "laughter-7b", "n": 28, "min": 30}},
        ],
        "not_evidence": 3,
        "evidence_only": False,
        "exclusions": 0,
    }  # fmt: skip
    kwargs.update(overrides)
    return study_answer(_view(), **kwargs)


def test_a_separated_pair_says_who_is_funnier_by_how_much_how_sure_and_p_beats():
    with translation.override("en"):
        answer = _answer()
    # In the order of the means: laughter-7b, human, quipster-v2.
    assert [(s.a, s.b) for s in answer.statements] == [
        ("laughter-7b", "human"),
        ("laughter-7b", "quipster-v2"),
        ("human", "quipster-v2"),
    ]
    first = answer.statements[1]
    assert (first.separated, first.strength) == (True, "very_strong")
    assert first.text.startswith(
        "laughter-7b is funnier than quipster-v2 by 0.94 points on the 1–7 scale [0.45, 1.42]"
    )
    # Stored as quipster-v2 − laughter-7b: turned round, 1 − 31% [20, 42] = 69% [58, 80].
    assert "P(a joke of laughter-7b beats one of quipster-v2) 69% [58%, 80%]" in first.text
    assert "Very strong evidence (p < 0.001, Holm)." in first.text


def test_an_unseparated_pair_is_said_not_to_be_separated_and_not_ranked():
    with translation.override("en"):
        answer = _answer()
    pair = next(s for s in answer.statements if {s.a, s.b} == {"quipster-v2", "human"})
    assert not pair.separated
    assert pair.strength == "none"
    # The higher mean comes first (human 2.80 over quipster-v2 2.67), never "funnier".
    assert pair.text == (
        "The evidence does not separate human and quipster-v2 on funniness: the "
        "difference is 0.13 [-0.26, 0.52] (p = 0.510, Holm)."
    )


def test_every_caveat_that_touches_the_numbers_is_said_beside_them():
    with translation.override("en"):
        answer = _answer()
        applied = _answer(evidence_only=True, exclusions=4)
    text = " ".join(answer.caveats)
    assert "laughter-7b has 28 rated items; at least 30 are needed" in text
    assert "include 3 items that are not evidence about their model" in text
    assert "No rater or answer is excluded." in text
    applied_text = " ".join(applied.caveats)
    assert "leave out 3 items" in applied_text
    assert "4 recorded exclusions are left out" in applied_text
    assert "(the whole study; means with items and raters random" in answer.headline


def test_the_answer_reads_in_chinese_with_the_same_numbers():
    with translation.override("zh-hans"):
        answer = _answer()
    first = answer.statements[1]
    assert "0.94" in first.text
    assert "[0.45, 1.42]" in first.text
    assert "69% [58%, 80%]" in first.text
    assert "比" in first.text
    assert not re.search(r"\b(is|funnier|than|points|evidence|beats)\b", first.text)
    assert not re.search(r"\b(items|include|excluded)\b", " ".join(answer.caveats))


def test_strength_of_evidence_follows_the_holm_p_value():
    assert [strength_of(p) for p in (0.0001, 0.005, 0.04, 0.2, None)] == [
        "very_strong",
        "strong",
        "moderate",
        "none",
        "none",
    ]


def test_one_source_or_no_primary_question_gives_no_answer():
    view = _view()
    view["by_model"] = {"human": view["by_model"]["human"]}
    assert study_answer(view, question="funniness", scale=None, humor=True, view_label="") is None
    assert study_answer(_view(), question=None, scale=None, humor=True, view_label="") is None


@pytest.mark.django_db
def test_on_the_models_page_every_number_of_the_answer_is_the_tables(demo_study, django_user_model):
    result = study_aggregate(study=demo_study, rounds=50)
    user = django_user_model.objects.create_user("researcher", password="pw-researcher-1")
    study_member_add(study=demo_study, user=user)
    client = Client()
    client.force_login(user)
    page = html.unescape(client.get(f"/studies/{demo_study.slug}/results/models/").content.decode())
    block = re.search(r'<section class="answer".*?</section>', page, re.S)
    assert block, "the Models page does not open with the answer"
    assert page.index('class="answer"') < page.index("models-table")
    shown = shown_document(
        result.payload,
        default_items_view(exclude_items_not_evidence=demo_study.exclude_items_not_evidence),
    )
    differences = shown["models"]["differences"]
    statements = re.findall(r'<li data-a="([^"]+)" data-b="([^"]+)"[^>]*>(.*?)</li>', block[0])
    assert statements
    for a, b, text in statements:
        row = next(
            d for d in differences if d["question"] == "funniness" and {d["a"], d["b"]} == {a, b}
        )
        sign = 1 if row["a"] == a else -1
        low, high = sorted((sign * row["ci_low"], sign * row["ci_high"]))
        for number in (fmt(sign * row["value"]), fmt(low), fmt(high), fmt_p_stated(row["p_holm"])):
            assert number in text, (number, text)
        # The table shows the same row with the same p.
        table_row = re.search(
            rf'<tr data-a="{re.escape(row["a"])}" data-b="{re.escape(row["b"])}" '
            rf'data-question="funniness">(.*?)</tr>',
            page,
            re.S,
        )
        assert table_row
        assert fmt_p_stated(row["p_holm"]).removeprefix("p = ").removeprefix("p ") in table_row[1]


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_report_opens_with_the_same_answer_as_the_models_page(
    demo_study, django_user_model, language
):
    study_aggregate(study=demo_study, rounds=30)
    user = django_user_model.objects.create_user("researcher", password="pw-researcher-1")
    study_member_add(study=demo_study, user=user)
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    client.post("/i18n/setlang/", {"language": language})
    page = html.unescape(client.get(f"/studies/{demo_study.slug}/results/models/").content.decode())
    report = html.unescape(services.study_report_html(study=demo_study, language=language))
    statements = re.compile(r'<li data-a="[^"]+" data-b="[^"]+"[^>]*>(.*?)</li>', re.S)
    on_page = statements.findall(re.search(r'<section class="answer".*?</section>', page, re.S)[0])
    in_report = statements.findall(
        re.search(r'<section class="answer".*?</section>', report, re.S)[0]
    )
    assert on_page
    assert in_report == on_page
    assert report.index('class="answer"') < report.index('id="method"')
