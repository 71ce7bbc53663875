"""Bringing one's own data: a custom 0-3 rubric from a file, items and judgments with metadata,
raters of unknown background, imports that only mark results stale, and the rater-id warning."""

from __future__ import annotations

import json
import random
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.services import study_aggregate
from apps.judgments.models import ScoreAnswer, ScoreResponse
from apps.judgments.services import study_judgments_import
from apps.raters.models import Rater
from apps.studies.models import Item, Question, Study
from apps.studies.services import study_items_import

pytestmark = pytest.mark.django_db

RUBRIC = {
    "slug": "crowd-grade",
    "name": "Crowd grade",
    "questions": [
        {
            "name": "grade",
            "kind": "likert",
            "min_value": 0,
            "max_value": 3,
            "prompt": {"en": "How funny is it?", "zh": "有多好笑？"},
            "anchors": {
                "en": {"0": "Not funny", "3": "Very"},
                "zh": {"0": "不好笑", "3": "很好笑"},
            },
        }
    ],
}


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def jsonl(rows: list[dict[str, object]]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode()


@pytest.fixture
def study(tmp_path: Path) -> Study:
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps(RUBRIC), encoding="utf-8")
    run("create_study", "crowd", "--rubric", str(path), "--backgrounds", "")
    return Study.objects.get(slug="crowd")


def items(n: int) -> bytes:
    return jsonl(
        [
            {"id": f"t{i}", "text": f"joke {i}", "source": "human", "meta": {"split": "dev"}}
            for i in range(n)
        ]
    )


def test_create_study_takes_a_rubric_file_with_a_zero_based_scale(study: Study) -> None:
    question = Question.objects.get(rubric=study.rubric)
    assert (question.name, question.min_value, question.max_value) == ("grade", 0, 3)
    assert question.prompt == {"en": "How funny is it?", "zh": "有多好笑？"}
    assert not study.rubric.builtin
    assert list(study.background_groups.all()) == []


