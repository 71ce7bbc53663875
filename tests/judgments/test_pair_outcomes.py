"""Three-way A/B pairs: "about the same" (a tie) and "neither", where the study offers them.

A forced-choice study refuses both and stores nothing; a study that offers them stores the
outcome with no winner; the task page shows exactly the options offered, in both languages;
imports and the raw export carry the outcome.
"""

from __future__ import annotations

import csv
import json

import pytest
from django.test import Client

from apps.assignments.models import Assignment
from apps.core.errors import ImportRejected
from apps.judgments.models import PairJudgment
from apps.judgments.services import study_judgments_import
from apps.raters.models import Rater
from apps.reports.services import export_write
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}


def _pair_study(**fields: object) -> Study:
    values: dict[str, object] = {
        "task_mix": {"pair": 1.0},
        "attention_check_rate": 0,
        "random_seed": 7,
    }
    values.update(fields)
    study = StudyFactory(**values)
    for i in range(4):
        ItemFactory(study=study, external_id=f"j{i}", topic="cats")
    return study


def _browser(study: Study, language: str = "en") -> tuple[Client, Assignment]:
    client = Client(headers={"accept-language": language})
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    rater = Rater.objects.get(pk=client.session[f"laughlab:rater:{study.pk}"])
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    return client, Assignment.objects.get(rater=rater, status=Assignment.Status.PENDING)


def _submit(client: Client, study: Study, assignment: Assignment, winner: str) -> object:
    return client.post(
        f"/api/v1/rater/{study.slug}/pairs",
        data=json.dumps(
            {
                "assignment": assignment.pk,
                "idempotency_key": f"key-{winner}-{assignment.pk:08d}",
                "active_ms": 2500,
                "winner": winner,
            }
        ),
        content_type="application/json",
    )


@pytest.mark.parametrize(("answer", "setting"), [("tie", "tie"), ("neither", "neither")])
def test_a_forced_choice_study_refuses_tie_and_neither_and_stores_nothing(answer, setting):
    study = _pair_study()
    client, pair = _browser(study)
    response = _submit(client, study, pair, answer)
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "winner"
    assert setting in body["message"]
    assert PairJudgment.objects.count() == 0
    pair.refresh_from_db()
    assert pair.status == Assignment.Status.PENDING


@pytest.mark.parametrize("answer", ["tie", "neither"])
def test_an_offered_tie_or_neither_is_stored_as_the_outcome_without_a_winner(answer):
    study = _pair_study(pair_offers_tie=True, pair_offers_neither=True)
    client, pair = _browser(study)
    response = _submit(client, study, pair, answer)
    assert response.status_code == 201, response.content
    stored = PairJudgment.objects.get()
    assert (stored.outcome, stored.winner_id) == (answer, None)
    assert (stored.left_id, stored.right_id) == (pair.item_id, pair.right_item_id)


def test_a_side_is_still_stored_with_its_winner_and_outcome():
    study = _pair_study(pair_offers_tie=True)
    client, pair = _browser(study)
    assert _submit(client, study, pair, "left").status_code == 201
    stored = PairJudgment.objects.get()
    assert (stored.outcome, stored.winner_id) == ("left", pair.item_id)


def test_only_the_offered_tie_is_accepted_when_neither_is_not_offered():
    study = _pair_study(pair_offers_tie=True)
    client, pair = _browser(study)
    assert _submit(client, study, pair, "neither").status_code == 400
    assert _submit(client, study, pair, "tie").status_code == 201


def test_an_unknown_answer_is_refused_naming_the_field():
    study = _pair_study(pair_offers_tie=True, pair_offers_neither=True)
    client, pair = _browser(study)
    response = _submit(client, study, pair, "both")
    assert response.status_code == 400
    assert response.json()["field"] == "winner"
    assert PairJudgment.objects.count() == 0


@pytest.mark.parametrize(
    ("language", "tie", "neither"),
    [
        ("en", "About the same", "Neither is funny, or I don't get them"),
        ("zh-hans", "差不多", "都不好笑，或我看不懂"),
    ],
)
def test_the_task_page_offers_exactly_the_options_the_study_offers(language, tie, neither):
    forced = _pair_study()
    client, _ = _browser(forced, language)
    page = client.get(f"/s/{forced.slug}/task/").content.decode()
    assert 'value="tie"' not in page
    assert 'value="neither"' not in page

    offered = _pair_study(pair_offers_tie=True, pair_offers_neither=True)
    client, _ = _browser(offered, language)
    page = client.get(f"/s/{offered.slug}/task/").content.decode()
    assert 'value="tie" data-key="3"' in page
    assert 'value="neither" data-key="4"' in page
    assert tie in page
    assert neither in page


PAIR = {"kind": "pair", "rater": "r01", "background": "technical", "left": "j0", "right": "j1"}


def _lines(*objects: dict[str, object]) -> bytes:
    return "\n".join(json.dumps(o) for o in objects).encode()


def test_imported_pairs_carry_ties_and_neither_with_or_without_a_winner_column():
    study = _pair_study()
    data = _lines(
        {**PAIR, "outcome": "tie"},
        {**PAIR, "rater": "r02", "winner": "j1"},
        {**PAIR, "rater": "r03", "outcome": "left"},
        {**PAIR, "rater": "r04", "outcome": "neither", "winner": ""},
        {**PAIR, "rater": "r05", "outcome": "right", "winner": "j1"},
    )
    study_judgments_import(study=study, data=data, filename="pairs.jsonl")
    stored = {
        rater: (outcome, winner)
        for rater, outcome, winner in PairJudgment.objects.values_list(
            "rater__external_id", "outcome", "winner__external_id"
        )
    }
    assert stored == {
        "r01": ("tie", None),
        "r02": ("right", "j1"),
        "r03": ("left", "j0"),
        "r04": ("neither", None),
        "r05": ("right", "j1"),
    }
    # The same file again is recognised line by line: nothing new, nothing contradicted.
    study_judgments_import(study=study, data=data, filename="pairs.jsonl")
    assert PairJudgment.objects.count() == 5


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ({**PAIR, "outcome": "tie", "winner": "j0"}, "winner", "must be empty when the outcome"),
        ({**PAIR, "outcome": "left", "winner": "j1"}, "winner", "is the right item"),
        ({**PAIR, "outcome": "draw"}, "outcome", "must be one of"),
        (PAIR, "winner", "is required"),
    ],
)
def test_a_pair_line_whose_outcome_and_winner_disagree_names_line_and_field(line, field, message):
    study = _pair_study()
    with pytest.raises(ImportRejected) as info:
        study_judgments_import(study=study, data=_lines(line), filename="pairs.jsonl")
    errors = [(e.line, e.field, e.message) for e in info.value.errors]
    assert len(errors) == 1
    assert errors[0][:2] == (1, field)
    assert message in errors[0][2]
    assert PairJudgment.objects.count() == 0


def test_the_raw_export_gives_the_outcome_as_the_side_chosen_and_no_winner(tmp_path):
    study = _pair_study()
    study_judgments_import(
        study=study,
        data=_lines({**PAIR, "outcome": "tie"}, {**PAIR, "rater": "r02", "winner": "j0"}),
        filename="pairs.jsonl",
    )
    path = tmp_path / "raw.csv"
    export_write(study=study, fmt="raw", path=path)
    with path.open(encoding="utf-8", newline="") as stream:
        rows = {row["rater"]: row for row in csv.DictReader(stream)}
    assert (rows["r01"]["side_chosen"], rows["r01"]["winner"]) == ("tie", "")
    assert (rows["r02"]["side_chosen"], rows["r02"]["winner"]) == ("left", "j0")
