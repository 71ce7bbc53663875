"""Prometheus metrics, off by default: with METRICS_ENABLED, /metrics gives the requests (from
django-prometheus's middleware) and what every process shares: queue depths, jobs by status,
failures, durations, the workers' heartbeat and stale results; a METRICS_TOKEN guards it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from apps.core.models import WorkerHeartbeat
from apps.reports.models import ExportJob
from apps.studies.services import study_create

pytestmark = pytest.mark.django_db


def _value(text: str, name: str, **labels: str) -> float:
    label = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    pattern = re.escape(name) + (r"\{" + re.escape(label) + r"\}" if labels else "") + r" (\S+)"
    found = re.search("^" + pattern, text, flags=re.MULTILINE)
    assert found is not None, f"{name}{{{label}}} not in the scrape"
    return float(found.group(1))


def test_metrics_are_off_by_default() -> None:
    assert Client().get("/metrics").status_code == 404


def test_the_scrape_counts_jobs_failures_durations_queues_and_the_heartbeat(settings: Any) -> None:
    settings.METRICS_ENABLED = True
    study = study_create(slug="m", rubric_slug="humor")
    now = timezone.now()
    for seconds in (2.0, 4.0):
        ExportJob.objects.create(
            study=study,
            format="raw",
            status="done",
            file_path=f"exports/m/{seconds}.csv",
            started_at=now - timedelta(seconds=seconds + 1),
            finished_at=now - timedelta(seconds=1),
        )
    ExportJob.objects.create(study=study, format="raw", status="failed", error="lost")
    ExportJob.objects.create(study=study, format="raw", status="queued")
    WorkerHeartbeat.objects.create(hostname="w1", seen_at=now - timedelta(seconds=30))

    response = Client().get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert _value(text, "laughlab_jobs", kind="export", status="done") == 2
    assert _value(text, "laughlab_jobs", kind="export", status="queued") == 1
    assert _value(text, "laughlab_job_failures_total", kind="export") == 1
    assert _value(text, "laughlab_job_duration_seconds_count", kind="export") == 2
    assert _value(text, "laughlab_job_duration_seconds_sum", kind="export") == pytest.approx(6.0)
    assert 29 <= _value(text, "laughlab_worker_heartbeat_age_seconds") < 120
    for queue in ("rater", "research", "external"):
        assert _value(text, "laughlab_queue_depth", queue=queue) >= 0


def test_a_token_guards_the_scrape(settings: Any) -> None:
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = "scrape-token-123"
    assert Client().get("/metrics").status_code == 401
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 401
    right = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-123")
    assert right.status_code == 200


SCRAPE = """
from django.test import Client
client = Client()
client.get("/healthz")
print(client.get("/metrics").content.decode())
"""


def test_with_metrics_on_requests_are_counted_by_the_middleware(tmp_path: Any) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "METRICS_ENABLED": "1"}
    env.update(DEBUG="1", LAUGHLAB_VAR_DIR=str(tmp_path), ALLOWED_HOSTS="testserver")
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=django_settings.BASE_DIR,
        env=env,
        check=True,
        timeout=240,
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SCRAPE],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'django_http_requests_total_by_view_transport_method_total{method="GET",' in (
        result.stdout
    )
    assert "laughlab_queue_depth" in result.stdout
