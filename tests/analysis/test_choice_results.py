"""Choice questions in the results: shares per option with intervals, named in the reader's
language; never a mean of the options' indices in the items, groups or model tables."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from apps.analysis.services import study_aggregate
from apps.judgments.services import study_judgments_import
from apps.reports.tables import result_table
from apps.studies.models import Item, Study
from apps.studies.services import study_create

pytestmark = pytest.mark.django_db

RUBRIC = {
    "slug": "grade-mood",
    "questions": [
        {
            "name": "grade",
            "min_value": 0,
            "max_value": 3,
            "prompt": {"en": "Funny?", "zh": "好笑吗？"},
        },
        {
            "name": "mood",
            "kind": "choice",
            "prompt": {"en": "Its mood?", "zh": "它的情绪？"},
            "choices": [
                {"en": "Gentle", "zh": "温和"},
                {"en": "Dry", "zh": "冷幽默"},
                {"en": "Biting", "zh": "尖刻"},
            ],
        },
    ],
}


@pytest.fixture
def rated() -> tuple[Study, list[dict[str, object]]]:
    study = study_create(slug="moods", rubric_spec=RUBRIC, name="Moods", backgrounds=[])
    for source in ("gpt-x", "quipster"):
        for i in range(4):
            Item.objects.create(
                study=study, external_id=f"{source}-{i}", text=f"{source} {i}", source=source
            )
    rng = np.random.default_rng(3)
    rows = [
        {
            "kind": "score",
            "rater": f"r{r}",
            "background": "unknown",
            "item": f"{source}-{i}",
            "grade": int(rng.integers(0, 4)),
            "mood": int(rng.choice(3, p=[0.6, 0.3, 0.1] if source == "gpt-x" else [0.2, 0.3, 0.5])),
        }
        for r in range(10)
        for source in ("gpt-x", "quipster")
        for i in range(4)
    ]
    data = "\n".join(json.dumps(row) for row in rows).encode()
    study_judgments_import(study=study, data=data, filename="moods.jsonl")
    return study, rows


def test_choice_shares_equal_an_independent_count_and_no_index_mean_is_made(rated) -> None:
    study, rows = rated
    document = study_aggregate(study=study, rounds=50).payload
    mood = document["choices"]["mood"]
    assert mood["options"] == 3
    assert mood["names"] == ["Gentle", "Dry", "Biting"]
    for source in ("gpt-x", "quipster"):
        mine = [row["mood"] for row in rows if str(row["item"]).startswith(source)]
        for option in range(3):
            cell = mood["by_source"][source][option]
            assert cell["value"] == pytest.approx(mine.count(option) / len(mine))
            assert cell["ci_low"] <= cell["value"] <= cell["ci_high"]
    assert sum(cell["value"] for cell in mood["overall"]) == pytest.approx(1.0)
    first = next(row for row in mood["items"] if row["item"] == "gpt-x-0")
    answers = [row["mood"] for row in rows if row["item"] == "gpt-x-0"]
    assert first["counts"] == [answers.count(k) for k in range(3)]
    # No mean of option indices anywhere a mean is shown or exported.
    assert "mood" not in document["items"][0]["questions"]
    assert "mood" not in document["groups"]["source"]["gpt-x"]["questions"]
    assert "grade" in document["groups"]["source"]["gpt-x"]["questions"]
    # The export names the options.
    shares = {
        row["subject"]: row
        for row in result_table(document, "diagnostics").as_dicts()
        if row["measure"] == "choice_share"
    }
    biting = mood["by_source"]["quipster"][2]["value"]
    assert shares["mood=Biting source=quipster"]["value"] == biting
    assert "mood=Gentle" in shares


@pytest.mark.parametrize(
    ("language", "names"),
    [("en", ["Gentle", "Dry", "Biting"]), ("zh-hans", ["温和", "冷幽默", "尖刻"])],
)
def test_the_summary_page_names_the_choices_in_the_readers_language(
    rated, language: str, names: list[str]
) -> None:
    study, _ = rated
    study_aggregate(study=study, rounds=20)
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(User.objects.create_superuser("boss", password="pw-boss-1"))
    client.cookies["django_language"] = language
    page = client.get(reverse("dashboard:results", args=[study.slug])).content.decode()
    table = page[page.index('class="table compact choice-shares"') :]
    table = table[: table.index("</table>")]
    for name in names:
        assert f">{name}</th>" in table


def test_the_report_names_the_choices_and_says_a_slider_and_not_understood(rated) -> None:
    from apps.reports.services import study_report_html

    study, _ = rated
    study_aggregate(study=study, rounds=20)
    html = study_report_html(study=study)
    section = html[html.index('<section id="choices">') :]
    section = section[: section.index("</section>")]
    for name in ("Gentle", "Dry", "Biting"):
        assert f">{name}</th>" in section
