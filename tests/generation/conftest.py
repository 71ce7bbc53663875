"""A chat-completions service started by the tests, standing in for a model provider: it answers
by what the last user message asks for (slow, 429, 500, refusal, content filter, garbage, empty,
a deflection), and records every request it got."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

API_KEY = "sk-generation-test-key-8a7b6c"
EXPLAIN_MARK = "explain why your joke is funny"


@dataclass
class FakeProvider:
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Failures still to give per behaviour word, e.g. {"FLAKY429": 2}.
    failures: Counter[str] = field(default_factory=Counter)
    slow_seconds: float = 2.0
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    hold_seconds: float = 0.0


def _envelope(
    content: str | None,
    *,
    finish: str = "stop",
    refusal: str | None = None,
    usage: bool = True,
) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 21, "completion_tokens": 13, "total_tokens": 34}
    return json.dumps(body).encode()  # ASCII with escapes, as JSON allows


def answer(provider: FakeProvider, body: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
    """(status, body, headers) for a request."""
    last = body["messages"][-1]["content"]
    first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if EXPLAIN_MARK in last.lower() or "为什么好笑" in last:
        return 200, _envelope("It is funny because the ending flips the setup."), {}
    for word in ("FLAKY429", "FLAKY500"):
        if word in first_user and provider.failures[word] > 0:
            provider.failures[word] -= 1
            code = 429 if word == "FLAKY429" else 503
            return code, b'{"error": {"message": "slow down"}}', {"Retry-After": "0"}
    if "ALWAYS500" in first_user:
        return 500, b'{"error": "boom"}', {}
    if "ALWAYS429" in first_user:
        return 429, b'{"error": "rate limited"}', {"Retry-After": "0"}
    if "SLOW" in first_user:
        time.sleep(provider.slow_seconds)
    if "REFUSE" in first_user:
        return 200, _envelope(None, refusal="I can't write that."), {}
    if "FILTER" in first_user:
        return 200, _envelope("Why did the", finish="content_filter"), {}
    if "GARBAGE" in first_user:
        return 200, b"<html>not json at all", {}
    if "DEEPJSON" in first_user:
        # Deep enough to exhaust Python's stack in a plain json.loads.
        return 200, b"[" * 100_000 + b"]" * 100_000, {}
    if "EMPTY" in first_user:
        return 200, _envelope("   "), {}
    if "HUGE" in first_user:
        return 200, _envelope("ha " * 9000), {}
    if "NUL" in first_user:
        return 200, _envelope("Why\u0000 did the \ud800 chicken?"), {}
    if "DEFLECT" in first_user:
        return 200, _envelope("哈哈你懂的"), {}
    return 200, _envelope(f"A joke for: {first_user[:40]}"), {}


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    fake = FakeProvider()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            with fake.lock:
                fake.requests.append({"path": self.path, "headers": dict(self.headers), **body})
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            try:
                if fake.hold_seconds:
                    time.sleep(fake.hold_seconds)
                if self.path != "/v1/chat/completions":
                    status, payload, headers = 404, b"{}", {}
                else:
                    status, payload, headers = answer(fake, body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                with fake.lock:
                    fake.in_flight -= 1

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def fast_backoff(settings: Any) -> None:
    settings.GENERATION_BACKOFF_SECONDS = 0.0
    settings.GENERATION_MAX_BACKOFF_SECONDS = 0.0
