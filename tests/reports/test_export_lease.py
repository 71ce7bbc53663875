"""Export jobs hold a lease: a job whose worker died is taken over by the next run or the
periodic sweep, and past its attempts fails with a message; it never stays running."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from apps.analysis.services import study_aggregate
from apps.reports import services, tasks
from apps.reports.models import ExportJob

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def study(demo_study):
    study_aggregate(study=demo_study, rounds=20)
    return demo_study


def _killed(job: ExportJob, *, attempts: int, seconds_ago: float) -> None:
    """The job as a killed worker leaves it: running, its lease last renewed long ago."""
    then = timezone.now() - timedelta(seconds=seconds_ago)
    ExportJob.objects.filter(pk=job.pk).update(
        status="running", started_at=then, heartbeat_at=then, progress=5, attempts=attempts
    )


def test_a_run_holds_a_lease_and_counts_its_attempt(study):
    job = services.export_job_create(study=study, user=None, fmt="json")
    job = services.export_job_run(job_id=job.pk)
    assert job.status == "done"
    assert job.attempts == 1
    assert job.heartbeat_at is not None


def test_a_running_job_with_a_live_lease_is_left_to_its_worker(study, settings):
    job = services.export_job_create(study=study, user=None, fmt="json")
    _killed(job, attempts=1, seconds_ago=settings.EXPORT_LEASE_SECONDS / 2)
    assert services.export_job_run(job_id=job.pk).status == "running"
    assert services.export_job_lease_held(job_id=job.pk)
    assert services.export_sweep() == []


def test_the_sweep_queues_a_job_whose_worker_died_and_it_completes(study, settings):
    job = services.export_job_create(study=study, user=None, fmt="raw")
    _killed(job, attempts=1, seconds_ago=settings.EXPORT_LEASE_SECONDS + 5)
    assert not services.export_job_lease_held(job_id=job.pk)
    assert services.export_sweep() == [job.pk]  # eager: the queued run completes at once
    job.refresh_from_db()
    assert (job.status, job.progress, job.attempts, job.error) == ("done", 100, 2, "")
    assert services.export_sweep() == []


def test_a_job_past_its_attempts_fails_with_a_clear_message(study, settings):
    job = services.export_job_create(study=study, user=None, fmt="json")
    _killed(
        job, attempts=settings.EXPORT_MAX_ATTEMPTS, seconds_ago=settings.EXPORT_LEASE_SECONDS + 5
    )
    assert services.export_sweep() == []
    job.refresh_from_db()
    assert job.status == "failed"
    assert f"stopped {settings.EXPORT_MAX_ATTEMPTS} times" in job.error
    assert job.finished_at is not None
    # A late redelivery of its message changes nothing.
    assert tasks.export_job_run_task(job.pk) == "failed"


def test_the_redelivered_task_takes_over_an_expired_lease(study, settings):
    job = services.export_job_create(study=study, user=None, fmt="json")
    _killed(job, attempts=1, seconds_ago=settings.EXPORT_LEASE_SECONDS + 5)
    assert tasks.export_job_run_task(job.pk) == "done"


def test_a_run_that_lost_its_lease_cannot_overwrite_the_run_that_took_over(study, settings):
    job = services.export_job_create(study=study, user=None, fmt="json")
    first = services._claim(job.pk)
    assert first is not None
    ExportJob.objects.filter(pk=job.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.EXPORT_LEASE_SECONDS + 5)
    )
    second = services._claim(job.pk)
    assert second is not None
    assert second != first
    services._Lease(job.pk, first).report(80)  # the old run's late report is ignored
    job.refresh_from_db()
    assert (job.progress, job.attempts) == (1, 2)


def test_a_queued_job_whose_message_was_lost_is_queued_again(study, settings):
    job = services.export_job_create(study=study, user=None, fmt="json")  # never committed
    old = timezone.now() - timedelta(seconds=settings.EXPORT_LEASE_SECONDS + 5)
    ExportJob.objects.filter(pk=job.pk).update(heartbeat_at=old)
    assert services.export_sweep() == [job.pk]
    job.refresh_from_db()
    assert job.status == "done"


def test_the_export_sweep_runs_periodically(settings):
    schedule = settings.CELERY_BEAT_SCHEDULE["export-sweep"]
    assert schedule["task"] == tasks.export_sweep_task.name
    assert schedule["schedule"] == float(settings.EXPORT_SWEEP_SECONDS)
