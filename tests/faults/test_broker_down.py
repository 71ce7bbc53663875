"""The broker (Redis) is down while raters answer: answers are stored, the study is left marked
for the sweep, and once Redis is back the sweep and a real worker produce the results."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker

from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.services import aggregate_sweep
from apps.judgments.models import ScoreAnswer, ScoreResponse
from config.celery import app
from tests.faults import PrivateRedis, browser, celery_on, post_scorecard, scorecard_study

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def private_broker(postgres_only, settings) -> Iterator[PrivateRedis]:  # type: ignore[no-untyped-def]
    from tests.conftest import skip_or_fail

    if not PrivateRedis.available():
        skip_or_fail("needs redis-server on PATH")
    server = PrivateRedis()
    server.start()
    settings.AGGREGATE_DEBOUNCE_SECONDS = 0
    settings.BOOTSTRAP_ROUNDS = 50
    try:
        with celery_on(server.url):
            yield server
    finally:
        server.stop()


def test_answers_while_the_broker_is_down_are_stored_and_aggregated_after_it_returns(
    private_broker, builtin_rubrics
):
    study = scorecard_study()
    raters = [browser(study) for _ in range(2)]
    private_broker.stop()

    for n, (client, _, assignment) in enumerate(raters):
        response = post_scorecard(client, study, assignment, f"down-000{n}-aaaa")
        assert response.status_code == 201, response.content

    assert ScoreResponse.objects.filter(study=study).count() == 2
    assert ScoreAnswer.objects.filter(response__study=study).count() == 8
    state = AggregationState.objects.get(study=study)
    assert state.requested_at is not None
    # Each failed enqueue gave the claim back, so the sweep may queue the run.
    assert state.scheduled is False
    assert state.last_started_at is None
    assert not StudyResult.objects.filter(study=study).exists()

    private_broker.start()
    assert aggregate_sweep() == [study.pk]
    assert AggregationState.objects.get(study=study).scheduled is True
    assert aggregate_sweep() == []  # claimed: a second sweep queues nothing more
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not StudyResult.objects.filter(study=study).exists():
            time.sleep(0.2)

    result = StudyResult.objects.get(study=study)
    assert result.rounds == 50
    assert result.payload["counts"]["raters"] == 2
    assert result.payload["counts"]["score_answers"] > 0
    assert result.evidence_as_of == state.requested_at
    # The two scorecards given while the broker was down are the evidence counted per item.
    raters_per_item = {entry["item"]: entry["n_raters"] for entry in result.payload["items"]}
    answered = [r.item.external_id for r in ScoreResponse.objects.filter(study=study)]
    assert all(raters_per_item[external_id] >= 1 for external_id in answered)
    assert sum(raters_per_item.values()) == 2
    state.refresh_from_db()
    assert state.scheduled is False
    assert state.last_error == ""
