"""Browser tests: Debian's Chromium driven by pytest-playwright against pytest-django's live_server.

Every page a test visits is kept as a screenshot under
test-artifacts/screenshots/<test-name>/NN-<label>.png (git-ignored); a failing test also leaves a
final full-page screenshot there.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import skip_or_fail

# Playwright's sync API runs an event loop in the test thread; Django refuses ORM calls from a
# thread with a running loop unless told it is safe (the ORM is used synchronously here).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


def chromium_executable() -> str:
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session", autouse=True)
def _chromium_available() -> None:
    path = chromium_executable()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        skip_or_fail(
            f"browser tests need Debian's Chromium at {path} "
            "(apt-get install chromium fonts-wqy-microhei, or set CHROMIUM_PATH)"
        )


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):  # type: ignore[no-untyped-def]
    return {
        **browser_type_launch_args,
        "executable_path": chromium_executable(),
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
            "--disable-dev-shm-usage",
        ],
    }


@pytest.fixture(scope="session")
def base_url(live_server) -> str:  # type: ignore[no-untyped-def]
    """Relative URLs in page.goto() go to the live server (pytest-playwright reads this)."""
    return live_server.url


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


def _failed(node: pytest.Item) -> bool:
    reports = node.stash.get(REPORTS, {})
    return any(reports[when].failed for when in ("setup", "call") if when in reports)


class Screenshots:
    """Numbered screenshots of one test: one per page load, plus any taken by the test."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0
        self.pages: list = []
        self.errors: list[str] = []
        self.busy = 0

    def _path(self, label: str) -> Path:
        self.count += 1
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "page"
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder / f"{self.count:02d}-{safe}.png"

    def take(self, page, label: str, *, full_page: bool = False) -> Path:  # type: ignore[no-untyped-def]
        path = self._path(label)
        page.screenshot(path=str(path), full_page=full_page)
        return path

    def watch(self, page):  # type: ignore[no-untyped-def]
        """Keep a screenshot of every page this tab loads, labelled by its path."""
        self.pages.append(page)

        def on_load(loaded) -> None:  # type: ignore[no-untyped-def]
            self.busy += 1
            label = _label_for(urlsplit(loaded.url).path)
            try:
                kind = loaded.evaluate("document.querySelector('form.task')?.dataset.task || ''")
                self.take(loaded, f"{label}-{kind}" if label == "task" and kind else label)
            except Exception as exc:  # the tab may have moved on or closed meanwhile
                self.errors.append(f"{label}: {exc}")
            finally:
                self.busy -= 1

        page.on("load", on_load)
        return page

    def settle(self) -> None:
        """Let the last page's load handler run: the test may end before its event is handled."""
        for page in self.pages:
            if page.is_closed():
                continue
            try:
                page.wait_for_load_state("load")
                page.wait_for_timeout(50)
                for _ in range(100):
                    if not self.busy:
                        break
                    page.wait_for_timeout(50)
            except Exception as exc:
                self.errors.append(f"settle: {exc}")


def _label_for(path: str) -> str:
    match = re.match(r"^/s/[^/]+/(?P<rest>.*)$", path)
    if not match:
        return path.strip("/") or "root"
    rest = match["rest"].strip("/")
    if not rest:
        return "enroll"
    return rest.split("/")[0]


@pytest.fixture
def screenshots(request: pytest.FixtureRequest) -> Iterator[Screenshots]:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")
    folder = ARTIFACTS / name
    shutil.rmtree(folder, ignore_errors=True)
    shots = Screenshots(folder)
    yield shots
    shots.settle()
    if _failed(request.node):
        for page in shots.pages:
            if not page.is_closed():
                try:
                    shots.take(page, "failure", full_page=True)
                except Exception as exc:
                    shots.errors.append(f"failure: {exc}")
    if shots.errors:
        request.node.add_report_section("teardown", "screenshots", "\n".join(shots.errors))


@pytest.fixture
def rater_page(page, screenshots: Screenshots, live_server):  # type: ignore[no-untyped-def]
    """pytest-playwright's page, watched for screenshots, against the live server."""
    page.set_default_timeout(10_000)
    return screenshots.watch(page)


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):  # type: ignore[no-untyped-def]
    # The pages' Content-Security-Policy forbids eval, which Playwright's wait_for_function
    # polling needs; the policy itself is asserted on the responses in tests/core/test_security.py.
    return {**browser_context_args, "bypass_csp": True}


@pytest.fixture
def demo_site(builtin_rubrics, settings, tmp_path):  # type: ignore[no-untyped-def]
    """Both demo studies, seeded for the live server (a few bootstrap rounds keep it quick)."""
    from io import StringIO

    from django.core.management import call_command

    from apps.content.services.evaluation import content_evaluation_compute
    from apps.studies.models import Study
    from tests.pages.conftest import finished_import_job

    settings.BOOTSTRAP_ROUNDS = 20
    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("seed_demo", stdout=StringIO(), stderr=StringIO())
    content = Study.objects.get(slug="demo-content")
    content_evaluation_compute(study=content, rounds=20)
    humor = Study.objects.get(slug="demo")
    for study in (humor, content):
        finished_import_job(study)  # so the import-job page is among the pages visited
    return {"humor": humor, "content": content}


def log_in_as_researcher(page) -> None:  # type: ignore[no-untyped-def]
    from django.conf import settings

    page.goto("/accounts/login/")
    page.fill("input[name=username]", settings.DEMO_RESEARCHER_USERNAME)
    page.fill("input[name=password]", settings.DEMO_RESEARCHER_PASSWORD)
    with page.expect_navigation():
        page.locator("form button[type=submit]").click()
    assert "/accounts/login/" not in page.url


def researcher_page(new_context, screenshots, lang: str, width: int):  # type: ignore[no-untyped-def]
    """(context, page) of the demo researcher logged in, reading `lang` ("en" or "zh") on a
    screen `width` px wide; the caller closes the context."""
    context = new_context(
        viewport={"width": width, "height": 900},
        locale="zh-CN" if lang == "zh" else "en-US",
        extra_http_headers={"Accept-Language": "zh-hans" if lang == "zh" else "en"},
    )
    page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    log_in_as_researcher(page)
    return context, page
