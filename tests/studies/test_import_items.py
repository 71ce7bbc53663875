from __future__ import annotations

import json

import pytest

from apps.core.errors import ImportRejected
from apps.studies.models import Item
from apps.studies.services import study_items_import
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db

GOOD = [
    {
        "id": "j1",
        "text": "A pun about semicolons; it ends here.",
        "source": "model-a",
        "level": "single",
        "humor_type": "pun",
        "topic": "programmers",
        "lang": "en",
        "generation": {"temperature": 1.1},
    },
    {
        "id": "j2",
        "text": "我的代码没有bug，只有未被发现的特性。",
        "source": "human",
        "lang": "zh",
        "humor_type": "self_deprecating",
        "topic": "programmers",
    },
    {
        "id": "j3",
        "text": "Then I guess the cat IS the keyboard.",
        "source": "model-b",
        "level": "multi_turn",
        "context": [{"role": "user", "text": "My cat sleeps on my keyboard."}],
        "explanation": "Callback.",
        "safety_intercepted": True,
    },
    {
        "id": "j4",
        "text": "Look on the bright side: no more status meetings.",
        "source": "model-b",
        "level": "scenario",
        "scenario": "Cheer up a colleague who just lost a project.",
    },
]


def jsonl(*objects: object) -> bytes:
    return "\n".join(
        o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in objects
    ).encode()


def rejected(study, data: bytes, filename: str = "items.jsonl") -> list[tuple[int, str, str]]:  # type: ignore[no-untyped-def]
    before = Item.objects.count()
    with pytest.raises(ImportRejected) as info:
        study_items_import(study=study, data=data, filename=filename)
    assert Item.objects.count() == before, "a rejected import must write nothing"
    return [(e.line, e.field, e.message) for e in info.value.errors]


def test_good_file_imports_every_field():
    study = StudyFactory()
    summary = study_items_import(study=study, data=jsonl(*GOOD), filename="items.jsonl")
    assert (summary.created, summary.unchanged) == (4, 0)
    j3 = Item.objects.get(study=study, external_id="j3")
    assert j3.level == "multi_turn"
    assert j3.context == [{"role": "user", "text": "My cat sleeps on my keyboard."}]
    assert j3.safety_intercepted is True
    assert j3.explanation == "Callback."
    j1 = Item.objects.get(study=study, external_id="j1")
    assert j1.generation == {"temperature": 1.1}
    assert Item.objects.get(study=study, external_id="j2").language == "zh"


def test_importing_the_same_file_twice_creates_no_duplicates():
    study = StudyFactory()
    study_items_import(study=study, data=jsonl(*GOOD), filename="items.jsonl")
    summary = study_items_import(study=study, data=jsonl(*GOOD), filename="items.jsonl")
    assert (summary.created, summary.unchanged) == (0, 4)
    assert Item.objects.filter(study=study).count() == 4


def test_changed_item_with_known_id_is_an_error_naming_the_field():
    study = StudyFactory()
    study_items_import(study=study, data=jsonl(*GOOD), filename="items.jsonl")
    changed = dict(GOOD[0], text="A different joke")
    errors = rejected(study, jsonl(GOOD[1], changed))
    assert errors == [(2, "text", "item 'j1' is already in the study with a different text")]
    assert Item.objects.get(study=study, external_id="j1").text == GOOD[0]["text"]


