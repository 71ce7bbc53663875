"""Both demo studies, seeded and computed once per module, and every page a researcher or a
rater sees in them: the pages' tests (languages, figures) read them, never write.

The seeding runs inside one transaction that is rolled back when the module ends, so the rest
of the suite never sees the demo rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from io import StringIO

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction

from apps.analysis.models import StudyResult
from apps.content.services.evaluation import content_evaluation_compute
from apps.demo.management.commands.seed_demo import CONTENT_DEMO_DIR, DEMO_DIR
from apps.generation.models import Prompt, PromptSet
from apps.imports.models import ImportJob, ImportKind
from apps.imports.services import import_job_create, import_job_run
from apps.studies.models import Item, Study

HUMOR, CONTENT = "demo", "demo-content"


@dataclass(frozen=True)
class DemoSite:
    humor: Study
    content: Study


@pytest.fixture(scope="module")
def demo_site(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[DemoSite]:  # type: ignore[no-untyped-def]
    rounds, media = settings.BOOTSTRAP_ROUNDS, settings.MEDIA_ROOT
    settings.BOOTSTRAP_ROUNDS = 20
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
        content = Study.objects.get(slug=CONTENT)
        content_evaluation_compute(study=content, rounds=20)
        humor = Study.objects.get(slug=HUMOR)
        for study in (humor, content):
            finished_import_job(study)
        yield DemoSite(humor=humor, content=content)
        transaction.set_rollback(True)
    settings.BOOTSTRAP_ROUNDS, settings.MEDIA_ROOT = rounds, media


def finished_import_job(study: Study) -> ImportJob:
    """A finished background import for the import page: the study's first demo items again,
    so it reports them as already present and changes nothing (the demo itself has no job)."""
    folder = CONTENT_DEMO_DIR if study.rubric.kind == "content" else DEMO_DIR
    lines = (folder / "items.jsonl").read_bytes().splitlines(keepends=True)[:3]
    upload = SimpleUploadedFile("items.jsonl", b"".join(lines), content_type="application/jsonl")
    job = import_job_create(study=study, user=None, kind=ImportKind.ITEMS, upload=upload)
    # Run here: inside the module's transaction the queued task never starts (no commit).
    finished = import_job_run(job_id=job.pk)
    assert finished is not None
    assert finished.status == ImportJob.Status.DONE, finished.error
    return finished


def model_views(study: Study) -> list[str]:
    """Every view of the model comparison page (`?view_of=`): overall, then each level, humor
    type and item language the stored results hold."""
    result = StudyResult.objects.filter(study=study).first()
    models = ((result.payload if result else None) or {}).get("models") or {}
    keys = [
        f"{dimension}:{name}"
        for dimension in ("by_level", "by_humor_type", "by_language")
        for name in sorted(models.get(dimension) or {})
    ]
    return ["", *(f"?view_of={key}" for key in keys)]


def researcher_pages(study: Study) -> list[str]:
    """Every researcher page of a study (GET), in the order of its navigation: every view of
    the model comparison, every generation page (its prompt sets and each of their prompts) and
    every import job's page included."""
    base = f"/studies/{study.slug}/"
    pages = [
        base,
        f"{base}settings/",
        f"{base}results/",
        *(
            f"{base}results/{section}/"
            for section in ("leaderboard", "items", "agreement", "turing", "quality", "safety")
        ),
        *(f"{base}results/models/{view}" for view in model_views(study)),
        f"{base}exports/",
        f"{base}screening/",
        f"{base}screening/offense/",
        f"{base}screening/judge/",
        f"{base}exclusions/",
        f"{base}prolific/",
    ]
    if study.rubric.kind == "content":
        pages.append(f"{base}content/")
    pages.append(f"{base}generation/")
    for prompt_set in PromptSet.objects.filter(study=study).order_by("name"):
        pages.append(f"{base}generation/sets/{prompt_set.pk}/")
        pages.extend(
            f"{base}generation/sets/{prompt_set.pk}/prompts/{pk}/"
            for pk in Prompt.objects.filter(prompt_set=prompt_set)
            .order_by("external_id")
            .values_list("pk", flat=True)
        )
    pages.extend(
        f"{base}imports/{pk}/"
        for pk in ImportJob.objects.filter(study=study).order_by("pk").values_list("pk", flat=True)
    )
    return pages


SITE_PAGES = ["/studies/", "/studies/new/"]


def task_kinds(study: Study) -> set[str]:
    """Every kind of task page a rater of the study meets: the kinds of its task mix, and the
    self-explanation shown after a scorecard when an item has one."""
    kinds = {kind for kind, share in study.task_mix.items() if share}
    if Item.objects.filter(study=study).exclude(explanation="").exists():
        kinds.add("explanation")
    return kinds
