"""The generation pages for every role, and what they refuse: bad uploads, bad prompts, bad
models and bad runs give a 400 naming the problem and store nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.generation.models import GenerationOutput, GenerationRun, ModelEndpoint, Prompt, PromptSet
from apps.generation.services import prompt_set_examples_install
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.generation.conftest import API_KEY, FakeProvider
from tests.generation.helpers import jsonl, make_endpoint, make_set, single

pytestmark = pytest.mark.django_db
Capture = Callable[..., Any]


@pytest.fixture
def owner(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def study(owner: User) -> Study:
    return study_create(slug="gen", rubric_slug="humor", name="Gen", owner=owner)


@pytest.fixture
def outsider(django_user_model: type[User]) -> User:
    user = django_user_model.objects.create_user("outsider", password="pw-outsider-123")
    study_create(slug="theirs", rubric_slug="humor", owner=user)
    return user


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def url(name: str, study: Study, *args: Any) -> str:
    return reverse(f"generation:{name}", args=[study.slug, *args])


def test_every_role_sees_the_pages_it_may(
    study: Study, owner: User, outsider: User, admin_user: User, provider: FakeProvider
) -> None:
    prompt_set = make_set(study, single("p1", "cats"))
    endpoint = make_endpoint(study, provider.url)
    prompt = prompt_set.prompts.get()
    run = GenerationRun.objects.create(study=study)
    pages = [
        url("overview", study),
        url("set", study, prompt_set.pk),
        url("prompt", study, prompt_set.pk, prompt.pk),
        url("endpoint", study, endpoint.pk),
        url("run", study, run.pk),
    ]
    for page in pages:
        anonymous = client_for(None).get(page)
        assert anonymous.status_code == 302
        assert "/accounts/login/" in anonymous["Location"]
        assert client_for(outsider).get(page).status_code == 404
        assert client_for(owner).get(page).status_code == 200
        assert client_for(admin_user).get(page).status_code == 200
    # The outsider cannot change anything either: 404, and nothing changed.
    posts = [
        (url("examples", study), {}),
        (url("prompt_delete", study, prompt_set.pk, prompt.pk), {}),
        (url("run_cancel", study, run.pk), {}),
        (url("endpoint_new", study), {"name": "x", "kind": "local"}),
    ]
    for page, data in posts:
        assert client_for(outsider).post(page, data).status_code == 404
    assert PromptSet.objects.filter(study=study).count() == 1
    assert Prompt.objects.filter(prompt_set=prompt_set).exists()
    assert ModelEndpoint.objects.filter(study=study).count() == 1
    assert GenerationRun.objects.get(pk=run.pk).status == GenerationRun.Status.RUNNING


def test_a_bad_upload_names_line_and_field_and_stores_nothing(study: Study, owner: User) -> None:
    data = jsonl(
        single("p1", "cats"),
        {"id": "p2", "level": "multi_turn", "lang": "en", "context": []},
        {"id": "p3", "level": "scenario", "lang": "zh"},
        {"id": "p4", "level": "single", "lang": "en", "prompt": "x", "mood": "happy"},
    )
    response = client_for(owner).post(
        url("set_upload", study),
        {"name": "bad", "file": SimpleUploadedFile("p.jsonl", data)},
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "3 bad lines; nothing was imported" in body
    assert "is required at the multi_turn level" in body
    assert "is required at the scenario level" in body
    assert "mood" in body
    assert not PromptSet.objects.exists()


def test_a_good_upload_creates_the_set(study: Study, owner: User) -> None:
    data = jsonl(single("p1", "cats"), single("p2", "猫", lang="zh", topic="猫"))
    response = client_for(owner).post(
        url("set_upload", study),
        {"name": "mine", "humor_type": "pun", "file": SimpleUploadedFile("p.jsonl", data)},
    )
    assert response.status_code == 302
    prompt_set = PromptSet.objects.get(study=study, name="mine")
    assert prompt_set.humor_type == "pun"
    assert prompt_set.prompts.count() == 2


def test_the_example_sets_cover_every_level_in_both_languages(study: Study, owner: User) -> None:
    assert client_for(owner).post(url("examples", study)).status_code == 302
    assert client_for(owner).post(url("examples", study)).status_code == 302  # no duplicates
    sets = PromptSet.objects.filter(study=study)
    assert sets.count() == 2
    pairs = set(Prompt.objects.filter(prompt_set__in=sets).values_list("language", "level"))
    assert pairs == {(lang, level) for lang in ("en", "zh") for level in Item.Level.values}
    scenario = Prompt.objects.filter(level="scenario").first()
    assert scenario is not None
    assert scenario.constraints
    multi = Prompt.objects.filter(level="multi_turn").first()
    assert multi is not None
    assert multi.context[-1]["role"] == "user"


def test_prompts_are_edited_in_the_browser_and_checked_like_a_line(
    study: Study, owner: User
) -> None:
    prompt_set = make_set(study, single("p1", "cats"))
    prompt = prompt_set.prompts.get()
    client = client_for(owner)
    edit = url("prompt", study, prompt_set.pk, prompt.pk)
    good = {
        "id": "p1",
        "level": "multi_turn",
        "lang": "en",
        "topic": "gym",
        "context": "user: I joined a gym.\nassistant: Congratulations!\nuser: I cannot find the exit.",
    }
    assert client.post(edit, good).status_code == 302
    prompt.refresh_from_db()
    assert prompt.level == "multi_turn"
    assert [t["role"] for t in prompt.context] == ["user", "assistant", "user"]
    # A dialogue ending on the model's turn is refused and nothing changes.
    bad = {**good, "context": "user: hi\nassistant: hello", "topic": "changed"}
    response = client.post(edit, bad)
    assert response.status_code == 400
    assert "must end with the user" in response.content.decode()
    prompt.refresh_from_db()
    assert prompt.topic == "gym"
    # A scenario without its situation is refused when added.
    added = client.post(
        url("prompt_new", study, prompt_set.pk), {"id": "p2", "level": "scenario", "lang": "en"}
    )
    assert added.status_code == 400
    assert "is required at the scenario level" in added.content.decode()
    assert prompt_set.prompts.count() == 1
    # A duplicate id is refused.
    dup = client.post(
        url("prompt_new", study, prompt_set.pk),
        {"id": "p1", "level": "single", "lang": "en", "prompt": "again"},
    )
    assert dup.status_code == 400
    assert prompt_set.prompts.count() == 1
    # A new single prompt is added; then deleted.
    new = client.post(
        url("prompt_new", study, prompt_set.pk),
        {"id": "p3", "level": "single", "lang": "zh", "topic": "猫", "constraints": ""},
    )
    assert new.status_code == 302
    added_prompt = prompt_set.prompts.get(external_id="p3")
    assert (
        client.post(url("prompt_delete", study, prompt_set.pk, added_prompt.pk)).status_code == 302
    )
    assert not prompt_set.prompts.filter(external_id="p3").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "m", "kind": "chat", "url": "ftp://x", "model": "m"}, "http:// or https://"),
        ({"name": "m", "kind": "chat", "url": "", "model": "m"}, "needs its URL"),
        ({"name": "m", "kind": "chat", "url": "http://u:p@h/v1", "model": "m"}, "user name"),
        ({"name": "m", "kind": "chat", "url": "http://h/v1", "model": ""}, "model name"),
        ({"name": "human", "kind": "local"}, "human-written"),
        ({"name": "m", "kind": "local", "max_concurrency": "0"}, "greater than or equal to 1"),
    ],
)
def test_a_bad_model_is_refused(study: Study, owner: User, data: dict, message: str) -> None:
    defaults = {"max_concurrency": "2", "timeout_seconds": "30", "max_retries": "1"}
    response = client_for(owner).post(url("endpoint_new", study), {**defaults, **data})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ModelEndpoint.objects.exists()


def test_a_run_from_the_page_shows_progress_and_never_the_key(
    study: Study,
    owner: User,
    provider: FakeProvider,
    fast_backoff: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    prompt_set = make_set(
        study, single("ok", "cats"), single("bad", "ALWAYS500"), single("no", "REFUSE")
    )
    endpoint = make_endpoint(study, provider.url, max_retries=1)
    client = client_for(owner)
    form = {
        "prompt_sets": [prompt_set.pk],
        "endpoints": [endpoint.pk],
        "samples_per_prompt": "1",
        "temperature": "1.1",
        "top_p": "0.9",
        "max_tokens": "64",
        "seed": "5",
        "explain": "on",
        "explanation_en": "Please explain why your joke is funny.",
        "explanation_zh": "请解释为什么好笑。",
        "api_key": API_KEY,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url("run_new", study), form)
    assert response.status_code == 302
    run = GenerationRun.objects.get(study=study)
    page = client.get(response["Location"])
    body = page.content.decode()
    assert page.status_code == 200
    assert API_KEY not in body
    assert "HTTP 500" in body  # the error of that model
    assert "The API reported a refusal" in body
    assert 'data-field="failed">1<' in body
    assert 'data-field="intercepted">1<' in body
    assert API_KEY not in client.get(url("overview", study)).content.decode()
    # The follow-up used the researcher's explanation prompt.
    assert any(
        r["messages"][-1]["content"] == "Please explain why your joke is funny."
        for r in provider.requests
    )
    # Resume from the page retries only the failed output.
    before = len(provider.requests)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url("run_resume", study, run.pk), {}).status_code == 302
    assert len(provider.requests) - before == 2  # two attempts of the one failed prompt
    assert GenerationOutput.objects.filter(run=run).count() == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"temperature": "3"}, "less than or equal to 2"),
        ({"top_p": "0"}, "greater than or equal to 0.01"),
        ({"samples_per_prompt": "0"}, "greater than or equal to 1"),
        ({"prompt_sets": []}, "This field is required"),
        ({"endpoints": ["999999"]}, "Select a valid choice"),
        ({"temperature": "nan"}, "Enter a number"),
    ],
)
def test_a_bad_run_form_is_refused_and_nothing_is_stored(
    study: Study, owner: User, provider: FakeProvider, change: dict, message: str
) -> None:
    prompt_set = make_set(study, single("p1", "cats"))
    endpoint = make_endpoint(study, provider.url)
    form = {
        "prompt_sets": [prompt_set.pk],
        "endpoints": [endpoint.pk],
        "samples_per_prompt": "1",
        "temperature": "1.1",
        "top_p": "0.9",
        "max_tokens": "64",
        "explanation_en": "x",
        "explanation_zh": "y",
        **change,
    }
    response = client_for(owner).post(url("run_new", study), form)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not GenerationRun.objects.exists()


def test_the_pages_speak_chinese(study: Study, owner: User) -> None:
    prompt_set_examples_install(study=study)
    client = client_for(owner)
    client.cookies["django_language"] = "zh-hans"
    body = client.get(url("overview", study), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "生成候选" in body
    assert "示例（中文）" in body


def test_the_admin_never_shows_a_runs_key(admin_client: Client, study: Study) -> None:
    run = GenerationRun.objects.create(study=study, api_key=API_KEY)
    page = admin_client.get(reverse("admin:generation_generationrun_change", args=[run.pk]))
    assert page.status_code == 200
    assert API_KEY not in page.content.decode()
    listing = admin_client.get(reverse("admin:generation_generationrun_changelist"))
    assert API_KEY not in listing.content.decode()
