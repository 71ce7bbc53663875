"""The researcher pages in a real browser: every page of a study with its stored results, every
download parsed back, a study set up from scratch, live progress, and who may see what.

Results are computed once in the test (`study_aggregate`) before any page opens; the pages only
read the stored payload, so each number shown is checked against that payload, formatted with the
same functions the templates use (apps.findings.charts).

The live server shares the test's SQLite connection: the test writes to the database only while
the page is idle (after its load, before its next timed refresh), never while a request runs.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
import zipfile
from collections import Counter
from collections.abc import Callable, Mapping
from itertools import zip_longest
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import openpyxl
import pytest
from django.utils import timezone
from playwright.sync_api import Locator, Page, expect

from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.findings.charts import fmt, fmt_ci, fmt_p_stated
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.judgments.services import study_judgments_import
from apps.raters.models import BackgroundGroup, Rater
from apps.raters.services import rater_enroll
from apps.reports.models import ExportJob
from apps.studies.models import Item, Study
from apps.studies.services import study_create, study_member_add, study_status_set

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long password 1"
SLUG = "demo-worker"
SECTIONS = ["leaderboard", "items", "agreement", "turing", "quality", "safety"]
# Every results CSV (apps/dashboard/results CSV_NAMES): listed here so that a download that
# disappears from the pages is noticed.
RESULT_CSVS = {
    "summary",
    "leaderboard",
    "leaderboard-by-level",
    "leaderboard-by-source",
    "items",
    "agreement",
    "agreement-by-group",
    "cross-group",
    "turing",
    "fatigue",
    "position-bias",
    "rater-quality",
    "safety",
    "style-sources",
    "style-covariates",
    "style-items",
    "reliability",
    # The jokes demo's pairs hold ties and "neither".
    "pair-outcomes",
}
# The researcher's interface is English: the files with words in them are the English ones.
EXPORT_FILES = {
    "raw": "raw-judgments.csv",
    "json": "results.json",
    "tables": "tables-en.zip",
    "xlsx": "results-en.xlsx",
    "report-html": "report-en.html",
    "report-pdf": "report-en.pdf",
}
RESULT_TABLES = {
    "bradley_terry",
    "bradley_terry_by_level",
    "items",
    "groups_source",
    "groups_level",
    "groups_humor_type",
    "groups_level_humor_type",
    "groups_content_type",
    "groups_background",
    "groups_language",
    "groups_rater_language",
    "models",
    "agreement",
    "agreement_by_group",
    "agreement_per_item",
    "turing",
    "diagnostics",
    "warnings",
    # The pair board's fit, its tie and neither rates, style control and reliability.
    "bradley_terry_fit",
    "pair_outcomes",
    "style_sources",
    "style_covariates",
    "style_items",
    "reliability",
    # The content evaluation and the pre-screening: a header-only table where a study has none.
    "content_weights",
    "content_independence",
    "content_against_humans",
    "content_tiers",
    "screening_run",
    "screening_stages",
    "screening_calibration",
    "screening_judge",
    "screening_audit",
    "screening_tiers",
    "provenance",
}
MODEL = "quipster-v2"


# --- fixtures and helpers ----------------------------------------------------------------------


@pytest.fixture
def researcher(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("researcher", password=PASSWORD)


@pytest.fixture
def demo(demo_study_committed, researcher, settings, tmp_path) -> Study:  # type: ignore[no-untyped-def]
    """The demo study with its judgments and stored results, the researcher a member."""
    settings.MEDIA_ROOT = tmp_path / "media"
    study, judgments = demo_study_committed
    study_judgments_import(study=study, data=judgments, filename="judgments.jsonl")
    study_member_add(study=study, user=researcher)
    study_aggregate(study=study, rounds=50)
    # The pages are read against all items (every page starts from the study's items view);
    # the evidence-only view is switched on where a test looks at it.
    study.exclude_items_not_evidence = False
    study.save(update_fields=["exclude_items_not_evidence"])
    return study


class Tab:
    """A browser tab against the live server; every page it loads is kept as a screenshot, and
    each navigation waits for that screenshot, so none is taken halfway through the next one."""

    def __init__(self, page: Page, shots: Any) -> None:
        self.page = page
        self.shots = shots

    def goto(self, url: str, status: int = 200) -> None:
        response = self.page.goto(url)
        assert response is not None, url
        assert response.status == status, f"{url}: {response.status}"
        self.shots.settle()

    def follow(self, target: Locator, *, timeout: float | None = None) -> None:
        """Click a link or submit button and wait for the page it leads to (`timeout` ms where
        the server does more than a page's work before answering)."""
        with self.page.expect_navigation(timeout=timeout):
            target.click(timeout=timeout)
        self.shots.settle()


@pytest.fixture
def tab(rater_page: Page, screenshots) -> Tab:  # type: ignore[no-untyped-def]
    return Tab(rater_page, screenshots)


def payload_of(study: Study) -> dict[str, Any]:
    """What the pages read."""
    return StudyResult.objects.get(study=study).payload


def log_in(tab: Tab, username: str, next_url: str = "") -> None:
    tab.goto("/accounts/login/" + (f"?next={next_url}" if next_url else ""))
    tab.page.fill("input[name=username]", username)
    tab.page.fill("input[name=password]", PASSWORD)
    tab.follow(tab.page.locator("form button[type=submit]"))
    assert "/accounts/login/" not in tab.page.url, "login failed"


def text_of(locator: Locator) -> str:
    return " ".join(locator.inner_text().split())


def cell(table: Locator, row: Locator, heading: str) -> str:
    """The text of `row`'s cell under the column headed `heading` (first match)."""
    headings = [text_of(th) for th in table.locator("thead th").all()]
    index = next(i for i, h in enumerate(headings) if h.split(" ")[0] == heading)
    return text_of(row.locator(":scope > th, :scope > td").nth(index))


def download(page: Page, link: Locator) -> tuple[str, bytes]:
    with page.expect_download() as info:
        link.click()
    value = info.value
    return value.suggested_filename, Path(value.path()).read_bytes()


def csv_rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))


