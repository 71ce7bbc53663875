"""A content study end to end, without a browser: the demo articles and their simulated ratings
(fixtures/demo_content) go through import, aggregation, every results page, every results CSV
and every export, on the content rubric (fluency, informativeness, originality, then an overall
verdict) that has no funniness question.

Tests marked xfail(strict=True) show where the shared pages, statistics or exports still assume
the humor rubric; each names the file to change. They turn into failures once fixed, so the
marker is removed then.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.test import Client
from openpyxl import load_workbook

from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.dashboard.results import CSV_NAMES
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.judgments.services import study_judgments_import
from apps.reports.models import ExportJob
from apps.reports.services import export_write
from apps.reports.tables import SELECTABLE_TABLES
from apps.studies.models import Item, Study
from apps.studies.services import study_create, study_items_import, study_member_add

pytestmark = pytest.mark.django_db

CONTENT = Path(__file__).resolve().parents[2] / "fixtures" / "demo_content"
DIMENSIONS = ("fluency", "informativeness", "originality")
# The content rubric's questions: the three dimensions, then the overall verdict asked last.
QUESTIONS = (*DIMENSIONS, "overall")
HUMOR_QUESTIONS = ("surprise", "coherence", "funniness", "offensive")
SECTIONS = ("leaderboard", "items", "agreement", "turing", "quality", "safety")
# Words that belong to the humor rubric, in what a researcher or rater reads on a page.
HUMOR_WORDS = re.compile(r"\b(funn\w*|jokes?|humou?r|surprise|coherence|laugh\w*)\b", re.I)


def fixture_lines(name: str) -> list[dict[str, Any]]:
    with (CONTENT / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def visible_text(page: str) -> str:
    """What a reader sees: no tags, scripts, styles, attributes or class names."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def humor_words(text: str) -> list[str]:
    # The platform's name is not humor wording.
    return sorted({m.lower() for m in HUMOR_WORDS.findall(text.replace("LaughLab", ""))})


@pytest.fixture
def content_study(db: None) -> Study:
    study = study_create(
        slug="content-copy",
        rubric_slug="content",
        name="Generated articles",
        status=Study.Status.OPEN,
        random_seed=20261130,
    )
    study_items_import(
        study=study, data=(CONTENT / "items.jsonl").read_bytes(), filename="items.jsonl"
    )
    study_judgments_import(
        study=study, data=(CONTENT / "judgments.jsonl").read_bytes(), filename="judgments.jsonl"
    )
    return study


@pytest.fixture
def result(content_study: Study) -> StudyResult:
    return study_aggregate(study=content_study, rounds=30)


@pytest.fixture
def member(content_study: Study, django_user_model: Any) -> Client:
    user = django_user_model.objects.create_user("editor", password="pw-editor-1")
    study_member_add(study=content_study, user=user)
    client = Client()
    client.force_login(user)
    return client


# ---------------------------------------------------------------------------------------------
# The fixtures themselves


def test_the_demo_articles_cover_three_content_types_two_languages_and_four_sources() -> None:
    items = fixture_lines("items.jsonl")
    assert len(items) >= 36
    assert Counter(item["content_type"] for item in items) == {
        "news": 12,
        "analysis": 12,
        "creative": 12,
    }
    for content_type in ("news", "analysis", "creative"):
        langs = Counter(i["lang"] for i in items if i["content_type"] == content_type)
        assert langs == {"en": 6, "zh": 6}
        topics = Counter(i["topic"] for i in items if i["content_type"] == content_type)
        assert 3 <= len(topics) <= 4
        assert min(topics.values()) >= 3  # each article can meet two opponents on its topic
    assert {i["source"] for i in items} == {"scribe-13b", "newsgen-v1", "storyloom-2", "human"}
    assert all(i["level"] == "single" for i in items)
    multi_paragraph = [i for i in items if "\n\n" in i["text"]]
    assert len(multi_paragraph) > len(items) / 2


