"""The chat-completions client against the stand-in provider: every kind of reply a real
service gives, and the retries with backoff on 429 and 5xx."""

from __future__ import annotations

import logging

import pytest

from apps.generation.chat import (
    CallFailed,
    ChatEndpoint,
    Sampling,
    backoff_delay,
    complete_with_retries,
)
from apps.generation.guardrails import (
    CONTENT_FILTER,
    DEFAULT_REFUSAL_PATTERNS,
    EMPTY,
    PATTERN,
    REFUSAL,
    detect_interception,
    language_patterns,
)
from tests.generation.conftest import API_KEY, FakeProvider

SAMPLING = Sampling(temperature=1.1, top_p=0.9, max_tokens=64, seed=7)


def endpoint(provider: FakeProvider, timeout: float = 5.0) -> ChatEndpoint:
    return ChatEndpoint(
        url=provider.url, model="jester-1", api_key=API_KEY, timeout_seconds=timeout
    )


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "be funny"}, {"role": "user", "content": text}]


def test_a_good_reply_gives_text_finish_reason_and_token_counts(provider: FakeProvider) -> None:
    reply = endpoint(provider).complete(ask("cats"), SAMPLING)
    assert reply.text == "A joke for: cats"
    assert reply.finish_reason == "stop"
    assert (reply.prompt_tokens, reply.completion_tokens) == (21, 13)
    assert reply.latency_ms is not None
    assert reply.latency_ms >= 0
    sent = provider.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["model"] == "jester-1"
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"]) == (
        1.1,
        0.9,
        64,
        7,
    )
    assert sent["headers"]["Authorization"] == f"Bearer {API_KEY}"


def test_no_seed_is_sent_when_the_sampling_has_none(provider: FakeProvider) -> None:
    endpoint(provider).complete(ask("cats"), Sampling(1.1, 0.9, 64, None))
    assert "seed" not in provider.requests[0]


def test_a_slow_reply_times_out_and_may_be_retried(provider: FakeProvider) -> None:
    provider.slow_seconds = 1.5
    with pytest.raises(CallFailed) as failed:
        endpoint(provider, timeout=0.3).complete(ask("SLOW cats"), SAMPLING)
    assert "no reply within 0.3 s" in failed.value.message
    assert failed.value.retryable


@pytest.mark.parametrize(("word", "code"), [("ALWAYS429", 429), ("ALWAYS500", 500)])
def test_429_and_5xx_are_retryable(provider: FakeProvider, word: str, code: int) -> None:
    with pytest.raises(CallFailed) as failed:
        endpoint(provider).complete(ask(word), SAMPLING)
    assert failed.value.message.startswith(f"HTTP {code}")
    assert failed.value.retryable


def test_garbage_is_a_failure_not_worth_retrying(provider: FakeProvider) -> None:
    with pytest.raises(CallFailed) as failed:
        endpoint(provider).complete(ask("GARBAGE"), SAMPLING)
    assert "not JSON" in failed.value.message
    # What the endpoint said is never echoed (it may be an internal service's page).
    assert "html" not in failed.value.message
    assert not failed.value.retryable


def test_a_reply_nested_a_hundred_thousand_deep_fails_the_call_not_the_worker(
    provider: FakeProvider,
) -> None:
    with pytest.raises(CallFailed) as failed:
        endpoint(provider).complete(ask("DEEPJSON"), SAMPLING)
    assert "not JSON" in failed.value.message
    assert not failed.value.retryable


def test_a_refusal_field_and_a_content_filter_come_back_as_replies(
    provider: FakeProvider,
) -> None:
    refused = endpoint(provider).complete(ask("REFUSE"), SAMPLING)
    assert refused.refusal == "I can't write that."
    assert refused.text == ""
    filtered = endpoint(provider).complete(ask("FILTER"), SAMPLING)
    assert filtered.finish_reason == "content_filter"


def test_retries_back_off_then_succeed(provider: FakeProvider) -> None:
    provider.failures["FLAKY429"] = 2
    waits: list[float] = []
    result = complete_with_retries(
        endpoint(provider),
        ask("FLAKY429 cats"),
        SAMPLING,
        max_retries=3,
        backoff_seconds=0.01,
        max_backoff_seconds=1.0,
        sleep=waits.append,
    )
    assert result.reply is not None
    assert result.attempts == 3
    # The server asked for Retry-After: 0 each time.
    assert waits == [0.0, 0.0]


def test_retries_stop_after_the_limit_with_the_last_error(provider: FakeProvider) -> None:
    waits: list[float] = []
    result = complete_with_retries(
        endpoint(provider),
        ask("ALWAYS500"),
        SAMPLING,
        max_retries=2,
        backoff_seconds=0.01,
        max_backoff_seconds=1.0,
        sleep=waits.append,
    )
    assert result.reply is None
    assert result.attempts == 3
    assert result.error == "HTTP 500 Internal Server Error (after 3 attempts)"
    assert len(provider.requests) == 3
    assert len(waits) == 2


def test_backoff_grows_exponentially_and_is_capped() -> None:
    delays = [backoff_delay(n, base=1.0, cap=5.0, retry_after=None) for n in range(5)]
    assert 0.5 <= delays[0] <= 1.0
    assert 1.0 <= delays[1] <= 2.0
    assert 2.0 <= delays[2] <= 4.0
    assert all(d <= 5.0 for d in delays)
    assert backoff_delay(0, base=1.0, cap=5.0, retry_after=3.0) == 3.0


def test_the_key_never_reaches_a_log_or_an_error(
    provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    endpoint(provider).complete(ask("cats"), SAMPLING)
    for word in ("ALWAYS500", "GARBAGE"):
        with pytest.raises(CallFailed) as failed:
            endpoint(provider).complete(ask(word), SAMPLING)
        assert API_KEY not in failed.value.message
    assert API_KEY not in caplog.text


def test_interceptions_are_recognised_with_their_reason() -> None:
    zh = language_patterns(DEFAULT_REFUSAL_PATTERNS, "zh")
    en = language_patterns(DEFAULT_REFUSAL_PATTERNS, "en")
    assert "哈哈你懂的" in zh
    assert "哈哈你懂的" not in en

    def reason(**kw: str) -> str | None:
        args = {"text": "A joke.", "finish_reason": "stop", "refusal": "", **kw}
        found = detect_interception(patterns=zh + en, **args)
        return found.reason if found else None

    assert reason() is None
    assert reason(refusal="I can't") == REFUSAL
    assert reason(finish_reason="content_filter") == CONTENT_FILTER
    assert reason(text="  ") == EMPTY
    assert reason(text="这个嘛……哈哈你懂的") == PATTERN
    assert reason(text="As an AI language model, I prefer puns.") == PATTERN
    # A joke that merely says sorry is a joke.
    assert reason(text="Sorry, I can't stop laughing at my own code.") is None
