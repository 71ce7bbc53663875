from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

REQUIRE_SERVICES = os.environ.get("LAUGHLAB_REQUIRE_SERVICES") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip a test whose service is missing on a developer's machine; fail it in CI."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


@pytest.fixture
def postgres_only(settings):  # type: ignore[no-untyped-def]
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        skip_or_fail("needs PostgreSQL (set DATABASE_URL=postgres://...)")
