"""Rate limits without Redis, client addresses behind proxies, and login throttling."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from apps.core.ratelimit import client_address, local_counts_clear
from apps.raters.models import Rater
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory
from tests.faults import free_port

pytestmark = pytest.mark.django_db
FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}


@pytest.fixture(autouse=True)
def fresh_counts():
    local_counts_clear()
    cache.clear()
    yield
    local_counts_clear()


@pytest.fixture
def open_study():
    study = StudyFactory(status=Study.Status.OPEN, task_mix={"turing": 1.0}, attention_check_rate=0)
    for n in range(3):
        ItemFactory(study=study, external_id=f"i{n}")
    return study


@pytest.fixture
def unreachable_cache(settings):
    """The cache is a Redis URL on a port nothing listens on."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    local_counts_clear()
    yield
    local_counts_clear()


def _answer(client: Client, study: Study, key: str):
    page = client.get(f"/s/{study.slug}/task/")
    assert page.status_code == 200
    assignment = int(page.content.decode().split('data-assignment="')[1].split('"')[0])
    body = {"assignment": assignment, "idempotency_key": key, "active_ms": 1000, "guess": "ai"}
    return client.post(
        f"/api/v1/rater/{study.slug}/turing",
        json.dumps(body),
        content_type="application/json",
        headers={"X-CSRFToken": client.cookies["csrftoken"].value},
    )


def test_with_the_cache_unreachable_enrolment_and_answers_still_work(
    open_study, settings, unreachable_cache, caplog
):
    settings.RATE_LIMIT_ENROLL = "30/m"
    settings.RATE_LIMIT_SUBMIT = "120/m"
    client = Client()
    assert client.post(f"/s/{open_study.slug}/", FORM).status_code == 302
    assert _answer(client, open_study, "no-redis-key-1").status_code == 201
    assert Rater.objects.filter(study=open_study).count() == 1
    assert "rate-limit cache unavailable" in caplog.text


def test_with_the_cache_unreachable_the_limit_holds_per_process(
    open_study, settings, unreachable_cache
):
    settings.RATE_LIMIT_ENROLL = "3/m"
    for _ in range(3):
        assert Client().post(f"/s/{open_study.slug}/", FORM).status_code == 302
    refused = Client().post(f"/s/{open_study.slug}/", FORM)
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert Rater.objects.filter(study=open_study).count() == 3


def test_without_trusted_proxies_the_forwarded_header_is_ignored():
    meta = {"REMOTE_ADDR": "10.0.0.9", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}
    assert client_address(meta, hops=0) == "10.0.0.9"


def test_one_trusted_proxy_takes_the_entry_it_appended_not_the_spoofed_first():
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.7"}
    assert client_address(meta, hops=1) == "203.0.113.7"


def test_two_trusted_proxies_take_the_second_entry_from_the_right():
    meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.7, 10.0.0.1"}
    assert client_address(meta, hops=2) == "203.0.113.7"
    # Fewer entries than proxies: all were written by trusted proxies, the leftmost is the client.
    assert client_address({"HTTP_X_FORWARDED_FOR": "203.0.113.7"}, hops=2) == "203.0.113.7"
    assert client_address({"REMOTE_ADDR": "10.0.0.2"}, hops=1) == "10.0.0.2"


def test_a_spoofed_forwarded_for_does_not_get_past_the_enrolment_limit(open_study, settings):
    settings.RATE_LIMIT_ENROLL = "3/m"
    settings.TRUSTED_PROXY_HOPS = 1
    statuses = []
    for n in range(6):
        response = Client().post(
            f"/s/{open_study.slug}/",
            FORM,
            headers={"X-Forwarded-For": f"198.51.100.{n}, 203.0.113.7"},
            REMOTE_ADDR="10.0.0.2",
        )
        statuses.append(response.status_code)
    assert statuses == [302, 302, 302, 429, 429, 429]
    assert Rater.objects.filter(study=open_study).count() == 3
    # Another real client behind the same proxy is counted on its own.
    other = Client().post(
        f"/s/{open_study.slug}/",
        FORM,
        headers={"X-Forwarded-For": "203.0.113.8"},
        REMOTE_ADDR="10.0.0.2",
    )
    assert other.status_code == 302


# --- login ---------------------------------------------------------------------------------


@pytest.fixture
def researcher():
    return User.objects.create_user("ada", password="correct-horse-battery")


def _login(
    username: str, password: str, address: str = "192.0.2.1", path: str = "/accounts/login/"
):
    return Client().post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_login_is_throttled_per_account_with_a_clear_message(researcher, settings):
    settings.RATE_LIMIT_LOGIN_ACCOUNT = "5/h"
    settings.RATE_LIMIT_LOGIN_ADDRESS = "0"
    for n in range(5):
        response = _login("ada", "wrong", address=f"192.0.2.{n}")
        assert response.status_code == 200
        assert "did not match" in response.content.decode()
    refused = _login("ada", "wrong", address="192.0.2.99")
    assert refused.status_code == 429
    assert "Too many failed login attempts" in refused.content.decode()
    # Even the right password is refused while throttled: the refusal reveals nothing.
    right = _login("ADA", "correct-horse-battery", address="192.0.2.100")
    assert right.status_code == 429
    assert "_auth_user_id" not in right.client.session
    # Another account is not affected.
    User.objects.create_user("bob", password="correct-horse-battery")
    assert _login("bob", "correct-horse-battery").status_code == 302


def test_login_is_throttled_per_address_across_accounts(researcher, settings):
    settings.RATE_LIMIT_LOGIN_ACCOUNT = "0"
    settings.RATE_LIMIT_LOGIN_ADDRESS = "4/h"
    for n in range(4):
        assert _login(f"user{n}", "wrong").status_code == 200
    assert _login("ada", "correct-horse-battery").status_code == 429
    assert _login("ada", "correct-horse-battery", address="192.0.2.2").status_code == 302


def test_throttling_does_not_tell_existing_accounts_from_missing_ones(researcher, settings):
    settings.RATE_LIMIT_LOGIN_ACCOUNT = "3/h"
    settings.RATE_LIMIT_LOGIN_ADDRESS = "0"
    pages = {}
    for name in ("ada", "nobody-here"):
        for _ in range(3):
            _login(name, "wrong")
        refused = _login(name, "wrong")
        assert refused.status_code == 429
        page = refused.content.decode().replace(name, "NAME")
        pages[name] = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
    assert pages["ada"] == pages["nobody-here"]


def test_a_successful_login_is_not_counted(researcher, settings):
    settings.RATE_LIMIT_LOGIN_ACCOUNT = "2/h"
    for _ in range(4):
        assert _login("ada", "correct-horse-battery").status_code == 302


def test_the_admin_login_is_throttled_too(settings):
    User.objects.create_superuser("root", password="correct-horse-battery")
    settings.RATE_LIMIT_LOGIN_ACCOUNT = "3/h"
    for _ in range(3):
        assert _login("root", "wrong", path="/admin/login/").status_code == 200
    refused = _login("root", "correct-horse-battery", path="/admin/login/")
    assert "Too many failed login attempts" in refused.content.decode()
    assert "_auth_user_id" not in refused.client.session


def test_login_throttling_is_translated(researcher, settings):
    settings.RATE_LIMIT_LOGIN_ACCOUNT = "1/h"
    _login("ada", "wrong")
    refused = Client().post(
        "/accounts/login/",
        {"username": "ada", "password": "wrong"},
        headers={"Accept-Language": "zh-hans"},
    )
    assert refused.status_code == 429
    assert "登录失败次数过多" in refused.content.decode()
