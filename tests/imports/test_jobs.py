"""Background import jobs: the service that keeps an uploaded file, runs the same importer as
the commands on it with progress, and records the summary and warnings or every bad line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.analysis.models import AggregationState, StudyResult
from apps.core.errors import ImportRejected
from apps.core.lines import read_records
from apps.core.progress import reporting
from apps.imports.models import ImportJob
from apps.imports.services import PayloadTooLarge, import_job_create, import_job_run
from apps.judgments.models import ScoreResponse
from apps.judgments.services import study_judgments_import
from apps.studies.models import Item
from apps.studies.services import study_create, study_items_import
from tests.imports.data import item_lines, jsonl, person_scores, positional_scores

pytestmark = pytest.mark.django_db


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content)


def create(study, owner, kind: str, name: str, content: bytes, **kwargs) -> ImportJob:  # type: ignore[no-untyped-def]
    return import_job_create(
        study=study, user=owner, kind=kind, upload=upload(name, content), **kwargs
    )


def test_a_judgments_job_imports_the_file_and_keeps_its_warnings(study, owner, media):
    content = jsonl(positional_scores(30))
    job = create(study, owner, "judgments", "grades.jsonl", content)
    assert job.status == ImportJob.Status.QUEUED
    assert job.lines_total == 90
    assert job.size == len(content)
    kept = Path(media) / job.file_path
    assert kept.read_bytes() == content

    job = import_job_run(job_id=job.pk)
    assert job is not None
    assert job.status == ImportJob.Status.DONE
    assert (job.lines_read, job.lines_total, job.percent) == (90, 90, 100)
    assert job.summary["created"] == {"score": 90, "pair": 0, "turing": 0}
    assert job.summary["raters_created"] == 3
    assert [w["code"] for w in job.warnings] == ["positional_rater_ids"]
    assert job.warnings[0]["params"]["n_raters"] == 3
    assert "several times too wide" in job.warnings[0]["message"]
    assert ScoreResponse.objects.filter(study=study).count() == 90
    # The file is gone once imported; the job row says what happened.
    assert job.file_path == ""
    assert not kept.exists()


@pytest.mark.django_db(transaction=True)
def test_a_job_marks_the_results_stale_and_never_aggregates(builtin_rubrics, owner, media):
    """Committed for real (tests run Celery eagerly: a queued aggregation would run right inside
    the import if the job asked for one)."""
    study = study_create(slug="stale", rubric_slug="humor", owner=owner)
    study_items_import(study=study, data=jsonl(item_lines(30)), filename="items.jsonl")
    before = AggregationState.objects.get(study=study).requested_at
    job = create(study, owner, "judgments", "g.jsonl", jsonl(person_scores(30)))
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE
    assert not StudyResult.objects.filter(study=study).exists()
    assert AggregationState.objects.get(study=study).requested_at > before


def test_a_failed_job_lists_every_bad_line_and_stores_nothing(study, owner, media):
    lines = person_scores(30)
    lines[4]["funniness"] = 9
    lines[40]["item"] = "nope"
    job = create(study, owner, "judgments", "grades.jsonl", jsonl(lines))
    kept = Path(media) / job.file_path

    job = import_job_run(job_id=job.pk)
    assert job is not None
    assert job.status == ImportJob.Status.FAILED
    assert job.error == "2 bad lines; nothing was imported"
    assert [(e["line"], e["field"]) for e in job.errors] == [(5, "funniness"), (41, "item")]
    assert job.error_count == 2
    assert not ScoreResponse.objects.filter(study=study).exists()
    assert not kept.exists()
    assert job.summary == {}


def test_a_failed_job_keeps_the_first_errors_and_counts_them_all(study, owner, settings):
    settings.IMPORT_MAX_STORED_ERRORS = 3
    lines = [dict(line, funniness=0) for line in person_scores(10)]
    job = import_job_run(job_id=create(study, owner, "judgments", "g.jsonl", jsonl(lines)).pk)
    assert job is not None
    assert [e["line"] for e in job.errors] == [1, 2, 3]
    assert job.error_count == 20


def test_an_items_job_imports_items_with_their_metadata(study, owner):
    lines = [dict(line, id=f"n{i}") for i, line in enumerate(item_lines(12))]
    job = create(study, owner, "items", "more.jsonl", jsonl(lines), as_candidates=True)
    job = import_job_run(job_id=job.pk)
    assert job is not None
    assert job.status == ImportJob.Status.DONE
    assert job.summary == {"created": 12, "unchanged": 0, "held": 0}
    stored = Item.objects.get(study=study, external_id="n5")
    assert stored.meta == {"split": "dev", "row": 5}
    assert stored.stage == Item.Stage.CANDIDATE


def test_a_csv_judgments_job_reads_csv(study, owner):
    rows = ["kind,rater,background,item,funniness"] + [
        f"score,p{i},technical,t{i:03d},{1 + i % 7}" for i in range(30)
    ]
    content = ("\n".join(rows) + "\n").encode()
    job = import_job_run(job_id=create(study, owner, "judgments", "g.csv", content).pk)
    assert job is not None
    assert job.status == ImportJob.Status.DONE, job.errors
    assert job.summary["created"]["score"] == 30
    assert job.lines_total == 31


def _csv_scores_with_meta(bad_meta_on: int | None = None) -> bytes:
    rows = ["kind,rater,background,item,funniness,meta,meta.position,source_file"]
    for i in range(30):
        meta = f'"{{""row"": {i}}}"' if i != bad_meta_on else '"{""row"": "'
        rows.append(f"score,p{i},technical,t{i:03d},{1 + i % 7},{meta},{i % 3},grades.tsv")
    return ("\n".join(rows) + "\n").encode()


def test_a_csv_judgments_job_keeps_each_judgments_meta(study, owner):
    job = create(study, owner, "judgments", "g.csv", _csv_scores_with_meta())
    job = import_job_run(job_id=job.pk)
    assert job is not None
    assert job.status == ImportJob.Status.DONE, job.errors
    stored = ScoreResponse.objects.get(study=study, item__external_id="t004")
    assert stored.meta == {"row": 4, "position": "1", "source_file": "grades.tsv"}


def test_a_csv_judgments_job_with_a_bad_meta_cell_names_line_and_field_and_stores_nothing(
    study, owner
):
    job = create(study, owner, "judgments", "g.csv", _csv_scores_with_meta(bad_meta_on=6))
    job = import_job_run(job_id=job.pk)
    assert job is not None
    assert job.status == ImportJob.Status.FAILED
    assert [(e["line"], e["field"], e["message"]) for e in job.errors] == [
        (8, "meta", "is not valid JSON")
    ]
    assert job.error == "1 bad line; nothing was imported"
    assert not ScoreResponse.objects.filter(study=study).exists()


@pytest.mark.parametrize(
    ("name", "size_limit", "error"),
    [("grades.txt", None, ImportRejected), ("grades.jsonl", 1024, PayloadTooLarge)],
)
def test_a_file_no_import_could_take_is_refused_before_it_is_kept(
    study, owner, media, settings, name, size_limit, error
):
    if size_limit:
        settings.IMPORT_UPLOAD_MAX_BYTES = size_limit
    with pytest.raises(error):
        create(study, owner, "judgments", name, jsonl(person_scores(30)))
    assert not ImportJob.objects.exists()
    assert not list(Path(media).rglob("*.jsonl"))
    assert not list(Path(media).rglob("*.txt"))


def test_a_finished_job_is_never_run_again(study, owner):
    job = create(study, owner, "judgments", "g.jsonl", jsonl(person_scores(30)))
    first = import_job_run(job_id=job.pk)
    again = import_job_run(job_id=job.pk)
    assert first is not None
    assert again is not None
    assert again.status == ImportJob.Status.DONE
    assert again.attempts == 1
    assert ScoreResponse.objects.filter(study=study).count() == 60


def test_a_job_whose_worker_was_lost_is_taken_over_after_its_lease(study, owner, settings):
    settings.IMPORT_LEASE_SECONDS = 60
    job = create(study, owner, "judgments", "g.jsonl", jsonl(person_scores(30)))
    # A worker took it and died: running, its heartbeat fresh. Nobody else may take it...
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING, heartbeat_at=timezone.now(), attempts=1
    )
    still = import_job_run(job_id=job.pk)
    assert still is not None
    assert still.status == ImportJob.Status.RUNNING
    assert not ScoreResponse.objects.filter(study=study).exists()
    # ...until its lease has expired: then the redelivered task runs it.
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    taken = import_job_run(job_id=job.pk)
    assert taken is not None
    assert (taken.status, taken.attempts) == (ImportJob.Status.DONE, 2)
    assert ScoreResponse.objects.filter(study=study).count() == 60


def test_a_job_lost_too_often_fails_with_a_message_and_stores_nothing(study, owner, settings):
    settings.IMPORT_MAX_ATTEMPTS = 2
    job = create(study, owner, "judgments", "g.jsonl", jsonl(person_scores(30)))
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(hours=1),
        attempts=2,
    )
    failed = import_job_run(job_id=job.pk)
    assert failed is not None
    assert failed.status == ImportJob.Status.FAILED
    assert "worker was lost" in failed.error
    assert not ScoreResponse.objects.filter(study=study).exists()


class Recorder:
    def __init__(self) -> None:
        self.events: list[object] = []

    def lines_read(self, line: int) -> None:
        self.events.append(line)

    def storing(self) -> None:
        self.events.append("storing")


def test_progress_is_reported_as_lines_are_read_then_storing(study):
    content = jsonl(person_scores(30))
    recorder = Recorder()
    records = reporting(read_records(content, filename="g.jsonl"), recorder, every=25)
    assert [r.line for r in records] == list(range(1, 61))
    assert recorder.events == [25, 50, 60]

    recorder = Recorder()
    study_judgments_import(study=study, data=content, filename="g.jsonl", progress=recorder)
    # Every line read (the last report names the last line) before anything is stored.
    assert recorder.events == [60, "storing"]


def test_the_job_row_shows_the_lines_read_while_the_file_is_read(study, owner, monkeypatch):
    """What the status page polls: lines_read rises during the read, before the import ends."""
    import apps.core.progress as progress

    monkeypatch.setattr(progress, "REPORT_EVERY_LINES", 20)
    seen: list[tuple[str, int]] = []
    from apps.judgments import importing

    original = importing.parse_judgments

    def watching(records, context):  # type: ignore[no-untyped-def]
        def spy():  # type: ignore[no-untyped-def]
            for record in records:
                row = ImportJob.objects.values_list("stage", "lines_read").get(pk=job.pk)
                seen.append(row)
                yield record

        return original(spy(), context)

    monkeypatch.setattr("apps.judgments.services.parse_judgments", watching)
    job = create(study, owner, "judgments", "g.jsonl", jsonl(person_scores(30)))
    done = import_job_run(job_id=job.pk)
    assert done is not None
    assert done.status == ImportJob.Status.DONE
    assert seen[0] == ("reading", 0)
    assert ("reading", 20) in seen
    assert ("reading", 40) in seen
    assert [lines for _stage, lines in seen] == sorted(lines for _stage, lines in seen)
