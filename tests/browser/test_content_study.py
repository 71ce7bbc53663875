"""A content study in a real browser: a rater scores generated articles on the content rubric
(fluency, informativeness, originality, then an overall verdict), in English and then in Chinese
through the language switch, and the researcher reads the study's progress, results and exports.

The articles are those of the content demo (fixtures/demo_content). The server picks each task;
the test makes the choice deterministic by adding the next article only once the current one is
on screen. The live server shares the test's SQLite connection, so the database is written only
while a page is idle.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Locator, Page, expect

from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.judgments.models import ScoreResponse
from apps.judgments.services import study_judgments_import
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Item, Study
from apps.studies.services import study_create, study_items_import, study_member_add

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONTENT = Path(__file__).resolve().parents[2] / "fixtures" / "demo_content"
COMPLETION_CODE = "ARTICLES9"
PASSWORD = "a long password 1"
DIMENSIONS = ("fluency", "informativeness", "originality")
# The overall verdict is asked last, once the three dimensions are answered.
QUESTIONS = (*DIMENSIONS, "overall")
HUMOR_QUESTIONS = ("surprise", "coherence", "funniness", "offensive")
# The content rubric's prompts (apps/studies/builtin_rubrics.py CONTENT), per language.
PROMPTS = {
    "en": {
        "fluency": "How fluent and well-formed is the text?",
        "informativeness": "How much useful information does it give?",
        "originality": "How original is it?",
        "overall": "Overall, how good is this text for what it sets out to do?",
    },
    "zh": {
        "fluency": "文字是否流畅通顺？",
        "informativeness": "提供了多少有用信息？",
        "originality": "内容有多原创？",
        "overall": "总体而言，就其写作目的来看，这篇文字写得有多好？",
    },
}
ANCHORS = {"en": ("Hard to read", "Reads naturally"), "zh": ("难以阅读", "自然流畅")}
HUMOR_WORDS = re.compile(r"\b(funn\w*|jokes?|humou?r|surprise|coherence)\b", re.I)
# English news (a001), Chinese news (a003), English analysis (a013), and for the pair page two
# creative pieces on one topic (a025, a026).
JOURNEY = ("a001", "a003", "a013")


def fixture_line(item_id: str) -> bytes:
    for line in (CONTENT / "items.jsonl").read_bytes().splitlines():
        if json.loads(line)["id"] == item_id:
            return line + b"\n"
    raise KeyError(item_id)


def add_articles(study: Study, *item_ids: str) -> None:
    data = b"".join(fixture_line(item_id) for item_id in item_ids)
    study_items_import(study=study, data=data, filename="items.jsonl")


def first_sentence(item_id: str) -> str:
    text: str = json.loads(fixture_line(item_id))["text"]
    return re.split(r"(?<=[.。])", text, maxsplit=1)[0]


def make_study(**overrides: Any) -> Study:
    fields: dict[str, Any] = {
        "status": Study.Status.OPEN,
        "task_mix": {"scorecard": 1},
        "tasks_per_session": 3,
        "attention_check_rate": 0,
        "prolific_completion_code": COMPLETION_CODE,
    }
    return study_create(
        slug="articles",
        rubric_slug="content",
        name="Generated articles in three genres",
        **{**fields, **overrides},
    )


def text_of(locator: Locator) -> str:
    return " ".join(locator.inner_text().split())


def watch_errors(page: Page) -> list[str]:
    """Script errors, console errors and failed responses of the pages (the favicon the browser
    asks for on its own is not one of the pages' requests)."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda message: (
            errors.append(f"console: {message.text}")
            if message.type == "error" and "favicon" not in (message.location or {}).get("url", "")
            else None
        ),
    )
    page.on(
        "response",
        lambda response: (
            errors.append(f"{response.status} {response.url}")
            if response.status >= 400 and not response.url.endswith("/favicon.ico")
            else None
        ),
    )
    return errors


def goto(page: Page, url: str, screenshots: Any) -> None:
    response = page.goto(url)
    assert response is not None, url
    assert response.status == 200, f"{url}: {response.status}"
    screenshots.settle()


