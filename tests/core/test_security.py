"""Security headers, rate limits, and Django's deployment checks with production settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client

from apps.raters.models import Rater
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def open_study():
    study = StudyFactory(status=Study.Status.OPEN, task_mix={"turing": 1.0}, attention_check_rate=0)
    for n in range(3):
        ItemFactory(study=study, external_id=f"i{n}")
    return study


def test_pages_send_a_content_security_policy_without_inline_scripts(open_study):
    response = Client().get(f"/s/{open_study.slug}/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "same-origin"
    assert b"<script>" not in response.content


def test_the_admin_gets_its_own_relaxed_policy(admin_client):
    response = admin_client.get("/admin/")
    assert "'unsafe-inline'" in response["Content-Security-Policy"]


def test_enrolment_is_rate_limited_per_address_with_a_clear_429(open_study, settings):
    settings.RATE_LIMIT_ENROLL = "3/m"
    cache.clear()
    form = {
        "background": "technical",
        "age_band": "25-34",
        "consent": "on",
        "languages": ["en", "zh"],
    }
    for _ in range(3):
        assert Client().post(f"/s/{open_study.slug}/", form).status_code == 302
    refused = Client().post(f"/s/{open_study.slug}/", form)
    assert refused.status_code == 429
    assert "too many enrolment attempts" in refused.content.decode()
    assert int(refused["Retry-After"]) > 0
    assert Rater.objects.filter(study=open_study).count() == 3


def test_answers_are_rate_limited_per_rater(open_study, settings):
    settings.RATE_LIMIT_SUBMIT = "1/m"
    cache.clear()
    client = Client()
    client.post(
        f"/s/{open_study.slug}/",
        {
            "background": "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    page = client.get(f"/s/{open_study.slug}/task/").content.decode()
    csrf = client.cookies["csrftoken"].value
    assignment = int(page.split('data-assignment="')[1].split('"')[0])

    def answer(key: str):
        body = {"assignment": assignment, "idempotency_key": key, "active_ms": 1000, "guess": "ai"}
        return client.post(
            f"/api/v1/rater/{open_study.slug}/turing",
            json.dumps(body),
            content_type="application/json",
            headers={"X-CSRFToken": csrf},
        )

    assert answer("first-key-123").status_code == 201
    refused = answer("second-key-456")
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"
    assert "Retry-After" in refused


def test_a_malformed_rate_stops_the_process():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        {"DEBUG": "1", "RATE_LIMIT_ENROLL": "lots", "DJANGO_SETTINGS_MODULE": "config.settings"}
    )
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "must look like 20/m" in result.stderr


def test_deployment_checks_pass_with_production_settings():
    unset = {
        "DEBUG",
        "DATABASE_URL",
        "REDIS_URL",
        "DJANGO_ALLOW_ASYNC_UNSAFE",
    }  # the last: browser tests
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": "k7#Vq2!xR9@mZ4$wL8^tN3&bH6*cJ1(pF5)gD0_sY-eU+aO=iK~" * 2,
            "ALLOWED_HOSTS": "laughlab.example.org",
            "SECURE_SSL_REDIRECT": "1",
            "SECURE_HSTS_PRELOAD": "1",
        }
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_cookies_are_http_only_and_secure_outside_debug(open_study):
    client = Client()
    client.get(f"/s/{open_study.slug}/")
    client.post(
        f"/s/{open_study.slug}/",
        {
            "background": "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    for name in ("sessionid", "csrftoken"):
        cookie = client.cookies[name]
        assert cookie["httponly"], name
        assert cookie["secure"], name
