"""The pool process of a real Celery worker is killed with SIGKILL in the middle of an export:
the broker hands the job back at once, the redelivered task finds the dead run's lease still
fresh and comes back when it has expired, takes the job over and finishes it; the job is never
left running. Killing the whole worker leaves the message with the broker instead: the periodic
sweep queues the job again once its lease has expired."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings

from apps.judgments.services import study_judgments_import
from apps.reports import services
from apps.reports.models import ExportJob
from apps.reports.selectors import raw_judgment_count
from tests.conftest import skip_or_fail
from tests.faults import PrivateRedis, celery_on
from tests.faults.test_worker_killed import _database_url, _stop, _wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
LEASE = 3


@pytest.fixture
def private_broker(postgres_only, settings, tmp_path) -> Iterator[PrivateRedis]:  # type: ignore[no-untyped-def]
    if not PrivateRedis.available():
        skip_or_fail("needs redis-server on PATH")
    server = PrivateRedis()
    server.start()
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.EXPORT_LEASE_SECONDS = LEASE
    settings.AGGREGATE_DEBOUNCE_SECONDS = 0
    try:
        with celery_on(server.url):
            yield server
    finally:
        server.stop()


def _worker(broker_url: str, media: Path, log: Path, *, pool: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="fault-test-worker",
        DEBUG="0",
        DATABASE_URL=_database_url(),
        REDIS_URL=broker_url,
        MEDIA_ROOT=str(media),
        EXPORT_LEASE_SECONDS=str(LEASE),
        OMP_NUM_THREADS="1",
    )
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", f"--pool={pool}"]
    command += ["--concurrency=1", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    return subprocess.Popen(
        [*command, "-l", "INFO"],
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


@pytest.fixture
def big_study(demo_study_committed, private_broker) -> Any:
    """The demo items with some 40,000 raw rows: an export that takes a while to write."""
    study, _ = demo_study_committed
    items = list(study.items.values_list("external_id", flat=True))
    lines = [
        json.dumps(
            {
                "kind": "score",
                "rater": f"crowd{r:03d}",
                "background": "technical",
                "item": item,
                "surprise": 1 + (r + n) % 5,
                "coherence": 1 + (r * n) % 5,
                "funniness": 1 + (r + 2 * n) % 7,
                "offensive": 0,
            }
        )
        for r in range(140)
        for n, item in enumerate(items)
    ]
    study_judgments_import(study=study, data="\n".join(lines).encode(), filename="judgments.jsonl")
    # Drop the aggregation the import queued: only the export is for the worker.
    redis.Redis.from_url(private_broker.url).flushdb()
    return study


def _job_rows(job: ExportJob) -> int:
    path = Path(django_settings.MEDIA_ROOT) / job.file_path
    return len(path.read_text(encoding="utf-8").splitlines()) - 1


def test_killing_the_pool_process_mid_export_gets_the_job_finished_by_a_takeover(
    big_study, private_broker, tmp_path
):
    rows = raw_judgment_count(study=big_study)
    assert rows > 30_000
    log = tmp_path / "worker.log"
    worker = _worker(private_broker.url, Path(django_settings.MEDIA_ROOT), log, pool="prefork")
    try:
        job = services.export_job_create(study=big_study, user=None, fmt="raw")
        _wait_for(
            lambda: ExportJob.objects.get(pk=job.pk).progress >= 5,
            120,
            "the export to report progress",
            log,
        )
        running = ExportJob.objects.get(pk=job.pk)
        assert running.status == "running", log.read_text()[-3000:]
        assert running.attempts == 1
        (child,) = _children(worker.pid)
        os.kill(child, signal.SIGKILL)

        _wait_for(
            lambda: ExportJob.objects.get(pk=job.pk).status in ("done", "failed"),
            120,
            "the export to be taken over and finished",
            log,
        )
    finally:
        _stop(worker)
    done = ExportJob.objects.get(pk=job.pk)
    assert done.status == "done", (done.error, log.read_text()[-3000:])
    assert done.attempts == 2
    assert done.progress == 100
    assert _job_rows(done) == rows
    assert "WorkerLostError" in log.read_text() or "SIGKILL" in log.read_text()
    assert services.export_sweep() == []


def test_killing_the_whole_worker_mid_export_is_repaired_by_the_sweep(
    big_study, private_broker, tmp_path
):
    rows = raw_judgment_count(study=big_study)
    log = tmp_path / "worker.log"
    worker = _worker(private_broker.url, Path(django_settings.MEDIA_ROOT), log, pool="solo")
    try:
        job = services.export_job_create(study=big_study, user=None, fmt="raw")
        _wait_for(
            lambda: ExportJob.objects.get(pk=job.pk).progress >= 5,
            120,
            "the export to report progress",
            log,
        )
        _stop(worker, signal.SIGKILL)
    finally:
        _stop(worker, signal.SIGKILL)
    killed = ExportJob.objects.get(pk=job.pk)
    assert killed.status == "running"
    assert services.export_sweep() == []  # its lease is still fresh
    time.sleep(LEASE + 1)
    assert services.export_sweep() == [job.pk]
    assert ExportJob.objects.get(pk=job.pk).status == "queued"
    worker = _worker(private_broker.url, Path(django_settings.MEDIA_ROOT), log, pool="solo")
    try:
        _wait_for(
            lambda: ExportJob.objects.get(pk=job.pk).status in ("done", "failed"),
            120,
            "the swept export to finish",
            log,
        )
    finally:
        _stop(worker)
    done = ExportJob.objects.get(pk=job.pk)
    assert done.status == "done", (done.error, log.read_text()[-3000:])
    assert done.attempts == 2
    assert _job_rows(done) == rows
