"""Plain scorecard lines are read a batch at a time (apps.judgments.importing._plain_scores),
with the same rows, errors and raters as the line-by-line reading.

Files are made of plain lines with, here and there, a line that is not plain (another field, a
string for a number, a problem of every kind the reading names, a repeat, a rater changing
background, a pair or Turing line), placed across the batches' edges. Each file is read both
ways and the results compared whole.
"""

from __future__ import annotations

import json
import random

import pytest

from apps.core.lines import read_records
from apps.judgments import importing
from apps.judgments.importing import (
    JUDGMENT_JSON_COLUMNS,
    ImportContext,
    ParsedJudgments,
    QuestionSpec,
    parse_judgments,
)
from apps.raters.models import BackgroundGroup, Rater
from apps.studies.models import Item

ITEMS = [f"t{n}" for n in range(1, 61)]
CONTEXT = ImportContext(
    questions={
        "funny": QuestionSpec("funny", 0, 3),
        "surprise": QuestionSpec("surprise", 1, 5, not_understood=True),
        "warmth": QuestionSpec("warmth", 0, 10, kind="slider", step=0.5),
    },
    items_with_explanation={item: item == "t2" for item in [*ITEMS, "t 61"]},
    backgrounds=frozenset({"cn", "us"}),
)

# Lines that are not plain, each a change to a plain line (None: the field is left out).
NOT_PLAIN: list[dict[str, object]] = [
    {"funny": "2"},
    {"funny": 2.5},
    {"funny": 7},
    {"funny": True},
    {"funny": None, "surprise": None, "warmth": None},
    {"surprise": "not_understood"},
    {"warmth": 0.25},
    {"warmth": 11},
    {"background": "mars"},
    {"background": "  "},
    {"background": 3},
    {"rater": ""},
    {"rater": "x" * 129},
    {"rater": None},
    {"item": "t9"},
    {"item": None},
    {"kind": "story"},
    {"kind": None},
    {"age_band": "25-34"},
    {"age_band": "old"},
    {"seconds_into_session": 12.5},
    {"submitted_at": "2026-12-06T10:00:00Z"},
    {"meta": {"source": "crowd"}},
    {"meta.batch": 3},
    {"lnag": "en"},
    {"explanation_match": "yes"},
    {"winner": "t1"},
    {"kind": "pair", "left": "t1", "right": "t2", "winner": "t1"},
    {"kind": "turing", "guess": "ai"},
]


def _plain(rng: random.Random, rater: int) -> dict[str, object]:
    line: dict[str, object] = {
        "kind": "score",
        "rater": f"r{rater}",
        "background": ["cn", "us", "unknown"][rater % 3],
        "item": rng.choice(ITEMS),
        "funny": rng.randint(0, 3),
    }
    if rng.random() < 0.5:
        line["surprise"] = rng.choice([1, 2, 3, 4, 5, 3.0])
    if rng.random() < 0.3:
        line["warmth"] = rng.choice([0, 0.5, 7.5, 10])
    if rng.random() < 0.1:
        line["rater"] = f"  r{rater} "
    return line


def _file(seed: int, n_lines: int, odd_share: float) -> bytes:
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        line = _plain(rng, rng.randrange(80))
        roll = rng.random()
        if roll < odd_share:
            change = rng.choice(NOT_PLAIN)
            line.update(change)
            line = {k: v for k, v in line.items() if v is not None}
        elif roll < odd_share * 1.5:
            line["background"] = "us" if line["background"] != "us" else "cn"
        lines.append(json.dumps(line) if rng.random() > 0.01 else "{not json")
    return ("\n".join(lines) + "\n").encode()


def _read(data: bytes, filename: str, *, plain_lane: bool) -> ParsedJudgments:
    records = read_records(data, filename=filename, json_columns=JUDGMENT_JSON_COLUMNS)
    return parse_judgments(records, CONTEXT, plain_lane=plain_lane)


def _same(data: bytes, filename: str = "judgments.jsonl") -> ParsedJudgments:
    batched = _read(data, filename, plain_lane=True)
    by_line = _read(data, filename, plain_lane=False)
    assert batched.rows == by_line.rows
    assert batched.errors == by_line.errors
    assert list(batched.raters.items()) == list(by_line.raters.items())
    return batched


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("odd_share", [0.0, 0.002, 0.05, 0.5])
def test_batches_read_as_every_line_is_read(seed, odd_share, monkeypatch):
    monkeypatch.setattr(importing, "PLAIN_BATCH", 7)
    plain = []
    original = importing._plain_scores
    monkeypatch.setattr(
        importing,
        "_plain_scores",
        lambda batch, *args: plain.append(taken := original(batch, *args)) or taken,
    )
    _same(_file(seed, 300, odd_share))
    # Both readings were compared: plain batches and others.
    assert any(plain) or odd_share == 0.5
    assert not all(plain)


