"""A study's own LLM judge, set on the judge page or through the API: checked like a generation
endpoint (http(s) only, no private address unless allowed, no NUL or unpaired surrogate), a bad
value refused naming its field with nothing stored, never a key stored or shown, and the runs of
the study ask the study's judge (stand-in services started here), at most `parallelism` at once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from apps.accounts.services import api_token_create
from apps.analysis.services import study_aggregate
from apps.core.errors import DomainError
from apps.reports.services import export_write
from apps.screening.llm_judge import judge_config
from apps.screening.models import JudgeVerdict, StudyJudgeConfig
from apps.screening.services.judge import judge_config_save, judge_run_start
from apps.screening.services.runs import judge_stage_model
from apps.studies.models import Item, Study
from apps.studies.services import study_create

pytestmark = pytest.mark.django_db

SettingsWrapper = Any
Capture = Callable[..., Any]

SERVER_KEY = "sk-server-judge-key-0451"
LISTED_KEY = "sk-listed-for-url-2112"
GOOD = {"surprise": 4, "coherence": 3, "funniness": 5, "offensive": 0}


@dataclass
class Stub:
    url: str = ""
    delay: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _serve() -> Iterator[Stub]:
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            with stub.lock:
                stub.requests.append({"headers": dict(self.headers), **body})
                stub.in_flight += 1
                stub.most_in_flight = max(stub.most_in_flight, stub.in_flight)
            time.sleep(stub.delay)
            payload = json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": json.dumps(GOOD)}}]}
            ).encode()
            with stub.lock:
                stub.in_flight -= 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def server_judge(settings: SettingsWrapper) -> Iterator[Stub]:
    """The deployment's judge, from the LLM_JUDGE_* settings, with its key."""
    for stub in _serve():
        settings.LLM_JUDGE_URL = stub.url
        settings.LLM_JUDGE_MODEL = "server-model"
        settings.LLM_JUDGE_API_KEY = SERVER_KEY
        settings.LLM_JUDGE_TIMEOUT_SECONDS = 5.0
        yield stub


@pytest.fixture
def study_judge() -> Iterator[Stub]:
    """Another service, the one a researcher points their study at."""
    yield from _serve()


