"""The LLM judge against a real HTTP server started here, standing in for the outside service:
good, slow, trickling, garbage and malformed replies, HTTP errors; then the comparison with the
humans and the researcher page for every role."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from scipy import stats

from apps.core.errors import DomainError
from apps.findings.charts import fmt_ci
from apps.screening.judge_compare import (
    OVER,
    UNDER,
    compare_judge_with_humans,
    spearman_rho,
)
from apps.screening.llm_judge import (
    chat_completions_url,
    judge_config,
    judge_item,
    rubric_scales,
)
from apps.screening.models import JudgeComparison, JudgeVerdict
from apps.screening.selectors import human_means
from apps.screening.services.judge import (
    judge_comparison_compute,
    judge_items,
    judge_run_start,
)
from apps.studies.models import Item, Question, Rubric, Study
from apps.studies.selectors import study_questions
from apps.studies.services import study_create, study_member_add

pytestmark = pytest.mark.django_db

# The `settings` fixture: django.conf.settings that restores itself after the test.
SettingsWrapper = Any

# django_capture_on_commit_callbacks: a context manager factory.
Capture = Callable[..., Any]

API_KEY = "sk-test-not-a-real-key-4711"
MODEL = "jester-judge-1"
TIMEOUT = 0.5
GOOD = {"surprise": 4, "coherence": 3, "funniness": 5, "offensive": 0}


# --- the stand-in service ---------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    # The message content; wrapped in a chat-completions envelope unless `body` is given.
    content: str = ""
    body: bytes | None = None
    delay: float = 0.0
    # Seconds between 10-byte pieces of the body (headers go out at once).
    trickle: float = 0.0


def envelope(content: str) -> bytes:
    return json.dumps(
        {
            "id": "cmpl-1",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}},
            ],
        }
    ).encode()


def rated_text(request: dict[str, Any]) -> str:
    """The item text the judge was asked about, between the triple quotes of the prompt."""
    user = request["messages"][-1]["content"]
    return user.split('"""\n', 1)[1].split('\n"""', 1)[0]


@dataclass
class FakeJudge:
    respond: Callable[[str], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def fake_judge() -> Iterator[FakeJudge]:
    judge = FakeJudge(respond=lambda text: Reply(content=json.dumps(GOOD)))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            judge.requests.append({"path": self.path, "headers": dict(self.headers), **body})
            if self.path != "/v1/chat/completions":
                self.send_error(404)
                return
            reply = judge.respond(rated_text(body))
            time.sleep(reply.delay)
            payload = reply.body if reply.body is not None else envelope(reply.content)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if reply.trickle:
                    for start in range(0, len(payload), 10):
                        self.wfile.write(payload[start : start + 10])
                        self.wfile.flush()
                        time.sleep(reply.trickle)
                else:
                    self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting, as it should

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    judge.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield judge
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def configured(settings: SettingsWrapper, fake_judge: FakeJudge) -> FakeJudge:
    settings.LLM_JUDGE_URL = fake_judge.url
    settings.LLM_JUDGE_MODEL = MODEL
    settings.LLM_JUDGE_API_KEY = API_KEY
    settings.LLM_JUDGE_TIMEOUT_SECONDS = TIMEOUT
    return fake_judge


@pytest.fixture
def owner(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def study(owner: User) -> Study:
    return study_create(slug="judged", rubric_slug="humor", name="Judged", owner=owner)


def add_item(study: Study, text: str, **fields: Any) -> Item:
    n = Item.objects.filter(study=study).count()
    return Item.objects.create(
        study=study, external_id=f"i{n:03d}", text=text, source="quipster", **fields
    )


# Behaviour chosen by the item's text.
BEHAVIOURS: dict[str, Reply] = {
    "good": Reply(content=json.dumps(GOOD)),
    "good with whitespace": Reply(content="\n  " + json.dumps(GOOD) + "  \n"),
    "slow": Reply(content=json.dumps(GOOD), delay=1.5),
    "trickle": Reply(content=json.dumps(GOOD), trickle=0.15),
    "garbage body": Reply(body=b"<html>upstream hiccup</html>"),
    "deep body": Reply(body=b"[" * 100_000 + b"]" * 100_000),
    "deep answer": Reply(content="[" * 100_000 + "]" * 100_000),
    "garbage answer": Reply(content="Sure! I'd give it a 5 out of 7."),
    "missing key": Reply(content=json.dumps({k: v for k, v in GOOD.items() if k != "funniness"})),
    "extra key": Reply(content=json.dumps({**GOOD, "reason": "puns"})),
    "out of range": Reply(content=json.dumps({**GOOD, "funniness": 9})),
    "float": Reply(content=json.dumps({**GOOD, "funniness": 4.5})),
    "whole float": Reply(
        content='{"surprise": 4, "coherence": 3, "funniness": 5.0, "offensive": 0}'
    ),
    "bool": Reply(content=json.dumps({**GOOD, "offensive": True})),
    "fenced": Reply(content="```json\n" + json.dumps(GOOD) + "\n```"),
    "array": Reply(content="[4, 3, 5, 0]"),
    "duplicate key": Reply(
        content='{"surprise": 4, "coherence": 3, "funniness": 5, "funniness": 1, "offensive": 0}'
    ),
    "no choices": Reply(body=json.dumps({"choices": []}).encode()),
    "server error": Reply(status=500, body=b'{"error": "overloaded"}'),
    "unauthorized": Reply(status=401, body=b'{"error": "bad key"}'),
}

EXPECTED: dict[str, tuple[str, str]] = {
    "good": ("ok", ""),
    "good with whitespace": ("ok", ""),
    "slow": ("timeout", "no reply within 0.5 s"),
    "trickle": ("timeout", "no reply within 0.5 s"),
    "garbage body": ("malformed", "the reply is not JSON (28 bytes; not shown)"),
    "deep body": ("malformed", "nested more than 32 levels deep"),
    "deep answer": ("malformed", "nested more than 32 levels deep"),
    "garbage answer": ("malformed", "the answer is not a JSON object"),
    "missing key": ("malformed", "missing funniness"),
    "extra key": ("malformed", "unexpected reason"),
    "out of range": ("malformed", "funniness: 9 is outside 1..7"),
    "float": ("malformed", "funniness: 4.5 is not an integer"),
    "whole float": ("malformed", "funniness: 5.0 is not an integer"),
    "bool": ("malformed", "offensive: true is not an integer"),
    "fenced": ("malformed", "code fence"),
    "array": ("malformed", "not an object"),
    "duplicate key": ("malformed", "duplicate key 'funniness'"),
    "no choices": ("malformed", "no choices[0].message.content"),
    "server error": ("http_error", "HTTP 500"),
    "unauthorized": ("http_error", "HTTP 401"),
}


def by_text(text: str) -> Reply:
    return BEHAVIOURS[text]


# --- the client ---------------------------------------------------------------------------------


def test_a_base_url_gets_the_chat_completions_path_once() -> None:
    assert chat_completions_url("http://h:1/v1") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("http://h:1/v1/chat/completions") == (
        "http://h:1/v1/chat/completions"
    )


def test_the_request_carries_the_key_the_model_and_the_rubric(
    configured: FakeJudge, study: Study
) -> None:
    item = add_item(
        study,
        "good",
        level=Item.Level.MULTI_TURN,
        context=[{"role": "user", "text": "My build is green."}],
        scenario="",
    )
    scales = rubric_scales(study_questions(study=study))
    result = judge_item(item=item, scales=scales, config=judge_config())
    assert result.status == "ok", result.error
    assert result.scores == GOOD
    assert result.latency_ms is not None
    assert result.latency_ms >= 0
    (request,) = configured.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert request["model"] == MODEL
    assert request["temperature"] == 0
    prompt = request["messages"][-1]["content"]
    for name, prompt_en, low, high in [
        ("surprise", "How surprising is the ending?", 1, 5),
        ("funniness", "How funny is it?", 1, 7),
        ("offensive", "Is it offensive?", 0, 1),
    ]:
        assert f'"{name}": {prompt_en} (an integer from {low} to {high}' in prompt
    assert "user: My build is green." in prompt
    assert '{"surprise": <integer>, "coherence": <integer>, "funniness": <integer>' in prompt


def test_a_scenario_is_part_of_the_prompt(configured: FakeJudge, study: Study) -> None:
    item = add_item(
        study, "good", level=Item.Level.SCENARIO, scenario="Your flight is delayed by 9 hours."
    )
    judge_item(item=item, scales=rubric_scales(study_questions(study=study)), config=judge_config())
    assert (
        "The scenario:\nYour flight is delayed by 9 hours."
        in (configured.requests[0]["messages"][-1]["content"])
    )


def test_no_authorization_header_is_sent_without_a_key(
    configured: FakeJudge, settings: SettingsWrapper, study: Study
) -> None:
    settings.LLM_JUDGE_API_KEY = ""
    settings.LLM_JUDGE_URL = configured.url + "/chat/completions"
    item = add_item(study, "good")
    result = judge_item(
        item=item, scales=rubric_scales(study_questions(study=study)), config=judge_config()
    )
    assert result.status == "ok"
    (request,) = configured.requests
    assert "Authorization" not in request["headers"]
    assert request["path"] == "/v1/chat/completions"


@pytest.mark.parametrize("behaviour", sorted(EXPECTED))
def test_each_kind_of_reply_gets_its_status_and_message(
    configured: FakeJudge, study: Study, behaviour: str
) -> None:
    configured.respond = by_text
    item = add_item(study, behaviour)
    started = time.monotonic()
    result = judge_item(
        item=item, scales=rubric_scales(study_questions(study=study)), config=judge_config()
    )
    status, message = EXPECTED[behaviour]
    assert result.status == status
    assert message in result.error
    assert (result.scores == GOOD) == (status == "ok")
    # A timeout gives up at the timeout, not when the slow server finally answers.
    assert time.monotonic() - started < 1.2


def test_a_refused_connection_is_an_http_error(settings: SettingsWrapper, study: Study) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.LLM_JUDGE_URL = f"http://127.0.0.1:{port}/v1"
    settings.LLM_JUDGE_MODEL = MODEL
    item = add_item(study, "good")
    result = judge_item(
        item=item, scales=rubric_scales(study_questions(study=study)), config=judge_config()
    )
    assert result.status == "http_error"
    assert "request failed" in result.error


@pytest.mark.parametrize("url", ["127.0.0.1:9/v1", "file:///etc/v1", "ftp://127.0.0.1/v1"])
def test_a_url_that_is_not_http_is_refused_without_a_request(
    settings: SettingsWrapper, study: Study, url: str
) -> None:
    settings.LLM_JUDGE_URL = url
    settings.LLM_JUDGE_MODEL = MODEL
    item = add_item(study, "good")
    result = judge_item(
        item=item, scales=rubric_scales(study_questions(study=study)), config=judge_config()
    )
    assert result.status == "http_error"
    assert "must be an http:// or https:// URL" in result.error
    with pytest.raises(DomainError) as caught:
        judge_run_start(study=study)
    assert caught.value.field == "LLM_JUDGE_URL"


def test_the_raw_reply_is_kept_but_cut_short(configured: FakeJudge, study: Study) -> None:
    configured.respond = lambda text: Reply(content="x" * 10_000)
    item = add_item(study, "long")
    result = judge_item(
        item=item, scales=rubric_scales(study_questions(study=study)), config=judge_config()
    )
    assert result.status == "malformed"
    assert result.raw_reply == "x" * 4000


# --- a run ----------------------------------------------------------------------------------


def test_a_run_stores_every_verdict_and_finishes_despite_failures(
    configured: FakeJudge, study: Study, django_capture_on_commit_callbacks: Capture
) -> None:
    configured.respond = by_text
    for text in EXPECTED:
        add_item(study, text)
    add_item(study, "good", is_attention_check=True)
    add_item(study, "good", stage=Item.Stage.CANDIDATE)
    add_item(study, "good", stage=Item.Stage.DROPPED)
    add_item(study, "good", stage=Item.Stage.HELD)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        queued = judge_run_start(study=study)

    assert queued == len(EXPECTED) + 1  # the candidate, not the check, dropped or held items
    assert callbacks
    verdicts = {v.item.text: v for v in JudgeVerdict.objects.select_related("item")}
    assert sum(1 for v in JudgeVerdict.objects.all()) == queued
    for text, (status, message) in EXPECTED.items():
        assert verdicts[text].status == status, text
        assert message in verdicts[text].error
        assert verdicts[text].model_name == MODEL
    assert verdicts["good"].scores == GOOD
    assert verdicts["float"].scores == {}
    assert "4.5" in verdicts["float"].raw_reply
    assert "overloaded" in verdicts["server error"].raw_reply
    assert not JudgeVerdict.objects.filter(item__is_attention_check=True).exists()
    # The last batch left a comparison behind (no human ratings here, so it is empty).
    comparison = JudgeComparison.objects.get(study=study, model_name=MODEL)
    assert comparison.payload["overall"]["n"] == 0


def test_a_second_run_replaces_the_verdicts_of_the_same_model(
    configured: FakeJudge, study: Study
) -> None:
    item = add_item(study, "flaky")
    configured.respond = lambda text: Reply(status=500, body=b"{}")
    first = judge_items(study=study, item_ids=[item.pk])
    configured.respond = lambda text: Reply(content=json.dumps(GOOD))
    second = judge_items(study=study, item_ids=[item.pk])
    assert first["http_error"] == 1
    assert second == {"ok": 1, "timeout": 0, "http_error": 0, "malformed": 0}
    verdict = JudgeVerdict.objects.get(item=item)
    assert (verdict.status, verdict.scores, verdict.error) == ("ok", GOOD, "")


def test_starting_without_a_url_is_refused_naming_the_setting(
    settings: SettingsWrapper, study: Study
) -> None:
    settings.LLM_JUDGE_URL = ""
    settings.LLM_JUDGE_MODEL = MODEL
    add_item(study, "good")
    with pytest.raises(DomainError) as caught:
        judge_run_start(study=study)
    assert caught.value.field == "LLM_JUDGE_URL"
    assert "LLM_JUDGE_URL" in caught.value.message


def test_a_rubric_without_scales_is_refused(configured: FakeJudge, owner: User) -> None:
    rubric = Rubric.objects.create(slug="pick-one", name="Pick one", kind=Rubric.Kind.CONTENT)
    Question.objects.create(
        rubric=rubric, name="genre", position=1, kind=Question.Kind.CHOICE, min_value=0, max_value=2
    )
    study = study_create(slug="choices", rubric_slug="pick-one", owner=owner)
    add_item(study, "good")
    with pytest.raises(DomainError) as caught:
        judge_run_start(study=study)
    assert caught.value.field == "rubric"
    assert not configured.requests


def test_the_comparison_flags_what_the_judge_over_and_under_rates_on_real_ratings(
    configured: FakeJudge, demo_study: Study, django_capture_on_commit_callbacks: Capture
) -> None:
    """The judge replays the human mean funniness, two points higher for puns and two lower for
    absurd jokes; the stored comparison must show exactly that."""
    human = human_means(study=demo_study)
    items = Item.objects.filter(study=demo_study, pk__in=human)
    bias = {"pun": 2, "absurd": -2}
    by_item_text = {}
    for item in items:
        score = round(human[item.pk][0]) + bias.get(item.humor_type, 0)
        by_item_text[item.text] = min(7, max(1, score))

    def respond(text: str) -> Reply:
        return Reply(content=json.dumps({**GOOD, "funniness": by_item_text.get(text, 4)}))

    configured.respond = respond
    with django_capture_on_commit_callbacks(execute=True):
        judge_run_start(study=demo_study)

    comparison = JudgeComparison.objects.get(study=demo_study, model_name=MODEL)
    rows = {row["humor_type"]: row for row in comparison.payload["by_humor_type"]}
    assert rows["pun"]["flag"] == OVER
    assert rows["absurd"]["flag"] == UNDER
    assert rows["pun"]["mean_diff"]["ci_low"] > 0
    assert rows["absurd"]["mean_diff"]["ci_high"] < 0
    assert rows["pun"]["n"] == sum(1 for i in items if i.humor_type == "pun")
    assert comparison.payload["overall"]["n"] == len(by_item_text)
    assert comparison.seed == demo_study.random_seed
    # Rho over all items against scipy, from the same stored verdicts.
    judge_scores, human_values = [], []
    for verdict in JudgeVerdict.objects.filter(item__in=items, status="ok"):
        judge_scores.append(verdict.scores["funniness"])
        human_values.append(human[verdict.item_id][0])
    expected = stats.spearmanr(judge_scores, human_values).statistic
    assert comparison.payload["overall"]["rho"]["value"] == pytest.approx(expected, abs=1e-12)


def test_recomputing_the_comparison_with_the_same_seed_gives_the_same_numbers(
    demo_study: Study, settings: SettingsWrapper
) -> None:
    human = human_means(study=demo_study)
    for item in Item.objects.filter(study=demo_study, pk__in=human):
        JudgeVerdict.objects.create(
            item=item,
            model_name=MODEL,
            status="ok",
            scores={**GOOD, "funniness": 7 if item.humor_type == "pun" else 3},
        )
    first = judge_comparison_compute(study=demo_study, model_name=MODEL, seed=5, rounds=200)
    again = judge_comparison_compute(study=demo_study, model_name=MODEL, seed=5, rounds=200)
    assert JudgeComparison.objects.filter(study=demo_study).count() == 1
    assert first.payload == again.payload


# --- the pure comparison ------------------------------------------------------------------------


def test_synthetic_puns_are_over_rated_and_absurd_jokes_under_rated() -> None:
    rng = np.random.default_rng(1)
    human = rng.uniform(2, 6, size=90)
    types = ["pun"] * 30 + ["absurd"] * 30 + ["observational"] * 30
    offset = np.array([1.5] * 30 + [-1.5] * 30 + [0.0] * 30)
    # Exactly zero-mean noise for the observational jokes: the judge is unbiased on them.
    wobble = np.tile([0.5, -0.5], 45)
    judge = human + offset + wobble
    result = compare_judge_with_humans(
        judge=judge, human=human, humor_types=types, seed=11, rounds=1000
    )
    rows = {row.humor_type: row for row in result.by_humor_type}
    assert [row.humor_type for row in result.by_humor_type] == ["absurd", "observational", "pun"]
    assert rows["pun"].flag == OVER
    assert rows["absurd"].flag == UNDER
    assert rows["observational"].flag is None
    assert rows["pun"].mean_diff.value == pytest.approx(1.5)
    low, high = rows["observational"].mean_diff.ci_low, rows["observational"].mean_diff.ci_high
    assert low is not None
    assert high is not None
    assert low < 0 < high
    for row in rows.values():
        rho, rho_low, rho_high = row.rho.value, row.rho.ci_low, row.rho.ci_high
        assert rho is not None
        assert rho_low is not None
        assert rho_high is not None
        assert rho_low <= rho <= rho_high
        assert rho > 0.8  # the judge still orders each type as the humans do


def test_rho_matches_scipy_with_ties() -> None:
    rng = np.random.default_rng(3)
    for n in (3, 7, 40):
        judge = rng.integers(1, 8, size=n).astype(float)
        human = np.round(rng.uniform(1, 7, size=n), 1)
        expected = stats.spearmanr(judge, human).statistic
        got = spearman_rho(judge, human)
        if np.isnan(expected):
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_rho_is_undefined_for_a_constant_side_or_fewer_than_three_items() -> None:
    assert spearman_rho([4, 4, 4, 4], [1.0, 2.0, 3.0, 4.0]) is None
    assert spearman_rho([1, 2], [1.0, 2.0]) is None
    result = compare_judge_with_humans(
        judge=[7, 7], human=[1.0, 1.5], humor_types=["pun", "pun"], seed=1, rounds=100
    )
    # A large difference on two items is no evidence: no interval, no flag.
    (pun,) = result.by_humor_type
    assert pun.mean_diff.value == pytest.approx(5.75)
    assert pun.mean_diff.ci_low is None
    assert pun.flag is None
    assert pun.rho.value is None


def test_the_mean_difference_interval_agrees_with_scipy_bootstrap() -> None:
    rng = np.random.default_rng(8)
    human = rng.uniform(1, 7, size=25)
    judge = np.clip(np.round(human + rng.normal(0.4, 1.0, size=25)), 1, 7)
    result = compare_judge_with_humans(
        judge=judge, human=human, humor_types=["pun"] * 25, seed=2, rounds=20_000
    )
    reference = stats.bootstrap(
        (judge - human,), np.mean, n_resamples=20_000, method="percentile", random_state=9
    ).confidence_interval
    assert result.overall.mean_diff.ci_low == pytest.approx(reference.low, abs=0.03)
    assert result.overall.mean_diff.ci_high == pytest.approx(reference.high, abs=0.03)


def test_the_same_seed_gives_the_same_intervals_and_another_seed_other_ones() -> None:
    rng = np.random.default_rng(4)
    human = rng.uniform(1, 7, size=30)
    judge = np.round(human) + 1
    types = ["pun", "absurd", "callback"] * 10

    def run(seed: int) -> dict[str, Any]:
        return compare_judge_with_humans(
            judge=judge, human=human, humor_types=types, seed=seed, rounds=300
        ).as_payload()

    assert run(1) == run(1)
    assert run(1)["by_humor_type"] != run(2)["by_humor_type"]


# --- the page ----------------------------------------------------------------------------------


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def page_url(study: Study) -> str:
    return f"/studies/{study.slug}/screening/judge/"


def run_url(study: Study) -> str:
    return f"/studies/{study.slug}/screening/judge/run/"


@pytest.fixture
def outsider(django_user_model: type[User]) -> User:
    user = django_user_model.objects.create_user("outsider", password="pw-outsider-123")
    study_create(slug="theirs", rubric_slug="humor", owner=user)
    return user


@pytest.fixture
def admin(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_superuser("boss", password="pw-boss-123")


def test_anonymous_visitors_are_sent_to_login(
    study: Study, configured: FakeJudge, django_capture_on_commit_callbacks: Capture
) -> None:
    add_item(study, "good")
    response = Client().get(page_url(study))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = Client().post(run_url(study))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert not callbacks
    assert not JudgeVerdict.objects.exists()
    assert not configured.requests


def test_researchers_of_other_studies_get_not_found_and_start_nothing(
    study: Study, outsider: User, configured: FakeJudge, django_capture_on_commit_callbacks: Capture
) -> None:
    add_item(study, "good")
    client = client_for(outsider)
    assert client.get(page_url(study)).status_code == 404
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert client.post(run_url(study)).status_code == 404
    assert not callbacks
    assert not JudgeVerdict.objects.exists()
    assert not configured.requests


@pytest.mark.parametrize("who", ["owner", "member", "admin"])
def test_owners_members_and_admins_see_the_page_and_can_start_a_run(
    study: Study,
    owner: User,
    admin: User,
    django_user_model: type[User],
    configured: FakeJudge,
    who: str,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    user = {"owner": owner, "admin": admin}.get(who)
    if who == "member":
        user = django_user_model.objects.create_user("member", password="pw-member-123")
        study_member_add(study=study, user=user)
    add_item(study, "good")
    client = client_for(user)
    page = client.get(page_url(study))
    assert page.status_code == 200
    html = page.content.decode()
    assert f"127.0.0.1:{configured.url.split(':')[2].split('/')[0]}" in html
    assert MODEL in html
    assert API_KEY not in html
    assert "No comparison yet" in html

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(run_url(study))
    assert response.status_code == 302
    assert response["Location"] == page_url(study)
    assert JudgeVerdict.objects.get(item__study=study).status == "ok"
    html = client.get(response["Location"]).content.decode()
    assert "The judge was asked about 1 items" in html


def test_the_page_only_answers_get_and_the_start_only_post(study: Study, owner: User) -> None:
    client = client_for(owner)
    assert client.post(page_url(study)).status_code == 405
    assert client.get(run_url(study)).status_code == 405


def test_starting_when_not_configured_says_so_and_stores_nothing(
    study: Study,
    owner: User,
    settings: SettingsWrapper,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    settings.LLM_JUDGE_URL = ""
    settings.LLM_JUDGE_MODEL = ""
    settings.LLM_JUDGE_API_KEY = API_KEY
    add_item(study, "good")
    client = client_for(owner)
    page = client.get(page_url(study)).content.decode()
    assert "The LLM judge is not configured" in page
    assert API_KEY not in page
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(run_url(study))
    assert response.status_code == 400
    assert "LLM_JUDGE_URL" in response.content.decode()
    assert not callbacks
    assert not JudgeVerdict.objects.exists()
    assert not JudgeComparison.objects.exists()


def test_the_page_lists_failed_items_with_their_messages(
    study: Study, owner: User, configured: FakeJudge, django_capture_on_commit_callbacks: Capture
) -> None:
    configured.respond = by_text
    for text in ("good", "out of range", "server error", "slow"):
        add_item(study, text)
    with django_capture_on_commit_callbacks(execute=True):
        judge_run_start(study=study)
    html = client_for(owner).get(page_url(study)).content.decode()
    assert "funniness: 9 is outside 1..7" in html
    assert "HTTP 500" in html
    assert "no reply within 0.5 s" in html
    assert "3 verdicts failed." in html
    for status, n in [("ok", 1), ("malformed", 1), ("http_error", 1), ("timeout", 1)]:
        assert f'data-status="{status}">{n}</td>' in html


def test_the_page_shows_the_stored_comparison_per_humor_type(
    demo_study: Study, owner: User, settings: SettingsWrapper
) -> None:
    settings.LLM_JUDGE_URL = ""
    study_member_add(study=demo_study, user=owner)
    human = human_means(study=demo_study)
    for item in Item.objects.filter(study=demo_study, pk__in=human):
        bias = {"pun": 3, "absurd": -3}.get(item.humor_type, 0)
        score = min(7, max(1, round(human[item.pk][0]) + bias))
        JudgeVerdict.objects.create(
            item=item, model_name=MODEL, status="ok", scores={**GOOD, "funniness": score}
        )
    comparison = judge_comparison_compute(
        study=demo_study, model_name=MODEL, seed=demo_study.random_seed, rounds=200
    )
    html = client_for(owner).get(page_url(demo_study)).content.decode()
    assert "No comparison yet" not in html
    for row in comparison.payload["by_humor_type"]:
        assert f'data-humor-type="{row["humor_type"]}"' in html
        assert fmt_ci(row["mean_diff"]) in html
        assert fmt_ci(row["rho"]) in html
    rows = {row["humor_type"]: row for row in comparison.payload["by_humor_type"]}
    assert rows["pun"]["flag"] == OVER
    assert rows["absurd"]["flag"] == UNDER
    pun_row = html.split('data-humor-type="pun"', 1)[1].split("</tr>", 1)[0]
    absurd_row = html.split('data-humor-type="absurd"', 1)[1].split("</tr>", 1)[0]
    assert "over-rates" in pun_row
    assert "under-rates" in absurd_row
