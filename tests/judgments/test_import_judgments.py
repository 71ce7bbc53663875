from __future__ import annotations

import json

import pytest

from apps.core.errors import ImportRejected
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.judgments.services import study_judgments_import
from apps.raters.models import Rater, RaterSession
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    study = StudyFactory()
    ItemFactory(study=study, external_id="j1", explanation="It is a pun on 'byte'.")
    ItemFactory(study=study, external_id="j2", source="human")
    ItemFactory(study=study, external_id="j3")
    return study


SCORE = {
    "kind": "score",
    "rater": "r01",
    "background": "technical",
    "item": "j1",
    "surprise": 4,
    "coherence": 4,
    "funniness": 5,
    "offensive": 0,
    "seconds_into_session": 30.0,
    "submitted_at": "2026-11-20T10:00:30+00:00",
}
PAIR = {
    "kind": "pair",
    "rater": "r01",
    "background": "technical",
    "left": "j1",
    "right": "j2",
    "winner": "j2",
    "seconds_into_session": 90,
    "submitted_at": "2026-11-20T10:01:30+00:00",
}
TURING = {
    "kind": "turing",
    "rater": "r02",
    "background": "content_operations",
    "age_band": "25-34",
    "item": "j3",
    "guess": "ai",
}


def jsonl(*objects: object) -> bytes:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects).encode()


def counts() -> tuple[int, int, int, int, int, int]:
    return (
        ScoreResponse.objects.count(),
        ScoreAnswer.objects.count(),
        PairJudgment.objects.count(),
        TuringJudgment.objects.count(),
        Rater.objects.count(),
        RaterSession.objects.count(),
    )


def rejected(study, data: bytes, filename: str = "judgments.jsonl") -> list[tuple[int, str, str]]:  # type: ignore[no-untyped-def]
    before = counts()
    with pytest.raises(ImportRejected) as info:
        study_judgments_import(study=study, data=data, filename=filename)
    assert counts() == before, "a rejected import must write nothing"
    return [(e.line, e.field, e.message) for e in info.value.errors]


def test_good_file_creates_judgments_raters_and_sessions(study):
    summary = study_judgments_import(
        study=study, data=jsonl(SCORE, PAIR, TURING), filename="j.jsonl"
    )
    assert summary.created == {"score": 1, "pair": 1, "turing": 1}
    assert summary.raters_created == 2
    response = ScoreResponse.objects.get()
    assert {a.question.name: a.value for a in response.answers.all()} == {
        "surprise": 4,
        "coherence": 4,
        "funniness": 5,
        "offensive": 0,
    }
    assert response.seconds_into_session == 30.0
    assert response.origin == "imported"
    r01 = Rater.objects.get(external_id="r01")
    assert r01.background.code == "technical"
    assert r01.origin == "imported"
    session = RaterSession.objects.get(rater=r01)
    # The session starts at the earliest submission minus its time into the session.
    assert session.started_at.isoformat() == "2026-11-20T10:00:00+00:00"
    assert session.end_reason == "imported"
    assert Rater.objects.get(external_id="r02").age_band == "25-34"
    pair = PairJudgment.objects.get()
    assert (pair.left.external_id, pair.right.external_id, pair.winner.external_id) == (
        "j1",
        "j2",
        "j2",
    )


def test_importing_the_same_file_twice_creates_no_duplicates(study):
    study_judgments_import(study=study, data=jsonl(SCORE, PAIR, TURING), filename="j.jsonl")
    before = counts()
    summary = study_judgments_import(
        study=study, data=jsonl(SCORE, PAIR, TURING), filename="j.jsonl"
    )
    assert summary.total_created == 0
    assert summary.unchanged == 3
    assert counts() == before


def test_scorecard_may_omit_questions(study):
    line = {k: v for k, v in SCORE.items() if k != "coherence"}
    study_judgments_import(study=study, data=jsonl(line), filename="j.jsonl")
    assert sorted(ScoreAnswer.objects.values_list("question__name", flat=True)) == [
        "funniness",
        "offensive",
        "surprise",
    ]


@pytest.mark.parametrize(
    ("bad_line", "field", "fragment"),
    [
        (dict(SCORE, item="nope"), "item", "not in this study"),
        (dict(SCORE, funniness=8), "funniness", "must be from 1 to 7, got 8"),
        (dict(SCORE, surprise=0), "surprise", "must be from 1 to 5"),
        (dict(SCORE, offensive=2), "offensive", "must be from 0 to 1"),
        (dict(SCORE, funniness="very"), "funniness", "must be an integer"),
        (dict(SCORE, funniness=4.5), "funniness", "must be an integer"),
        (dict(SCORE, background="astronauts"), "background", "not a background group"),
        (dict(SCORE, funnyness=3), "funnyness", "not a known field"),
        ({k: v for k, v in SCORE.items() if k != "rater"}, "rater", "is required"),
        (dict(SCORE, kind="vote"), "kind", "must be one of"),
        (dict(SCORE, seconds_into_session=-1), "seconds_into_session", "at least 0"),
        (dict(SCORE, submitted_at="yesterday"), "submitted_at", "ISO-8601"),
        (dict(SCORE, age_band="teen"), "age_band", "must be one of"),
        (
            {"kind": "score", "rater": "r9", "background": "technical", "item": "j1"},
            "(line)",
            "answers none",
        ),
        (dict(SCORE, item="j2", explanation_match="yes"), "explanation_match", "no explanation"),
        (dict(PAIR, winner="j3"), "winner", "must be the left"),
        (dict(PAIR, right="j1", winner="j1"), "right", "must differ"),
        (dict(PAIR, left="zz"), "left", "not in this study"),
        (dict(TURING, guess="robot"), "guess", "must be one of"),
        ('{"kind": "score", ', "(line)", "not valid JSON"),
    ],
)
def test_bad_line_is_reported_with_line_and_field_and_nothing_is_written(
    study, bad_line, field, fragment
):
    errors = rejected(study, jsonl(TURING, bad_line))
    assert len(errors) == 1, errors
    line, got_field, message = errors[0]
    assert (line, got_field) == (2, field)
    assert fragment in message


