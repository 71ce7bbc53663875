"""A Celery worker (a separate process) is killed with SIGKILL in the middle of an aggregation:
the previous results stay readable, and after a restart the sweep gets the next run done."""

from __future__ import annotations

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
from django.db import connection

from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.services import aggregate_sweep, study_aggregate
from tests.conftest import skip_or_fail
from tests.faults import PrivateRedis, browser, celery_on, post_scorecard, scorecard_study

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def private_broker(postgres_only, settings) -> Iterator[PrivateRedis]:  # type: ignore[no-untyped-def]
    if not PrivateRedis.available():
        skip_or_fail("needs redis-server on PATH")
    server = PrivateRedis()
    server.start()
    settings.AGGREGATE_DEBOUNCE_SECONDS = 0
    try:
        with celery_on(server.url):
            yield server
    finally:
        server.stop()


def _database_url() -> str:
    # The test database (pytest-django's test_<name>), not the one DATABASE_URL names.
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _worker(broker_url: str, rounds: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="fault-test-worker",
        DEBUG="0",
        DATABASE_URL=_database_url(),
        REDIS_URL=broker_url,
        BOOTSTRAP_ROUNDS=str(rounds),
        AGGREGATE_DEBOUNCE_SECONDS="0",
        OMP_NUM_THREADS="1",
    )
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"]
    return subprocess.Popen(
        command,
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def _stop(worker: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if worker.poll() is None:
        os.kill(worker.pid, sig)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()


def _wait_for(condition: Any, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}; worker log:\n{log.read_text()[-3000:]}")
        time.sleep(0.02)


def test_worker_killed_mid_aggregation_keeps_old_results_and_the_next_run_completes(
    private_broker, builtin_rubrics, tmp_path
):
    study = scorecard_study()
    for n in range(2):
        client, _, assignment = browser(study)
        assert post_scorecard(client, study, assignment, f"kill-000{n}-aaaa").status_code == 201
    first = study_aggregate(study=study, rounds=50)
    # Drop the run the answers queued: only the one queued below is for the worker.
    redis.Redis.from_url(private_broker.url).flushdb()
    client, _, assignment = browser(study)
    assert post_scorecard(client, study, assignment, "kill-0002-aaaa").status_code == 201
    before = AggregationState.objects.get(study=study)
    assert before.scheduled is True
    assert before.requested_at > first.evidence_as_of

    log = tmp_path / "worker.log"
    # Enough bootstrap rounds that the run lasts well past the moment it is seen to start.
    worker = _worker(private_broker.url, rounds=200_000, log=log)
    try:
        _wait_for(
            lambda: (
                AggregationState.objects.get(study=study).last_started_at is not None
                and AggregationState.objects.get(study=study).last_started_at
                != before.last_started_at
            ),
            60,
            "the worker to start the run",
            log,
        )
        time.sleep(0.3)
        assert worker.poll() is None, log.read_text()[-3000:]
        _stop(worker, signal.SIGKILL)
    finally:
        _stop(worker, signal.SIGKILL)
    assert worker.returncode == -signal.SIGKILL

    # The earlier results are untouched and readable; the killed run left no trace in them.
    kept = StudyResult.objects.get(study=study)
    assert kept.computed_at == first.computed_at
    assert kept.input_hash == first.input_hash
    assert kept.payload["counts"]["raters"] == 2
    killed = AggregationState.objects.get(study=study)
    assert killed.scheduled is False  # cleared when the run started
    assert killed.last_finished_at is not None
    assert killed.last_finished_at < killed.last_started_at

    assert aggregate_sweep() == [study.pk]
    worker = _worker(private_broker.url, rounds=50, log=log)
    try:
        _wait_for(
            lambda: StudyResult.objects.get(study=study).computed_at > first.computed_at,
            60,
            "the next run to complete",
            log,
        )
    finally:
        _stop(worker)
    result = StudyResult.objects.get(study=study)
    assert result.rounds == 50
    assert result.payload["counts"]["raters"] == 3
    assert result.input_hash != first.input_hash
    assert result.evidence_as_of == killed.requested_at
    done = AggregationState.objects.get(study=study)
    assert done.last_error == ""
    assert done.last_finished_at > killed.last_started_at
    assert aggregate_sweep() == []  # nothing is stale any more