def test_the_simulated_ratings_answer_only_the_content_questions_with_timing() -> None:
    lines = fixture_lines("judgments.jsonl")
    kinds = Counter(line["kind"] for line in lines)
    assert set(kinds) == {"score", "pair", "turing"}
    assert len({line["rater"] for line in lines}) >= 20
    assert {line["background"] for line in lines} == {
        "technical",
        "content_operations",
        "administrative_support",
        "traditional_industries",
    }
    for line in lines:
        assert {"active_seconds", "seconds_into_session", "submitted_at"} <= set(line)
        assert line["seconds_into_session"] < 1800
        if line["kind"] == "score":
            answered = set(line) & {*QUESTIONS, *HUMOR_QUESTIONS}
            assert answered
            assert answered <= set(QUESTIONS)
    items = {i["id"]: i for i in fixture_lines("items.jsonl")}
    for line in lines:
        if line["kind"] == "pair":
            left, right = items[line["left"]], items[line["right"]]
            assert (left["content_type"], left["topic"]) == (right["content_type"], right["topic"])


def test_the_three_dimensions_are_only_moderately_correlated_in_the_item_means() -> None:
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    for line in fixture_lines("judgments.jsonl"):
        if line["kind"] != "score":
            continue
        s = sums.setdefault(line["item"], np.zeros(3))
        c = counts.setdefault(line["item"], np.zeros(3))
        for index, name in enumerate(DIMENSIONS):
            if name in line:
                s[index] += line[name]
                c[index] += 1
    means = np.array([sums[item] / counts[item] for item in sorted(sums)])
    r = np.corrcoef(means.T)
    assert abs(r[0, 2]) < 0.4
    assert abs(r[1, 2]) < 0.4
    assert 0.1 < r[0, 1] < 0.4  # fluency and informativeness: related, not the same


# ---------------------------------------------------------------------------------------------
# Import and aggregation


def test_imported_articles_keep_their_content_type_and_ratings_land_on_content_questions(
    content_study: Study,
) -> None:
    items = Item.objects.filter(study=content_study)
    assert items.count() == 36
    expected = {i["id"]: i["content_type"] for i in fixture_lines("items.jsonl")}
    assert dict(items.values_list("external_id", "content_type")) == expected
    assert set(items.values_list("language", flat=True)) == {"en", "zh"}
    lines = fixture_lines("judgments.jsonl")
    kinds = Counter(line["kind"] for line in lines)
    assert ScoreResponse.objects.filter(study=content_study).count() == kinds["score"]
    assert PairJudgment.objects.filter(study=content_study).count() == kinds["pair"]
    assert TuringJudgment.objects.filter(study=content_study).count() == kinds["turing"]
    names = set(
        ScoreAnswer.objects.filter(response__study=content_study).values_list(
            "question__name", flat=True
        )
    )
    assert names == set(QUESTIONS)


def test_the_results_document_has_the_three_dimensions_and_no_humor_question(
    content_study: Study, result: StudyResult
) -> None:
    payload = result.payload
    assert set(payload["agreement"]) == set(QUESTIONS)
    for name in QUESTIONS:
        assert payload["agreement"][name]["fleiss_kappa"]["n"] > 0
    assert len(payload["items"]) == 36
    for item in payload["items"]:
        assert set(item["questions"]) == set(QUESTIONS)
        assert item["n_raters"] >= 15
    for entry in payload["groups"]["source"].values():
        assert set(entry["questions"]) == set(QUESTIONS)
    assert set(payload["groups"]["source"]) == {"scribe-13b", "newsgen-v1", "storyloom-2", "human"}
    assert {row["item"] for row in payload["bradley_terry"]} == {f"a{n:03d}" for n in range(1, 37)}
    # Pairs stay within a topic: one comparison group per content type x topic.
    assert len({row["component"] for row in payload["bradley_terry"]}) == 9
    assert payload["turing"]


