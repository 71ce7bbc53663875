"""Workers are visible: the heartbeat a worker records, the researcher pages' banner when none
has answered for a while (in both languages), and /healthz and /readyz for orchestrators."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.core.heartbeat import worker_heartbeat_record, worker_state
from apps.core.models import WorkerHeartbeat
from apps.core.tasks import worker_heartbeat_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(django_user_model) -> Client:  # type: ignore[no-untyped-def]
    user = django_user_model.objects.create_user("watcher", password="pw-watch-123")
    client = Client()
    client.force_login(user)
    return client


def test_the_heartbeat_task_records_its_worker_and_a_second_beat_updates_it():
    worker_heartbeat_task.apply().get()
    first = WorkerHeartbeat.objects.get()
    assert first.hostname  # the worker's own name
    worker_heartbeat_task.apply().get()
    assert WorkerHeartbeat.objects.count() == 1
    assert WorkerHeartbeat.objects.get().seen_at >= first.seen_at


def test_a_worker_is_stale_after_the_threshold_and_never_where_tasks_run_inline(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.WORKER_STALE_SECONDS = 60
    assert worker_state().stale  # no worker ever answered
    worker_heartbeat_record(hostname="celery@box")
    assert not worker_state().stale
    later = timezone.now() + timedelta(seconds=61)
    assert worker_state(now=later).stale
    settings.CELERY_TASK_ALWAYS_EAGER = True
    assert not worker_state(now=later).stale


@pytest.mark.parametrize(
    ("language", "text"),
    [("en", "No task worker has answered since"), ("zh-hans", "没有任务进程响应")],
)
def test_researcher_pages_say_when_no_worker_has_answered(researcher, settings, language, text):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.WORKER_STALE_SECONDS = 60
    WorkerHeartbeat.objects.create(
        hostname="celery@box", seen_at=timezone.now() - timedelta(minutes=5)
    )
    html = researcher.get("/studies/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    banner = html.split('class="warning worker-banner" role="alert">')[1].split("</p>")[0]
    assert text in banner
    if language == "en":
        assert "may be out of date" in banner
    # A fresh beat: no banner.
    worker_heartbeat_record(hostname="celery@box")
    assert "worker-banner" not in researcher.get("/studies/").content.decode()


def test_rater_pages_never_show_the_banner(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    assert "worker-banner" not in Client().get("/accounts/login/").content.decode()


def test_healthz_answers_while_the_process_runs():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_names_what_is_not_ready(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.WORKER_STALE_SECONDS = 60
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["storage"] == "ok"
    assert body["checks"]["worker"].startswith("failed: no task worker has answered since never")
    worker_heartbeat_record(hostname="celery@box")
    ready = Client().get("/readyz")
    assert ready.json()["checks"]["worker"] == "ok"
    assert ready.status_code == (200 if ready.json()["checks"]["broker"] == "ok" else 503)
