"""Researchers, tokens and a study with items, results and a finished export for the API tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.analysis.models import AggregationState
from apps.analysis.services import study_aggregate
from apps.exclusions.models import Exclusion
from apps.exclusions.services import exclusion_create
from apps.imports.models import ImportJob
from apps.raters.models import BackgroundGroup
from apps.reports.models import ExportJob
from apps.reports.services import export_job_create, export_job_run
from apps.studies.models import Item, Study, StudyMembership
from apps.studies.services import study_create, study_member_add
from tests.factories import ItemFactory


def token_client(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def assert_error(response: Any, status: int, field: str | None, code: str = "invalid") -> Any:
    """A 4xx in the API's one error shape, whose message starts with the field it names."""
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["code"] == code
    assert body["message"]
    if field is not None:
        assert body["field"] == field
        assert body["message"].startswith(f"{field}: ")
    return body


@pytest.fixture
def media(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def owner(db) -> User:  # type: ignore[no-untyped-def]
    return User.objects.create_user("owner", password="x")


@pytest.fixture
def member(db) -> User:  # type: ignore[no-untyped-def]
    return User.objects.create_user("member", password="x")


@pytest.fixture
def outsider(db) -> User:  # type: ignore[no-untyped-def]
    """A researcher with a study of their own, but not this one."""
    user = User.objects.create_user("outsider", password="x")
    study_create(slug="elsewhere", rubric_slug="humor", owner=user)
    return user


@pytest.fixture
def admin(db) -> User:  # type: ignore[no-untyped-def]
    return User.objects.create_superuser("admin", password="x")


@pytest.fixture
def study(owner, member) -> Study:  # type: ignore[no-untyped-def]
    """A draft study with three items; owner and member are its researchers."""
    study = study_create(slug="jokes", rubric_slug="humor", name="Jokes", owner=owner)
    study_member_add(study=study, user=member)
    for n in range(3):
        ItemFactory(study=study, external_id=f"j{n}", topic="cats")
    return study


@pytest.fixture
def computed(study, media) -> Study:  # type: ignore[no-untyped-def]
    """The study with stored results and one finished raw export (job `done_job`)."""
    study_aggregate(study=study, rounds=10, seed=1)
    return study


@pytest.fixture
def done_job(computed, owner) -> ExportJob:  # type: ignore[no-untyped-def]
    job = export_job_create(study=computed, user=owner, fmt="raw")
    finished = export_job_run(job_id=job.pk)
    assert finished is not None
    assert finished.status == ExportJob.Status.DONE
    # One active exclusion, for the undo endpoint.
    exclusion_create(study=computed, user=owner, target="item", subject="j1", reason="fixture")
    return finished


@dataclass(frozen=True)
class Snapshot:
    study: dict[str, Any]
    quotas: list[tuple[str, int | None]]
    items: list[tuple[str, str]]
    studies: int
    memberships: int
    exports: int
    imports: int
    aggregation: list[tuple[Any, ...]]
    exclusions: list[tuple[Any, ...]]


def snapshot(study: Study) -> Snapshot:
    """Everything an API write could change; a refused request must leave it equal."""
    return Snapshot(
        study=Study.objects.filter(pk=study.pk).values().get(),
        quotas=list(
            BackgroundGroup.objects.filter(study=study)
            .order_by("code")
            .values_list("code", "quota")
        ),
        items=list(
            Item.objects.filter(study=study)
            .order_by("external_id")
            .values_list("external_id", "text")
        ),
        studies=Study.objects.count(),
        memberships=StudyMembership.objects.count(),
        exports=ExportJob.objects.count(),
        imports=ImportJob.objects.count(),
        aggregation=list(
            AggregationState.objects.values_list("study_id", "requested_at", "scheduled")
        ),
        exclusions=list(Exclusion.objects.order_by("pk").values_list("pk", "undone_at")),
    )
