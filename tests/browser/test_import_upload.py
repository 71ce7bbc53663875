"""A researcher uploads a large judgments file on the set-up page and watches its import in the
browser: the job page shows it queued, then, without a reload, the lines read, 100% and the
import's warning; a bad file's page lists its lines and nothing is stored.

The job is run by the test (the queue is held) while the page is idle between two refreshes:
the live server shares the test's SQLite connection.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from apps.imports.models import ImportJob
from apps.imports.services import import_job_run
from apps.judgments.models import ScoreResponse
from apps.studies.models import Study
from apps.studies.services import study_create, study_items_import
from tests.imports.data import item_lines, jsonl, person_scores, positional_scores

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long password 1"


@pytest.fixture
def study(builtin_rubrics, django_user_model, settings, tmp_path, monkeypatch) -> Study:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    # Held: the test runs each job itself, between two of the page's refreshes.
    monkeypatch.setattr("apps.imports.services._enqueue", lambda job_id: None)
    owner = django_user_model.objects.create_user("researcher", password=PASSWORD)
    study = study_create(slug="crowd", rubric_slug="humor", name="Crowd", owner=owner)
    study_items_import(study=study, data=jsonl(item_lines(30)), filename="items.jsonl")
    return study


def log_in(page: Page) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.click("form button[type=submit]")


def upload(page: Page, content: bytes) -> ImportJob:
    page.goto("/studies/crowd/settings/")
    page.set_input_files(
        "input[name='judgments-file']",
        files=[{"name": "grades.jsonl", "mimeType": "application/x-ndjson", "buffer": content}],
    )
    with page.expect_navigation():
        page.get_by_role("button", name="Import judgments").click()
    job = ImportJob.objects.order_by("-pk").first()
    assert job is not None
    expect(page).to_have_url(re.compile(rf"/studies/crowd/imports/{job.pk}/$"))
    return job


def run_between_refreshes(page: Page, job: ImportJob) -> None:
    """Wait for one refresh of the block, then run the job before the next one (2 s later)."""
    page.wait_for_function(
        "document.getElementById('import-job').dataset.refreshedAt !== undefined"
    )
    import_job_run(job_id=job.pk)


def test_a_large_upload_shows_its_progress_and_warning_without_a_reload(
    rater_page: Page, study: Study, screenshots
) -> None:
    page = rater_page
    log_in(page)
    job = upload(page, jsonl(positional_scores(30)))
    box = page.locator("#import-job")
    expect(box.locator("[data-field=status]")).to_have_text("Queued")
    expect(box.locator("[data-field=lines]")).to_have_text("0 of 90 lines read")
    # Marks this document: a reload would lose it.
    page.evaluate("window.stillTheSamePage = true")

    run_between_refreshes(page, job)

    expect(box.locator("[data-field=status]")).to_have_text("Done", timeout=10_000)
    expect(box.locator("[data-field=lines]")).to_have_text("90 of 90 lines read")
    expect(box.locator("[data-field=percent]")).to_have_text("100%")
    expect(box.locator("progress")).to_have_attribute("value", "100")
    expect(box.locator("[data-field=summary]")).to_contain_text("Imported 90 scorecards")
    expect(box.locator("[data-field=warning]")).to_contain_text(
        "rater ids look like grade positions"
    )
    # A warning is dressed as a warning, never in the success's green.
    colours = {
        field: box.locator(f"[data-field={field}]").evaluate(
            "e => getComputedStyle(e).backgroundColor"
        )
        for field in ("summary", "warning")
    }
    assert colours["warning"] == "rgb(255, 247, 230)", colours
    assert colours["warning"] != colours["summary"]
    assert page.evaluate("window.stillTheSamePage") is True
    screenshots.take(page, "done", full_page=True)
    assert ScoreResponse.objects.filter(study=study).count() == 90
    # Finished: the page stops asking.
    refreshed = box.get_attribute("data-refreshed-at")
    page.wait_for_timeout(2500)
    assert box.get_attribute("data-refreshed-at") == refreshed


def test_a_bad_large_upload_lists_its_lines_and_stores_nothing(
    rater_page: Page, study: Study, screenshots
) -> None:
    page = rater_page
    log_in(page)
    lines = person_scores(30)
    lines[6]["funniness"] = 12
    job = upload(page, jsonl(lines))
    run_between_refreshes(page, job)
    box = page.locator("#import-job")
    expect(box.locator("[data-field=status]")).to_have_text("Failed", timeout=10_000)
    expect(box.locator("[data-field=error]")).to_contain_text("1 bad line; nothing was imported")
    row = box.locator("table.errors tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("td")).to_have_text(["7", "funniness", re.compile("must be from 1 to 7")])
    screenshots.take(page, "failed", full_page=True)
    assert not ScoreResponse.objects.filter(study=study).exists()
