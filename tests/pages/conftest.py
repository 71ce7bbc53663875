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
from django.core.management import call_command
from django.db import transaction

from apps.content.services.evaluation import content_evaluation_compute
from apps.studies.models import Study

HUMOR, CONTENT = "demo", "demo-content"


@dataclass(frozen=True)
class DemoSite:
    humor: Study
    content: Study


@pytest.fixture(scope="module")
def demo_site(django_db_setup, django_db_blocker) -> Iterator[DemoSite]:  # type: ignore[no-untyped-def]
    rounds = settings.BOOTSTRAP_ROUNDS
    settings.BOOTSTRAP_ROUNDS = 20
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
        content = Study.objects.get(slug=CONTENT)
        content_evaluation_compute(study=content, rounds=20)
        yield DemoSite(humor=Study.objects.get(slug=HUMOR), content=content)
        transaction.set_rollback(True)
    settings.BOOTSTRAP_ROUNDS = rounds


def researcher_pages(study: Study) -> list[str]:
    """Every researcher page of a study (GET), in the order of its navigation."""
    base = f"/studies/{study.slug}/"
    pages = [
        base,
        f"{base}settings/",
        f"{base}results/",
        *(
            f"{base}results/{section}/"
            for section in ("leaderboard", "items", "agreement", "turing", "quality", "safety")
        ),
        f"{base}exports/",
        f"{base}screening/",
        f"{base}screening/offense/",
        f"{base}screening/judge/",
        f"{base}exclusions/",
    ]
    if study.rubric.kind == "content":
        pages.append(f"{base}content/")
    return pages


SITE_PAGES = ["/studies/", "/studies/new/"]
