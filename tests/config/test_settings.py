"""Settings come from the environment and fail loudly on bad values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL"}
    }
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL.split(':')[0], settings.DEBUG)",
        ],
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_missing_secret_key_outside_debug_stops_the_process():
    result = _load_settings()
    assert result.returncode != 0
    assert "SECRET_KEY must be set unless DEBUG=1" in result.stderr


def test_debug_runs_without_secret_key_on_sqlite_and_the_embedded_broker():
    result = _load_settings(DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem", "True"]


def test_database_and_redis_urls_select_postgresql_and_redis():
    result = _load_settings(
        SECRET_KEY="x" * 50,
        DATABASE_URL="postgres://u@127.0.0.1:5432/db",
        REDIS_URL="redis://127.0.0.1:6379/0",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["apps.core.postgresql", "redis", "False"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "maybe"}, "DEBUG must be one of"),
        (
            {"DEBUG": "1", "AGGREGATE_DEBOUNCE_SECONDS": "soon"},
            "AGGREGATE_DEBOUNCE_SECONDS must be an integer",
        ),
        ({"DEBUG": "1", "BOOTSTRAP_ROUNDS": "3"}, "BOOTSTRAP_ROUNDS must be at least 10"),
        ({"DEBUG": "1", "DATABASE_URL": "nonsense://x"}, "DATABASE_URL"),
        (
            {"DEBUG": "1", "TASK_COUNTS_MAX_AGE_SECONDS": "-1"},
            "TASK_COUNTS_MAX_AGE_SECONDS must be at least 0",
        ),
        (
            {"DEBUG": "1", "TASK_COUNTS_MAX_AGE_SECONDS": "inf"},
            "TASK_COUNTS_MAX_AGE_SECONDS must be a finite number",
        ),
        ({"DEBUG": "1", "LLM_JUDGE_TIMEOUT_SECONDS": "nan"}, "must be a finite number"),
        ({"DEBUG": "1", "PUBLIC_BASE_URL": "laughlab.example.org"}, "PUBLIC_BASE_URL must be"),
        ({"DEBUG": "1", "PUBLIC_BASE_URL": "https://a b.org"}, "PUBLIC_BASE_URL must be"),
        ({"DEBUG": "1", "WORKER_NICE": "-5"}, "WORKER_NICE must be at least 0"),
        ({"DEBUG": "1", "WORKER_NICE": "20"}, "WORKER_NICE must be at most 19"),
        ({"DEBUG": "1", "WORKER_NICE": "low"}, "WORKER_NICE must be an integer"),
        ({"DEBUG": "1", "WORKER_IDLE_CLASS": "later"}, "WORKER_IDLE_CLASS must be one of"),
    ],
)
def test_malformed_values_stop_the_process_with_the_setting_named(env, message):
    result = _load_settings(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_sqlite_is_opened_for_serialized_writers():
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.sqlite3":
        pytest.skip("the SQLite options apply to SQLite only")
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]