def number(text: str | None) -> float | None:
    return None if text in ("", None) else float(text)


def only(rows: list[dict[str, str]], **match: str) -> dict[str, str]:
    found = [row for row in rows if all(row[k] == v for k, v in match.items())]
    assert len(found) == 1, f"{match}: {len(found)} rows"
    return found[0]


def first_after_sort(
    items: list[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Any], descending: bool
) -> Mapping[str, Any]:
    """The first item of the page sorted on `key`: stable, items without a value last."""
    present = [item for item in items if key(item) is not None]
    return sorted(present, key=key, reverse=descending)[0]


def snapshot(study: Study) -> tuple[Any, ...]:
    study.refresh_from_db()
    groups = BackgroundGroup.objects.filter(study=study).order_by("code")
    return (
        study.status,
        study.session_minutes,
        study.task_mix,
        tuple(groups.values_list("code", "quota", "filled")),
        Item.objects.filter(study=study).count(),
    )


# --- 1. every page shows the stored aggregates -------------------------------------------------


def test_every_researcher_page_shows_the_stored_aggregates(tab: Tab, demo: Study) -> None:
    page = tab.page
    payload = payload_of(demo)
    base = f"/studies/{demo.slug}"

    # Log in: the study list is the landing page and links to the study.
    log_in(tab, "researcher")
    assert page.url.endswith("/studies/")
    expect(page.locator("h1")).to_have_text("Studies")
    tab.follow(page.get_by_role("link", name=demo.name))
    assert page.url.endswith(f"{base}/")

    # Overview: the progress block counts what is stored.
    expect(page.locator("#progress")).to_be_visible()
    progress = page.locator("#progress")
    scorecards = ScoreResponse.objects.filter(study=demo, item__is_attention_check=False)
    assert int(text_of(progress.locator("[data-value=scorecards]"))) == scorecards.count()
    assert (
        int(text_of(progress.locator("[data-value=pairs]")))
        == PairJudgment.objects.filter(study=demo).count()
    )
    assert (
        int(text_of(progress.locator("[data-value=turing]")))
        == TuringJudgment.objects.filter(study=demo).count()
    )
    for group in BackgroundGroup.objects.filter(study=demo):
        row = progress.locator(f"tr[data-group='{group.code}']")
        assert text_of(row.locator("[data-value=enrolled]")) == str(group.filled)

    # Set-up page: the study's items and status.
    tab.goto(f"{base}/settings/")
    expect(page.locator("h1")).to_have_text("Set-up")
    expect(page.get_by_text("70 items in the study.")).to_be_visible()

    # The summary starts without the items that are not evidence (the study's default) ...
    demo.exclude_items_not_evidence = True
    demo.save(update_fields=["exclude_items_not_evidence"])
    tab.goto(f"{base}/results/")
    expect(page.locator("#view-switch")).to_have_attribute("data-view", "evidence")
    evidence = payload["evidence_only"]["results"]["counts"]["items"]
    assert str(evidence) in text_of(page.locator("dl.result-meta"))
    # ... and with all items: counts, and a source model's mean funniness and Turing accuracy.
    page.get_by_role("link", name="Show all items").click()
    expect(page.locator("#view-switch")).to_have_attribute("data-view", "all")
    counts = payload["counts"]
    meta = text_of(page.locator("dl.result-meta"))
    for key in ("items", "raters", "score_answers", "pair_judgments", "turing_judgments"):
        assert str(counts[key]) in meta
    assert text_of(page.locator(".provenance .rounds")) == "50"
    table = page.locator("table.summary-table[data-dimension=source]")
    row = table.locator(f"tr[data-group='{MODEL}']")
    source = payload["groups"]["source"][MODEL]
    # A source's mean is the model comparison's (items and raters random), as on its page.
    model = payload["models"]["by_model"][MODEL]
    assert cell(table, row, "funniness") == fmt_ci(model["questions"]["funniness"])
    assert cell(table, row, "Turing") == fmt_ci(source["turing_accuracy"], 1, pct=True)
    assert cell(table, row, "Items") == str(source["n_items"])
    # From here every page starts from all items.
    demo.exclude_items_not_evidence = False
    demo.save(update_fields=["exclude_items_not_evidence"])

    # Leaderboard: first item and its score as formatted; a chart; per-source means.
    tab.goto(f"{base}/results/leaderboard/")
    top = payload["bradley_terry"][0]
    first = page.locator("table.leaderboard tr[data-item]").first
    assert first.get_attribute("data-item") == top["item"]
    assert text_of(first.locator("td.score")) == (
        f"{fmt(top['score'])} [{fmt(top['ci_low'])}, {fmt(top['ci_high'])}]"
    )
    expect(page.locator(".chart-block svg[role=img]").first).to_be_visible()
    items = {item["item"]: item for item in payload["items"]}
    scores = [
        row["score"]
        for row in payload["bradley_terry"]
        if items[row["item"]]["source"] == MODEL and row["score"] is not None
    ]
    by_source = page.locator(f"table.by-source tr[data-source='{MODEL}']")
    assert text_of(by_source.locator("td.mean")) == fmt(statistics.fmean(scores))

    # Items: sorting by clicking a column heading changes the first row accordingly.
    tab.goto(f"{base}/results/items/")
    rows = page.locator("table.items-table tbody tr[data-item]")
    assert rows.first.get_attribute("data-item") == min(items)  # sorted by item by default
    heading = page.locator("table.items-table thead th a").filter(
        has_text=re.compile("^funniness$")
    )

    def funniness(item: Mapping[str, Any]) -> Any:
        return ((item.get("questions") or {}).get("funniness") or {}).get("value")

    for direction, descending in (("asc", False), ("desc", True)):
        tab.follow(heading)
        assert re.search(r"[?&]sort=funniness(&|$)", page.url), page.url
        assert re.search(rf"[?&]dir={direction}(&|$)", page.url), page.url
        expected = first_after_sort(payload["items"], funniness, descending)
        assert rows.first.get_attribute("data-item") == expected["item"]
        table = page.locator("table.items-table")
        assert cell(table, rows.first, "funniness").startswith(fmt(funniness(expected)))
    lowest = first_after_sort(payload["items"], funniness, False)["item"]
    assert lowest != first_after_sort(payload["items"], funniness, True)["item"]

    # Agreement: Fleiss' kappa for funniness.
    tab.goto(f"{base}/results/agreement/")
    kappa = page.locator("tr[data-question=funniness] td.kappa")
    assert text_of(kappa) == fmt_ci(payload["agreement"]["funniness"]["fleiss_kappa"])

    # Turing: a model's accuracy, and the overall accuracy.
    tab.goto(f"{base}/results/turing/")
    turing = payload["turing"]
    accuracy = page.locator(f"table.turing-table tr[data-source='{MODEL}'] td.accuracy")
    assert text_of(accuracy) == fmt_ci(turing["by_source"][MODEL]["accuracy"], 1, pct=True)
    overall = page.locator("table.turing-table tr[data-source=overall] td.accuracy")
    assert text_of(overall) == fmt_ci(turing["overall"]["accuracy"], 1, pct=True)

    # Quality: the fatigue slope, position bias, and the raters counted.
    tab.goto(f"{base}/results/quality/")
    diagnostics = payload["diagnostics"]
    assert text_of(page.locator(".slope strong")) == fmt_ci(diagnostics["fatigue"]["slope"], 3)
    bias = diagnostics["position_bias"]
    assert text_of(page.locator(".position strong")) == fmt_ci(
        bias["left_choice_rate"], 1, pct=True
    )
    assert text_of(page.locator(".p-value")) == fmt_p_stated(bias["p_value"])
    raters = page.locator("dl.rater-counts dd").first
    assert text_of(raters) == str(Rater.objects.filter(study=demo).count())

    # Safety: exactly the intercepted items are listed.
    tab.goto(f"{base}/results/safety/")
    intercepted = sorted(item["item"] for item in payload["items"] if item["safety_intercepted"])
    assert intercepted, "the demo has safety-intercepted items"
    listed = page.locator("table.safety-table tbody tr[data-item]")
    assert [row.get_attribute("data-item") for row in listed.all()] == intercepted

    # Exports: the form, and the direct downloads of the stored results.
    tab.goto(f"{base}/exports/")
    expect(page.locator("h1")).to_have_text("Exports")
    expect(page.locator("select[name=format]")).to_be_visible()
    expect(page.locator("ul.direct a").first).to_be_visible()


