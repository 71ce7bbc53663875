"""Test overlay: eager Celery and fast password hashing; everything else from config.settings."""

from __future__ import annotations

import os

os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,testserver")


def _redis_url_per_worker(url: str, worker: str) -> str:
    """Each pytest-xdist worker gets its own Redis database, counting down from the one given.

    The worker tests empty their database before they start; two workers sharing one would
    empty each other's queues. PostgreSQL needs nothing: pytest-django names a test database
    per worker.
    """
    base, _, number = url.rpartition("/")
    if not worker.startswith("gw") or not number.isdigit():
        return url
    return f"{base}/{int(number) - int(worker[2:])}"


if os.environ.get("REDIS_URL") and os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["REDIS_URL"] = _redis_url_per_worker(
        os.environ["REDIS_URL"], os.environ["PYTEST_XDIST_WORKER"]
    )

from config.settings import *  # noqa: E402, F403

CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
BOOTSTRAP_ROUNDS = 200
AGGREGATE_DEBOUNCE_SECONDS = 0
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Counters would carry over between tests in one process; the rate-limit tests turn them on.
RATE_LIMIT_ENROLL = "0"
RATE_LIMIT_SUBMIT = "0"
RATE_LIMIT_LOGIN_ACCOUNT = "0"
RATE_LIMIT_LOGIN_ADDRESS = "0"
# Every ranking counts afresh, so each test sees the counts its own rows make; the tests of the
# kept counts (tests/assignments/test_ranking_counts.py) turn them on.
TASK_COUNTS_MAX_AGE_SECONDS = 0.0
# The tests' model endpoints are local stand-ins; the address rule's own tests clear this.
OUTBOUND_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