def enroll(page: Page, study: Study) -> None:
    # From Prolific, so the end page gives the completion code.
    page.goto(f"/s/{study.slug}/?PROLIFIC_PID=5f0c1e2d3b4a")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    # The articles come in English and Chinese: this rater reads both (English is preselected).
    expect(page.get_by_role("checkbox", name="English", exact=True)).to_be_checked()
    page.get_by_role("checkbox", name="Chinese", exact=True).check()
    page.get_by_role("radio", name="Content / operations", exact=True).check()
    page.locator("#id_age_band").select_option("35-44")
    page.locator("#id_consent").check()
    page.locator("form[method=post] button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/task/$"))


def expect_content_scorecard(page: Page, item_id: str, lang: str) -> Locator:
    form = page.locator("form.task[data-task=scorecard]")
    expect(form).to_be_visible()
    expect(form.locator("article.item")).to_have_attribute(
        "lang", json.loads(fixture_line(item_id))["lang"]
    )
    expect(form.locator("article.item")).to_contain_text(first_sentence(item_id))
    questions = form.locator("fieldset.question")
    expect(questions).to_have_count(4)
    assert [q.get_attribute("data-question") for q in questions.all()] == list(QUESTIONS)
    for name, prompt in PROMPTS[lang].items():
        fieldset = form.locator(f"fieldset[data-question={name}]")
        expect(fieldset.locator("legend")).to_have_text(prompt)
        # The dimensions wait for nothing; the overall verdict waits for all three.
        if name == "overall":
            expect(fieldset).to_have_attribute("aria-disabled", "true")
        else:
            expect(fieldset).not_to_have_attribute("aria-disabled", "true")
        expect(fieldset.locator("input[type=radio]")).to_have_count(5)
    low, high = ANCHORS[lang]
    expect(form.locator("fieldset[data-question=fluency] .anchor")).to_have_text([low, high])
    for name in HUMOR_QUESTIONS:
        expect(form.locator(f"fieldset[data-question={name}]")).to_have_count(0)
    return form


def answers_of(response: ScoreResponse) -> dict[str, int]:
    return {a.question.name: a.value for a in response.answers.select_related("question")}