def test_a_rubric_file_with_a_bad_field_is_refused_naming_it(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(RUBRIC))
    bad["questions"][0]["max_value"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(CommandError, match=r"questions\[0\]\.max_value"):
        run("create_study", "crowd", "--rubric", str(path))
    assert not Study.objects.filter(slug="crowd").exists()


def test_judgments_of_unknown_background_are_imported_and_aggregated(study: Study) -> None:
    study_items_import(study=study, data=items(30), filename="items.jsonl")
    lines = [
        {
            "kind": "score",
            "rater": f"g{k}",
            "background": "unknown",
            "item": f"t{k % 30}",
            "grade": k % 4,
            "meta": {"position": k % 5},
        }
        for k in range(150)
    ]
    summary = study_judgments_import(study=study, data=jsonl(lines), filename="j.jsonl")
    assert summary.created["score"] == 150
    assert summary.warnings == []
    assert Rater.objects.filter(study=study, background__isnull=True).count() == 150
    assert ScoreResponse.objects.filter(study=study).first().meta == {"position": 0}
    assert sorted(set(ScoreAnswer.objects.values_list("value", flat=True))) == [0, 1, 2, 3]
    document = study_aggregate(study=study, rounds=20).payload
    assert document["counts"]["raters_unknown_background"] == 150
    agreement = document["agreement"]["grade"]
    assert agreement["alpha_level"] == "ordinal"
    assert agreement["krippendorff_alpha_by_group"] == {}
    assert agreement["unknown_background_raters"] == 150
    assert set(agreement["krippendorff_alpha"]) == {"nominal", "ordinal", "interval"}
    assert document["groups"]["background"] == {}


def test_imports_mark_results_stale_and_never_aggregate_inline(
    study: Study, django_capture_on_commit_callbacks
) -> None:
    # Tests run Celery eagerly: a queued run would compute right inside the import.
    assert not AggregationState.objects.filter(study=study).exists()
    with django_capture_on_commit_callbacks(execute=True):
        study_items_import(study=study, data=items(3), filename="items.jsonl")
    line = {"kind": "score", "rater": "a", "background": "unknown", "item": "t1", "grade": 2}
    with django_capture_on_commit_callbacks(execute=True):
        study_judgments_import(study=study, data=jsonl([line]), filename="j.jsonl")
    assert not StudyResult.objects.filter(study=study).exists()
    assert AggregationState.objects.get(study=study).requested_at is not None
    run("aggregate", "crowd", "--rounds", "10")
    assert StudyResult.objects.filter(study=study).exists()


def test_item_metadata_and_extra_csv_columns_are_kept(study: Study) -> None:
    study_items_import(study=study, data=items(1), filename="items.jsonl")
    assert Item.objects.get(external_id="t0").meta == {"split": "dev"}
    csv = b"id,text,source,dataset,meta.round\nc1,A pun,human,crowd-2021,3\n"
    study_items_import(study=study, data=csv, filename="items.csv")
    assert Item.objects.get(external_id="c1").meta == {"dataset": "crowd-2021", "round": "3"}


def test_judgment_metadata_and_extra_csv_columns_are_kept_as_items_are(study: Study) -> None:
    study_items_import(study=study, data=items(2), filename="items.jsonl")
    csv = (
        b"kind,rater,background,item,grade,meta,dataset,meta.round\n"
        b'score,a,unknown,t0,2,"{""position"": 3}",crowd-2021,1\n'
        b"score,b,unknown,t1,0,,crowd-2021,\n"
    )
    study_judgments_import(study=study, data=csv, filename="grades.csv")
    stored = {r.rater.external_id: r.meta for r in ScoreResponse.objects.select_related("rater")}
    assert stored == {
        "a": {"position": 3, "dataset": "crowd-2021", "round": "1"},
        "b": {"dataset": "crowd-2021"},
    }


def test_an_unknown_field_of_a_json_item_line_is_still_an_error(study: Study) -> None:
    from apps.core.errors import ImportRejected

    with pytest.raises(ImportRejected) as caught:
        study_items_import(
            study=study,
            data=jsonl([{"id": "x", "text": "t", "source": "human", "lnag": "en"}]),
            filename="items.jsonl",
        )
    assert caught.value.errors[0].field == "lnag"
    assert "meta" in caught.value.errors[0].message


@pytest.mark.parametrize("rater_ids", [["1", "2", "3", "4", "5"], ["judge_1", "judge_2"]])
def test_positional_rater_ids_get_a_warning_that_explains_the_consequence(
    study: Study, rater_ids: list[str]
) -> None:
    study_items_import(study=study, data=items(40), filename="items.jsonl")
    lines = [
        {"kind": "score", "rater": rater, "background": "unknown", "item": f"t{i}", "grade": i % 4}
        for i in range(40)
        for rater in rater_ids
    ]
    summary = study_judgments_import(study=study, data=jsonl(lines), filename="j.jsonl")
    assert [w.code for w in summary.warnings] == ["positional_rater_ids"]
    assert "several times too wide" in summary.warnings[0].message


def test_a_fully_crossed_design_of_real_raters_gets_no_warning(study: Study) -> None:
    # Ten people, each rating all twenty items: a sound design, not columns of grades.
    study_items_import(study=study, data=items(20), filename="items.jsonl")
    rng = random.Random(4)
    lines = [
        {
            "kind": "score",
            "rater": f"r{r:02d}",
            "background": "unknown",
            "item": f"t{i}",
            "grade": rng.randint(0, 3),
        }
        for r in range(1, 11)
        for i in range(20)
    ]
    summary = study_judgments_import(study=study, data=jsonl(lines), filename="j.jsonl")
    assert summary.warnings == []


def test_grades_sorted_by_position_are_warned_about_whatever_the_ids(study: Study) -> None:
    # Humicroedit's shape: five grades per headline, sorted from high to low, under ids that
    # look like people's codes.
    study_items_import(study=study, data=items(30), filename="items.jsonl")
    rng = random.Random(5)
    lines = []
    for i in range(30):
        grades = sorted((rng.randint(0, 3) for _ in range(5)), reverse=True)
        lines += [
            {
                "kind": "score",
                "rater": f"r{n}",
                "background": "unknown",
                "item": f"t{i}",
                "grade": g,
            }
            for n, g in enumerate(grades, start=1)
        ]
    summary = study_judgments_import(study=study, data=jsonl(lines), filename="j.jsonl")
    assert [w.code for w in summary.warnings] == ["positional_rater_ids"]


def test_import_judgments_prints_the_rater_id_warning(study: Study, tmp_path: Path) -> None:
    study_items_import(study=study, data=items(40), filename="items.jsonl")
    lines = [
        {"kind": "score", "rater": str(r), "background": "unknown", "item": f"t{i}", "grade": 1}
        for i in range(40)
        for r in range(1, 4)
    ]
    path = tmp_path / "j.jsonl"
    path.write_bytes(jsonl(lines))
    assert "rater ids look like grade positions" in run("import_judgments", "crowd", str(path))


def test_real_rater_ids_get_no_warning(study: Study) -> None:
    study_items_import(study=study, data=items(40), filename="items.jsonl")
    lines = [
        {
            "kind": "score",
            "rater": f"PID5f{r:04x}e",
            "background": "unknown",
            "item": f"t{(r * 7 + k) % 40}",
            "grade": k % 4,
        }
        for r in range(30)
        for k in range(8)
    ]
    summary = study_judgments_import(study=study, data=jsonl(lines), filename="j.jsonl")
    assert summary.warnings == []


def _graded(study: Study) -> None:
    study_items_import(study=study, data=items(30), filename="items.jsonl")
    lines = [
        {
            "kind": "score",
            "rater": f"g{k}",
            "background": "unknown",
            "item": f"t{k % 30}",
            "grade": (k * 7) % 4,
        }
        for k in range(150)
    ]
    study_judgments_import(study=study, data=jsonl(lines), filename="j.jsonl")
    study_aggregate(study=study, rounds=20)


def test_the_report_describes_the_rubric_used_not_the_humor_scorecard(study: Study) -> None:
    from apps.reports.services import study_report_html

    _graded(study)
    html = study_report_html(study=study)
    assert "surprise and coherence are judged before" not in html
    # The method's rubric table: the study's own question with its 0-based scale and anchors.
    assert (
        '<tr data-question="grade"><td class="num">1</td><td><strong>grade</strong></td>'
        "<td>0–3</td>"
    ) in html
    assert "0 = Not funny; 3 = Very" in html
    assert "This study defines no rater background groups." in html
    assert "The backgrounds of 150 raters are unknown" in html
    assert '<span class="note">interval</span>' in html
    # Imported grades only: the method text says there are no pairs or Turing judgments
    # instead of describing tasks nobody did.
    assert 'class="no-pairs"' in html
    assert 'class="no-turing"' in html
    assert "are shown two at a time" not in html
    assert "asked only on a rater's first exposure" not in html


def test_the_humor_report_keeps_its_ordered_scorecard_text() -> None:
    from apps.reports.services import study_report_html
    from apps.studies.services import study_create

    humor = study_create(slug="jokes", rubric_slug="humor")
    study_items_import(study=humor, data=items(3), filename="items.jsonl")
    study_aggregate(study=humor, rounds=20)
    html = study_report_html(study=humor)
    assert "surprise and coherence are judged before" in html
    assert "(answered after surprise, coherence)" in html


def test_the_agreement_exports_name_their_level(study: Study) -> None:
    from apps.reports.services import study_table_csv

    _graded(study)
    header, row = study_table_csv(study=study, name="agreement").splitlines()[:2]
    columns = dict(zip(header.split(","), row.split(","), strict=True))
    assert columns["alpha_level"] == "ordinal"
    assert columns["unknown_background_raters"] == "150"
    assert columns["alpha_interval"] != ""


def test_metadata_comes_back_unchanged_from_the_raw_export_and_the_api(study: Study) -> None:
    import csv
    import io

    from apps.reports.services import study_raw_write

    study_items_import(study=study, data=items(2), filename="items.jsonl")
    meta = {"position": 3, "source_file": "grades.tsv", "note": "笑"}
    line = {
        "kind": "score",
        "rater": "a",
        "background": "unknown",
        "item": "t1",
        "grade": 2,
        "meta": meta,
    }
    study_judgments_import(study=study, data=jsonl([line]), filename="j.jsonl")
    out = io.StringIO()
    study_raw_write(study=study, stream=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert json.loads(rows[0]["meta"]) == meta
    from apps.api.serializers import ItemOut

    assert ItemOut(Item.objects.get(external_id="t1")).data["meta"] == {"split": "dev"}


def test_the_agreement_page_says_how_many_raters_backgrounds_are_unknown(study: Study) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.studies.models import StudyMembership

    _graded(study)
    user = get_user_model().objects.create_user("owner", password="pw-owner-123")
    StudyMembership.objects.create(study=study, user=user, role=StudyMembership.Role.OWNER)
    client = Client()
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/results/agreement/").content.decode()
    assert "150 raters&#x27; backgrounds are unknown" in page or "150 raters' backgrounds" in page
