"""The results split by item language and by the languages raters read: stored in the results'
groups, checked against means computed here from the raw answers, and shown on the results
pages and in the printable report."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest
from django.test import Client

from apps.analysis.services import study_aggregate
from apps.judgments.models import ScoreAnswer, ScoreResponse
from apps.raters.models import Rater
from apps.raters.services import rater_enroll
from apps.studies.models import Item, Question, Study
from apps.studies.services import study_create
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db

READERS = {"en": 4, "zh": 4, "en+zh": 3}


@pytest.fixture
def study(django_user_model) -> Study:
    """English and Chinese items, rated by English, Chinese and bilingual readers, each rater
    with their own leniency so the rater-language means differ."""
    owner = django_user_model.objects.create_user("owner", password="pw-owner-123")
    study = study_create(slug="bilingual", rubric_slug="humor", owner=owner, random_seed=16)
    items = {
        language: [
            ItemFactory(study=study, external_id=f"{language}{k}", language=language)
            for k in range(5)
        ]
        for language in ("en", "zh")
    }
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    study.refresh_from_db()
    questions = {q.name: q for q in Question.objects.filter(rubric=study.rubric)}
    rng = np.random.default_rng(16)
    n = 0
    for key, count in READERS.items():
        for _ in range(count):
            n += 1
            reads = key.split("+")
            rater = rater_enroll(
                study=study,
                background=["technical", "content_operations"][n % 2],
                age_band="25-34",
                consent=True,
                languages=reads,
                external_id=f"r{n:02d}",
            ).rater
            session = rater.sessions.get()
            lenient = {"en": 0, "zh": 2, "en+zh": 1}[key]
            for language in reads:
                for item in items[language]:
                    response = ScoreResponse.objects.create(
                        study=study,
                        rater=rater,
                        session=session,
                        item=item,
                        idempotency_key=f"{rater.pk}-{item.pk}",
                        seconds_into_session=10.0,
                    )
                    values = {
                        "surprise": int(rng.integers(1, 6)),
                        "coherence": int(rng.integers(1, 6)),
                        "funniness": min(7, int(rng.integers(1, 6)) + lenient),
                        "offensive": 0,
                    }
                    ScoreAnswer.objects.bulk_create(
                        ScoreAnswer(response=response, question=questions[name], value=value)
                        for name, value in values.items()
                    )
    return study


def _means_by(label_of_response) -> dict[str, float]:  # type: ignore[no-untyped-def]
    values: dict[str, list[int]] = defaultdict(list)
    for answer in ScoreAnswer.objects.filter(question__name="funniness").select_related(
        "response__item", "response__rater"
    ):
        values[label_of_response(answer.response)].append(answer.value)
    return {key: float(np.mean(v)) for key, v in values.items()}


def test_results_hold_means_by_item_language_equal_to_the_raw_means(study):
    payload = study_aggregate(study=study, rounds=200, seed=3).payload
    by_language = payload["groups"]["language"]
    assert set(by_language) == {"en", "zh"}
    assert {k: v["n_items"] for k, v in by_language.items()} == {"en": 5, "zh": 5}
    expected = _means_by(lambda response: response.item.language)
    for language, entry in by_language.items():
        funniness = entry["questions"]["funniness"]
        assert funniness["value"] == pytest.approx(expected[language])
        assert funniness["ci_low"] <= funniness["value"] <= funniness["ci_high"]
    items = {item["item"]: item for item in payload["items"]}
    assert items["en0"]["language"] == "en"
    assert items["zh4"]["language"] == "zh"


def test_results_hold_means_by_rater_language_equal_to_the_raw_means(study):
    payload = study_aggregate(study=study, rounds=200, seed=3).payload
    by_rater = payload["groups"]["rater_language"]
    assert {k: v["n_raters"] for k, v in by_rater.items()} == READERS
    expected = _means_by(lambda response: "+".join(response.rater.languages))
    for key, entry in by_rater.items():
        funniness = entry["questions"]["funniness"]
        assert funniness["value"] == pytest.approx(expected[key])
        assert funniness["ci_low"] <= funniness["value"] <= funniness["ci_high"]
    # The leniency planted per rater language comes out in that order.
    means = {key: entry["questions"]["funniness"]["value"] for key, entry in by_rater.items()}
    assert means["zh"] > means["en+zh"] > means["en"]


def test_raters_who_stated_no_languages_are_their_own_group(study):
    Rater.objects.filter(external_id="r01").update(languages=[])
    by_rater = study_aggregate(study=study, rounds=50, seed=3).payload["groups"]["rater_language"]
    assert by_rater["unstated"]["n_raters"] == 1
    assert by_rater["en"]["n_raters"] == READERS["en"] - 1


def test_a_raters_languages_are_one_group_whatever_their_stored_order(study):
    bilingual = [r for r in Rater.objects.filter(study=study) if len(r.languages) == 2]
    Rater.objects.filter(pk=bilingual[0].pk).update(languages=["zh", "en"])
    Rater.objects.filter(pk=bilingual[1].pk).update(languages=["en", "zh", "en"])
    by_rater = study_aggregate(study=study, rounds=20, seed=3).payload["groups"]["rater_language"]
    assert {name: group["n_raters"] for name, group in by_rater.items()} == READERS


def test_a_rater_languages_change_changes_the_input_hash(study):
    first = study_aggregate(study=study, rounds=20, seed=3).input_hash
    Rater.objects.filter(external_id="r01").update(languages=["en", "zh"])
    assert study_aggregate(study=study, rounds=20, seed=3).input_hash != first
    Item.objects.filter(external_id="en0").update(language="zh")
    assert study_aggregate(study=study, rounds=20, seed=3).input_hash != first


def _client(study: Study, language: str = "en") -> Client:
    client = Client(headers={"accept-language": language})
    client.force_login(study.memberships.get().user)
    return client


@pytest.mark.parametrize(
    ("language", "titles", "names"),
    [
        (
            "en",
            ("By item language", "By rater language"),
            ("English", "Chinese", "English + Chinese"),
        ),
        ("zh-hans", ("按内容语言", "按评分者语言"), ("英语", "中文", "英语 + 中文")),
    ],
)
def test_the_summary_page_shows_both_splits_with_the_stored_numbers(study, language, titles, names):
    from apps.findings.charts import fmt_ci

    payload = study_aggregate(study=study, rounds=50, seed=3).payload
    body = _client(study, language).get(f"/studies/{study.slug}/results/?view=all").content.decode()
    for title in titles:
        assert title in body
    for name in names:
        assert f">{name}</th>" in body
    for dimension in ("language", "rater_language"):
        table = re.search(rf'data-dimension="{dimension}".*?</table>', body, re.S)
        assert table is not None
        for key, entry in payload["groups"][dimension].items():
            row = re.search(rf'<tr data-group="{re.escape(key)}">.*?</tr>', table.group(0), re.S)
            assert row is not None, key
            assert fmt_ci(entry["questions"]["funniness"]) in row.group(0)


def test_the_items_page_shows_each_items_language_and_filters_by_it(study):
    study_aggregate(study=study, rounds=20, seed=3)
    client = _client(study)
    body = client.get(f"/studies/{study.slug}/results/items/?view=all").content.decode()
    assert '<td data-language="zh">Chinese</td>' in body
    assert '<select name="language">' in body
    only_zh = client.get(
        f"/studies/{study.slug}/results/items/?view=all&language=zh"
    ).content.decode()
    shown = set(re.findall(r'<tr data-item="([^"]+)"', only_zh))
    assert shown == {f"zh{k}" for k in range(5)}


def test_the_printable_report_has_both_splits(study, tmp_path):
    from apps.reports.services import export_write

    study_aggregate(study=study, rounds=20, seed=3)
    path = tmp_path / "report.html"
    export_write(study=study, fmt="report-html", path=path)
    html = path.read_text(encoding="utf-8")
    assert "By item language" in html
    assert "By rater language" in html
    assert "English + Chinese" in html
