"""Judgments written while the file is read (apps/judgments/import_stream.py, PostgreSQL).

The streamed import must store exactly what reading the whole file first stores (the path a
background import with a progress reporter still takes), refuse exactly what it refuses, and
fall back to it when a rater of the file is already stored. Batches are made small here so a
rater's lines, and the file's, span many of them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from queue import SimpleQueue
from typing import Any, cast

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core.errors import Conflict, ImportRejected
from apps.core.lines import read_records
from apps.judgments import import_stream, services
from apps.judgments.import_rows import RowWriter
from apps.judgments.importing import JUDGMENT_JSON_COLUMNS, Header, ParsedJudgments, ScoreRow
from apps.judgments.models import (
    NotUnderstood,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.judgments.services import study_judgments_import, study_judgments_import_records
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Rubric, Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

ITEMS = [f"j{i:02d}" for i in range(6)]


@pytest.fixture(autouse=True)
def _small_batches(postgres_only: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_stream, "STREAM_ROWS", 7)
    monkeypatch.setattr("apps.judgments.importing.PLAIN_BATCH", 5)


def _study() -> Study:
    study = StudyFactory(rubric=Rubric.objects.get(slug="humor-not-understood"))
    for external_id in ITEMS:
        ItemFactory(study=study, external_id=external_id, explanation="a pun")
    return study


def _lines(raters: range) -> list[dict[str, Any]]:
    """Every kind of line, a rater's lines spread over the file: timestamps on some, an age
    band first given on a rater's later line, metadata, answers not understood, a tie."""
    lines: list[dict[str, Any]] = []
    for k, item in enumerate(ITEMS):
        for r in raters:
            line: dict[str, Any] = {
                "kind": "score",
                "rater": f"r{r:02d}",
                "background": "technical" if r % 2 else "content_operations",
                "item": item,
                "surprise": (r + k) % 5 + 1,
                "coherence": 3,
                "funniness": "not_understood" if (r * k) % 7 == 3 else (r * k) % 7 + 1,
                "offensive": 0,
            }
            if r % 3 == 0:
                line["submitted_at"] = f"2026-11-20T10:{k:02d}:{r % 60:02d}+00:00"
                line["seconds_into_session"] = 30.0 * k
            if r % 4 == 1 and k == 5:
                line["age_band"] = "25-34"
            if r % 5 == 2:
                line["meta"] = {"batch": f"b{k}", "row": r}
                line["explanation_match"] = "yes" if k % 2 else "no"
            lines.append(line)
    for r in raters:
        rater = {"rater": f"r{r:02d}", "background": "technical" if r % 2 else "content_operations"}
        outcome = {"winner": ITEMS[r % 2]} if r % 4 else {"outcome": "tie"}
        lines.append({"kind": "pair", **rater, "left": ITEMS[0], "right": ITEMS[1], **outcome})
        lines.append({"kind": "turing", **rater, "item": ITEMS[3], "guess": "ai"})
    return lines


def _data(lines: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(line) for line in lines).encode()


class _Quiet:
    """A progress reporter: with one, the whole file is read before anything is written."""

    def lines_read(self, line: int) -> None:
        pass

    def storing(self) -> None:
        pass


def _read_first(study: Study, data: bytes) -> Any:
    return study_judgments_import_records(
        study=study,
        records=read_records(data, filename="j.jsonl", json_columns=JUDGMENT_JSON_COLUMNS),
        progress=_Quiet(),
    )


def _stored(study: Study) -> dict[str, list[tuple[object, ...]]]:
    """Everything the import stored for the study, by natural keys, with the import's own time
    left out (each import has its own)."""
    scores = ScoreResponse.objects.filter(study=study)
    return {
        "raters": sorted(
            Rater.objects.filter(study=study).values_list(
                "external_id", "background__code", "age_band", "origin", "language", "languages"
            )
        ),
        "sessions": sorted(
            (
                s.rater.external_id,
                s.end_reason,
                s.ended_at - s.started_at,
                s.deadline - s.started_at,
            )
            for s in RaterSession.objects.filter(rater__study=study).select_related("rater")
        ),
        "scores": sorted(
            scores.values_list(
                "rater__external_id",
                "item__external_id",
                "session__rater__external_id",
                "seconds_into_session",
                "explanation_match",
                "explanation_answered_at",
                "origin",
                "meta",
            ),
            key=repr,
        ),
        "answers": sorted(
            ScoreAnswer.objects.filter(response__study=study).values_list(
                "response__rater__external_id",
                "response__item__external_id",
                "question__name",
                "value",
                "answered_at",
            ),
            key=repr,
        ),
        "not understood": sorted(
            NotUnderstood.objects.filter(response__study=study).values_list(
                "response__rater__external_id", "response__item__external_id", "question__name"
            )
        ),
        "pairs": sorted(
            PairJudgment.objects.filter(study=study).values_list(
                "rater__external_id",
                "left__external_id",
                "right__external_id",
                "outcome",
                "winner__external_id",
                "session__rater__external_id",
            ),
            key=repr,
        ),
        "turing": sorted(
            TuringJudgment.objects.filter(study=study).values_list(
                "rater__external_id", "item__external_id", "guess", "session__rater__external_id"
            )
        ),
    }


