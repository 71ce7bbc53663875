"""Calling a model: an OpenAI-compatible chat-completions endpoint, or a local generator.

`complete` makes one call and returns a `Reply` or raises `CallFailed`, which says whether the
failure is worth another attempt (429, 5xx, a timeout, a dropped connection) and how long the
server asked to wait. `complete_with_retries` adds the attempts with exponential backoff.

The API key travels only in the Authorization header: it is never part of a message, an error,
a stored request or a log line. Redirects are refused, so the key cannot follow one elsewhere.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from apps.core import jsonsafe, outbound
from apps.screening.llm_judge import chat_completions_url

MAX_REPLY_BYTES = 2_000_000
_READ_CHUNK = 65_536
# Longest wait honoured from a Retry-After header, in seconds.
MAX_RETRY_AFTER = 60.0


@dataclass(frozen=True)
class Sampling:
    temperature: float
    top_p: float
    max_tokens: int
    seed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            values["seed"] = self.seed
        return values


@dataclass(frozen=True)
class Reply:
    text: str
    finish_reason: str
    refusal: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float


class CallFailed(Exception):
    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


class Generator(Protocol):
    """Anything that answers chat messages: the HTTP client below, or a local model."""

    def complete(self, messages: list[dict[str, str]], sampling: Sampling) -> Reply: ...


def url_problem(url: str) -> str:
    """Why the endpoint may not be called: scheme, credentials and the address rule of
    apps/core/outbound.py (public addresses, or the deployment's OUTBOUND_ALLOWED_NETWORKS)."""
    return outbound.url_problem(url, keys_setting="GENERATION_API_KEYS")


def url_host(url: str) -> str:
    parts = urlsplit(url)
    if not parts.hostname:
        return ""
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


def _read_body(response: http.client.HTTPResponse, *, deadline: float) -> bytes:
    # Chunked reads against a deadline: a server trickling bytes still times out.
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("the reply did not arrive in time")
        chunk = response.read1(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise CallFailed(f"the reply is larger than {MAX_REPLY_BYTES} bytes", retryable=False)
        chunks.append(chunk)


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | socket.timeout):
        return True
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        return isinstance(exc.reason, TimeoutError | socket.timeout)
    return False


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    if seconds is None or not 0 <= seconds < float("inf"):
        return None
    return min(seconds, MAX_RETRY_AFTER)


def _count(usage: Any, name: str) -> int | None:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def storable_text(value: str) -> str:
    """Text as the database can hold it: no NUL, no lone surrogate (JSON escapes allow both)."""
    return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def parse_reply(body: bytes, *, latency_ms: float) -> Reply:
    """The first choice of a chat-completions reply; anything else is a failed call."""
    try:
        # jsonsafe refuses nesting deep enough to exhaust the stack (a RecursionError would
        # escape as an uncaught error and leave the output running forever).
        envelope = jsonsafe.loads(body)
    except (UnicodeDecodeError, ValueError):
        # Never the reply's own bytes: the endpoint may be an internal service that answered,
        # and what it said is not the researcher's to read.
        raise CallFailed(
            f"the reply is not JSON ({len(body)} bytes; not shown)", retryable=False
        ) from None
    try:
        choice = envelope["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise CallFailed("the reply has no choices[0].message", retryable=False) from None
    if not isinstance(message, dict):
        raise CallFailed("choices[0].message is not an object", retryable=False)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise CallFailed("choices[0].message.content is not text", retryable=False)
    refusal = message.get("refusal")
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    usage = envelope.get("usage") if isinstance(envelope, dict) else None
    return Reply(
        text=storable_text(content or ""),
        finish_reason=storable_text(finish) if isinstance(finish, str) else "",
        refusal=storable_text(refusal) if isinstance(refusal, str) else "",
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        latency_ms=latency_ms,
    )


@dataclass(frozen=True)
class ChatEndpoint:
    url: str
    model: str
    api_key: str
    timeout_seconds: float

    def complete(self, messages: list[dict[str, str]], sampling: Sampling) -> Reply:
        problem = url_problem(self.url)
        if problem:
            raise CallFailed(problem, retryable=False)
        body = json.dumps(
            {"model": self.model, "messages": messages, **sampling.as_dict()}, ensure_ascii=False
        ).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            chat_completions_url(self.url), data=body, headers=headers, method="POST"
        )
        started = time.monotonic()
        try:
            with outbound.opener().open(request, timeout=self.timeout_seconds) as response:
                raw = _read_body(response, deadline=started + self.timeout_seconds)
        except urllib.error.HTTPError as exc:
            code = exc.code
            retryable = code == 429 or code >= 500
            raise CallFailed(
                f"HTTP {code} {exc.reason}".strip(),
                retryable=retryable,
                retry_after=_retry_after(exc),
            ) from None
        except CallFailed:
            raise
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if outbound.refused(exc):
                # The address rule: retrying cannot help, and nothing was sent.
                raise CallFailed(outbound.refused(exc), retryable=False) from None
            if _is_timeout(exc):
                raise CallFailed(
                    f"no reply within {self.timeout_seconds:g} s", retryable=True
                ) from None
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise CallFailed(
                f"request failed: {reason or type(exc).__name__}", retryable=True
            ) from None
        latency = round((time.monotonic() - started) * 1000.0, 1)
        return parse_reply(raw, latency_ms=latency)


@dataclass(frozen=True)
class Attempted:
    reply: Reply | None
    attempts: int
    error: str


def backoff_delay(attempt: int, *, base: float, cap: float, retry_after: float | None) -> float:
    """Seconds before attempt `attempt + 1`: exponential with jitter, or what the server asked."""
    if retry_after is not None:
        return min(retry_after, cap)
    return min(cap, base * (2**attempt)) * (0.5 + random.random() / 2)


def complete_with_retries(
    generator: Generator,
    messages: list[dict[str, str]],
    sampling: Sampling,
    *,
    max_retries: int,
    backoff_seconds: float,
    max_backoff_seconds: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Attempted:
    """One answer, trying again after a retryable failure up to `max_retries` more times."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return Attempted(generator.complete(messages, sampling), attempt, "")
        except CallFailed as exc:
            if not exc.retryable or attempt > max_retries:
                suffix = f" (after {attempt} attempts)" if attempt > 1 else ""
                return Attempted(None, attempt, exc.message + suffix)
            sleep(
                backoff_delay(
                    attempt - 1,
                    base=backoff_seconds,
                    cap=max_backoff_seconds,
                    retry_after=exc.retry_after,
                )
            )