def test_the_simulated_structure_is_recovered_per_article(result: StudyResult) -> None:
    """Planted profiles: a002 fluent but empty news, a006 informative but clumsy news, a030
    original but rambling fiction; the item means and their intervals must show each."""
    items = {item["item"]: item["questions"] for item in result.payload["items"]}

    def mean(item: str, name: str) -> float:
        return float(items[item][name]["value"])

    assert mean("a002", "fluency") - mean("a002", "informativeness") > 1.5
    assert mean("a006", "informativeness") - mean("a006", "fluency") > 1.0
    assert mean("a030", "originality") - mean("a030", "fluency") > 1.0
    for stats in items["a001"].values():
        assert stats["ci_low"] <= stats["value"] <= stats["ci_high"]


def test_the_results_document_keeps_each_items_content_type_and_groups_by_it(
    result: StudyResult,
) -> None:
    payload = result.payload
    assert {item["item"]: item.get("content_type") for item in payload["items"]} == {
        i["id"]: i["content_type"] for i in fixture_lines("items.jsonl")
    }
    assert set(payload["groups"]["content_type"]) == {"news", "analysis", "creative"}


def test_a_content_study_gets_fatigue_and_per_item_agreement(result: StudyResult) -> None:
    payload = result.payload
    assert "fatigue" in payload["diagnostics"]
    items = {item["item"]: item for item in payload["items"]}
    assert all(item["cross_group_agreement"] is not None for item in items.values())
    # a016 is planted as culture-dependent on originality.
    assert "culture_dependent" in items["a016"]["flags"]


# ---------------------------------------------------------------------------------------------
# Results pages and their CSV files


@pytest.mark.parametrize("section", ["", *SECTIONS])
def test_every_results_page_renders_for_a_content_study(
    result: StudyResult, member: Client, content_study: Study, section: str
) -> None:
    path = f"/studies/{content_study.slug}/results/{section + '/' if section else ''}"
    response = member.get(path)
    assert response.status_code == 200
    text = visible_text(response.content.decode())
    assert "No results yet" not in text
    if section in ("", "items", "agreement", "safety"):
        for name in DIMENSIONS:
            assert name in text, (section, name)
    for name in ("funniness", "surprise", "coherence"):
        assert f'data-question="{name}"' not in response.content.decode()


def test_the_summary_page_shows_a_mean_per_source_for_every_content_question(
    result: StudyResult, member: Client, content_study: Study
) -> None:
    # The summary starts from the evidence-only view; the payload's own means are under view=all.
    page = member.get(f"/studies/{content_study.slug}/results/?view=all").content.decode()
    row = re.search(r'<tr data-group="human">(.*?)</tr>', page, re.S)
    assert row, "no row for human-written articles"
    stored = result.payload["groups"]["source"]["human"]["questions"]
    cells = visible_text(row.group(1))
    for name in QUESTIONS:
        assert f"{stored[name]['value']:.2f}" in cells