def _timed(study: Study) -> list[tuple[object, ...]]:
    """The sessions of the raters whose lines carry their times, and those times."""
    timed = [f"r{r:02d}" for r in range(0, 40, 3)]
    return sorted(
        RaterSession.objects.filter(rater__study=study, rater__external_id__in=timed).values_list(
            "rater__external_id", "started_at", "ended_at", "deadline"
        )
    ) + sorted(
        ScoreResponse.objects.filter(study=study, rater__external_id__in=timed).values_list(
            "rater__external_id", "item__external_id", "submitted_at"
        )
    )


def test_the_streamed_import_stores_what_reading_the_file_first_stores(monkeypatch):
    """Raters are written with the lines read so far: those whose age band comes on a later line,
    and those whose dated lines span several batches, are mended once the file is read."""
    data = _data(_lines(range(23)))
    streamed, read_first = _study(), _study()
    mend = services.raters_mend_imported
    mended: list[str] = []

    def noting(**kwargs: Any) -> None:
        mended.extend(spec.external_id for spec in kwargs["raters"])
        mend(**kwargs)

    monkeypatch.setattr(services, "raters_mend_imported", noting)
    held = _HeldHalfway(monkeypatch, data.count(b"\n") + 1)
    write = RowWriter.write

    written = [0]

    def releasing(self: RowWriter, rows: Any, people: Any) -> Any:
        # The reading goes on once the rows it has published are written, all but the last
        # few: every rater is then written before any later line gives an age band or a date.
        created = write(self, rows, people)
        written[0] += len(rows)
        if written[0] >= held.half - 12:
            held.event.set()
        return created

    monkeypatch.setattr(RowWriter, "write", releasing)
    with CaptureQueriesContext(connection) as queries:
        summary = study_judgments_import(study=streamed, data=data, filename="j.jsonl")
    later_band = {f"r{r:02d}" for r in range(23) if r % 4 == 1}
    dated = {f"r{r:02d}" for r in range(23) if r % 3 == 0}
    assert set(mended) == later_band | dated
    # Only what changed is rewritten: the age bands of those given one later (one statement,
    # one band), the sessions of the dated raters.
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    band_updates = [sql for sql in updates if sql.startswith('UPDATE "raters_rater"')]
    assert len(band_updates) == 1
    assert "'25-34'" in band_updates[0]
    named = band_updates[0].split(" IN (")[1].split(")")[0].split(", ")
    assert len(named) == len(later_band)
    session_updates = [sql for sql in updates if sql.startswith('UPDATE "raters_ratersession"')]
    assert len(session_updates) == 1
    assert session_updates[0].count(" WHEN ") == 3 * len(dated)
    before = _read_first(read_first, data)
    assert summary == before
    assert summary.created == {"score": 138, "pair": 23, "turing": 23}
    assert summary.raters_created == 23
    assert _stored(streamed) == _stored(read_first)
    assert _timed(streamed) == _timed(read_first) != []
    assert NotUnderstood.objects.filter(response__study=streamed).exists()
    assert Rater.objects.filter(study=streamed, age_band="25-34").count() == 6
    # Each rater's and session's key was drawn as the rater appeared: in the order of the file.
    raters = list(Rater.objects.filter(study=streamed).order_by("pk").values_list("external_id"))
    assert raters == [(f"r{r:02d}",) for r in range(23)]


