"""Every results export parses back with the same numbers as the stored payload."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
import zlib
from pathlib import Path

import pytest
from openpyxl import load_workbook

from apps.analysis.exports import result_document
from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.core.errors import DomainError, NotFound
from apps.reports import services, writers
from apps.reports.services import export_write, study_table_csv
from apps.reports.tables import (
    RESULT_TABLE_NAMES,
    SELECTABLE_TABLES,
    TABLE_NAMES,
    Table,
    result_tables,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def result(demo_study) -> StudyResult:
    study_aggregate(study=demo_study, rounds=50)
    return StudyResult.objects.get(study=demo_study)


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def pdf_page_count(data: bytes) -> int:
    """Pages in a PDF whose objects may sit in compressed object streams (WeasyPrint's)."""
    chunks = [data]
    for match in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
        try:
            chunks.append(zlib.decompress(match.group(1)))
        except zlib.error:
            continue
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", b"".join(chunks)))


def test_results_json_is_the_stored_document_with_its_provenance(demo_study, result, tmp_path):
    path = tmp_path / "results.json"
    export_write(study=demo_study, fmt="json", path=path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document == json.loads(json.dumps(result_document(result)))
    assert document["bradley_terry"] == result.payload["bradley_terry"]
    assert (document["seed"], document["rounds"], document["input_hash"]) == (
        result.seed,
        50,
        result.input_hash,
    )


def test_tables_zip_holds_one_csv_per_table_with_the_stored_numbers(demo_study, result, tmp_path):
    path = tmp_path / "tables.zip"
    export_write(study=demo_study, fmt="tables", path=path)
    payload = result.payload
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == sorted(f"{name}.csv" for name in SELECTABLE_TABLES)
        tables = {
            name[:-4]: csv_rows(archive.read(name).decode("utf-8")) for name in archive.namelist()
        }

    # An item that won or lost every comparison has no score: an empty cell, never a number.
    scores = {
        row["item"]: float(row["score"]) if row["score"] else None
        for row in tables["bradley_terry"]
    }
    assert scores == {row["item"]: row["score"] for row in payload["bradley_terry"]}
    assert len(tables["items"]) == payload["counts"]["items"] == 70
    for source, entry in payload["groups"]["source"].items():
        row = next(r for r in tables["groups_source"] if r["group"] == source)
        assert float(row["funniness_mean"]) == entry["questions"]["funniness"]["value"]
        assert float(row["funniness_ci_low"]) == entry["questions"]["funniness"]["ci_low"]
        assert int(row["n_items"]) == entry["n_items"]
    assert {row["group"] for row in tables["groups_background"]} == set(
        payload["groups"]["background"]
    )
    assert {row["group"] for row in tables["groups_humor_type"]} == set(
        payload["groups"]["humor_type"]
    )
    for row in tables["agreement"]:
        expected = payload["agreement"][row["question"]]["fleiss_kappa"]["value"]
        assert float(row["fleiss_kappa"]) == expected
        cohen = payload["agreement"][row["question"]]["cohen_kappa"]["unweighted"]
        assert int(row["cohen_kappa_pairs"]) == cohen["n_pairs"]
        assert int(row["cohen_kappa_min_shared_items"]) == cohen["min_shared_items"]
        if cohen["n_pairs"]:
            assert float(row["cohen_kappa"]) == cohen["value"]
            assert float(row["cohen_kappa_ci_low"]) == cohen["ci_low"]
            assert row["cohen_kappa_note"] == ""
        else:
            assert row["cohen_kappa"] == ""
            assert "no pair of raters shares" in row["cohen_kappa_note"]
        assert row["interval"] == "rater_jackknife"
    # The rubric's order, not the alphabet's.
    assert [row["question"] for row in tables["agreement"]] == [
        "surprise",
        "coherence",
        "funniness",
        "offensive",
    ]
    for source, entry in payload["turing"]["by_source"].items():
        row = next(r for r in tables["turing"] if (r["scope"], r["group"]) == ("source", source))
        assert float(row["accuracy"]) == entry["accuracy"]["value"]
    assert [row["code"] for row in tables["warnings"]] == [w["code"] for w in payload["warnings"]]
    provenance = {row["key"]: row["value"] for row in tables["provenance"]}
    assert provenance["input_hash"] == result.input_hash
    assert int(provenance["seed"]) == result.seed
    assert int(provenance["rounds"]) == 50


def test_one_table_is_available_by_name(demo_study, result):
    rows = csv_rows(study_table_csv(study=demo_study, name="bradley_terry_by_level"))
    levels = result.payload["bradley_terry_by_level"]
    assert len(rows) == sum(len(entries) for entries in levels.values())
    first = next(r for r in rows if r["scope_level"] == "single")
    assert float(first["score"]) == levels["single"][0]["score"]


def test_an_unknown_table_name_is_refused(demo_study, result):
    with pytest.raises(DomainError, match="unknown table 'nope'") as error:
        study_table_csv(study=demo_study, name="nope")
    assert error.value.status_code == 400


def test_xlsx_has_a_sheet_per_table_and_a_provenance_sheet(demo_study, result, tmp_path):
    path = tmp_path / "results.xlsx"
    export_write(study=demo_study, fmt="xlsx", path=path)
    workbook = load_workbook(path, read_only=True)
    assert workbook.sheetnames == [*TABLE_NAMES, "provenance"]

    def sheet(name: str) -> list[dict[str, object]]:
        rows = list(workbook[name].iter_rows(values_only=True))
        return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]

    # openpyxl writes 16 significant digits (Excel shows 15): equal to the last digit but one.
    scores = {row["item"]: row["score"] for row in sheet("bradley_terry")}
    expected = {row["item"]: row["score"] for row in result.payload["bradley_terry"]}
    # Items without a finite score are empty cells in the sheet and null in the document.
    assert {k for k, v in scores.items() if v is None} == {
        k for k, v in expected.items() if v is None
    }
    scores = {k: v for k, v in scores.items() if v is not None}
    expected = {k: v for k, v in expected.items() if v is not None}
    assert scores == pytest.approx(expected, rel=1e-15, abs=1e-300)
    for source, entry in result.payload["groups"]["source"].items():
        row = next(r for r in sheet("groups_source") if r["group"] == source)
        assert row["funniness_mean"] == pytest.approx(
            entry["questions"]["funniness"]["value"], rel=1e-15
        )
    provenance = {row["key"]: row["value"] for row in sheet("provenance")}
    assert provenance["seed"] == result.seed
    assert provenance["rounds"] == 50
    assert provenance["input_hash"] == result.input_hash
    assert provenance["computed_at"] == result.computed_at.isoformat()


def test_xlsx_keeps_text_that_looks_like_a_formula_as_text(tmp_path):
    path = tmp_path / "t.xlsx"
    writers.write_xlsx([Table("items", ["item", "n"], [["=HYPERLINK(1)", 3]])], path)
    cell = load_workbook(path)["items"]["A2"]
    assert (cell.value, cell.data_type) == ("=HYPERLINK(1)", "s")


def test_report_html_states_the_method_numbers_seeds_hash_and_warnings(demo_study, result):
    html = services.study_report_html(study=demo_study)
    payload = result.payload
    assert "size: A4" in html
    assert "@page" in html
    for phrase in ("ordered scorecard", "Bradley-Terry", "Turing", "cross", "bootstrap"):
        assert phrase.lower() in html.lower()
    assert result.input_hash in html
    assert str(result.seed) in html
    # The numbers with their intervals, rounded only for reading.
    # The report follows the study's setting: without the items that are not evidence when the
    # study leaves them out, as every page does.
    evidence = payload.get("evidence_only")
    summary = evidence["results"] if evidence and demo_study.exclude_items_not_evidence else payload
    top = summary["bradley_terry_by_level"]["single"][0]
    assert writers.fmt_interval(
        {"value": top["score"], "ci_low": top["ci_low"], "ci_high": top["ci_high"]}
    ) in html.replace("&nbsp;", "\u00a0")
    # Per source, the model comparison's means.
    for warning in summary["warnings"]:
        assert warning["code"] in html
    for entry in summary["models"]["by_model"].values():
        assert writers.fmt_interval(entry["questions"]["funniness"]) in html
    for entry in summary["groups"]["humor_type"].values():
        assert writers.fmt_interval(entry["questions"]["funniness"]) in html
    for entry in summary["turing"]["by_source"].values():
        assert writers.fmt_percent(entry["accuracy"]) in html
    for name, entry in summary["agreement"].items():
        assert f"<td>{name}</td>" in html
        assert writers.fmt_interval(entry["fleiss_kappa"]) in html


def test_report_pdf_is_a_pdf_with_pages(demo_study, result, tmp_path):
    path = tmp_path / "report.pdf"
    size = export_write(study=demo_study, fmt="report-pdf", path=path)
    data = path.read_bytes()
    assert size == len(data)
    assert data.startswith(b"%PDF-")
    assert data.rstrip().endswith(b"%%EOF")
    assert pdf_page_count(data) >= 3


def test_a_failed_export_leaves_no_file(demo_study, result, tmp_path, monkeypatch):
    def broken(html: str, path: Path) -> None:
        path.write_bytes(b"%PDF- half")
        raise RuntimeError("renderer died")

    monkeypatch.setattr(writers, "write_pdf", broken)
    with pytest.raises(RuntimeError):
        export_write(study=demo_study, fmt="report-pdf", path=tmp_path / "report.pdf")
    assert list(tmp_path.iterdir()) == []


def test_result_formats_before_any_aggregation_say_so(demo_study, tmp_path):
    with pytest.raises(NotFound, match="no computed results yet"):
        export_write(study=demo_study, fmt="xlsx", path=tmp_path / "x.xlsx")
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_format_is_refused(demo_study, tmp_path):
    with pytest.raises(DomainError, match="unknown export format 'pdf'"):
        export_write(study=demo_study, fmt="pdf", path=tmp_path / "x")


def test_tables_of_an_empty_document_are_empty_not_an_error():
    tables = result_tables({})
    assert [table.name for table in tables] == list(RESULT_TABLE_NAMES)
    assert all(table.rows == [] for table in tables)


def test_missing_numbers_stay_empty_cells():
    document = {
        "items": [
            {
                "item": "j1",
                "source": "m",
                "level": "single",
                "humor_type": "pun",
                "topic": "",
                "n_raters": 0,
                "n_pairs": 0,
                "questions": {
                    "funniness": {"value": None, "ci_low": None, "ci_high": None, "n": 0}
                },
                "turing_accuracy": {"value": None, "ci_low": None, "ci_high": None, "n": 0},
                "offensive": False,
                "safety_intercepted": False,
                "flags": [],
            }
        ],
        "groups": {"source": {"m": {"n_items": 1, "questions": {}}}},
    }
    tables = {table.name: table for table in result_tables(document)}
    row = tables["groups_source"].as_dicts()[0]
    assert row["funniness_mean"] is None
    assert row["turing_accuracy"] is None
    assert "funniness_mean,funniness_ci_low" in writers.table_csv(tables["groups_source"])
    assert writers.table_csv(tables["groups_source"]).splitlines()[1].startswith("m,1,,,,")


def test_an_undefeated_item_and_model_say_so_in_the_tables_instead_of_a_blank_row():
    """The tables carry what the pages say: an item that won every comparison has no score but
    its wins, losses and flag; a model with no finite strength is flagged, as is a difference
    with it."""
    from apps.reports.tables import bradley_terry_table, models_table

    document = {
        "items": [{"item": "i1", "source": "model-a", "level": "single"}],
        "bradley_terry": [
            {
                "item": "i1",
                "score": None,
                "ci_low": None,
                "ci_high": None,
                "rank": None,
                "component": 0,
                "wins": 7,
                "losses": 0,
                "flags": ["undefeated"],
            }
        ],
        "models": {
            "by_model": {"model-a": {"bt": {"value": None, "flag": "undefeated", "wins": 7}}},
            "differences": [
                {
                    "a": "model-a",
                    "b": "human",
                    "question": "bt",
                    "value": None,
                    "flag": "no_finite_strength",
                    "simultaneous": None,
                }
            ],
        },
    }
    table = bradley_terry_table(document)
    row = dict(zip(table.columns, table.rows[0], strict=True))
    assert (row["score"], row["rank"], row["wins"], row["losses"]) == (None, None, 7, 0)
    assert row["flags"] == "undefeated"
    models = models_table(document)
    rows = [dict(zip(models.columns, r, strict=True)) for r in models.rows]
    bt = next(r for r in rows if r["row"] == "source" and r["measure"] == "bt")
    assert bt["flag"] == "undefeated"
    difference = next(r for r in rows if r["row"] == "difference")
    assert difference["flag"] == "no_finite_strength"
    assert difference["simultaneous_ci_low"] is None
