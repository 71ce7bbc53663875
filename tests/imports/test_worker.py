"""A real Celery worker, over Redis, runs an import job: the upload answers at once, the worker
imports, and the job row goes from queued to done with every line read."""

from __future__ import annotations

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.imports.models import ImportJob
from apps.imports.services import import_job_create
from apps.judgments.models import ScoreResponse
from apps.studies.services import study_create, study_items_import
from tests.analysis.test_celery_worker import redis_app  # noqa: F401 - the fixture
from tests.imports.data import item_lines, jsonl, positional_scores

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_a_worker_over_redis_runs_an_import_job(redis_app, builtin_rubrics, owner, media):  # noqa: F811
    study = study_create(slug="crowd", rubric_slug="humor", owner=owner)
    study_items_import(study=study, data=jsonl(item_lines(30)), filename="items.jsonl")
    upload = SimpleUploadedFile("grades.jsonl", jsonl(positional_scores(30)))
    job = import_job_create(study=study, user=owner, kind="judgments", upload=upload)
    # Committed and queued; no worker yet, so nothing has happened.
    job.refresh_from_db()
    assert job.status == ImportJob.Status.QUEUED
    with start_worker(redis_app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.is_finished:
                break
            time.sleep(0.2)
    assert job.status == ImportJob.Status.DONE, job.error
    assert (job.lines_read, job.lines_total) == (90, 90)
    assert [w["code"] for w in job.warnings] == ["positional_rater_ids"]
    assert ScoreResponse.objects.filter(study=study).count() == 90
