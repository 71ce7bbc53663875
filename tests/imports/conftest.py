from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from apps.studies.models import Study
from apps.studies.services import study_create, study_items_import, study_member_add
from tests.imports.data import item_lines, jsonl


@pytest.fixture
def media(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def owner(db) -> User:  # type: ignore[no-untyped-def]
    return User.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def member(db) -> User:  # type: ignore[no-untyped-def]
    return User.objects.create_user("member", password="pw-member-123")


@pytest.fixture
def outsider(db) -> User:  # type: ignore[no-untyped-def]
    """A researcher with a study of their own, but not this one."""
    user = User.objects.create_user("outsider", password="pw-outsider-123")
    study_create(slug="elsewhere", rubric_slug="humor", owner=user)
    return user


@pytest.fixture
def study(owner, member, media) -> Study:  # type: ignore[no-untyped-def]
    """A draft humor study with 30 items carrying metadata; owner and member are researchers."""
    study = study_create(slug="crowd", rubric_slug="humor", name="Crowd", owner=owner)
    study_member_add(study=study, user=member)
    study_items_import(study=study, data=jsonl(item_lines(30)), filename="items.jsonl")
    return study
