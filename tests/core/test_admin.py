"""Every model has an admin page; judgments and results are read-only there (they are evidence)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from tests.factories import PairJudgmentFactory, ScoreAnswerFactory, TuringJudgmentFactory

pytestmark = pytest.mark.django_db

PROJECT_APPS = (
    "core",
    "studies",
    "raters",
    "assignments",
    "judgments",
    "analysis",
    "dashboard",
    "reports",
)


def test_every_project_model_is_registered_in_the_admin():
    models = [m for m in apps.get_models() if m._meta.app_label in PROJECT_APPS]
    assert models
    missing = [m.__name__ for m in models if not admin.site.is_registered(m)]
    assert missing == []


def test_every_admin_list_and_detail_page_renders(admin_client):
    ScoreAnswerFactory()
    PairJudgmentFactory()
    TuringJudgmentFactory()
    for model in [m for m in apps.get_models() if m._meta.app_label in PROJECT_APPS]:
        opts = model._meta
        response = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        assert response.status_code == 200, opts.label
        first = model.objects.first()
        if first is not None:
            response = admin_client.get(
                reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[first.pk])
            )
            assert response.status_code == 200, opts.label


@pytest.mark.parametrize("model", [ScoreResponse, ScoreAnswer, PairJudgment, TuringJudgment])
def test_judgments_cannot_be_added_changed_or_deleted_in_the_admin(admin_client, model):
    ScoreAnswerFactory()
    PairJudgmentFactory()
    TuringJudgmentFactory()
    opts = model._meta
    obj = model.objects.first()
    before = model.objects.count()
    assert (
        admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add")).status_code
        == 403
    )
    delete_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_delete", args=[obj.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 403
    change_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    assert admin_client.post(change_url, {}).status_code == 403
    assert model.objects.count() == before