@pytest.fixture
def owner(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def outsider(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("outsider", password="pw-outsider-123")


@pytest.fixture
def study(owner: User) -> Study:
    return study_create(slug="judged", rubric_slug="humor", name="Judged", owner=owner)


def page(study: Study) -> str:
    return f"/studies/{study.slug}/screening/judge/"


def config_url(study: Study) -> str:
    return f"/studies/{study.slug}/screening/judge/config/"


def api_url(study: Study) -> str:
    return f"/api/v1/studies/{study.slug}/judge/"


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_for(user: User) -> APIClient:
    n = user.api_tokens.count()
    _, key = api_token_create(user=user, name=f"tests {n}", study_ids=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def form(url: str, **changes: Any) -> dict[str, Any]:
    values = {"url": url, "model": "study-model", "timeout_seconds": 5, "parallelism": 3}
    return {**values, **changes}


def add_items(study: Study, n: int) -> list[Item]:
    return [
        Item.objects.create(study=study, external_id=f"i{k}", text=f"joke {k}", source="quipster")
        for k in range(n)
    ]


def stored(study: Study) -> dict[str, Any] | None:
    return StudyJudgeConfig.objects.filter(study=study).values().first()


# --- saving --------------------------------------------------------------------------------------


def test_the_owner_saves_the_studys_judge_on_the_page(
    study: Study, owner: User, server_judge: Stub, study_judge: Stub
) -> None:
    client = logged_in(owner)
    before = client.get(page(study)).content.decode()
    assert 'data-source="environment"' in before
    response = client.post(config_url(study), form(study_judge.url + "  "))
    assert response.status_code == 302
    assert response["Location"] == page(study)
    config = StudyJudgeConfig.objects.get(study=study)
    assert (config.url, config.model, config.timeout_seconds, config.parallelism) == (
        study_judge.url,
        "study-model",
        5.0,
        3,
    )
    html = client.get(page(study)).content.decode()
    assert 'data-source="study"' in html
    assert "study-model" in html
    assert study_judge.url.split("//")[1].split("/")[0] in html
    # Back to the server's judge.
    assert client.post(page(study) + "config/default/").status_code == 302
    assert stored(study) is None
    assert 'data-source="environment"' in client.get(page(study)).content.decode()


def test_the_api_reads_saves_and_resets_the_studys_judge(
    study: Study, owner: User, server_judge: Stub, study_judge: Stub
) -> None:
    client = api_for(owner)
    before = client.get(api_url(study)).json()
    assert before["source"] == "environment"
    assert before["url"] is None  # the server's URL is not shown, only its host
    assert before["model"] == "server-model"
    assert before["has_api_key"] is True
    response = client.put(api_url(study), form(study_judge.url, parallelism=2), format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["source"] == "study"
    assert body["url"] == study_judge.url
    assert body["parallelism"] == 2
    assert body["has_api_key"] is False  # no key is configured for this URL
    assert stored(study)["parallelism"] == 2  # type: ignore[index]
    assert client.delete(api_url(study)).status_code == 204
    assert stored(study) is None
    assert client.get(api_url(study)).json()["source"] == "environment"


BAD_VALUES = [
    ({"url": "ftp://example.com/v1"}, "url"),
    ({"url": "file:///etc/passwd"}, "url"),
    ({"url": ""}, "url"),
    ({"url": "http://user:secret@example.com/v1"}, "url"),
    ({"url": "http://10.1.2.3/v1"}, "url"),
    ({"url": "http://169.254.169.254/latest"}, "url"),
    ({"url": "http://127.0.0.1:9/v1"}, "url"),
    ({"url": "https://example.com/" + "a" * 500}, "url"),
    ({"model": ""}, "model"),
    ({"model": "m\x00odel"}, "model"),
    ({"model": "m" * 201}, "model"),
    ({"timeout_seconds": 0}, "timeout_seconds"),
    ({"timeout_seconds": 121}, "timeout_seconds"),
    ({"parallelism": 0}, "parallelism"),
    ({"parallelism": 9}, "parallelism"),
    ({"parallelism": 2.5}, "parallelism"),
]


@pytest.mark.parametrize(("change", "field_name"), BAD_VALUES)
def test_a_bad_value_on_the_page_is_a_400_naming_its_field_and_stores_nothing(
    study: Study, owner: User, settings: SettingsWrapper, change: dict[str, Any], field_name: str
) -> None:
    settings.OUTBOUND_ALLOWED_NETWORKS = ""
    judge_config_save(
        study=study, url="https://8.8.8.8/v1", model="kept", timeout_seconds=7, parallelism=2
    )
    before = stored(study)
    response = logged_in(owner).post(config_url(study), form("https://8.8.4.4/v1") | change)
    assert response.status_code == 400
    assert f'data-field-error="{field_name}"' in response.content.decode()
    assert stored(study) == before


@pytest.mark.parametrize(("change", "field_name"), BAD_VALUES)
def test_a_bad_value_through_the_api_is_a_400_naming_its_field_and_stores_nothing(
    study: Study, owner: User, settings: SettingsWrapper, change: dict[str, Any], field_name: str
) -> None:
    settings.OUTBOUND_ALLOWED_NETWORKS = ""
    response = api_for(owner).put(
        api_url(study), form("https://8.8.4.4/v1") | change, format="json"
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == field_name
    assert body["message"].startswith(f"{field_name}: ")
    assert stored(study) is None


@pytest.mark.parametrize(
    ("raw", "field_name"),
    [
        ('"model": "\\ud800"', "model"),
        ('"model": "a\\u0000b"', "model"),
        ('"api_key": "sk-123"', "api_key"),
        ('"parallelism": true', "parallelism"),
    ],
)
def test_a_lone_surrogate_a_nul_or_a_key_in_the_api_body_is_refused(
    study: Study, owner: User, raw: str, field_name: str
) -> None:
    body = '{"url": "https://8.8.4.4/v1", "model": "m", ' + raw + "}"
    if raw.startswith('"model"'):
        body = '{"url": "https://8.8.4.4/v1", ' + raw + "}"
    response = api_for(owner).generic(
        "PUT", api_url(study), body.encode(), content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field_name
    assert stored(study) is None


@pytest.mark.parametrize(
    "value",
    ["m\x00odel", "\ud800", "  ", 12, None],
)
def test_the_service_refuses_what_the_forms_would_let_through(study: Study, value: Any) -> None:
    with pytest.raises(DomainError) as caught:
        judge_config_save(
            study=study, url="https://8.8.8.8/v1", model=value, timeout_seconds=5, parallelism=1
        )
    assert caught.value.field == "model"
    assert stored(study) is None


def test_a_private_address_is_accepted_only_where_the_server_allows_it(
    study: Study, settings: SettingsWrapper
) -> None:
    settings.OUTBOUND_ALLOWED_NETWORKS = ""
    with pytest.raises(DomainError) as caught:
        judge_config_save(
            study=study, url="http://10.20.0.5:8000/v1", model="m", timeout_seconds=5, parallelism=1
        )
    assert caught.value.field == "url"
    assert "private" in caught.value.message
    settings.OUTBOUND_ALLOWED_NETWORKS = "10.20.0.0/16"
    judge_config_save(
        study=study, url="http://10.20.0.5:8000/v1", model="m", timeout_seconds=5, parallelism=1
    )
    assert stored(study)["url"] == "http://10.20.0.5:8000/v1"  # type: ignore[index]


def test_researchers_of_other_studies_get_404_and_change_nothing(
    study: Study, outsider: User, study_judge: Stub
) -> None:
    study_create(slug="theirs", rubric_slug="humor", owner=outsider)
    assert logged_in(outsider).post(config_url(study), form(study_judge.url)).status_code == 404
    assert logged_in(outsider).post(page(study) + "config/default/").status_code == 404
    api = api_for(outsider)
    assert api.get(api_url(study)).status_code == 404
    assert api.put(api_url(study), form(study_judge.url), format="json").status_code == 404
    assert api.delete(api_url(study)).status_code == 404
    assert stored(study) is None
    response = Client().post(config_url(study), form(study_judge.url))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert stored(study) is None


def test_the_page_only_saves_by_post(study: Study, owner: User) -> None:
    assert logged_in(owner).get(config_url(study)).status_code == 405


# --- the key -------------------------------------------------------------------------------------


def test_no_key_is_stored_shown_or_exported(
    study: Study,
    owner: User,
    server_judge: Stub,
    study_judge: Stub,
    settings: SettingsWrapper,
    tmp_path: Path,
) -> None:
    settings.GENERATION_API_KEYS = {study_judge.url: LISTED_KEY}
    client = logged_in(owner)
    for url in (server_judge.url, study_judge.url):
        assert client.post(config_url(study), form(url)).status_code == 302
        assert judge_config(study=study).api_key in (SERVER_KEY, LISTED_KEY)
        row = json.dumps(stored(study), default=str)
        html = client.get(page(study)).content.decode()
        api = api_for(owner).get(api_url(study)).content.decode()
        assert api_for(owner).get(api_url(study)).json()["has_api_key"] is True
        for key in (SERVER_KEY, LISTED_KEY):
            assert key not in row
            assert key not in html
            assert key not in api
    add_items(study, 2)
    study_aggregate(study=study, rounds=20)
    for fmt in ("json", "raw", "report-html"):
        path = tmp_path / f"export.{fmt}"
        export_write(study=study, fmt=fmt, path=path)
        text = path.read_text(encoding="utf-8")
        assert SERVER_KEY not in text
        assert LISTED_KEY not in text


# --- runs ----------------------------------------------------------------------------------------


def test_a_run_asks_the_studys_judge_at_most_parallelism_at_once_without_the_servers_key(
    study: Study,
    server_judge: Stub,
    study_judge: Stub,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    study_judge.delay = 0.3
    judge_config_save(
        study=study, url=study_judge.url, model="study-model", timeout_seconds=5, parallelism=3
    )
    add_items(study, 7)
    with django_capture_on_commit_callbacks(execute=True):
        assert judge_run_start(study=study) == 7
    assert server_judge.requests == []
    assert len(study_judge.requests) == 7
    assert {r["model"] for r in study_judge.requests} == {"study-model"}
    # The server's key belongs to the server's judge URL only.
    assert not any("Authorization" in r["headers"] for r in study_judge.requests)
    assert study_judge.most_in_flight == 3
    verdicts = JudgeVerdict.objects.filter(item__study=study)
    assert {(v.model_name, v.status) for v in verdicts} == {("study-model", "ok")}
    assert verdicts.count() == 7


def test_a_key_listed_for_the_studys_url_goes_with_its_calls(
    study: Study,
    server_judge: Stub,
    study_judge: Stub,
    settings: SettingsWrapper,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    settings.GENERATION_API_KEYS = {study_judge.url + "/chat/completions": LISTED_KEY}
    judge_config_save(
        study=study, url=study_judge.url, model="study-model", timeout_seconds=5, parallelism=1
    )
    add_items(study, 2)
    with django_capture_on_commit_callbacks(execute=True):
        judge_run_start(study=study)
    assert [r["headers"]["Authorization"] for r in study_judge.requests] == [
        f"Bearer {LISTED_KEY}"
    ] * 2
    assert study_judge.most_in_flight == 1


def test_a_study_on_the_servers_url_gets_the_servers_key(
    study: Study, server_judge: Stub, django_capture_on_commit_callbacks: Capture
) -> None:
    judge_config_save(
        study=study, url=server_judge.url, model="bigger-model", timeout_seconds=5, parallelism=2
    )
    add_items(study, 2)
    with django_capture_on_commit_callbacks(execute=True):
        judge_run_start(study=study)
    assert {r["model"] for r in server_judge.requests} == {"bigger-model"}
    assert {r["headers"]["Authorization"] for r in server_judge.requests} == {
        f"Bearer {SERVER_KEY}"
    }


def test_a_study_without_a_judge_of_its_own_uses_the_servers(
    study: Study, owner: User, server_judge: Stub, django_capture_on_commit_callbacks: Capture
) -> None:
    other = study_create(slug="other", rubric_slug="humor", owner=owner)
    judge_config_save(
        study=other, url="https://8.8.8.8/v1", model="elsewhere", timeout_seconds=5, parallelism=1
    )
    add_items(study, 2)
    with django_capture_on_commit_callbacks(execute=True):
        judge_run_start(study=study)
    assert {r["model"] for r in server_judge.requests} == {"server-model"}
    assert judge_stage_model(study=study) == "server-model"
    assert judge_stage_model(study=other) == "elsewhere"


def test_without_any_judge_the_page_offers_the_set_up(
    study: Study, owner: User, settings: SettingsWrapper
) -> None:
    settings.LLM_JUDGE_URL = ""
    settings.LLM_JUDGE_MODEL = ""
    html = logged_in(owner).get(page(study)).content.decode()
    assert "The LLM judge is not configured" in html
    assert "judge-config-form" in html
    assert "data-source=" not in html


def test_the_set_up_speaks_chinese(study: Study, owner: User, server_judge: Stub) -> None:
    client = logged_in(owner)
    client.cookies["django_language"] = "zh-hans"
    html = client.get(page(study), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "本研究自己的评审" in html
    assert "同时调用数" in html