def _lines_read_one_by_one(monkeypatch) -> list[int]:
    """The number of each line `_parse_line` reads, in order."""
    lines: list[int] = []
    original = importing._parse_line
    monkeypatch.setattr(
        importing,
        "_parse_line",
        lambda record, *args: lines.append(record.line) or original(record, *args),
    )
    return lines


def test_the_lanes_take_ids_as_long_as_their_columns_store():
    assert Rater._meta.get_field("external_id").max_length == importing._ID_LENGTH
    assert Item._meta.get_field("external_id").max_length == importing._ID_LENGTH
    assert BackgroundGroup._meta.get_field("code").max_length == importing._GROUP_LENGTH


def test_a_plain_file_is_read_without_a_line_by_line_reading(monkeypatch):
    """The batch lane is what reads a plain file: no line of it goes to `_parse_line`."""
    data = b"\n".join(
        json.dumps(
            {"kind": "score", "rater": f"r{n // 4}", "background": "cn", "item": ITEMS[n % 4]}
            | {"funny": n % 4}
        ).encode()
        for n in range(2_500)
    )
    by_line = _lines_read_one_by_one(monkeypatch)
    parsed = _read(data, "judgments.jsonl", plain_lane=True)
    assert by_line == []
    assert len(parsed.rows) == 2_500
    assert not parsed.errors
    assert parsed.rows[5].answers == (("funny", 1.0),)
    assert parsed.rows[5].header.background == "cn"


def test_one_line_that_is_not_plain_sends_only_its_batch_line_by_line(monkeypatch):
    monkeypatch.setattr(importing, "PLAIN_BATCH", 10)
    lines = [
        {"kind": "score", "rater": f"r{n}", "background": "unknown", "item": "t1", "funny": 1}
        for n in range(30)
    ]
    lines[14]["age_band"] = "25-34"
    by_line = _lines_read_one_by_one(monkeypatch)
    data = "\n".join(json.dumps(line) for line in lines).encode()
    parsed = _read(data, "judgments.jsonl", plain_lane=True)
    assert by_line == list(range(11, 21))
    assert parsed.raters["r14"] == (None, "25-34")
    _same(data)


def test_repeats_and_a_changed_background_across_batches_are_found(monkeypatch):
    monkeypatch.setattr(importing, "PLAIN_BATCH", 3)
    lines = [
        {"kind": "score", "rater": "a", "background": "cn", "item": "t1", "funny": 1},
        {"kind": "score", "rater": "b", "background": "us", "item": "t1", "funny": 2},
        {"kind": "score", "rater": "c", "background": "us", "item": "t1", "funny": 2},
        # Next batch: a repeat of line 1, and rater b in another group.
        {"kind": "score", "rater": "a", "background": "cn", "item": "t1", "funny": 3},
        {"kind": "score", "rater": "b", "background": "cn", "item": "t2", "funny": 0},
        {"kind": "score", "rater": "c", "background": "us", "item": "t2", "funny": 0},
    ]
    parsed = _same("\n".join(json.dumps(line) for line in lines).encode())
    assert [(e.line, e.field) for e in parsed.errors] == [(4, "(line)"), (5, "background")]


def test_a_csv_file_is_read_line_by_line_with_the_same_result():
    data = (
        b"kind,rater,background,item,funny,surprise\n"
        b"score,r1,cn,t1,2,\n"
        b"score,r2,us,t2,3,not_understood\n"
        b"score,r2,us,t3,x,1\n"
    )
    parsed = _same(data, "judgments.csv")
    assert len(parsed.rows) == 2
    assert len(parsed.errors) == 1


def test_a_question_named_like_a_field_turns_the_batch_lane_off():
    context = ImportContext(
        questions={"guess": QuestionSpec("guess", 0, 3)},
        items_with_explanation={"t1": False},
        backgrounds=frozenset(),
    )
    assert context.plain_score_fields == frozenset()
    assert CONTEXT.plain_score_fields == {
        "kind",
        "rater",
        "background",
        "item",
        "funny",
        "surprise",
        "warmth",
    }
