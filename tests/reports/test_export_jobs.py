"""Export jobs: each format runs in the background, reports progress, and records failures."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.analysis.services import study_aggregate
from apps.reports import services, tasks
from apps.reports.models import ExportFormat, ExportJob

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def study(demo_study):
    study_aggregate(study=demo_study, rounds=50)
    return demo_study


def create(study, fmt: str, capture) -> ExportJob:
    with capture(execute=True):
        job = services.export_job_create(study=study, user=None, fmt=fmt)
    job.refresh_from_db()
    return job


@pytest.mark.parametrize("fmt", [choice.value for choice in ExportFormat])
def test_every_format_runs_as_a_job_to_100_percent(
    study, fmt, media_root, django_capture_on_commit_callbacks
):
    job = create(study, fmt, django_capture_on_commit_callbacks)
    assert (job.status, job.progress, job.error) == ("done", 100, "")
    path = media_root / job.file_path
    assert path == media_root / "exports" / study.slug / f"{job.pk}-{services.FILE_NAMES[fmt]}"
    assert path.stat().st_size == job.size > 0
    assert job.started_at <= job.finished_at
    assert list(path.parent.glob("*.part")) == []


def test_progress_is_reported_while_the_job_runs(
    study, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr("apps.reports.writers.RAW_PROGRESS_EVERY", 500)
    seen: list[int] = []
    original = services._Lease.report

    def spy(lease: services._Lease, percent: int) -> None:
        original(lease, percent)
        seen.append(ExportJob.objects.get(pk=lease.job_id).progress)

    monkeypatch.setattr(services._Lease, "report", spy)
    job = create(study, "raw", django_capture_on_commit_callbacks)
    assert len(seen) >= 5
    assert seen == sorted(seen)
    assert seen[0] > 0
    assert seen[-1] < 100
    assert job.progress == 100


def test_a_failing_export_is_recorded_on_the_job(
    study, monkeypatch, media_root, django_capture_on_commit_callbacks, client, django_user_model
):
    def broken(html: str, path: Path) -> None:
        path.write_bytes(b"%PDF- half")
        raise RuntimeError("renderer died")

    monkeypatch.setattr("apps.reports.writers.write_pdf", broken)
    job = create(study, "report-pdf", django_capture_on_commit_callbacks)
    assert job.status == "failed"
    assert "renderer died" in job.error
    assert job.finished_at is not None
    assert job.file_path == ""
    # The half-built file stayed in the worker's scratch folder: nothing was stored.
    folder = media_root / "exports" / study.slug
    assert not folder.exists() or list(folder.iterdir()) == []

    client.force_login(django_user_model.objects.create_superuser("a", "a@example.org", "pw"))
    assert client.get(reverse("reports:status", args=[study.slug, job.pk])).json()["error"]
    assert client.get(reverse("reports:download", args=[study.slug, job.pk])).status_code == 409
    assert b"renderer died" in client.get(reverse("reports:exports", args=[study.slug])).content


def test_running_a_finished_job_again_changes_nothing(
    study, media_root, django_capture_on_commit_callbacks
):
    job = create(study, "json", django_capture_on_commit_callbacks)
    path = media_root / job.file_path
    path.write_text("kept")
    again = tasks.export_job_run_task(job.pk)
    assert again == "done"
    assert path.read_text() == "kept"
    job.refresh_from_db()
    assert job.status == "done"


def test_a_job_whose_worker_died_is_taken_again_after_the_time_limit(study, settings):
    job = services.export_job_create(study=study, user=None, fmt="json")  # not committed: queued
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    ExportJob.objects.filter(pk=job.pk).update(status="running", started_at=long_ago, progress=40)
    assert services.export_job_run(job_id=job.pk).status == "done"


def test_a_job_still_running_elsewhere_is_left_alone(study):
    job = services.export_job_create(study=study, user=None, fmt="json")
    ExportJob.objects.filter(pk=job.pk).update(
        status="running", started_at=timezone.now(), progress=40
    )
    job = services.export_job_run(job_id=job.pk)
    assert (job.status, job.progress) == ("running", 40)


def test_a_job_that_cannot_be_queued_says_so(
    study, monkeypatch, django_capture_on_commit_callbacks
):
    def broker_down(*args: object, **kwargs: object) -> None:
        raise ConnectionError("redis is down")

    monkeypatch.setattr(tasks.export_job_run_task, "delay", broker_down)
    job = create(study, "json", django_capture_on_commit_callbacks)
    assert job.status == "failed"
    assert "could not be queued" in job.error


def test_export_jobs_are_read_only_in_the_admin(
    study, admin_client, django_capture_on_commit_callbacks
):
    job = create(study, "json", django_capture_on_commit_callbacks)
    assert admin_client.get(reverse("admin:reports_exportjob_changelist")).status_code == 200
    change = reverse("admin:reports_exportjob_change", args=[job.pk])
    assert admin_client.get(change).status_code == 200
    assert admin_client.get(reverse("admin:reports_exportjob_add")).status_code == 403
    assert admin_client.post(change, {"status": "failed"}).status_code == 403
    delete = reverse("admin:reports_exportjob_delete", args=[job.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    job.refresh_from_db()
    assert job.status == "done"