# --- 2. every download, parsed back ------------------------------------------------------------


def test_every_export_and_results_csv_downloads_and_parses_back(tab: Tab, demo: Study) -> None:
    page = tab.page
    payload = payload_of(demo)
    base = f"/studies/{demo.slug}"
    top = payload["bradley_terry"][0]
    kappa = payload["agreement"]["funniness"]["fleiss_kappa"]
    stored = {
        "score": ScoreAnswer.objects.filter(response__study=demo).count(),
        "pair": PairJudgment.objects.filter(study=demo).count(),
        "turing": TuringJudgment.objects.filter(study=demo).count(),
    }
    log_in(tab, "researcher", f"{base}/exports/")
    assert page.url.endswith(f"{base}/exports/")

    # Export jobs: each format built (Celery runs eagerly in tests), shown done, downloaded.
    files: dict[str, bytes] = {}
    for fmt_value, file_name in EXPORT_FILES.items():
        page.locator("select[name=format]").select_option(fmt_value)
        # Tasks run eagerly here, so the request builds the export (the printable report
        # takes seconds on a busy two-core machine) before it answers.
        tab.follow(page.get_by_role("button", name="Start export"), timeout=60_000)
        job = ExportJob.objects.latest("pk")
        assert (job.format, job.status) == (fmt_value, "done"), job.error
        row = page.locator(f"tr[data-export-job='{job.pk}']")
        expect(row).to_have_attribute("data-status", "done")
        assert row.locator("progress").get_attribute("value") == "100"
        name, data = download(page, row.locator("[data-field=download]"))
        assert name == f"{demo.slug}-{file_name}"
        assert len(data) == job.size
        files[fmt_value] = data
    assert ExportJob.objects.filter(study=demo).count() == len(EXPORT_FILES)

    raw = csv_rows(files["raw"])
    assert len(raw) == sum(stored.values())
    assert Counter(row["kind"] for row in raw) == stored

    document = json.loads(files["json"])
    assert document["bradley_terry"] == payload["bradley_terry"]
    assert document["agreement"]["funniness"]["fleiss_kappa"] == kappa
    assert (document["seed"], document["rounds"]) == (demo.random_seed, 50)

    with zipfile.ZipFile(io.BytesIO(files["tables"])) as archive:
        assert {name.removesuffix(".csv") for name in archive.namelist()} == RESULT_TABLES
        bt = csv_rows(archive.read("bradley_terry.csv"))
    assert (bt[0]["item"], number(bt[0]["score"])) == (top["item"], top["score"])
    assert len(bt) == len(payload["bradley_terry"])

    workbook = openpyxl.load_workbook(io.BytesIO(files["xlsx"]), read_only=True)
    assert set(workbook.sheetnames) == RESULT_TABLES
    sheet = list(workbook["bradley_terry"].iter_rows(values_only=True))
    header, first = sheet[0], dict(zip(sheet[0], sheet[1], strict=True))
    assert "score" in header
    assert first["item"] == top["item"]
    assert first["score"] == pytest.approx(top["score"], rel=1e-14)
    sheet = list(workbook["agreement"].iter_rows(values_only=True))
    # Read-only openpyxl leaves out a row's empty trailing cells (no interval alpha for a flag).
    agreement = [dict(zip_longest(sheet[0], row)) for row in sheet[1:]]
    funny = next(row for row in agreement if row["question"] == "funniness")
    assert funny["fleiss_kappa"] == pytest.approx(kappa["value"], rel=1e-14)
    workbook.close()

    report = files["report-html"].decode("utf-8")
    assert report.lstrip().lower().startswith("<!doctype html")
    assert top["item"] in report
    assert files["report-pdf"].startswith(b"%PDF")

    # Direct downloads: the results JSON and every table as CSV.
    name, data = download(page, page.locator("ul.direct a[href$='/direct/json']"))
    assert name == f"{demo.slug}-results.json"
    assert json.loads(data)["bradley_terry"] == payload["bradley_terry"]
    links = page.locator("ul.direct a[href*='/direct/csv?table=']")
    tables = {}
    for index in range(links.count()):
        name, data = download(page, links.nth(index))
        table = name.removeprefix(f"{demo.slug}-").removesuffix("-en.csv")
        tables[table] = csv_rows(data)
    assert set(tables) == RESULT_TABLES
    assert tables["bradley_terry"][0]["item"] == top["item"]
    assert number(tables["bradley_terry"][0]["score"]) == top["score"]
    assert number(only(tables["agreement"], question="funniness")["fleiss_kappa"]) == kappa["value"]
    provenance = {row["key"]: row["value"] for row in tables["provenance"]}
    assert (provenance["rounds"], provenance["study"]) == ("50", demo.slug)

    # The printable report opens in the browser.
    tab.follow(page.locator("ul.direct a[href$='/direct/report-html']"))
    assert page.url.endswith(f"{base}/exports/direct/report-html")
    assert top["item"] in page.content()
    page.go_back()
    tab.shots.settle()

    # Results CSVs: every download link on the results pages.
    result_files: dict[str, list[dict[str, str]]] = {}
    pages = [f"{base}/results/", *(f"{base}/results/{s}/" for s in SECTIONS)]
    pages.append(f"{base}/results/leaderboard/?level=single")  # the per-level download
    for url in pages:
        tab.goto(url)
        hrefs = dict.fromkeys(
            a.get_attribute("href") or "" for a in page.locator("a[href*='/results/data/']").all()
        )
        for href in hrefs:
            csv_name = href.rsplit("/", 1)[1].removesuffix(".csv")
            if csv_name in result_files:
                continue
            name, data = download(page, page.locator(f"a[href='{href}']").first)
            assert name == f"{demo.slug}-{csv_name}.csv"
            result_files[csv_name] = csv_rows(data)
    assert set(result_files) == RESULT_CSVS

    leaderboard = result_files["leaderboard"]
    assert len(leaderboard) == len(payload["bradley_terry"])
    assert leaderboard[0]["item"] == top["item"]
    assert [number(leaderboard[0][k]) for k in ("score", "ci_low", "ci_high")] == [
        top["score"],
        top["ci_low"],
        top["ci_high"],
    ]
    by_level = payload["bradley_terry_by_level"]
    assert len(result_files["leaderboard-by-level"]) == sum(len(rows) for rows in by_level.values())
    # The summary's download follows the study's items view (all items here); per source it
    # holds the model comparison's mean, as the page does.
    source = payload["models"]["by_model"][MODEL]["questions"]["funniness"]
    row = only(result_files["summary"], dimension="source", group=MODEL)
    assert [number(row[f"funniness_{k}"]) for k in ("mean", "ci_low", "ci_high")] == [
        source["value"],
        source["ci_low"],
        source["ci_high"],
    ]
    row = only(result_files["agreement"], question="funniness", measure="fleiss_kappa")
    assert number(row["value"]) == kappa["value"]
    turing = payload["turing"]["by_source"][MODEL]["accuracy"]
    row = only(result_files["turing"], scope="source", name=MODEL)
    assert number(row["accuracy"]) == turing["value"]
    assert len(result_files["items"]) == len(payload["items"])
    assert {row["item"] for row in result_files["safety"]} == {
        item["item"] for item in payload["items"] if item["safety_intercepted"]
    }
    assert len(result_files["rater-quality"]) == Rater.objects.filter(study=demo).count()
    bias = payload["diagnostics"]["position_bias"]
    row = only(result_files["position-bias"], measure="left_choice_rate")
    assert number(row["p_value"]) == bias["p_value"]