class _HeldHalfway:
    """The file's records, the reading held after half of them until `event` is set (at most
    30 s); `read` counts the records read so far. Put in place of the import's reader."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, n_lines: int) -> None:
        self.event = threading.Event()
        self.read = 0
        self.half = n_lines // 2
        monkeypatch.setattr("apps.judgments.services.read_records", self.records)

    def records(self, data: bytes, **kwargs: Any) -> Iterator[Any]:
        for record in read_records(data, **kwargs):
            if self.read == self.half:
                assert self.event.wait(timeout=30)
            self.read += 1
            yield record


def test_the_rows_are_written_before_the_file_is_read_to_its_end(monkeypatch):
    """The point of it: the reading waits halfway through the file until some rows are written
    (a reading that waited for all rows to be written would time out here)."""
    study = _study()
    lines = _lines(range(23))
    held = _HeldHalfway(monkeypatch, len(lines))
    seen: list[int] = []
    write = RowWriter.write

    def noting(self: RowWriter, rows: Any, people: Any) -> Any:
        seen.append(held.read)
        created = write(self, rows, people)
        held.event.set()
        return created

    monkeypatch.setattr(RowWriter, "write", noting)
    summary = study_judgments_import(study=study, data=_data(lines), filename="j.jsonl")
    assert summary.total_created == len(lines)
    assert seen[0] <= held.half
    assert len(seen) >= 2


def test_a_bad_line_late_in_the_file_stores_nothing_and_names_every_error():
    lines = _lines(range(23))
    lines[150]["surprise"] = 9
    lines[-1]["guess"] = "robot"
    data = _data(lines)
    streamed, read_first = _study(), _study()
    with pytest.raises(ImportRejected) as caught:
        study_judgments_import(study=streamed, data=data, filename="j.jsonl")
    with pytest.raises(ImportRejected) as expected:
        _read_first(read_first, data)
    assert [(e.line, e.field) for e in caught.value.errors] == [(151, "surprise"), (184, "guess")]
    assert [e.as_dict() for e in caught.value.errors] == [
        e.as_dict() for e in expected.value.errors
    ]
    assert _stored(streamed) == _stored(_study())
    assert not Rater.objects.filter(study=streamed).exists()


def test_a_file_naming_a_stored_rater_is_compared_with_what_is_stored():
    """A rater already stored, first named late in the file: what was written is rolled back,
    and the file is stored as before (its stored lines unchanged, a contradiction refused)."""
    study, twin = _study(), _study()
    first = _lines(range(20, 23))
    for target in (study, twin):
        study_judgments_import(study=target, data=_data(first), filename="a.jsonl")
    data = _data(_lines(range(23)))
    summary = study_judgments_import(study=study, data=data, filename="b.jsonl")
    assert summary == _read_first(twin, data)
    assert summary.unchanged == len(first)
    assert summary.raters_created == 20
    assert _stored(study) == _stored(twin)

    contradicting = [*_lines(range(30, 33)), dict(first[0], surprise=first[0]["surprise"] % 5 + 1)]
    with pytest.raises(ImportRejected) as caught:
        study_judgments_import(study=study, data=_data(contradicting), filename="c.jsonl")
    assert caught.value.errors[0].line == len(contradicting)
    assert "contradicts the judgment already stored" in caught.value.errors[0].message
    assert not Rater.objects.filter(study=study, external_id="r30").exists()


def test_a_file_with_no_judgments_is_refused_as_before():
    with pytest.raises(ImportRejected) as caught:
        study_judgments_import(study=_study(), data=b"\n", filename="j.jsonl")
    assert [error.message for error in caught.value.errors] == ["contains no judgments"]


def test_a_write_that_fails_stops_the_reading_and_stores_nothing(monkeypatch):
    """An item removed while the file is read: a conflict, the reading thread stopped at its
    next batch rather than reading on, and nothing stored."""
    study = _study()
    lines = _lines(range(23))
    held = _HeldHalfway(monkeypatch, len(lines))
    write = RowWriter.write

    def losing(self: RowWriter, rows: Any, people: Any) -> Any:
        del self.items[ITEMS[0]]
        try:
            return write(self, rows, people)
        finally:
            held.event.set()

    monkeypatch.setattr(RowWriter, "write", losing)
    with pytest.raises(Conflict, match="items or questions changed during the import"):
        study_judgments_import(study=study, data=_data(lines), filename="j.jsonl")
    assert held.read < len(lines)
    assert not ScoreResponse.objects.filter(study=study).exists()
    assert not Rater.objects.filter(study=study).exists()


def test_only_the_rows_a_batch_ended_with_are_written(monkeypatch):
    """The reading thread goes on appending while a batch is written: rows after the count the
    batch ended with (their raters perhaps not yet recorded) wait for their own batch."""
    rows = [
        ScoreRow(Header(n, f"r{n}", None, None, None, None, None), "j00", (("surprise", 3.0),))
        for n in range(1, 11)
    ]
    parsed = ParsedJudgments(rows=rows)
    read: SimpleQueue[tuple[ParsedJudgments, int] | None] = SimpleQueue()
    read.put((parsed, 7))
    read.put(None)
    seen: list[list[Any]] = []

    def recording(batch: list[Any], *args: Any) -> int:
        seen.append(batch)
        return int(args[-1]) + len(batch)

    monkeypatch.setattr(import_stream, "_write", recording)
    streamed = import_stream.Streamed(ParsedJudgments(), complete=True, now=timezone.now())
    import_stream._write_as_read(read, set(), cast(Any, None), cast(Any, None), streamed)
    assert seen == [rows[:7]]
