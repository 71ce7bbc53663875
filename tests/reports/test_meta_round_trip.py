"""Metadata round trip: items and judgments imported with `meta` (from JSON lines or a CSV file)
come back unchanged in every results export (JSON document, CSV / JSON-lines item tables, the
tables zip, raw judgments) and on the researcher's items page."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from apps.analysis.services import study_aggregate
from apps.judgments.services import study_judgments_import
from apps.reports.services import export_write, study_result_document
from apps.studies.services import study_create, study_items_import, study_member_add
from tests.imports.data import jsonl

pytestmark = pytest.mark.django_db

ITEM_META = {
    "t00": {"split": "dev", "votes": [3, 1, 0], "origin": {"site": "中文论坛", "row": 17}},
    "t01": {"split": "train", "score": 2.5, "flag": None},
}
JUDGMENT_META = {"worker": "w-77", "batch": {"n": 3, "tags": ["a", "ü"]}}


@pytest.fixture
def study(django_user_model, settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = django_user_model.objects.create_user("owner", password="pw-owner-123")
    study = study_create(slug="meta", rubric_slug="humor", name="Meta", owner=owner)
    study_member_add(study=study, user=owner)
    items = [
        {
            "id": f"t{i:02d}",
            "text": f"text {i}",
            "source": "model-a" if i % 2 else "human",
            **({"meta": ITEM_META[f"t{i:02d}"]} if f"t{i:02d}" in ITEM_META else {}),
        }
        for i in range(6)
    ]
    study_items_import(study=study, data=jsonl(items), filename="items.jsonl")
    judgments = [
        {
            "kind": "score",
            "rater": f"r{k}",
            "background": "technical",
            "item": f"t{i:02d}",
            "funniness": 1 + (i + k) % 7,
            **({"meta": JUDGMENT_META} if (i, k) == (0, 0) else {}),
        }
        for i in range(6)
        for k in range(4)
    ]
    study_judgments_import(study=study, data=jsonl(judgments), filename="j.jsonl")
    study_aggregate(study=study, rounds=20, seed=1)
    study.owner_user = owner
    return study


def test_the_results_document_carries_each_items_meta_unchanged(study, tmp_path):
    by_item = {item["item"]: item["meta"] for item in study_result_document(study=study)["items"]}
    assert by_item["t00"] == ITEM_META["t00"]
    assert by_item["t01"] == ITEM_META["t01"]
    assert by_item["t02"] == {}
    path = tmp_path / "results.json"
    export_write(study=study, fmt="json", path=path)
    written = {i["item"]: i["meta"] for i in json.loads(path.read_text("utf-8"))["items"]}
    assert written == by_item
    out = StringIO()
    call_command("export", "meta", "--format", "json", stdout=out, stderr=StringIO())
    assert {i["item"]: i["meta"] for i in json.loads(out.getvalue())["items"]} == by_item


def test_the_item_tables_hold_the_meta_as_json(study, tmp_path):
    out = StringIO()
    call_command("export", "meta", "--format", "csv", stdout=out, stderr=StringIO())
    rows = {row["item"]: row for row in csv.DictReader(io.StringIO(out.getvalue()))}
    assert json.loads(rows["t00"]["meta"]) == ITEM_META["t00"]
    assert rows["t02"]["meta"] == ""
    out = StringIO()
    call_command("export", "meta", "--format", "jsonl", stdout=out, stderr=StringIO())
    lines = {row["item"]: row for row in map(json.loads, out.getvalue().splitlines())}
    assert lines["t01"]["meta"] == ITEM_META["t01"]
    path = tmp_path / "tables.zip"
    export_write(study=study, fmt="tables", path=path)
    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.endswith("items.csv"))
        table = csv.DictReader(io.StringIO(archive.read(name).decode("utf-8-sig")))
        zipped = {row["item"]: row["meta"] for row in table}
    assert json.loads(zipped["t00"]) == ITEM_META["t00"]


def test_the_raw_export_holds_each_judgments_meta(study, tmp_path):
    path = tmp_path / "raw.csv"
    export_write(study=study, fmt="raw", path=path)
    rows = list(csv.DictReader(io.StringIO(path.read_text("utf-8"))))
    with_meta = [row for row in rows if row["meta"]]
    assert [(row["rater"], row["item"]) for row in with_meta] == [("r0", "t00")]
    assert json.loads(with_meta[0]["meta"]) == JUDGMENT_META


# Score, pair and Turing judgments from one CSV file, their meta given as a JSON cell, as
# `meta.KEY` columns and as extra columns (every CSV cell is text; the JSON cell keeps its types).
CSV_JUDGMENTS = (
    "kind,rater,background,item,left,right,winner,guess,funniness,surprise,meta,meta.batch,worker\n"
    'score,c1,technical,t01,,,,,4,2,"{""position"": 1, ""tags"": [""x"", ""ü""]}",b2,w-9\n'
    'pair,c1,technical,,t00,t01,t01,,,,"{""shown"": {""left"": ""t00""}}",b2,\n'
    "turing,c1,technical,t02,,,,ai,,,,,中文-3\n"
    "turing,c1,technical,t03,,,,human,,,,,\n"
)
CSV_META = {
    ("score", "t01"): {"position": 1, "tags": ["x", "ü"], "batch": "b2", "worker": "w-9"},
    ("pair", ""): {"shown": {"left": "t00"}, "batch": "b2"},
    ("turing", "t02"): {"worker": "中文-3"},
    ("turing", "t03"): None,
}


def test_the_raw_export_holds_the_meta_of_judgments_imported_from_csv(study, tmp_path):
    summary = study_judgments_import(
        study=study, data=CSV_JUDGMENTS.encode(), filename="judgments.csv"
    )
    assert summary.created == {"score": 1, "pair": 1, "turing": 2}
    path = tmp_path / "raw.csv"
    export_write(study=study, fmt="raw", path=path)
    rows = [
        row for row in csv.DictReader(io.StringIO(path.read_text("utf-8"))) if row["rater"] == "c1"
    ]
    got: dict[tuple[str, str], list[object]] = {}
    for row in rows:
        meta = json.loads(row["meta"]) if row["meta"] else None
        got.setdefault((row["kind"], row["item"]), []).append(meta)
    # A scorecard gives a row per question answered, each with the scorecard's meta.
    assert got == {key: [meta] * (2 if key[0] == "score" else 1) for key, meta in CSV_META.items()}
    pair = next(row for row in rows if row["kind"] == "pair")
    assert (pair["left"], pair["right"], pair["winner"]) == ("t00", "t01", "t01")


def test_the_items_page_shows_the_meta_under_the_text(study):
    client = Client()
    client.force_login(study.owner_user)
    page = client.get("/studies/meta/results/items/").content.decode()
    assert '<dl class="item-meta"' in page
    assert "<dt>split</dt><dd>dev</dd>" in page
    assert "中文论坛" in page
