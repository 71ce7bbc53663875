"""A real Celery worker, over Redis, computes a study's results after judgments are imported."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker

from apps.analysis import services
from apps.analysis.models import AggregationState, StudyResult
from apps.judgments.services import study_judgments_import
from config.celery import app
from tests.conftest import skip_or_fail

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def redis_app(settings):  # type: ignore[no-untyped-def]
    url = os.environ.get("REDIS_URL")
    if not url:
        skip_or_fail("needs Redis (set REDIS_URL=redis://127.0.0.1:6379/15)")
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError:
        skip_or_fail(f"Redis at {url} does not answer")
    redis.Redis.from_url(url).flushdb()
    # REDIS_URL in the environment made Redis the broker when settings loaded; tests run tasks
    # eagerly otherwise, so only that is switched off here.
    assert app.conf.broker_url == url
    app.conf.task_always_eager = False
    settings.AGGREGATE_DEBOUNCE_SECONDS = 0
    settings.BOOTSTRAP_ROUNDS = 50
    services.queued_runs.forget()
    yield app
    app.conf.task_always_eager = True
    services.queued_runs.forget()


def test_worker_over_redis_aggregates_after_an_import(redis_app, demo_study_committed):
    study, judgments = demo_study_committed
    assert not StudyResult.objects.filter(study=study).exists()
    with start_worker(redis_app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        # The import commits, then queues one debounced run through Redis for the worker.
        study_judgments_import(study=study, data=judgments, filename="judgments.jsonl")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not StudyResult.objects.filter(study=study).exists():
            time.sleep(0.25)
    result = StudyResult.objects.get(study=study)
    counts = result.payload["counts"]
    # The demo's 240 pairs: decided ones, "about the same" and "neither".
    assert counts["pair_judgments"] + counts["pair_ties"] + counts["pair_neither"] == 240
    assert counts["pair_ties"] > 0
    assert result.rounds == 50


def _wait_for(condition) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not condition():
        time.sleep(0.25)


def test_evidence_within_the_debounce_is_in_the_queued_run_without_a_mark_of_its_own(
    postgres_only, redis_app, demo_study_committed, settings
):
    """One mark a debounce interval: the run queued by the first import starts no earlier than
    its countdown, so the second import, committed before then, is in it unmarked.

    On PostgreSQL: the worker's thread and this one write the same in-memory SQLite database
    at once here, which SQLite refuses now and then ("database table is locked")."""
    study, judgments = demo_study_committed
    lines = judgments.splitlines(keepends=True)
    first, second = b"".join(lines[: len(lines) // 2]), b"".join(lines[len(lines) // 2 :])
    with start_worker(redis_app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        # The items' own run (queued by their import, without a debounce) out of the way.
        _wait_for(lambda: StudyResult.objects.filter(study=study).exists())
        settings.AGGREGATE_DEBOUNCE_SECONDS = 8
        study_judgments_import(study=study, data=first, filename="first.jsonl")
        marked = AggregationState.objects.get(study=study)
        assert marked.scheduled
        study_judgments_import(study=study, data=second, filename="second.jsonl")
        covered = AggregationState.objects.get(study=study).requested_at == marked.requested_at
        _wait_for(
            lambda: StudyResult.objects.filter(
                study=study, evidence_as_of__gte=marked.requested_at
            ).exists()
        )
    result = StudyResult.objects.get(study=study)
    counts = result.payload["counts"]
    assert counts["pair_judgments"] + counts["pair_ties"] + counts["pair_neither"] == 240
    assert counts["turing_judgments"] == 235
    # Unmarked only when the second import was committed well before the run was due (a slow
    # machine may take longer; it is then marked, which is right too): either way nothing is
    # stale once the runs are in.
    if covered:
        assert result.evidence_as_of == marked.requested_at
    _wait_for(lambda: not AggregationState.objects.filter(study=study, scheduled=True).exists())
    assert services.aggregate_sweep() == []


def test_a_claim_moved_earlier_computes_once_over_a_real_worker(
    postgres_only, redis_app, demo_study_committed, settings
):
    """Another request claimed the queued run between a judgment and its mark: the mark moves
    the run to its own judgment's time and queues a second message. The worker runs the moved
    one when it is due; the first, arriving later, finds its claim served and computes
    nothing."""
    from celery.signals import task_postrun
    from django.utils import timezone

    study, _ = demo_study_committed
    finished: list[tuple[dict[str, str], str | None]] = []

    def record(sender=None, kwargs=None, retval=None, **_):  # type: ignore[no-untyped-def]
        if sender is not None and sender.name.endswith("study_aggregate_task"):
            finished.append((dict(kwargs or {}), retval))

    task_postrun.connect(record, weak=False)
    try:
        with start_worker(redis_app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
            # The items' own run (queued by their import, without a debounce) out of the way.
            _wait_for(lambda: StudyResult.objects.filter(study=study).exists())
            _wait_for(
                lambda: not AggregationState.objects.filter(study=study, scheduled=True).exists()
            )
            finished.clear()
            settings.AGGREGATE_DEBOUNCE_SECONDS = 2
            claimed = timezone.now()
            services._EvidenceChanged(study.pk, since=claimed)()
            stored = claimed - timedelta(milliseconds=300)
            services._EvidenceChanged(study.pk, since=stored)()
            assert AggregationState.objects.get(study=study).scheduled_at == stored
            _wait_for(lambda: len(finished) >= 2)
    finally:
        task_postrun.disconnect(record)
    # The moved message ran first, due two seconds after the earlier judgment; the claim's
    # first message then computed nothing.
    assert [kwargs["claimed_at"] for kwargs, _ in finished] == [
        stored.isoformat(),
        claimed.isoformat(),
    ]
    [(_, computed), (_, skipped)] = finished
    result = StudyResult.objects.get(study=study)
    assert computed == result.input_hash
    assert skipped is None
    state = AggregationState.objects.get(study=study)
    assert not state.scheduled
    assert result.evidence_as_of == state.requested_at
    assert state.last_started_at >= stored + timedelta(seconds=2)
    assert services.aggregate_sweep() == []