@pytest.mark.parametrize("name", CSV_NAMES)
def test_every_results_csv_downloads_for_a_content_study(
    result: StudyResult, member: Client, content_study: Study, name: str
) -> None:
    response = member.get(f"/studies/{content_study.slug}/results/data/{name}.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows
    assert rows[0]
    header = ",".join(rows[0])
    assert "funniness" not in header
    assert "surprise" not in header
    if name in ("summary", "items", "agreement"):
        assert all(dimension in response.content.decode() for dimension in DIMENSIONS), name


@pytest.mark.parametrize("section", ["", *SECTIONS])
def test_results_pages_of_a_content_study_speak_of_articles_not_jokes(
    result: StudyResult, member: Client, content_study: Study, section: str
) -> None:
    path = f"/studies/{content_study.slug}/results/{section + '/' if section else ''}"
    text = visible_text(member.get(path).content.decode())
    assert humor_words(text) == []


# ---------------------------------------------------------------------------------------------
# Exports


def test_the_raw_export_has_one_row_per_content_answer(
    result: StudyResult, content_study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "raw.csv"
    export_write(study=content_study, fmt="raw", path=path)
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    scores = [row for row in rows if row["kind"] == "score"]
    assert {row["question"] for row in scores} == set(QUESTIONS)
    assert len(scores) == ScoreAnswer.objects.filter(response__study=content_study).count()
    assert {row["kind"] for row in rows} == {"score", "pair", "turing"}
    assert all(row["active_seconds"] for row in rows)


def test_the_json_export_is_the_content_document(
    result: StudyResult, content_study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "results.json"
    export_write(study=content_study, fmt="json", path=path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert set(document["agreement"]) == set(QUESTIONS)
    assert document["bradley_terry"] == result.payload["bradley_terry"]
    assert (document["seed"], document["rounds"]) == (result.seed, 30)


def test_the_tables_zip_and_the_workbook_carry_the_three_dimensions(
    result: StudyResult, content_study: Study, tmp_path: Path
) -> None:
    archive_path = tmp_path / "tables.zip"
    export_write(study=content_study, fmt="tables", path=archive_path)
    with zipfile.ZipFile(archive_path) as archive:
        assert sorted(archive.namelist()) == sorted(f"{n}.csv" for n in SELECTABLE_TABLES)
        items_csv = archive.read("items.csv").decode("utf-8")
    header = next(csv.reader(io.StringIO(items_csv)))
    for name in DIMENSIONS:
        assert f"{name}_mean" in header
    assert not any(column.startswith("funniness") for column in header)
    assert len(items_csv.strip().splitlines()) == 37

    workbook_path = tmp_path / "results.xlsx"
    export_write(study=content_study, fmt="xlsx", path=workbook_path)
    workbook = load_workbook(workbook_path, read_only=True)
    assert "items" in workbook.sheetnames
    columns = [cell.value for cell in next(workbook["items"].iter_rows(max_row=1))]
    assert [c for c in columns if str(c).endswith("_mean")] == [f"{n}_mean" for n in QUESTIONS]
    workbook.close()


def test_the_printable_report_shows_the_content_questions(
    result: StudyResult, content_study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    export_write(study=content_study, fmt="report-html", path=path)
    text = visible_text(path.read_text(encoding="utf-8"))
    for name in DIMENSIONS:
        assert name in text


def test_the_exported_items_table_keeps_the_content_type(
    result: StudyResult, content_study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "tables.zip"
    export_write(study=content_study, fmt="tables", path=path)
    with zipfile.ZipFile(path) as archive:
        rows = list(csv.DictReader(io.StringIO(archive.read("items.csv").decode("utf-8"))))
    assert {row["item"]: row.get("content_type") for row in rows} == {
        i["id"]: i["content_type"] for i in fixture_lines("items.jsonl")
    }


def test_the_printable_report_of_a_content_study_has_no_humor_wording(
    result: StudyResult, content_study: Study, tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    export_write(study=content_study, fmt="report-html", path=path)
    assert humor_words(visible_text(path.read_text(encoding="utf-8"))) == []


def test_the_exports_page_and_its_direct_downloads_work_for_a_content_study(
    result: StudyResult, member: Client, content_study: Study
) -> None:
    base = f"/studies/{content_study.slug}/exports/"
    assert member.get(base).status_code == 200
    document = member.get(base + "direct/json")
    assert document.status_code == 200
    assert set(json.loads(document.content)["agreement"]) == set(QUESTIONS)
    table = member.get(base + "direct/csv", {"table": "groups_source"})
    assert table.status_code == 200
    assert "originality_mean" in table.content.decode()
    report = member.get(base + "direct/report-html")
    assert report.status_code == 200
    assert "informativeness" in visible_text(report.content.decode())


@pytest.mark.parametrize("fmt", ["raw", "json", "tables", "xlsx", "report-html"])
def test_export_jobs_finish_for_a_content_study(
    result: StudyResult,
    member: Client,
    content_study: Study,
    fmt: str,
    settings: Any,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.MEDIA_ROOT = tmp_path
    base = f"/studies/{content_study.slug}/exports/"
    with django_capture_on_commit_callbacks(execute=True):
        response = member.post(base, {"format": fmt})
    assert response.status_code == 302
    job = ExportJob.objects.get(study=content_study, format=fmt)
    assert job.status == ExportJob.Status.DONE, job.error
    download = member.get(f"{base}{job.pk}/download")
    assert download.status_code == 200
    body = b"".join(download.streaming_content)  # type: ignore[attr-defined]
    assert body


# ---------------------------------------------------------------------------------------------
# The rater pages


def test_the_enrolment_page_of_a_content_study_does_not_promise_jokes(content_study: Study) -> None:
    response = Client().get(f"/s/{content_study.slug}/")
    assert response.status_code == 200
    text = visible_text(response.content.decode())
    assert humor_words(text) == []
    assert "Rate some articles" in text


# ---------------------------------------------------------------------------------------------
# The wording follows the rubric's kind


def test_a_content_study_names_its_level_neutrally_and_shows_no_empty_type(
    result: StudyResult, member: Client, content_study: Study, tmp_path: Path
) -> None:
    base = f"/studies/{content_study.slug}/results/"
    summary = member.get(base).content.decode()
    # The articles carry no humor type: no table of types, and no offense column for a rubric
    # that never asks about offense.
    assert 'data-dimension="humor_type"' not in summary
    assert 'data-dimension="level_humor_type"' not in summary
    by_type = re.search(r'data-dimension="content_type"(.*?)</table>', summary, re.S)
    assert by_type, "no table by content type"
    assert set(re.findall(r'data-group="(\w+)"', by_type.group(1))) == {
        "news",
        "analysis",
        "creative",
    }
    assert "Offense rate" not in visible_text(summary)
    level = re.search(r'<tr data-group="single">(.*?)</tr>', summary, re.S)
    assert level, "no row for the single level"
    assert visible_text(level.group(1)).split()[:2] == ["Single", "text"]
    items = visible_text(member.get(base + "items/").content.decode())
    assert "Single text" in items
    assert "unspecified" not in items
    turing = member.get(base + "turing/").content.decode()
    assert re.search(r'<tr data-level="single">\s*<th scope="row">Single text</th>', turing)
    path = tmp_path / "report.html"
    export_write(study=content_study, fmt="report-html", path=path)
    assert "the rater picks the one that is better overall" in visible_text(
        path.read_text(encoding="utf-8")
    )


def test_a_humor_study_keeps_the_humor_wording(
    demo_study: Study, django_user_model: Any, tmp_path: Path
) -> None:
    study_aggregate(study=demo_study, rounds=20)
    Study.objects.filter(pk=demo_study.pk).update(status=Study.Status.OPEN)
    user = django_user_model.objects.create_user("comedian", password="pw-comedian-1")
    study_member_add(study=demo_study, user=user)
    client = Client()
    client.force_login(user)
    base = f"/studies/{demo_study.slug}/results/"
    summary = visible_text(client.get(base).content.decode())
    assert "By humor type" in summary
    assert "in the humor scorecard surprise and coherence 1–5, funniness 1–7" in summary
    assert "Single joke" in summary
    items = visible_text(client.get(base + "items/").content.decode())
    assert "Humor type" in items
    assert "within-item agreement on funniness" in items
    leaderboard = visible_text(client.get(base + "leaderboard/").content.decode())
    assert '"which is funnier?"' in leaderboard
    assert "Humor type" in leaderboard
    quality = visible_text(client.get(base + "quality/").content.decode())
    assert "Mean funniness per minute" in quality
    enrol = visible_text(Client().get(f"/s/{demo_study.slug}/").content.decode())
    assert "Rate some jokes" in enrol
    path = tmp_path / "report.html"
    export_write(study=demo_study, fmt="report-html", path=path)
    report = visible_text(path.read_text(encoding="utf-8"))
    assert "surprise and coherence are judged before funniness is" in report
    assert '"which is funnier?"' in report
    assert "By humor type" in report