# --- 3. setting a study up ---------------------------------------------------------------------

GOOD_ITEMS = "\n".join(
    json.dumps(line)
    for line in [
        {"id": "p1", "text": "A first joke.", "source": "human"},
        {"id": "p2", "text": "A second joke.", "source": "quipster-v2"},
        {"id": "p3", "text": "A third joke.", "source": "laughter-7b"},
    ]
)
BAD_ITEMS = '{"id": "x1", "text": "ok", "source": "human"}\n{"id": "x2"}\nnot json\n'


def test_a_study_is_set_up_opened_and_closed_in_the_browser(
    tab: Tab, researcher, builtin_rubrics, settings, context
) -> None:  # type: ignore[no-untyped-def]
    page = tab.page
    settings.PUBLIC_BASE_URL = "https://laughlab.example.org"
    log_in(tab, "researcher")
    tab.follow(page.get_by_role("link", name="New study"))
    assert page.url.endswith("/studies/new/")

    page.fill("input[name=slug]", "pilot-2026")
    page.fill("input[name=name]", "Pilot 2026")
    page.locator("select[name=rubric]").select_option("humor")
    tab.follow(page.get_by_role("button", name="Create"))
    assert page.url.endswith("/studies/pilot-2026/settings/")
    expect(page.locator(".messages")).to_contain_text("Study created as a draft.")
    study = Study.objects.get(slug="pilot-2026")
    assert (study.name, study.status) == ("Pilot 2026", "draft")
    assert study.memberships.filter(user=researcher).exists()

    # A bad items file: one row per bad line, nothing stored.
    upload = page.locator("input[type=file][name=file]")
    upload.set_input_files(
        {"name": "items.jsonl", "mimeType": "application/jsonl", "buffer": BAD_ITEMS.encode()}
    )
    tab.follow(page.get_by_role("button", name="Upload"))
    expect(page.locator("[role=alert]").first).to_contain_text("2 bad lines; nothing was imported")
    errors = page.locator("table.errors tbody tr")
    expect(errors.first).to_be_visible()
    lines = [(text_of(row.locator("td").first), text_of(row)) for row in errors.all()]
    assert {line for line, _text in lines} == {"2", "3"}
    assert all("is required" in text for line, text in lines if line == "2")
    assert [line for line, text in lines if "not valid JSON" in text] == ["3"]
    assert Item.objects.filter(study=study).count() == 0
    expect(page.get_by_text("0 items in the study.")).to_be_visible()

    # A good one.
    page.locator("input[type=file][name=file]").set_input_files(
        {"name": "items.jsonl", "mimeType": "application/jsonl", "buffer": GOOD_ITEMS.encode()}
    )
    tab.follow(page.get_by_role("button", name="Upload"))
    assert page.url.endswith("/studies/pilot-2026/settings/")
    expect(page.locator(".messages")).to_contain_text("3 items imported, 0 already present.")
    expect(page.get_by_text("3 items in the study.")).to_be_visible()
    assert set(Item.objects.filter(study=study).values_list("external_id", flat=True)) == {
        "p1",
        "p2",
        "p3",
    }

    # Settings and quotas.
    page.fill("#id_s-session_minutes", "25")
    page.fill("#id_s-tasks_per_session", "12")
    page.fill("#id_s-share_scorecard", "0.5")
    page.fill("#id_s-share_pair", "0.3")
    page.fill("#id_s-share_turing", "0.2")
    page.fill("#id_q-quota_technical", "10")
    page.fill("#id_q-quota_content_operations", "5")
    tab.follow(page.get_by_role("button", name="Save settings"))
    expect(page.locator(".messages")).to_contain_text("Settings saved.")
    study.refresh_from_db()
    assert (study.session_minutes, study.tasks_per_session) == (25, 12)
    assert study.task_mix == pytest.approx({"scorecard": 0.5, "pair": 0.3, "turing": 0.2})
    quotas = dict(BackgroundGroup.objects.filter(study=study).values_list("code", "quota"))
    assert quotas == {
        "technical": 10,
        "content_operations": 5,
        "administrative_support": None,
        "traditional_industries": None,
    }
    expect(page.locator("#id_q-quota_technical")).to_have_value("10")

    # Open it; the links shown (and copied) are the public ones.
    tab.follow(page.get_by_role("button", name="Open the study"))
    expect(page.locator(".messages")).to_contain_text("The study is now Open.")
    study.refresh_from_db()
    assert study.status == "open"
    rater_link = "https://laughlab.example.org/s/pilot-2026/"
    assert text_of(page.locator("#link-rater")) == rater_link
    prolific = text_of(page.locator("#link-prolific"))
    assert prolific.startswith(rater_link + "?PROLIFIC_PID={{%PROLIFIC_PID%}}")
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    copy = page.locator("button[data-copy=link-rater]")
    copy.click()
    expect(copy).to_have_attribute("data-copied", "true")
    assert page.evaluate("navigator.clipboard.readText()") == rater_link

    tab.goto("/studies/pilot-2026/")
    assert text_of(page.locator("#rater-link")) == rater_link

    # Close it again.
    tab.goto("/studies/pilot-2026/settings/")
    tab.follow(page.get_by_role("button", name="Close the study"))
    expect(page.locator(".messages")).to_contain_text("The study is now Closed.")
    study.refresh_from_db()
    assert study.status == "closed"


