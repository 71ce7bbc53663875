"""Outbound calls only where allowed: model endpoint URLs that point at the metadata service,
loopback (Redis, PostgreSQL), private, link-local, shared, multicast or reserved addresses are
refused when saved (API and page alike) and again when the worker connects (a name that
resolved elsewhere when saved: DNS rebinding); OUTBOUND_ALLOWED_NETWORKS lets a deployment call
its own network; a refusal never holds what the other side would have said."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.contrib.auth.models import User

from apps.core.errors import DomainError
from apps.core.outbound import allowed_from_setting, url_problem
from apps.generation.chat import CallFailed, ChatEndpoint, Sampling
from apps.generation.models import ModelEndpoint
from apps.generation.services import endpoint_save
from apps.screening.llm_judge import JudgeConfig, judge_item, rubric_scales
from apps.studies.models import Item, Study
from apps.studies.selectors import study_questions
from apps.studies.services import study_create
from tests.api.conftest import assert_error, token_client
from tests.generation import conftest as generation
from tests.generation.conftest import FakeProvider

pytestmark = pytest.mark.django_db

# The chat-completions stand-in the generation tests use, on 127.0.0.1.
provider = generation.provider

INTERNAL = [
    "http://169.254.169.254/latest/meta-data/",
    "http://0xA9FEA9FE/latest/meta-data/",  # the same address, spelled as one number
    "http://2852039166/",  # and as a decimal
    "http://10.1.2.3:8000/v1",
    "http://192.168.0.10/v1",
    "http://127.0.0.1:6379/",  # Redis
    "http://127.0.0.1:5432/",  # PostgreSQL
    "http://localhost:8080/v1",
    "http://[::1]:8000/v1",
    "http://100.64.0.1/v1",  # shared address space
    "http://224.0.0.1/v1",  # multicast
    "http://0.0.0.0:8000/v1",
    "http://[::ffff:127.0.0.1]:8000/v1",  # IPv4-mapped loopback
]


@pytest.fixture
def strict(settings: Any) -> None:
    """No allowance: the production default."""
    settings.OUTBOUND_ALLOWED_NETWORKS = ""


@pytest.fixture
def owner(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def study(owner: User) -> Study:
    return study_create(slug="gen", rubric_slug="humor", owner=owner)


@pytest.mark.parametrize("url", INTERNAL)
def test_internal_addresses_are_refused_when_saved_and_nothing_is_stored(
    strict: None, study: Study, owner: User, url: str
) -> None:
    client = token_client(owner)
    response = client.post(
        "/api/v1/studies/gen/models/",
        {"name": "m", "kind": "chat", "url": url, "model": "x"},
        format="json",
    )
    body = assert_error(response, 400, "url")
    assert "OUTBOUND_ALLOWED_NETWORKS" in body["message"]
    assert not ModelEndpoint.objects.exists()


def test_an_edit_to_an_internal_address_is_refused_too(strict: None, study: Study) -> None:
    """Edits (the page and the `generate` command) go through the same service."""
    endpoint = ModelEndpoint.objects.create(
        study=study, name="m", kind="chat", url="https://203.0.113.9/v1", model="x"
    )
    with pytest.raises(DomainError) as caught:
        endpoint_save(study=study, values={"url": "http://169.254.169.254/"}, endpoint=endpoint)
    assert caught.value.field == "url"
    assert "link-local" in caught.value.message
    endpoint.refresh_from_db()
    assert endpoint.url == "https://203.0.113.9/v1"


def test_public_addresses_pass_and_the_allow_list_opens_a_network_or_one_port(
    settings: Any,
) -> None:
    settings.OUTBOUND_ALLOWED_NETWORKS = ""
    assert url_problem("https://8.8.8.8/v1") == ""
    assert "loopback" in url_problem("http://127.0.0.1:8000/v1")
    settings.OUTBOUND_ALLOWED_NETWORKS = "10.20.0.0/16, 127.0.0.1:8000"
    assert url_problem("http://10.20.3.4/v1") == ""
    assert url_problem("http://127.0.0.1:8000/v1") == ""
    assert "loopback" in url_problem("http://127.0.0.1:6379/")
    assert "private" in url_problem("http://10.21.0.1/v1")


def test_a_malformed_allow_list_entry_is_named() -> None:
    with pytest.raises(ValueError, match="'models:http'"):
        allowed_from_setting("10.0.0.0/8, models:http")


def test_a_name_that_resolves_inward_at_call_time_is_refused_and_never_reached(
    strict: None, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the name did not resolve (or resolved outward) when the URL was saved;
    when the worker connects it resolves to the loopback stand-in, and the call is refused
    before any byte is sent."""
    port = int(provider.url.rsplit(":", 1)[1].split("/")[0])
    real = socket.getaddrinfo

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "models.rebind.test":
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    endpoint = ChatEndpoint(
        url=f"http://models.rebind.test:{port}/v1",
        model="jester-1",
        api_key="sk-never-sent",
        timeout_seconds=2.0,
    )
    with pytest.raises(CallFailed) as caught:
        endpoint.complete(
            [{"role": "user", "content": "a joke about cats"}],
            Sampling(temperature=1.0, top_p=1.0, max_tokens=50),
        )
    assert not caught.value.retryable
    assert "loopback" in caught.value.message
    assert provider.requests == []


def test_the_judge_refuses_an_internal_address(strict: None, study: Study) -> None:
    config = JudgeConfig(
        url="http://169.254.169.254/v1", model="judge", api_key="", timeout_seconds=1.0
    )
    assert "link-local" in config.url_problem
    item = Item(text="A joke", language="en", level="single", context=None, scenario="")
    result = judge_item(
        item=item, scales=rubric_scales(study_questions(study=study)), config=config
    )
    assert result.status == "http_error"
    assert "link-local" in result.error
    assert result.raw_reply == ""