@pytest.mark.parametrize(
    ("bad_line", "field", "fragment"),
    [
        ({"text": "no id", "source": "human"}, "id", "is required"),
        ({"id": "x", "source": "human"}, "text", "is required"),
        ({"id": "x", "text": "no source"}, "source", "is required"),
        ({"id": "x", "text": "t", "source": "human", "level": "double"}, "level", "must be one of"),
        (
            {"id": "x", "text": "t", "source": "human", "level": "multi_turn"},
            "context",
            "is required",
        ),
        (
            {"id": "x", "text": "t", "source": "human", "level": "scenario"},
            "scenario",
            "is required",
        ),
        ({"id": "x", "text": "t", "source": "human", "context": "hi"}, "context", "must be a list"),
        (
            {"id": "x", "text": "t", "source": "human", "safety_intercepted": "maybe"},
            "safety_intercepted",
            "true or false",
        ),
        (
            {"id": "x", "text": "t", "source": "human", "generation": [1]},
            "generation",
            "JSON object",
        ),
        ({"id": "x", "text": "t", "source": "human", "lang": "English!"}, "lang", "language code"),
        (
            {"id": "x", "text": "t", "source": "human", "humour_type": "pun"},
            "humour_type",
            "not a known field",
        ),
        ({"id": 7, "text": "t", "source": "human"}, "id", "must be a string"),
        ('{"id": "x", "text": ', "(line)", "not valid JSON"),
        ("[1, 2]", "(line)", "must be a JSON object"),
        ('{"id": "x", "text": "nul \\u0000 here", "source": "human"}', "text", "NUL character"),
        ('{"id": "x", "text": "lone \\ud800", "source": "human"}', "text", "unpaired surrogate"),
    ],
)
def test_bad_line_is_reported_with_line_and_field_and_nothing_is_written(bad_line, field, fragment):
    study = StudyFactory()
    errors = rejected(study, jsonl(GOOD[0], bad_line, GOOD[1]))
    assert len(errors) == 1
    line, got_field, message = errors[0]
    assert (line, got_field) == (2, field)
    assert fragment in message


def test_duplicate_id_in_the_file_names_both_lines():
    study = StudyFactory()
    errors = rejected(study, jsonl(GOOD[0], GOOD[1], dict(GOOD[2], id="j1")))
    assert errors == [(3, "id", "duplicates id 'j1' of line 1")]


def test_every_bad_line_is_reported_not_only_the_first():
    study = StudyFactory()
    errors = rejected(
        study,
        jsonl({"id": "a"}, GOOD[0], "oops", {"id": "b", "text": "t", "source": "x", "level": "?"}),
    )
    assert [(line, field) for line, field, _ in errors] == [
        (1, "text"),
        (1, "source"),
        (3, "(line)"),
        (4, "level"),
    ]


def test_csv_file_with_json_cells_imports():
    study = StudyFactory()
    data = (
        b"id,text,source,level,context,lang,safety_intercepted\n"
        b'c1,"Plain, with a comma",human,single,,en,false\n'
        b'c2,Reply,model-a,multi_turn,"[{""role"": ""user"", ""text"": ""Hi""}]",zh,1\n'
    )
    summary = study_items_import(study=study, data=data, filename="items.csv")
    assert summary.created == 2
    c2 = Item.objects.get(study=study, external_id="c2")
    assert c2.context == [{"role": "user", "text": "Hi"}]
    assert c2.safety_intercepted is True
    assert Item.objects.get(study=study, external_id="c1").text == "Plain, with a comma"


def test_csv_row_with_wrong_cell_count_names_its_line():
    study = StudyFactory()
    errors = rejected(study, b"id,text,source\nc1,hello,human\nc2,only-two\n", filename="items.csv")
    assert errors == [(3, "(line)", "has 2 cells, the header has 3")]


def test_file_that_is_not_utf8_is_rejected():
    study = StudyFactory()
    errors = rejected(
        study, b'{"id": "a", "text": "ok", "source": "human"}\n{"id": "b", "text": "\xff"}'
    )
    assert errors[0][:2] == (2, "(file)")


def test_unknown_file_type_is_rejected():
    study = StudyFactory()
    errors = rejected(study, jsonl(GOOD[0]), filename="items.xml")
    assert errors[0][1] == "(file)"


def test_empty_file_is_rejected():
    study = StudyFactory()
    errors = rejected(study, b"\n\n")
    assert errors == [(0, "(file)", "contains no items")]