# --- 4. live progress --------------------------------------------------------------------------


def test_progress_updates_without_a_reload(tab: Tab, demo_study_committed, researcher) -> None:  # type: ignore[no-untyped-def]
    page = tab.page
    study, _judgments = demo_study_committed
    study = study_status_set(study=study, status="open")
    study_member_add(study=study, user=researcher)
    log_in(tab, "researcher", f"/studies/{study.slug}/")
    progress = page.locator("#progress")
    enrolled = progress.locator("tr[data-group=technical] [data-value=enrolled]")
    expect(enrolled).to_have_text("0")
    expect(progress.locator("[data-value=turing]")).to_have_text("0")
    assert progress.get_attribute("data-refreshed-at") is None
    page.evaluate("window.__sameDocument = true")

    # Written while the page is idle: loaded, its first refresh 10 s away.
    page.wait_for_load_state("networkidle")
    enrollment = rater_enroll(
        study=study, background="technical", age_band="25-34", consent=True, external_id="live-1"
    )
    TuringJudgment.objects.create(
        study=study,
        rater=enrollment.rater,
        session=enrollment.session,
        item=Item.objects.filter(study=study).order_by("external_id").first(),
        guess="ai",
        idempotency_key="live-progress-1",
        submitted_at=timezone.now(),
    )

    page.wait_for_function(
        "document.querySelector('#progress').dataset.refreshedAt", timeout=15_000
    )
    expect(enrolled).to_have_text("1")
    expect(progress.locator("[data-value=turing]")).to_have_text("1")
    expect(progress.locator("[data-value=active]")).to_have_text("1")
    assert page.evaluate("window.__sameDocument") is True, "the page was reloaded"


