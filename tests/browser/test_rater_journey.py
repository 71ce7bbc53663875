"""Every rater journey in a real browser: enrolment, the four task pages, the end, in English and
Chinese, with a session that times out, a network that drops an answer, and a phone screen.

The server picks each task; the tests make that choice deterministic by giving the study one
kind at a time (its task mix is changed in the database before the answer that leads to the next
task) and by adding items only when the next task should be able to use them.
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import Page, Route, expect

from apps.assignments.models import Assignment
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COMPLETION_CODE = "LAUGH7Q2X"
PROLIFIC = {"PROLIFIC_PID": "5f0c1e2d3b4a", "STUDY_ID": "st-0042", "SESSION_ID": "se_0099"}

# What a rater reads, per language. The Chinese strings are the translations in
# locale/zh_Hans/LC_MESSAGES/django.po, and the rubric's and background groups' own zh labels.
TEXT = {
    "en": {
        "html_lang": "en",
        "enroll_heading": "Rate some jokes",
        "consent_error": "You need to agree before taking part.",
        "background": "Content / operations",
        "surprise": "How surprising is the ending?",
        "locked_hint": "Answer the questions above first.",
        "progress_0": "0 of 4 done",
        "explanation_heading": "The writer's explanation",
        "pair_heading": "Which is funnier?",
        "turing_heading": "Written by an AI or by a person?",
        "retrying": "Connection lost, retrying…",
        "missing": "Please answer every question first.",
        "end_heading": "Thank you!",
        "timeout_heading": "Time is up",
        "code_label": "Your completion code:",
    },
    "zh": {
        "html_lang": "zh-hans",
        "enroll_heading": "来给笑话打打分",
        "consent_error": "参加前需要先勾选同意。",
        "background": "内容 / 运营",
        "surprise": "结尾有多出人意料？",
        "locked_hint": "请先回答上面的问题。",
        "progress_0": "已完成0/4",
        "explanation_heading": "作者的解释",
        "pair_heading": "哪个更好笑？",
        "turing_heading": "这是AI写的还是人写的？",
        "retrying": "连接中断，正在重试…",
        "missing": "请先回答所有问题。",
        "end_heading": "谢谢您！",
        "timeout_heading": "时间到了",
        "code_label": "您的完成码：",
    },
}

JOKE_EXPLAINED = "I told my cat a joke about a laser pointer. She didn't get it, but she chased it."
EXPLANATION = "The cat 'chases' the joke the way cats chase the red dot."
JOKE_PLAIN = "My cat walked across the keyboard and fixed three bugs. Now she wants equity."
JOKE_TURING = "The dog ate my homework, then filed a bug report about the taste."
JOKE_THIRD = "My cat reviews my code by sitting on it. Approved, apparently."


def _make_study(**overrides) -> Study:  # type: ignore[no-untyped-def]
    fields = {
        # One language, so enrolment asks none (test_language_journey.py walks the question).
        "languages": ["en"],
        "task_mix": {"scorecard": 1},
        "tasks_per_session": 4,
        "attention_check_rate": 0,
        "session_minutes": 30,
        "prolific_completion_code": COMPLETION_CODE,
    }
    return StudyFactory(**{**fields, **overrides})


def _next_kind(study: Study, kind: str) -> None:
    """The task the rater is given after the next answer is of this kind."""
    Study.objects.filter(pk=study.pk).update(task_mix={kind: 1})


def _submit(page: Page) -> None:
    page.locator("form.task button[type=submit]").click()


def _expect_task(page: Page, kind: str):  # type: ignore[no-untyped-def]
    form = page.locator(f"form.task[data-task={kind}]")
    expect(form).to_be_visible()
    return form


def _expect_running_page(page: Page) -> None:
    """rater.css and rater.js were served: the card is styled and the countdown ticks."""
    expect(page.locator("[data-countdown]")).to_have_text(re.compile(r"^\d+:\d\d$"))
    radius = page.locator(".card").first.evaluate("el => getComputedStyle(el).borderTopLeftRadius")
    assert radius == "12px", "rater.css did not load"


def _enroll(page: Page, study: Study, lang: str) -> None:
    text = TEXT[lang]
    query = "&".join(f"{key}={value}" for key, value in PROLIFIC.items())
    page.goto(f"/s/{study.slug}/?{query}")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    if lang == "zh":
        page.locator("#lang-select").select_option("zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", text["html_lang"])
    expect(page.locator("h1")).to_have_text(text["enroll_heading"])
    expect(page.locator("#lang-select")).to_have_value(text["html_lang"])

    # Without consent the form comes back with the error, nothing is stored.
    page.get_by_role("radio", name=text["background"], exact=True).check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("form[method=post] button[type=submit]").click()
    expect(page.locator("[role=alert]")).to_have_text(text["consent_error"])
    assert not Rater.objects.filter(study=study).exists()

    page.get_by_role("radio", name=text["background"], exact=True).check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("#id_consent").check()
    page.locator("form[method=post] button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/task/$"))


def _scorecard_with_mouse(page: Page, lang: str) -> None:
    text = TEXT[lang]
    _expect_task(page, "scorecard")
    expect(page.locator(".joke")).to_have_text(JOKE_EXPLAINED)
    expect(page.locator("fieldset[data-question=surprise] legend")).to_have_text(text["surprise"])
    expect(page.locator(".progress-text")).to_have_text(text["progress_0"])
    _expect_running_page(page)

    funniness = page.locator("fieldset[data-question=funniness]")
    hint = funniness.locator("[data-locked-hint]")
    all_disabled = "els => els.length === 7 && els.every(e => e.matches(':disabled'))"
    none_disabled = "els => els.length === 7 && els.every(e => !e.matches(':disabled'))"

    expect(funniness).to_have_attribute("aria-disabled", "true")
    expect(hint).to_have_text(text["locked_hint"])
    assert funniness.locator("input").evaluate_all(all_disabled)

    # Submitting early keeps the page and says what is missing.
    _submit(page)
    expect(page.locator("form.task .status")).to_have_text(text["missing"])

    page.locator("input[name=surprise][value='4']").check()
    expect(funniness).to_have_attribute("aria-disabled", "true")
    assert funniness.locator("input").evaluate_all(all_disabled)
    page.locator("input[name=coherence][value='5']").check()
    expect(funniness).to_have_attribute("aria-disabled", "false")
    expect(hint).to_be_hidden()
    assert funniness.locator("input").evaluate_all(none_disabled)

    page.locator("input[name=funniness][value='6']").check()
    page.locator("input[name=offensive][value='0']").check()


def _explanation(page: Page, lang: str) -> None:
    form = _expect_task(page, "explanation")
    # The reveal is on the task page itself: the route is the same after every scorecard.
    expect(page).to_have_url(re.compile(r"/task/$"))
    expect(form.locator("h1")).to_have_text(TEXT[lang]["explanation_heading"])
    expect(form.locator(".joke")).to_have_text(JOKE_EXPLAINED)
    expect(form.locator(".explanation")).to_contain_text(EXPLANATION)
    _expect_running_page(page)
    form.locator("input[name=verdict][value=yes]").check()


def _scorecard_with_keyboard(page: Page) -> None:
    _expect_task(page, "scorecard")
    expect(page.locator(".joke")).to_have_text(JOKE_PLAIN)
    funniness = page.locator("fieldset[data-question=funniness]")
    # Digits answer the highlighted question, which moves on: surprise, coherence, funniness.
    page.keyboard.press("2")
    expect(page.locator("input[name=surprise][value='2']")).to_be_checked()
    expect(funniness).to_have_attribute("aria-disabled", "true")
    page.keyboard.press("3")
    expect(page.locator("input[name=coherence][value='3']")).to_be_checked()
    # Funniness opens when the server has surprise and coherence.
    expect(funniness).to_have_attribute("aria-disabled", "false")
    page.keyboard.press("5")
    expect(page.locator("input[name=funniness][value='5']")).to_be_checked()
    # A digit never answers the yes-or-no question; Y does.
    page.keyboard.press("1")
    expect(page.locator("input[name=offensive]:checked")).to_have_count(0)
    page.keyboard.press("y")
    expect(page.locator("input[name=offensive][value='1']")).to_be_checked()


def _pair(page: Page, lang: str) -> None:
    form = _expect_task(page, "pair")
    expect(form.locator("h1")).to_have_text(TEXT[lang]["pair_heading"])
    expect(form.locator(".joke")).to_have_count(2)
    left, right = form.locator("input[value=left]"), form.locator("input[value=right]")
    page.keyboard.press("2")
    expect(right).to_be_checked()
    page.keyboard.press("ArrowLeft")
    expect(left).to_be_checked()
    page.keyboard.press("ArrowRight")
    expect(right).to_be_checked()
    page.keyboard.press("1")
    expect(left).to_be_checked()


def _turing(page: Page, lang: str) -> None:
    form = _expect_task(page, "turing")
    expect(form.locator("h1")).to_have_text(TEXT[lang]["turing_heading"])
    expect(form.locator(".joke")).to_have_text(JOKE_TURING)
    page.keyboard.press("2")
    expect(form.locator("input[name=guess][value=human]")).to_be_checked()


def _expect_end(page: Page, study: Study, heading: str, lang: str) -> None:
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))
    end = page.locator("[data-page=end]")
    expect(end.locator("h1")).to_have_text(heading)
    expect(end).to_contain_text(TEXT[lang]["code_label"])
    expect(end.locator(".code")).to_have_text(COMPLETION_CODE)
    expect(end.locator("a.button")).to_have_attribute("href", re.compile(f"cc={COMPLETION_CODE}$"))


def _journey(page: Page, lang: str) -> Study:
    """Enrol, then a scorecard (mouse) with its explanation, a scorecard (keyboard), a pair, a
    Turing judgment, and the end page. Returns the study.

    The database is only changed while a page is on screen and idle: the live server shares the
    test's in-memory SQLite connection, so writing during a request would collide with it.
    """
    study = _make_study()
    ItemFactory(study=study, topic="cats", text=JOKE_EXPLAINED, explanation=EXPLANATION)
    _enroll(page, study, lang)

    _scorecard_with_mouse(page, lang)
    # Added once the first task is shown, so the second scorecard can only be this item.
    ItemFactory(study=study, topic="cats", text=JOKE_PLAIN)
    _submit(page)
    _explanation(page, lang)
    _submit(page)
    _scorecard_with_keyboard(page)
    # The pair's second joke: the explained one, whose explanation was revealed, never comes
    # back to this rater.
    ItemFactory(study=study, topic="cats", text=JOKE_THIRD)
    _next_kind(study, Assignment.Kind.PAIR)
    page.keyboard.press("Enter")
    _pair(page, lang)
    _next_kind(study, Assignment.Kind.TURING)
    # A new topic, never shown to this rater: the only Turing candidate.
    ItemFactory(study=study, topic="dogs", text=JOKE_TURING)
    page.keyboard.press("Enter")
    _turing(page, lang)
    _submit(page)
    _expect_end(page, study, TEXT[lang]["end_heading"], lang)
    return study


def _answers(response: ScoreResponse) -> dict[str, ScoreAnswer]:
    return {a.question.name: a for a in response.answers.select_related("question")}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_rater_goes_through_every_kind_of_task_to_the_completion_code(
    rater_page: Page, builtin_rubrics: None, lang: str
) -> None:
    study = _journey(rater_page, lang)

    rater = Rater.objects.get(study=study)
    assert rater.external_id == PROLIFIC["PROLIFIC_PID"]
    assert rater.prolific_study_id == PROLIFIC["STUDY_ID"]
    assert rater.prolific_session_id == PROLIFIC["SESSION_ID"]
    assert rater.language == TEXT[lang]["html_lang"]
    assert rater.background.code == "content_operations"
    assert rater.age_band == "25-34"
    assert rater.consent_at is not None
    session = RaterSession.objects.get(rater=rater)
    assert session.end_reason == RaterSession.EndReason.COMPLETED

    responses = list(ScoreResponse.objects.filter(rater=rater).select_related("item"))
    assert [r.item.text for r in responses] == [JOKE_EXPLAINED, JOKE_PLAIN]
    explained, plain = responses
    expected_values = {
        explained.pk: {"surprise": 4, "coherence": 5, "funniness": 6, "offensive": 0},
        plain.pk: {"surprise": 2, "coherence": 3, "funniness": 5, "offensive": 1},
    }
    for response in responses:
        answers = _answers(response)
        assert {name: a.value for name, a in answers.items()} == expected_values[response.pk]
        assert answers["surprise"].answered_at < answers["funniness"].answered_at
        assert answers["coherence"].answered_at < answers["funniness"].answered_at
    assert explained.explanation_match == "yes"
    assert explained.explanation_answered_at is not None
    assert plain.explanation_match == ""

    pair = PairJudgment.objects.get(rater=rater)
    assert {pair.left.text, pair.right.text} == {JOKE_PLAIN, JOKE_THIRD}
    assert pair.winner_id == pair.left_id
    turing = TuringJudgment.objects.get(rater=rater)
    assert (turing.item.text, turing.guess) == (JOKE_TURING, TuringJudgment.Guess.HUMAN)
    kinds = list(
        Assignment.objects.filter(rater=rater).order_by("position").values_list("kind", "status")
    )
    assert kinds == [
        ("scorecard", "done"),
        ("scorecard", "done"),
        ("pair", "done"),
        ("turing", "done"),
    ]


def test_an_answer_after_the_deadline_lands_on_time_is_up_and_earlier_answers_stay(
    rater_page: Page, builtin_rubrics: None
) -> None:
    page = rater_page
    study = _make_study(session_minutes=1, task_mix={"turing": 1}, tasks_per_session=3)
    ItemFactory.create_batch(3, study=study)
    _enroll(page, study, "en")

    _expect_task(page, "turing")
    # One minute left: the countdown is shown as urgent from the start.
    expect(page.locator("[data-countdown]")).to_have_class(re.compile(r"\burgent\b"))
    page.locator("input[name=guess][value=ai]").check()
    _submit(page)
    expect(page.locator(".progress-text")).to_have_text("1 of 3 done")
    _expect_task(page, "turing")

    now = timezone.now()
    RaterSession.objects.filter(rater__study=study).update(
        started_at=now - timedelta(minutes=2), deadline=now - timedelta(minutes=1)
    )
    page.locator("input[name=guess][value=human]").check()
    _submit(page)
    _expect_end(page, study, TEXT["en"]["timeout_heading"], "en")

    judgment = TuringJudgment.objects.get(study=study)
    assert judgment.guess == TuringJudgment.Guess.AI
    session = RaterSession.objects.get(rater__study=study)
    assert session.end_reason == RaterSession.EndReason.TIMED_OUT
    statuses = list(
        Assignment.objects.filter(study=study).order_by("position").values_list("status", flat=True)
    )
    assert statuses == ["done", "expired"]


@pytest.mark.parametrize("lost", ["request", "response"])
def test_an_answer_lost_on_the_network_stays_on_the_page_and_is_stored_once(
    rater_page: Page, builtin_rubrics: None, screenshots, lost: str
) -> None:
    """The first POST fails (before reaching the server, or after it stored the answer and
    before the reply came back); further attempts fail too until the page has shown that it is
    retrying, then go through."""
    page = rater_page
    study = _make_study(task_mix={"turing": 1}, tasks_per_session=1)
    ItemFactory(study=study, text=JOKE_TURING)
    _enroll(page, study, "en")
    _expect_task(page, "turing")

    attempts: list[dict] = []
    state = {"release": False}

    def flaky(route: Route) -> None:
        attempts.append(route.request.post_data_json)
        if state["release"]:
            route.continue_()
            return
        if lost == "response" and len(attempts) == 1:
            route.fetch()  # the server stores the answer; its reply never arrives
        route.abort("internetdisconnected")

    page.route("**/api/v1/rater/**", flaky)
    guess = page.locator("input[name=guess][value=ai]")
    guess.check()
    _submit(page)

    status = page.locator("form.task .status")
    expect(status).to_have_text(TEXT["en"]["retrying"])
    expect(status).to_have_class(re.compile(r"\bwarning\b"))
    screenshots.take(page, "retrying")
    expect(guess).to_be_checked()
    expect(page).to_have_url(re.compile(r"/task/$"))
    assert TuringJudgment.objects.filter(study=study).count() == (1 if lost == "response" else 0)

    state["release"] = True
    _expect_end(page, study, TEXT["en"]["end_heading"], "en")

    assert len(attempts) >= 2
    assert len({body["idempotency_key"] for body in attempts}) == 1
    judgment = TuringJudgment.objects.get(study=study)
    assert judgment.guess == TuringJudgment.Guess.AI


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_a_phone_the_scorecard_fits_the_screen_and_every_point_can_be_tapped(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str
) -> None:
    context = new_context(viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True)
    page = screenshots.watch(context.new_page())
    study = _make_study()
    ItemFactory(study=study, text=JOKE_PLAIN)
    _enroll(page, study, lang)
    no_horizontal_scroll = "() => document.documentElement.scrollWidth <= 375"
    _expect_task(page, "scorecard")
    assert page.evaluate(no_horizontal_scroll)

    order = ["surprise", "coherence", "funniness", "offensive"]
    for name in order:
        radios = page.locator(f"input[type=radio][name={name}]")
        count = radios.count()
        assert count == {"surprise": 5, "coherence": 5, "funniness": 7, "offensive": 2}[name]
        for index in range(count):
            radio = radios.nth(index)
            radio.scroll_into_view_if_needed()
            box = radio.bounding_box()
            assert box is not None
            assert box["x"] >= 0, (name, index, box)
            assert box["x"] + box["width"] <= 375, (name, index, box)
            radio.tap()
            expect(radio).to_be_checked()
    assert page.evaluate(no_horizontal_scroll)
    screenshots.take(page, "all-tapped", full_page=True)

    page.locator("form.task button[type=submit]").tap()
    _expect_end(page, study, TEXT[lang]["end_heading"], lang)
    response = ScoreResponse.objects.get(study=study)
    values = {a.question.name: a.value for a in response.answers.select_related("question")}
    assert values == {"surprise": 5, "coherence": 5, "funniness": 7, "offensive": 1}


def test_no_request_leaves_the_server_during_a_journey(
    rater_page: Page, builtin_rubrics: None, live_server
) -> None:
    requests: list[str] = []
    statuses: dict[str, int] = {}
    rater_page.context.on("request", lambda request: requests.append(request.url))
    rater_page.context.on(
        "response", lambda response: statuses.__setitem__(response.url, response.status)
    )

    _journey(rater_page, "zh")

    server = urlsplit(live_server.url)
    outside = [url for url in requests if urlsplit(url)[:2] != server[:2]]
    assert outside == []
    paths = {urlsplit(url).path for url in requests}
    assert {"/static/laughlab/rater.css", "/static/laughlab/rater.js"} <= paths
    assert any(path.startswith("/api/v1/rater/") for path in paths)
    static = {url: code for url, code in statuses.items() if "/static/" in url}
    assert static
    assert all(code in (200, 304) for code in static.values()), static
