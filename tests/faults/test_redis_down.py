"""Redis (the cache that counts rate limits, and the broker) goes down while raters enrol and
answer, with the rate limits on and no worker running: enrolment, task pages and answers keep
working and storing, the limits keep holding per process, and once Redis is back the sweep and a
real worker aggregate what was given during the outage."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker

from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.services import aggregate_sweep
from apps.core.ratelimit import local_counts_clear
from apps.judgments.models import ScoreResponse
from apps.raters.models import Rater
from config.celery import app
from tests.faults import FORM, PrivateRedis, celery_on, post_scorecard, scorecard_study
from tests.faults import browser as enrolled_browser

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def private_redis(postgres_only, settings) -> Iterator[PrivateRedis]:  # type: ignore[no-untyped-def]
    from tests.conftest import skip_or_fail

    if not PrivateRedis.available():
        skip_or_fail("needs redis-server on PATH")
    server = PrivateRedis()
    server.start()
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": server.url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    settings.RATE_LIMIT_ENROLL = "5/h"
    settings.RATE_LIMIT_SUBMIT = "120/m"
    settings.AGGREGATE_DEBOUNCE_SECONDS = 0
    settings.BOOTSTRAP_ROUNDS = 50
    local_counts_clear()
    try:
        with celery_on(server.url):
            yield server
    finally:
        server.stop()
        local_counts_clear()


def test_raters_enrol_and_answer_through_a_redis_outage_and_results_catch_up(
    private_redis, builtin_rubrics, caplog
):
    # A real worker started earlier in the run leaves the root logger at its own level
    # (Celery's test worker sets ERROR), so the level this test reads is set here.
    caplog.set_level(logging.WARNING, logger="apps.core.ratelimit")
    study = scorecard_study()
    # Redis is up: the limiter counts there.
    first_client, _, first_assignment = enrolled_browser(study)
    private_redis.stop()

    # Redis is down, and no worker runs: a new rater enrols, gets a task page, answers.
    raters = [enrolled_browser(study) for _ in range(2)]
    for n, (client, _, assignment) in enumerate(raters):
        response = post_scorecard(client, study, assignment, f"redis-down-{n}-aaaa")
        assert response.status_code == 201, response.content
    response = post_scorecard(first_client, study, first_assignment, "redis-down-9-aaaa")
    assert response.status_code == 201, response.content
    assert ScoreResponse.objects.filter(study=study).count() == 3
    assert "rate-limit cache unavailable" in caplog.text

    # The enrolment limit still holds, counted in this process (5 per hour per address: the
    # outage counts start afresh, so two more enrolments pass and the next is refused).
    from django.test import Client

    statuses = [Client().post(f"/s/{study.slug}/", FORM).status_code for _ in range(6)]
    assert statuses == [302, 302, 302, 429, 429, 429]
    assert Rater.objects.filter(study=study).count() == 6

    state = AggregationState.objects.get(study=study)
    assert state.requested_at is not None
    assert not StudyResult.objects.filter(study=study).exists()

    # Redis returns: the sweep queues the run and a real worker computes it.
    private_redis.start()
    assert aggregate_sweep() == [study.pk]
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not StudyResult.objects.filter(study=study).exists():
            time.sleep(0.2)
    result = StudyResult.objects.get(study=study)
    # The three scorecards, two of them given during the outage, are the evidence per item.
    assert sum(entry["n_raters"] for entry in result.payload["items"]) == 3
    assert result.evidence_as_of >= state.requested_at
