"""Test overlay: eager Celery and fast password hashing; everything else from config.settings."""

from __future__ import annotations

import os

os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,testserver")

from config.settings import *  # noqa: F403

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
