"""Management commands: arguments and files are checked, errors name line and field."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.analysis.models import StudyResult
from apps.content.models import ContentEvaluation
from apps.raters.models import Rater
from apps.studies.models import Item, Study

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_create_study_makes_a_draft_with_the_four_default_backgrounds():
    assert "Created study 'pilot'" in run(
        "create_study", "pilot", "--rubric", "content", "--name", "Pilot"
    )
    study = Study.objects.get(slug="pilot")
    assert (study.status, study.rubric.slug, study.name, study.session_minutes) == (
        "draft",
        "content",
        "Pilot",
        30,
    )
    assert list(study.background_groups.values_list("code", flat=True)) == [
        "technical",
        "content_operations",
        "administrative_support",
        "traditional_industries",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create_study", "Bad Slug!", "--rubric", "humor"], "must be lowercase letters"),
        (["create_study", "x", "--rubric", "sonnets"], "no rubric .sonnets.; known rubrics"),
        (["create_study", "x", "--rubric", "missing.json"], "does not exist"),
    ],
)
def test_create_study_refuses_bad_arguments(args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not Study.objects.exists()


def test_create_study_refuses_a_taken_slug():
    run("create_study", "pilot", "--rubric", "humor")
    with pytest.raises(CommandError, match="already exists"):
        run("create_study", "pilot", "--rubric", "content")
    assert Study.objects.get().rubric.slug == "humor"


def test_import_items_reports_each_bad_line_and_field(tmp_path: Path):
    run("create_study", "pilot", "--rubric", "humor")
    path = tmp_path / "items.jsonl"
    path.write_text(
        json.dumps({"id": "a", "text": "fine", "source": "human"})
        + "\n"
        + json.dumps({"id": "b", "source": "human"})
        + "\n"
        + json.dumps({"id": "c", "text": "t", "source": "m", "level": "x"})
        + "\n"
    )
    with pytest.raises(CommandError) as info:
        run("import_items", "pilot", str(path))
    message = str(info.value)
    assert "2 bad lines; nothing was imported" in message
    assert "line 2, field 'text': is required" in message
    assert "line 3, field 'level': must be one of" in message
    assert not Item.objects.exists()


def test_import_items_names_a_missing_file_and_an_unknown_study(tmp_path: Path):
    run("create_study", "pilot", "--rubric", "humor")
    with pytest.raises(CommandError, match="does not exist or is not a file"):
        run("import_items", "pilot", str(tmp_path / "missing.jsonl"))
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "fine", "source": "human"}))
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        run("import_items", "nope", str(path))
    assert not Item.objects.exists()


def test_import_judgments_reports_line_and_field(tmp_path: Path):
    run("create_study", "pilot", "--rubric", "humor")
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "text": "fine", "source": "human"}))
    run("import_items", "pilot", str(items))
    path = tmp_path / "judgments.jsonl"
    path.write_text(
        json.dumps(
            {"kind": "turing", "rater": "r1", "background": "pilots", "item": "a", "guess": "ai"}
        )
    )
    with pytest.raises(
        CommandError, match="line 1, field 'background': 'pilots' is not a background group"
    ):
        run("import_judgments", "pilot", str(path))
    assert not Rater.objects.exists()


def test_aggregate_and_export_write_the_design_shape(
    tmp_path: Path, settings, django_capture_on_commit_callbacks
):
    settings.BOOTSTRAP_ROUNDS = 20
    with django_capture_on_commit_callbacks(execute=True):
        output = run("seed_demo", "--skip-aggregate")
    assert "Content evaluation" not in output
    assert not ContentEvaluation.objects.exists()
    assert "computed in" in run("aggregate", "demo", "--rounds", "30", "--seed", "5")
    one_thread = StudyResult.objects.get(study__slug="demo").payload
    run("aggregate", "demo", "--rounds", "30", "--seed", "5", "--threads", "2")
    # The same document whatever the threads (its `software` block is the same too).
    assert json.dumps(StudyResult.objects.get(study__slug="demo").payload, sort_keys=True) == (
        json.dumps(one_thread, sort_keys=True)
    )
    out = tmp_path / "results.json"
    run("export", "demo", "--format", "json", "--out", str(out))
    document = json.loads(out.read_text())
    assert (document["seed"], document["rounds"]) == (5, 30)
    assert len(document["input_hash"]) == 64
    row = document["bradley_terry"][0]
    assert set(row) >= {"item", "score", "ci_low", "ci_high", "rank"}
    assert {"fleiss_kappa", "krippendorff_alpha"} <= set(document["agreement"]["funniness"])
    assert {"items", "groups", "turing", "warnings"} <= set(document)
    table = run("export", "demo", "--format", "csv")
    header = table.splitlines()[0].split(",")
    assert header[:2] == ["item", "source"]
    assert "bt_score" in header
    assert len(table.splitlines()) == 71


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["aggregate", "demo", "--rounds", "5"], "--rounds must be from 10"),
        (["aggregate", "nope"], "no study with slug 'nope'"),
        (["aggregate", "demo", "--threads", "0"], "--threads must be from 1 to 64"),
        (["export", "demo", "--format", "pdf"], "invalid choice"),
        (["export", "demo", "--out", "/nonexistent/dir/x.json"], "does not exist"),
    ],
)
def test_aggregate_and_export_refuse_bad_arguments(args, message, settings):
    settings.BOOTSTRAP_ROUNDS = 20
    run("seed_demo")
    before = StudyResult.objects.get(study__slug="demo").computed_at
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert StudyResult.objects.get(study__slug="demo").computed_at == before


def test_export_before_any_aggregation_says_what_to_do():
    run("seed_demo", "--skip-aggregate")
    with pytest.raises(CommandError, match="no computed results yet"):
        run("export", "demo")
