"""Generation with real parts: a Celery worker over Redis runs, cancels and resumes a run; on
PostgreSQL, workers in real threads never put more calls in flight than the endpoint's limit."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connection, transaction

from apps.generation import services
from apps.generation.models import GenerationOutput, GenerationRun
from apps.generation.services import (
    generation_lane_work,
    generation_run_cancel,
    generation_run_resume,
    generation_run_start,
    output_claim,
)
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from config.celery import app
from tests.conftest import skip_or_fail
from tests.generation.conftest import FakeProvider
from tests.generation.helpers import make_endpoint, make_set, single

pytestmark = pytest.mark.django_db(transaction=True)
Status = GenerationOutput.Status


@pytest.fixture
def redis_app(settings: Any) -> Iterator[Any]:
    url = os.environ.get("REDIS_URL")
    if not url:
        skip_or_fail("needs Redis (set REDIS_URL=redis://127.0.0.1:6379/15)")
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError:
        skip_or_fail(f"Redis at {url} does not answer")
    redis.Redis.from_url(url).flushdb()
    assert app.conf.broker_url == url
    app.conf.task_always_eager = False
    yield app
    app.conf.task_always_eager = True


@pytest.fixture
def study(builtin_rubrics: None) -> Study:
    return study_create(slug="worker-gen", rubric_slug="humor")


@pytest.fixture
def no_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A started run is not queued (the tests run tasks eagerly, which would do the whole run
    before the test begins): the test's own threads are its workers."""
    monkeypatch.setattr(services, "_enqueue_lanes", lambda run_id, lanes: None)


def wait_for(condition: Any, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not condition():
        time.sleep(0.1)


def first_turns(provider: FakeProvider) -> list[str]:
    return [r["messages"][-1]["content"] for r in provider.requests]


@pytest.mark.services
def test_a_worker_over_redis_runs_cancels_and_resumes_without_duplicates(
    redis_app: Any, study: Study, provider: FakeProvider
) -> None:
    provider.hold_seconds = 0.3
    prompts = make_set(study, *[single(f"p{n}", f"joke number {n}") for n in range(6)])
    model = make_endpoint(study, provider.url, max_concurrency=1)
    with start_worker(redis_app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        run = generation_run_start(
            study=study, prompt_set_ids=[prompts.pk], endpoint_ids=[model.pk], explain=False
        )
        wait_for(lambda: run.outputs.filter(status=Status.DONE).count() >= 2)
        generation_run_cancel(run=run)
        # The call in flight finishes and is stored; nothing new is handed out.
        wait_for(lambda: not run.outputs.filter(status=Status.RUNNING).exists())
        stopped_at = run.outputs.filter(status=Status.DONE).count()
        assert 2 <= stopped_at < 6
        time.sleep(1.0)
        assert run.outputs.filter(status=Status.DONE).count() == stopped_at
        generation_run_resume(run=run)
        wait_for(lambda: GenerationRun.objects.get(pk=run.pk).status == GenerationRun.Status.DONE)
    assert run.outputs.filter(status=Status.DONE).count() == 6
    assert Item.objects.filter(study=study, stage=Item.Stage.CANDIDATE).count() == 6
    # Each prompt was asked exactly once, over the cancel and the resume.
    asked = first_turns(provider)
    assert sorted(asked) == sorted(f"joke number {n}" for n in range(6))


def _blocked_on_a_lock(application_pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [application_pid]
        )
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def test_a_claim_under_way_when_a_cancel_commits_hands_nothing_out(
    postgres_only: None, no_workers: None, study: Study, provider: FakeProvider
) -> None:
    """Once the cancel has committed, no output may become running: a claim that read the run
    as running just before must not write its claim just after (the worker would then ask the
    model for an output of a cancelled run)."""
    prompts = make_set(study, single("p0", "joke 0"), single("p1", "joke 1"))
    model = make_endpoint(study, provider.url, max_concurrency=1)
    run = generation_run_start(
        study=study, prompt_set_ids=[prompts.pk], endpoint_ids=[model.pk], explain=False
    )
    claims: list[int | None] = []
    claimer_pid: list[int] = []

    def claimer() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                claimer_pid.append(cursor.fetchone()[0])
            claims.append(output_claim(run_id=run.pk, endpoint_id=model.pk).output_id)
        finally:
            connection.close()

    thread = threading.Thread(target=claimer)
    with transaction.atomic():
        # The cancel's transaction also holds the first output, so a claim that gets as far as
        # writing waits here; the claim is let go only when the cancel commits.
        list(run.outputs.select_for_update().order_by("pk")[:1])
        generation_run_cancel(run=run)
        thread.start()
        wait_for(lambda: bool(claimer_pid) and _blocked_on_a_lock(claimer_pid[0]), seconds=30)
        assert claimer_pid
        assert _blocked_on_a_lock(claimer_pid[0])
    thread.join(30)
    assert claims == [None]
    assert not run.outputs.exclude(status=Status.PENDING).exists()


def test_threads_never_exceed_the_endpoints_concurrency_limit(
    postgres_only: None, no_workers: None, study: Study, provider: FakeProvider
) -> None:
    provider.hold_seconds = 0.2
    prompts = make_set(study, *[single(f"p{n}", f"joke {n}") for n in range(8)])
    model = make_endpoint(study, provider.url, max_concurrency=2)
    run = generation_run_start(
        study=study, prompt_set_ids=[prompts.pk], endpoint_ids=[model.pk], explain=False
    )
    outcomes: list[str] = []
    start = threading.Barrier(4)

    def lane() -> None:
        try:
            start.wait()
            # A busy lane is queued again by its task; here the thread simply tries again.
            while True:
                outcome = generation_lane_work(
                    run_id=run.pk, endpoint_id=model.pk, budget_seconds=60
                )
                if outcome != "busy":
                    outcomes.append(outcome)
                    return
                time.sleep(0.05)
        finally:
            connection.close()

    threads = [threading.Thread(target=lane) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert outcomes == ["finished"] * 4
    assert provider.max_in_flight <= 2
    assert len(provider.requests) == 8
    assert run.outputs.filter(status=Status.DONE).count() == 8
    assert Item.objects.filter(study=study).count() == 8
    run.refresh_from_db()
    assert run.status == GenerationRun.Status.DONE
