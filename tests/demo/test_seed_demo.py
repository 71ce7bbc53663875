"""The demo's commands: seed_demo loads both demo studies once; each command lives in its app."""

from __future__ import annotations

import ast
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command, get_commands
from django.core.management.base import CommandError

from apps.analysis.models import StudyResult
from apps.content.models import ContentEvaluation
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import Rater
from apps.studies.models import Item, Study


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_each_command_lives_in_the_app_that_does_its_work():
    commands = get_commands()
    assert commands["export"] == "apps.reports"
    assert commands["aggregate"] == "apps.analysis"
    assert commands["seed_demo"] == "apps.demo"
    assert commands["rundemo"] == "apps.demo"
    assert commands["create_study"] == "apps.studies"


def test_core_imports_no_other_app():
    core = Path(__file__).resolve().parents[2] / "apps" / "core"
    imported: set[tuple[str, str]] = set()
    for path in core.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith("apps.") and not name.startswith("apps.core"):
                    imported.add((str(path.relative_to(core)), name))
    assert imported == set()


@pytest.mark.django_db
def test_seed_demo_loads_the_demo_once_and_computes_results(settings):
    settings.BOOTSTRAP_ROUNDS = 20
    first = run("seed_demo")
    assert "Demo study 'demo': 70 items added" in first
    assert "Content demo study 'demo-content': 36 items added" in first
    assert "Picture demo study 'demo-pictures': 36 captions added" in first
    counts = (
        Item.objects.count(),
        ScoreResponse.objects.count(),
        PairJudgment.objects.count(),
        TuringJudgment.objects.count(),
        Rater.objects.count(),
    )
    second = run("seed_demo", "--skip-aggregate")
    assert "'demo': 0 items added (70 present), 0 judgments added" in second
    assert "'demo-content': 0 items added (36 present), 0 judgments added" in second
    assert "'demo-pictures': 0 captions added (36 present)" in second
    pictured = Item.objects.filter(study__slug="demo-pictures")
    assert pictured.exclude(image="").count() == 36
    assert len(set(pictured.values_list("image_sha256", flat=True))) == 6
    assert counts == (
        Item.objects.count(),
        ScoreResponse.objects.count(),
        PairJudgment.objects.count(),
        TuringJudgment.objects.count(),
        Rater.objects.count(),
    )
    assert Rater.objects.count() >= 16
    assert StudyResult.objects.filter(study__slug="demo").exists()
    user = get_user_model().objects.get(username=settings.DEMO_RESEARCHER_USERNAME)
    assert user.check_password(settings.DEMO_RESEARCHER_PASSWORD)


@pytest.mark.django_db
def test_seed_demo_also_loads_the_content_study_for_the_researcher(
    settings, django_capture_on_commit_callbacks
):
    settings.BOOTSTRAP_ROUNDS = 20
    # What the command queues runs at once (eager Celery in tests), as the demo's worker would.
    with django_capture_on_commit_callbacks(execute=True):
        output = run("seed_demo")
    assert "Content evaluation of 'demo-content' queued" in output
    study = Study.objects.get(slug="demo-content")
    assert (study.rubric.slug, study.status) == ("content", "open")
    assert study.name == "Demo: generated articles in three genres"
    assert sorted(set(study.items.values_list("content_type", flat=True))) == [
        "analysis",
        "creative",
        "news",
    ]
    assert ScoreResponse.objects.filter(study=study).count() >= 15 * 36
    assert PairJudgment.objects.filter(study=study).exists()
    assert TuringJudgment.objects.filter(study=study).exists()
    payload = StudyResult.objects.get(study=study).payload
    assert {"fluency", "informativeness", "originality"} <= set(payload["agreement"])
    assert "funniness" not in payload["agreement"]
    evaluation = ContentEvaluation.objects.get(study=study).payload
    assert {"independence", "tiers"} <= set(evaluation)
    assert evaluation["counts"]["items_with_metrics"] == 36
    user = get_user_model().objects.get(username=settings.DEMO_RESEARCHER_USERNAME)
    assert set(user.study_memberships.values_list("study__slug", flat=True)) == {
        "demo",
        "demo-content",
        "demo-pictures",
    }


@pytest.mark.django_db
def test_seed_demo_refuses_the_content_demo_slug_for_the_humor_demo():
    with pytest.raises(CommandError, match="another demo study's slug"):
        run("seed_demo", "--slug", "demo-content")
    assert not Study.objects.exists()
