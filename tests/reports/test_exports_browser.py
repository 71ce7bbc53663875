"""The exports page in Chromium: a job's progress and download link appear without a reload."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.utils import timezone

from apps.reports.models import ExportJob
from apps.studies.services import study_create, study_member_add
from tests.conftest import skip_or_fail

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in the test thread; the ORM is used synchronously.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots" / "reports"


def _chromium() -> str:
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):  # type: ignore[no-untyped-def]
    # Playwright's wait_for_function needs eval, which the pages' CSP forbids (asserted elsewhere).
    return {**browser_context_args, "bypass_csp": True}


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):  # type: ignore[no-untyped-def]
    path = _chromium()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        skip_or_fail(f"browser tests need Debian's Chromium at {path}")
    return {
        **browser_type_launch_args,
        "executable_path": path,
        "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    }


@pytest.fixture(scope="session")
def base_url(live_server) -> str:  # type: ignore[no-untyped-def]
    return live_server.url


def test_a_job_shows_its_progress_then_its_download_link(
    page, live_server, builtin_rubrics, django_user_model, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    study = study_create(slug="browser-exports", rubric_slug="humor", name="Browser exports")
    user = django_user_model.objects.create_user("researcher", password="a long password 1")
    study_member_add(study=study, user=user)
    job = ExportJob.objects.create(study=study, requested_by=user, format="raw")

    try:
        page.goto(f"/accounts/login/?next=/studies/{study.slug}/exports/")
        page.fill("input[name=username]", "researcher")
        page.fill("input[name=password]", "a long password 1")
        page.click("button[type=submit], input[type=submit]")
        row = page.locator(f"tr[data-export-job='{job.pk}']")
        row.wait_for()
        assert row.locator("[data-field=download]").is_hidden()

        ExportJob.objects.filter(pk=job.pk).update(status="running", progress=42)
        page.wait_for_function(
            f"document.querySelector(\"tr[data-export-job='{job.pk}'] progress\").value === 42"
        )
        assert row.locator("[data-field=status]").inner_text().strip() == "Running"

        relative = Path("exports") / study.slug / f"{job.pk}-raw-judgments.csv"
        (tmp_path / relative).parent.mkdir(parents=True)
        (tmp_path / relative).write_text("kind,rater\n", encoding="utf-8")
        ExportJob.objects.filter(pk=job.pk).update(
            status="done",
            progress=100,
            file_path=str(relative),
            size=11,
            finished_at=timezone.now(),
        )
        link = row.locator("[data-field=download]")
        link.wait_for(state="visible")
        assert row.locator("[data-field=status]").inner_text().strip() == "Done"
        with page.expect_download() as download:
            link.click()
        assert Path(download.value.path()).read_text(encoding="utf-8") == "kind,rater\n"
        assert download.value.suggested_filename == f"{study.slug}-raw-judgments.csv"
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "exports-page.png"), full_page=True)