def test_same_task_twice_in_one_file_is_an_error(study):
    swapped = dict(PAIR, left="j2", right="j1")
    errors = rejected(study, jsonl(SCORE, PAIR, swapped))
    assert errors == [
        (3, "(line)", "judges the same task as line 2 (one judgment per rater and task)")
    ]


def test_rater_with_two_backgrounds_in_one_file_is_an_error(study):
    errors = rejected(study, jsonl(SCORE, dict(PAIR, background="content_operations")))
    assert errors[0][:2] == (2, "background")


def test_line_contradicting_a_stored_judgment_is_an_error(study):
    study_judgments_import(study=study, data=jsonl(SCORE), filename="j.jsonl")
    errors = rejected(study, jsonl(TURING, dict(SCORE, funniness=2)))
    assert errors == [
        (2, "(line)", "contradicts the judgment already stored for this rater and task")
    ]
    assert ScoreAnswer.objects.get(question__name="funniness").value == 5


def test_rater_stored_with_another_background_is_an_error(study):
    study_judgments_import(study=study, data=jsonl(SCORE), filename="j.jsonl")
    errors = rejected(study, jsonl(dict(PAIR, background="traditional_industries")))
    assert errors[0][:2] == (1, "background")
    assert "stored with background 'technical'" in errors[0][2]


def test_items_of_another_study_are_unknown(study):
    other = StudyFactory()
    ItemFactory(study=other, external_id="elsewhere")
    errors = rejected(study, jsonl(dict(SCORE, item="elsewhere")))
    assert errors[0][:2] == (1, "item")


# A CSV file of all three kinds: a `meta` JSON cell, `meta.KEY` columns and extra columns, all
# kept in the judgment's `meta` as an item's are (empty cells are absent fields).
META_CSV = (
    "kind,rater,background,item,left,right,winner,guess,funniness,meta,meta.batch,worker\n"
    'score,r01,technical,j1,,,,,5,"{""position"": 2, ""tags"": [""a"", ""笑""]}",b7,w-1\n'
    "pair,r01,technical,,j1,j2,j2,,,,b7,w-1\n"
    'turing,r02,technical,j3,,,,ai,,"{""source_row"": 9}",,w-2\n'
    "score,r02,technical,j2,,,,,3,,,\n"
)


def test_a_csv_file_keeps_meta_cells_meta_columns_and_extra_columns_with_each_judgment(study):
    summary = study_judgments_import(study=study, data=META_CSV.encode(), filename="j.csv")
    assert summary.created == {"score": 2, "pair": 1, "turing": 1}
    scores = {r.item.external_id: r.meta for r in ScoreResponse.objects.select_related("item")}
    assert scores == {
        "j1": {"position": 2, "tags": ["a", "笑"], "batch": "b7", "worker": "w-1"},
        "j2": {},
    }
    assert PairJudgment.objects.get().meta == {"batch": "b7", "worker": "w-1"}
    assert TuringJudgment.objects.get().meta == {"source_row": 9, "worker": "w-2"}
    # The same file again changes nothing.
    again = study_judgments_import(study=study, data=META_CSV.encode(), filename="j.csv")
    assert (again.total_created, again.unchanged) == (0, 4)


def test_a_json_line_may_give_meta_keys_as_meta_fields(study):
    line = dict(TURING, meta={"row": 1}, **{"meta.batch": "b7"})
    study_judgments_import(study=study, data=jsonl(line), filename="j.jsonl")
    assert TuringJudgment.objects.get().meta == {"row": 1, "batch": "b7"}


@pytest.mark.parametrize(
    ("meta_cell", "field", "fragment"),
    [
        ('"{""position"": 2,"', "meta", "is not valid JSON"),
        ('"[1, 2]"', "meta", "must be a JSON object"),
        ('"""two"""', "meta", "must be a JSON object"),
        ('"{""x"": NaN}"', "meta", "meta.x"),
        ('"{""x"": 1e999}"', "meta", "meta.x"),
        ('"{""batch"": ""b1""}"', "meta.batch", "repeats meta key 'batch'"),
    ],
)
def test_a_bad_meta_cell_of_a_csv_file_names_line_and_field_and_stores_nothing(
    study, meta_cell, field, fragment
):
    data = (
        "kind,rater,background,item,guess,meta,meta.batch\n"
        "turing,r02,technical,j3,ai,,b0\n"
        f"turing,r03,technical,j3,human,{meta_cell},b7\n"
    ).encode()
    errors = rejected(study, data, "judgments.csv")
    assert len(errors) == 1, errors
    line, got_field, message = errors[0]
    assert (line, got_field) == (3, field)
    assert fragment in message


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ("score,r01,technical,j1,,,,ai,5", "guess", "is not a field of a score line"),
        ("pair,r01,technical,j3,j1,j2,j2,,", "item", "is not a field of a pair line"),
        ("turing,r01,technical,j3,,,,ai,4", "funniness", "is not a field of a turing line"),
    ],
)
def test_a_field_of_another_kind_of_judgment_is_an_error_not_meta(study, row, field, message):
    """In a CSV file mixing kinds, a filled cell that belongs to another kind of line is a
    mistake in the file, not metadata to keep."""
    data = f"kind,rater,background,item,left,right,winner,guess,funniness\n{row}\n".encode()
    assert rejected(study, data, "judgments.csv") == [(2, field, message)]
