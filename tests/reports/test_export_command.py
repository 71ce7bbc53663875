"""`manage.py export SLUG --format ...` writes every format; binary ones only to --out."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from openpyxl import load_workbook

from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.reports.selectors import raw_judgment_count
from apps.reports.tables import SELECTABLE_TABLES

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("export", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def result(demo_study) -> StudyResult:
    study_aggregate(study=demo_study, rounds=50)
    return StudyResult.objects.get(study=demo_study)


def test_every_format_is_written_to_out(demo_study, result, tmp_path):
    slug = demo_study.slug
    payload = result.payload
    bt = {row["item"]: row["score"] for row in payload["bradley_terry"]}
    scored = {item: score for item, score in bt.items() if score is not None}
    written = {}
    for fmt in ("json", "jsonl", "csv", "xlsx", "raw", "tables", "report-html", "report-pdf"):
        path = tmp_path / f"out.{fmt}"
        run(slug, "--format", fmt, "--out", str(path))
        written[fmt] = path.read_bytes()

    assert json.loads(written["json"])["input_hash"] == result.input_hash
    lines = [json.loads(line) for line in written["jsonl"].decode().splitlines()]
    assert {
        line["item"]: line["bt_score"] for line in lines if line["bt_score"] is not None
    } == scored
    rows = list(csv.DictReader(io.StringIO(written["csv"].decode())))
    assert len(rows) == 70
    workbook = load_workbook(io.BytesIO(written["xlsx"]), read_only=True)
    assert workbook.sheetnames[-1] == "provenance"
    raw = list(csv.DictReader(io.StringIO(written["raw"].decode())))
    assert len(raw) == raw_judgment_count(study=demo_study)
    with zipfile.ZipFile(io.BytesIO(written["tables"])) as archive:
        assert len(archive.namelist()) == len(SELECTABLE_TABLES)
        scores = list(csv.DictReader(io.StringIO(archive.read("bradley_terry.csv").decode())))
    assert {row["item"]: float(row["score"]) if row["score"] else None for row in scores} == bt
    assert result.input_hash.encode() in written["report-html"]
    assert written["report-pdf"].startswith(b"%PDF-")


@pytest.mark.parametrize("fmt", ["xlsx", "tables", "report-pdf"])
def test_binary_formats_need_out(demo_study, result, fmt):
    with pytest.raises(CommandError, match=r"writes a binary file.*give --out PATH"):
        run(demo_study.slug, "--format", fmt)


def test_text_formats_go_to_standard_output(demo_study, result):
    raw = run(demo_study.slug, "--format", "raw")
    assert len(raw.splitlines()) == 1 + raw_judgment_count(study=demo_study)
    assert result.input_hash in run(demo_study.slug, "--format", "report-html")


def test_one_table_by_name(demo_study, result):
    rows = list(
        csv.DictReader(io.StringIO(run(demo_study.slug, "--format", "tables", "--table", "turing")))
    )
    overall = next(row for row in rows if row["scope"] == "overall")
    assert float(overall["accuracy"]) == result.payload["turing"]["overall"]["accuracy"]["value"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "tables", "--table", "secrets"], "unknown table 'secrets'"),
        (["--format", "csv", "--table", "turing"], "--table applies to --format tables only"),
        (["--format", "pdf"], "invalid choice"),
        (["--format", "xlsx", "--out", "/nonexistent/dir/x.xlsx"], "does not exist"),
    ],
)
def test_bad_arguments_are_refused(demo_study, result, tmp_path, args, message):
    with pytest.raises(CommandError, match=message):
        run(demo_study.slug, *args)


def test_results_formats_before_aggregation_say_what_to_do_and_raw_still_works(
    demo_study, tmp_path
):
    with pytest.raises(CommandError, match="no computed results yet"):
        run(demo_study.slug, "--format", "xlsx", "--out", str(tmp_path / "x.xlsx"))
    assert list(tmp_path.iterdir()) == []
    run(demo_study.slug, "--format", "raw", "--out", str(tmp_path / "raw.csv"))
    assert (tmp_path / "raw.csv").read_text().startswith("kind,rater,")


def test_the_report_is_written_in_the_language_the_researcher_chooses(demo_study, result):
    english = run(demo_study.slug, "--format", "report-html")
    chinese = run(demo_study.slug, "--format", "report-html", "--language", "zh-hans")
    assert '<html lang="en">' in english
    assert "<h2>Method</h2>" in english
    assert '<html lang="zh-hans">' in chinese
    assert "<h2>方法</h2>" in chinese
    # The warnings in the reader's words; the figures are the same in both.
    assert "Krippendorff's alpha" not in chinese.split('id="warnings"')[1].split("</section>")[0]
    assert result.input_hash in chinese
    table = run(
        demo_study.slug, "--format", "tables", "--table", "warnings", "--language", "zh-hans"
    )
    rows = list(csv.DictReader(io.StringIO(table)))
    assert [row["code"] for row in rows] == [w["code"] for w in result.payload["warnings"]]
    for row in rows:
        assert json.loads(row["params"]) is not None
        assert row["message"].isascii()


def test_an_unknown_report_language_is_refused():
    with pytest.raises(CommandError, match="invalid choice"):
        run("any", "--format", "report-html", "--language", "fr")
