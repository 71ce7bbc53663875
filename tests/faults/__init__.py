"""Fault tests on the real services: a stopped broker, a killed worker, a dropped database
connection, a session expiring mid-answer. Shared helpers for the rater's browser and for a
private Redis server that a test may stop and start (never the shared one on 6379)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg2
from celery import Celery
from django.db import connection
from django.test import Client

from apps.assignments.models import Assignment
from apps.raters.models import Rater
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}
ANSWERS: dict[str, dict[str, int]] = {
    "surprise": {"value": 3, "at_ms": 1000},
    "coherence": {"value": 4, "at_ms": 2000},
    "funniness": {"value": 5, "at_ms": 3000},
    "offensive": {"value": 0, "at_ms": 3500},
}


def scorecard_study(items: int = 4) -> Study:
    study = StudyFactory(
        task_mix={"scorecard": 1.0}, attention_check_rate=0, tasks_per_session=40, random_seed=99
    )
    for i in range(items):
        ItemFactory(study=study, external_id=f"f{i}", topic="cats")
    return study


def browser(study: Study) -> tuple[Client, Rater, Assignment]:
    """A browser that enrolled through the study link and opened its first task."""
    client = Client()
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    rater = Rater.objects.get(pk=client.session[f"laughlab:rater:{study.pk}"])
    return client, rater, next_task(client, study, rater)


def next_task(client: Client, study: Study, rater: Rater) -> Assignment:
    assert client.get(f"/s/{study.slug}/task/").status_code == 200
    return Assignment.objects.get(rater=rater, status=Assignment.Status.PENDING)


def post_scorecard(client: Client, study: Study, assignment: Assignment, key: str) -> Any:
    """As the page sends it: surprise and coherence first (unless they arrived already), then
    the scorecard. The reply is the scorecard's."""
    if not assignment.early_answers.exists():
        early = {name: ANSWERS[name] for name in ("surprise", "coherence")}
        client.post(
            f"/api/v1/rater/{study.slug}/scorecards/early",
            data=json.dumps({"assignment": assignment.pk, "active_ms": 4000, "answers": early}),
            content_type="application/json",
        )
    body = {"assignment": assignment.pk, "idempotency_key": key, "active_ms": 4000}
    body["answers"] = ANSWERS
    return client.post(
        f"/api/v1/rater/{study.slug}/scorecards",
        data=json.dumps(body),
        content_type="application/json",
    )


def other_connection() -> Any:
    """A second connection to the test database, in autocommit: to end or watch the one
    Django holds, as another client would."""
    params = connection.settings_dict
    other = psycopg2.connect(
        dbname=params["NAME"],
        user=params["USER"] or None,
        password=params["PASSWORD"] or None,
        host=params["HOST"] or None,
        port=params["PORT"] or None,
    )
    other.autocommit = True
    return other


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    """A redis-server of this test's own, on its own port, stopped and started by its PID."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping()
                return
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@contextmanager
def celery_on(broker_url: str) -> Iterator[Celery]:
    """The project's Celery app publishing to `broker_url`, not eagerly, for the block.

    The producer and connection pools are cached per broker URL; dropping the app's references
    makes the next publish build fresh ones for this URL, and the previous pools are put back
    untouched afterwards (force_close_all() on them would break them for later tests).
    """
    from config.celery import app

    saved = (app.conf.broker_url, app.conf.task_always_eager, app._pool, app.amqp._producer_pool)
    # Without REDIS_URL the app is configured for the demo's filesystem transport, whose
    # name and options would win over the URL's scheme: this block's broker is Redis.
    transport = (app.conf.broker_transport, app.conf.broker_transport_options)
    app.conf.broker_url = broker_url
    app.conf.broker_transport, app.conf.broker_transport_options = None, {}
    app.conf.task_always_eager = False
    app._pool = None
    app.amqp._producer_pool = None
    try:
        yield app
    finally:
        if app._pool is not None:
            app._pool.force_close_all()
        app.conf.broker_url, app.conf.task_always_eager = saved[:2]
        app.conf.broker_transport, app.conf.broker_transport_options = transport
        app._pool, app.amqp._producer_pool = saved[2:]