def test_a_rater_scores_articles_in_both_languages_and_the_researcher_reads_the_results(
    rater_page: Page, screenshots: Any, builtin_rubrics: None, settings: Any, tmp_path: Path
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    page = rater_page
    errors = watch_errors(page)
    study = make_study()
    add_articles(study, JOURNEY[0])
    enroll(page, study)

    # 1. English: the four content questions, answered with the mouse.
    expect_content_scorecard(page, JOURNEY[0], "en")
    expect(page.locator(".progress-text")).to_have_text("0 of 3 done")
    submit = page.locator("form.task button[type=submit]")
    submit.click()
    expect(page.locator("form.task .status")).to_have_text("Please answer every question first.")
    page.locator("input[name=fluency][value='5']").check()
    page.locator("input[name=informativeness][value='4']").check()
    page.locator("input[name=originality][value='2']").check()
    expect(page.locator("fieldset[data-question=overall]")).not_to_have_attribute(
        "aria-disabled", "true"
    )
    page.locator("input[name=overall][value='3']").check()
    add_articles(study, JOURNEY[1])  # the only article the next task can show
    submit.click()

    # 2. The next task, then Chinese through the language switch; answered with the keyboard.
    expect_content_scorecard(page, JOURNEY[1], "en")
    expect(page.locator(".progress-text")).to_have_text("1 of 3 done")
    page.locator("#lang-select").select_option("zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect_content_scorecard(page, JOURNEY[1], "zh")
    expect(page.locator(".progress-text")).to_have_text("已完成1/3")
    page.keyboard.press("4")
    expect(page.locator("input[name=fluency][value='4']")).to_be_checked()
    page.keyboard.press("5")
    expect(page.locator("input[name=informativeness][value='5']")).to_be_checked()
    page.keyboard.press("3")
    expect(page.locator("input[name=originality][value='3']")).to_be_checked()
    page.keyboard.press("4")
    expect(page.locator("input[name=overall][value='4']")).to_be_checked()
    add_articles(study, JOURNEY[2])
    page.keyboard.press("Enter")

    # 3. The next task comes in Chinese too; the last answer ends the session.
    expect_content_scorecard(page, JOURNEY[2], "zh")
    expect(page.locator(".progress-text")).to_have_text("已完成2/3")
    for name, value in zip(QUESTIONS, ("3", "3", "4", "3"), strict=True):
        page.locator(f"input[name={name}][value='{value}']").check()
    page.locator("form.task button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))
    expect(page.locator("[data-page=end] .code")).to_have_text(COMPLETION_CODE)

    rater = Rater.objects.get(study=study)
    # The language chosen at enrolment is the rater's; the switch later changes only the pages.
    assert (rater.background.code, rater.language) == ("content_operations", "en")
    assert RaterSession.objects.get(rater=rater).end_reason == RaterSession.EndReason.COMPLETED
    responses = ScoreResponse.objects.filter(rater=rater).select_related("item").order_by("pk")
    assert [(r.item.external_id, answers_of(r)) for r in responses] == [
        ("a001", {"fluency": 5, "informativeness": 4, "originality": 2, "overall": 3}),
        ("a003", {"fluency": 4, "informativeness": 5, "originality": 3, "overall": 4}),
        ("a013", {"fluency": 3, "informativeness": 3, "originality": 4, "overall": 3}),
    ]
    assert [r.item.content_type for r in responses] == ["news", "news", "analysis"]

    # The researcher's side: the rest of the demo's articles and ratings, then results.
    study_items_import(
        study=study, data=(CONTENT / "items.jsonl").read_bytes(), filename="items.jsonl"
    )
    study_judgments_import(
        study=study, data=(CONTENT / "judgments.jsonl").read_bytes(), filename="judgments.jsonl"
    )
    study_aggregate(study=study, rounds=30)
    payload = StudyResult.objects.get(study=study).payload
    researcher = get_user_model().objects.create_user("editor", password=PASSWORD)
    study_member_add(study=study, user=researcher)

    # Someone else at the same browser: no rater cookies, no language choice, English pages.
    page.context.clear_cookies()
    goto(page, "/accounts/login/", screenshots)
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.fill("input[name=username]", "editor")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.locator("form button[type=submit]").click()
    assert "/accounts/login/" not in page.url, "login failed"
    screenshots.settle()
    base = f"/studies/{study.slug}"

    # Progress: the live rater's three scorecards and the imported ones are counted.
    goto(page, f"{base}/", screenshots)
    expect(page.locator("h1")).to_have_text(study.name)
    progress = page.locator("#progress")
    expect(progress).to_be_visible()
    scorecards = ScoreResponse.objects.filter(study=study, item__is_attention_check=False).count()
    assert int(text_of(progress.locator("[data-value=scorecards]"))) == scorecards

    # Summary: one column per content question, the stored mean per source (all items: the
    # page starts from the evidence-only view).
    goto(page, f"{base}/results/?view=all", screenshots)
    expect(page.locator("h1")).to_have_text("Results summary")
    table = page.locator("table.summary-table[data-dimension=source]")
    headings = [text_of(th) for th in table.locator("thead th").all()]
    for name in QUESTIONS:
        assert any(h.startswith(name) for h in headings), (name, headings)
    assert not any(h.split(" ")[0] in HUMOR_QUESTIONS for h in headings), headings
    human = table.locator("tr[data-group=human]")
    # Per source, the model comparison's mean (items and raters random), as on its page.
    stored = payload["models"]["by_model"]["human"]["questions"]
    for name in QUESTIONS:
        assert f"{stored[name]['value']:.2f}" in text_of(human)
    expect(page.locator("[data-question=funniness]")).to_have_count(0)

    # Leaderboard: every article is ranked, within its content type and topic.
    goto(page, f"{base}/results/leaderboard/?view=all", screenshots)
    expect(page.locator("h1")).to_have_text("Bradley-Terry leaderboard")
    ranked = page.locator("table.leaderboard tr[data-item]")
    assert {row.get_attribute("data-item") for row in ranked.all()} == {
        row["item"] for row in payload["bradley_terry"]
    }
    assert ranked.first.get_attribute("data-item") == payload["bradley_terry"][0]["item"]

    # Exports: the page, and a table and the results document taken from it.
    goto(page, f"{base}/exports/", screenshots)
    expect(page.locator("h1")).to_have_text("Exports")
    with page.expect_download() as info:
        page.locator("ul.direct a", has_text="groups_source").click()
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8"))))
    assert {row["group"] for row in rows} == {"human", "newsgen-v1", "scribe-13b", "storyloom-2"}
    for name in QUESTIONS:
        assert f"{name}_mean" in rows[0]
    assert not any(column.startswith("funniness") for column in rows[0])
    with page.expect_download() as info:
        page.locator("ul.direct a", has_text="Results (JSON)").click()
    document = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert set(document["agreement"]) == set(QUESTIONS)

    # A raw export built by a job lists the rater's answers under the content questions.
    page.locator("select[name=format]").select_option("raw")
    with page.expect_navigation():
        page.locator("form.export-form button[type=submit]").click()
    screenshots.settle()
    link = page.locator("tr[data-export-job] a[data-field=download]").first
    expect(link).to_be_visible(timeout=20_000)
    with page.expect_download() as info:
        link.click()
    raw = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8"))))
    live = [row for row in raw if row["kind"] == "score" and row["rater"] == rater.external_id]
    assert sorted((row["item"], row["question"], row["value"]) for row in live) == sorted(
        (item, name, str(value))
        for item, values in (
            ("a001", (5, 4, 2, 3)),
            ("a003", (4, 5, 3, 4)),
            ("a013", (3, 3, 4, 3)),
        )
        for name, value in zip(QUESTIONS, values, strict=True)
    )
    assert errors == []


def test_the_pair_page_of_a_content_study_does_not_ask_which_is_funnier(
    rater_page: Page, builtin_rubrics: None
) -> None:
    page = rater_page
    study = make_study(task_mix={"pair": 1}, tasks_per_session=1)
    add_articles(study, "a025", "a026")
    enroll(page, study)
    form = page.locator("form.task[data-task=pair]")
    expect(form).to_be_visible()
    expect(form.locator("article.item")).to_have_count(2)
    heading = text_of(form.locator("h1"))
    assert not HUMOR_WORDS.search(heading), heading
    assert heading == "Which article is better overall?"
    assert not HUMOR_WORDS.search(page.title()), page.title()


def test_the_summary_and_leaderboard_of_a_content_study_speak_of_articles(
    rater_page: Page, screenshots: Any, builtin_rubrics: None
) -> None:
    page = rater_page
    study = make_study()
    study_items_import(
        study=study, data=(CONTENT / "items.jsonl").read_bytes(), filename="items.jsonl"
    )
    study_judgments_import(
        study=study, data=(CONTENT / "judgments.jsonl").read_bytes(), filename="judgments.jsonl"
    )
    study_aggregate(study=study, rounds=20)
    researcher = get_user_model().objects.create_user("editor", password=PASSWORD)
    study_member_add(study=study, user=researcher)
    goto(page, "/accounts/login/", screenshots)
    page.fill("input[name=username]", "editor")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.locator("form button[type=submit]").click()
    screenshots.settle()
    found: dict[str, list[str]] = {}
    for path in ("results/", "results/leaderboard/"):
        goto(page, f"/studies/{study.slug}/{path}", screenshots)
        words = sorted({w.lower() for w in HUMOR_WORDS.findall(page.locator("main").inner_text())})
        if words:
            found[path] = words
    assert found == {}
    assert Item.objects.filter(study=study).exclude(content_type="").count() == 36
