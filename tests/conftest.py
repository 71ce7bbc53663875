from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from apps.judgments.services import study_judgments_import
from apps.studies.services import study_create, study_items_import, study_member_add

os.environ.setdefault("OMP_NUM_THREADS", "1")

REQUIRE_SERVICES = os.environ.get("LAUGHLAB_REQUIRE_SERVICES") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip a test whose service is missing on a developer's machine; fail it in CI."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


@pytest.fixture
def postgres_only() -> None:
    if connection.vendor != "postgresql":
        skip_or_fail("needs PostgreSQL (set DATABASE_URL=postgres://...)")


DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


@pytest.fixture
def demo_study(db):  # type: ignore[no-untyped-def]
    """The demo study's real items and judgments (70 items, 24 raters, 1,755 judgments)."""
    study = study_create(slug="demo-copy", rubric_slug="humor", random_seed=20261129)
    study_items_import(
        study=study, data=(DEMO / "items.jsonl").read_bytes(), filename="items.jsonl"
    )
    study_judgments_import(
        study=study, data=(DEMO / "judgments.jsonl").read_bytes(), filename="judgments.jsonl"
    )
    return study


@pytest.fixture
def demo_member(demo_study, django_user_model):  # type: ignore[no-untyped-def]
    """A researcher of the demo study, logged in."""
    user = django_user_model.objects.create_user("researcher", password="pw-researcher-1")
    study_member_add(study=demo_study, user=user)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def builtin_rubrics(transactional_db) -> None:  # type: ignore[no-untyped-def]
    """The built-in rubrics, even right after a transactional test's flush.

    Normally post_migrate restores them after a flush; this makes a test's need explicit."""
    from django.apps import apps as registry

    from apps.studies.builtin_rubrics import install_builtin_rubrics
    from apps.studies.models import Rubric

    if not Rubric.objects.filter(slug="humor").exists():
        install_builtin_rubrics(registry)


@pytest.fixture
def demo_study_committed(builtin_rubrics):  # type: ignore[no-untyped-def]
    """The demo items in a committed study, and the judgments file still to import."""
    study = study_create(slug="demo-worker", rubric_slug="humor", random_seed=7)
    study_items_import(
        study=study, data=(DEMO / "items.jsonl").read_bytes(), filename="items.jsonl"
    )
    return study, (DEMO / "judgments.jsonl").read_bytes()


@pytest.fixture(autouse=True)
def _language_reset():  # type: ignore[no-untyped-def]
    """Each test starts in the default language: a request in Chinese (LocaleMiddleware) or a
    command leaves its language active in the thread otherwise."""
    from django.conf import settings
    from django.utils import translation

    yield
    translation.activate(settings.LANGUAGE_CODE)
