"""The import sweep: a job whose queue message was lost, or whose worker died, is queued again
and then runs (tests run Celery eagerly, so the queued run happens inside the sweep); a job
still within its lease, or finished, is left alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.imports import tasks
from apps.imports.models import ImportJob
from apps.imports.services import import_job_create, import_job_run, import_sweep
from apps.judgments.models import ScoreResponse
from tests.imports.data import jsonl, person_scores

pytestmark = pytest.mark.django_db


def queued_job(study, owner) -> ImportJob:  # type: ignore[no-untyped-def]
    # Not committed (the test's transaction is rolled back), so its message was never sent:
    # exactly what a lost message leaves behind.
    return import_job_create(
        study=study,
        user=owner,
        kind="judgments",
        upload=SimpleUploadedFile("g.jsonl", jsonl(person_scores(30))),
    )


def ago(settings, extra: int) -> object:  # type: ignore[no-untyped-def]
    return timezone.now() - timedelta(seconds=settings.IMPORT_LEASE_SECONDS + extra)


def test_a_queued_job_whose_message_was_lost_is_queued_again_and_runs(study, owner, settings):
    job = queued_job(study, owner)
    ImportJob.objects.filter(pk=job.pk).update(created_at=ago(settings, 5))
    assert import_sweep() == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.attempts) == (ImportJob.Status.DONE, 1)
    assert ScoreResponse.objects.filter(study=study).count() == 60


def test_a_job_queued_within_its_lease_is_left_waiting(study, owner, settings):
    job = queued_job(study, owner)
    assert import_sweep() == []
    job.refresh_from_db()
    assert job.status == ImportJob.Status.QUEUED
    assert not ScoreResponse.objects.filter(study=study).exists()


def test_a_job_queued_again_is_not_queued_once_more_until_another_lease_passes(
    study, owner, settings, monkeypatch
):
    job = queued_job(study, owner)
    ImportJob.objects.filter(pk=job.pk).update(created_at=ago(settings, 5))
    sent: list[int] = []
    monkeypatch.setattr("apps.imports.services._enqueue", sent.append)  # the message is lost again
    assert import_sweep() == [job.pk]
    assert import_sweep() == []
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=ago(settings, 5))
    assert import_sweep() == [job.pk]
    assert sent == [job.pk, job.pk]


def test_a_job_whose_worker_died_is_queued_again_and_runs(study, owner, settings):
    job = queued_job(study, owner)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING, heartbeat_at=ago(settings, 5), attempts=1
    )
    assert import_sweep() == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.attempts) == (ImportJob.Status.DONE, 2)
    assert ScoreResponse.objects.filter(study=study).count() == 60


def test_a_running_job_with_a_live_lease_is_left_to_its_worker(study, owner, settings):
    job = queued_job(study, owner)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING, heartbeat_at=timezone.now(), attempts=1
    )
    assert import_sweep() == []
    job.refresh_from_db()
    assert job.status == ImportJob.Status.RUNNING


def test_a_lost_job_past_its_attempts_fails_with_a_message_and_stores_nothing(
    study, owner, settings
):
    settings.IMPORT_MAX_ATTEMPTS = 2
    job = queued_job(study, owner)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING, heartbeat_at=ago(settings, 5), attempts=2
    )
    assert import_sweep() == [job.pk]
    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    assert "worker was lost" in job.error
    assert job.file_path == ""
    assert not ScoreResponse.objects.filter(study=study).exists()


def test_a_finished_job_is_never_swept(study, owner, settings):
    job = queued_job(study, owner)
    done = import_job_run(job_id=job.pk)
    assert done is not None
    assert done.status == ImportJob.Status.DONE
    ImportJob.objects.filter(pk=job.pk).update(
        created_at=ago(settings, 5), heartbeat_at=ago(settings, 5)
    )
    assert import_sweep() == []
    assert ScoreResponse.objects.filter(study=study).count() == 60


def test_the_import_sweep_runs_periodically(settings):
    schedule = settings.CELERY_BEAT_SCHEDULE["import-sweep"]
    assert schedule["task"] == tasks.import_sweep_task.name
    assert schedule["schedule"] == float(settings.IMPORT_SWEEP_SECONDS)