# --- 5. who may see the pages ------------------------------------------------------------------


def test_other_researchers_get_not_found_and_anonymous_visitors_the_login_page(
    tab: Tab, demo_study_committed, researcher, django_user_model, browser, live_server
) -> None:  # type: ignore[no-untyped-def]
    page = tab.page
    study, _judgments = demo_study_committed
    study_member_add(study=study, user=researcher)
    outsider = django_user_model.objects.create_user("outsider", password=PASSWORD)
    own = study_create(slug="other-study", rubric_slug="humor", name="Other study", owner=outsider)
    base = f"/studies/{study.slug}"
    urls = [
        f"{base}/",
        f"{base}/progress/",
        f"{base}/settings/",
        f"{base}/results/",
        *(f"{base}/results/{section}/" for section in SECTIONS),
        f"{base}/results/data/leaderboard.csv",
        f"{base}/exports/",
        f"{base}/exports/direct/json",
    ]

    before = snapshot(study)

    # A researcher of another study: the study is not listed, and every URL is not found.
    log_in(tab, "outsider")
    expect(page.get_by_role("link", name=own.name)).to_be_visible()
    expect(page.get_by_role("link", name=study.name)).to_have_count(0)
    for url in urls:
        tab.goto(url, status=404)
        expect(page.locator("h1")).to_have_text("Something is not right")
        expect(page.locator("[role=alert]")).to_contain_text("no study with slug")
        expect(page.locator("#progress, table, svg")).to_have_count(0)
    # Nor may they change it: the forms of this study's pages are refused, nothing changes.
    tab.goto("/studies/other-study/settings/")
    token = page.locator("input[name=csrfmiddlewaretoken]").first.input_value()
    for url, form in [
        (f"{base}/status/", {"status": "open"}),
        (f"{base}/exports/", {"format": "raw"}),
        (f"{base}/settings/", {"s-session_minutes": "1"}),
    ]:
        status = page.evaluate(
            """([url, form, token]) => fetch(url, {method: "POST", credentials: "same-origin",
                 headers: {"X-CSRFToken": token}, body: new URLSearchParams(form)})
                 .then(r => r.status)""",
            [url, form, token],
        )
        assert status == 404, url
    assert snapshot(study) == before
    assert not ExportJob.objects.exists()

    # Anonymous: the login page, which leads back to the page asked for.
    anonymous = browser.new_context(base_url=live_server.url)
    try:
        visitor = Tab(tab.shots.watch(anonymous.new_page()), tab.shots)
        visitor.page.set_default_timeout(10_000)
        for url in urls:
            visitor.goto(url)
            login = urlsplit(visitor.page.url)
            assert login.path == "/accounts/login/", url
            assert parse_qs(login.query)["next"] == [url]
            expect(visitor.page.locator("h1")).to_have_text("Researcher login")
        visitor.goto(f"{base}/settings/")
        visitor.page.fill("input[name=username]", "researcher")
        visitor.page.fill("input[name=password]", PASSWORD)
        visitor.follow(visitor.page.locator("form button[type=submit]"))
        assert visitor.page.url.endswith(f"{base}/settings/")
        expect(visitor.page.locator("h1")).to_have_text("Set-up")
    finally:
        anonymous.close()
