"""The raw judgments export: one tidy row per answer, pair and Turing judgment, read in chunks."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest
from django.db.models import QuerySet

from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.reports import selectors
from apps.reports.selectors import RAW_COLUMNS, raw_judgment_count, raw_judgment_rows
from apps.reports.services import export_write, study_raw_write

pytestmark = pytest.mark.django_db


@pytest.fixture
def raw_rows(demo_study, tmp_path) -> list[dict[str, str]]:
    path = tmp_path / "raw.csv"
    export_write(study=demo_study, fmt="raw", path=path)
    with path.open(encoding="utf-8", newline="") as stream:
        reader = csv.DictReader(stream)
        assert tuple(reader.fieldnames or ()) == RAW_COLUMNS
        return list(reader)


def test_raw_export_has_exactly_one_row_per_stored_answer_pair_and_turing_judgment(
    demo_study, raw_rows
):
    answers = ScoreAnswer.objects.filter(response__study=demo_study).count()
    pairs = PairJudgment.objects.filter(study=demo_study).count()
    turing = TuringJudgment.objects.filter(study=demo_study).count()
    assert answers
    assert pairs
    assert turing
    assert Counter(row["kind"] for row in raw_rows) == {
        "score": answers,
        "pair": pairs,
        "turing": turing,
    }
    assert len(raw_rows) == answers + pairs + turing == raw_judgment_count(study=demo_study)


def test_raw_idempotency_keys_match_the_stored_judgments(demo_study, raw_rows):
    by_kind: dict[str, Counter[str]] = {"score": Counter(), "pair": Counter(), "turing": Counter()}
    for row in raw_rows:
        by_kind[row["kind"]][row["idempotency_key"]] += 1
    answers_per_scorecard = Counter(
        ScoreAnswer.objects.filter(response__study=demo_study).values_list(
            "response__idempotency_key", flat=True
        )
    )
    assert by_kind["score"] == answers_per_scorecard
    assert set(by_kind["pair"]) == set(
        PairJudgment.objects.filter(study=demo_study).values_list("idempotency_key", flat=True)
    )
    assert set(by_kind["turing"]) == set(
        TuringJudgment.objects.filter(study=demo_study).values_list("idempotency_key", flat=True)
    )
    assert max(by_kind["pair"].values()) == max(by_kind["turing"].values()) == 1


def test_a_scorecard_answer_row_carries_who_what_and_when(demo_study, raw_rows):
    answer = (
        ScoreAnswer.objects.filter(response__study=demo_study)
        .select_related("question", "response__rater__background", "response__item")
        .order_by("-pk")
        .first()
    )
    response = answer.response
    row = next(
        r
        for r in raw_rows
        if r["idempotency_key"] == response.idempotency_key
        and r["question"] == answer.question.name
    )
    assert row["rater"] == response.rater.external_id
    assert row["background"] == response.rater.background.code
    assert row["age_band"] == response.rater.age_band
    assert row["item"] == response.item.external_id
    assert int(row["value"]) == answer.value
    assert row["submitted_at"] == response.submitted_at.isoformat()
    assert row["answered_at"] == (answer.answered_at.isoformat() if answer.answered_at else "")
    assert row["seconds_into_session"] == (
        str(response.seconds_into_session) if response.seconds_into_session is not None else ""
    )
    assert row["origin"] == response.origin
    assert (row["left"], row["right"], row["side_chosen"]) == ("", "", "")


def test_scorecard_rows_follow_the_scorecard_order(demo_study, raw_rows):
    response = ScoreResponse.objects.filter(study=demo_study).order_by("pk").first()
    # A key is unique among judgments of its kind: an imported scorecard and an imported pair
    # judgment with the same id both have `import:` and that id (as on SQLite, where every
    # test's ids start at 1).
    questions = [
        r["question"]
        for r in raw_rows
        if r["kind"] == "score" and r["idempotency_key"] == response.idempotency_key
    ]
    expected = list(
        response.answers.order_by("question__position").values_list("question__name", flat=True)
    )
    assert questions == expected


def test_pair_rows_give_left_and_right_as_shown_and_the_side_chosen(demo_study, raw_rows):
    rows = {r["idempotency_key"]: r for r in raw_rows if r["kind"] == "pair"}
    sides = Counter()
    for pair in PairJudgment.objects.filter(study=demo_study).select_related(
        "left", "right", "winner"
    ):
        row = rows[pair.idempotency_key]
        # A tie or "neither" has no winner: its outcome is the side chosen.
        winner = pair.winner.external_id if pair.winner else ""
        assert (row["left"], row["right"], row["winner"]) == (
            pair.left.external_id,
            pair.right.external_id,
            winner,
        )
        if pair.winner_id is None:
            side = pair.outcome
        else:
            side = "left" if pair.winner_id == pair.left_id else "right"
        assert row["side_chosen"] == side
        assert row["value"] == winner
        assert row["item"] == ""
        sides[side] += 1
    # The demo study offers all four answers, and its raters used each.
    assert set(sides) == {"left", "right", "tie", "neither"}


def test_turing_rows_give_the_guess(demo_study, raw_rows):
    rows = {r["idempotency_key"]: r for r in raw_rows if r["kind"] == "turing"}
    for judgment in TuringJudgment.objects.filter(study=demo_study).select_related("item"):
        row = rows[judgment.idempotency_key]
        assert (row["item"], row["question"], row["value"]) == (
            judgment.item.external_id,
            "turing",
            judgment.guess,
        )


def test_raw_rows_are_read_from_the_database_in_chunks(demo_study, monkeypatch):
    chunk_sizes: list[int] = []
    original = QuerySet.iterator

    def spy(self, chunk_size=None):  # type: ignore[no-untyped-def]
        chunk_sizes.append(chunk_size)
        return original(self, chunk_size=chunk_size)

    monkeypatch.setattr(QuerySet, "iterator", spy)
    rows = raw_judgment_rows(study=demo_study, chunk_size=100)
    first = next(rows)  # lazy: nothing beyond the first chunk has been read yet
    assert first[0] == "score"
    assert chunk_sizes == [100]
    rest = list(rows)
    # Scorecard answers, "I don't get it" answers, pairs, Turing judgments: one reader each.
    assert chunk_sizes == [100, 100, 100, 100]
    assert 1 + len(rest) == raw_judgment_count(study=demo_study)


def test_raw_export_reports_progress_as_it_writes(demo_study, monkeypatch):
    monkeypatch.setattr("apps.reports.writers.RAW_PROGRESS_EVERY", 500)
    reported: list[int] = []
    count = study_raw_write(study=demo_study, stream=io.StringIO(), progress=reported.append)
    assert count == raw_judgment_count(study=demo_study)
    assert len(reported) == count // 500
    assert reported == sorted(reported)
    assert reported[0] > 0
    assert reported[-1] <= 99


def test_raw_export_needs_no_computed_results(demo_study, tmp_path):
    path = tmp_path / "raw.csv"
    export_write(study=demo_study, fmt="raw", path=path)
    assert path.read_text(encoding="utf-8").startswith(",".join(RAW_COLUMNS) + "\n")


def test_raw_columns_match_the_rows(demo_study):
    assert all(
        len(row) == len(selectors.RAW_COLUMNS) for row in raw_judgment_rows(study=demo_study)
    )
