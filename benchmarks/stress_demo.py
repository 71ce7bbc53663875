"""The demo's processes under stress, as a first user's laptop runs them: `rundemo` (the web
server, its supervised workers and beat) on SQLite and the embedded broker, with raters
answering over HTTP, a researcher crawling the pages, and an export and a screening rerun
asked for every minute. At the end it checks what the demo must never do: a worker that died
(the supervisor logs every exit), a CRITICAL line, a 5xx, or a job that did not finish.

    .venv/bin/python benchmarks/stress_demo.py                  # 10 minutes, 6 raters
    .venv/bin/python benchmarks/stress_demo.py --minutes 1 --raters 3   # the suite's version
    .venv/bin/python benchmarks/stress_demo.py --impatient      # enrolments retried at once

It prepares its own folder (migrate, seed_demo) and prints a JSON report; the exit status is 1
when any check fails. tests/demo/test_stress.py runs the short version.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SLUG = "demo"
CRAWL = [
    "/studies/",
    f"/studies/{SLUG}/",
    f"/studies/{SLUG}/results/",
    f"/studies/{SLUG}/results/models/",
    f"/studies/{SLUG}/results/items/",
    f"/studies/{SLUG}/results/agreement/",
    f"/studies/{SLUG}/exports/",
    f"/studies/{SLUG}/screening/",
    f"/studies/{SLUG}/exclusions/",
]


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: int = 0
    pages: int = 0
    # Most files the web server's process held open at once (sampled every second).
    peak_open_files: int = 0
    server_errors: list[str] = field(default_factory=list)
    exports: list[int] = field(default_factory=list)
    # Status of each screening rerun asked for (a 409 while a run is still going is fine).
    screening: list[int] = field(default_factory=list)

    def error(self, what: str) -> None:
        with self.lock:
            self.server_errors.append(what)


class Browser:
    """A cookie jar and urllib: what a browser does on these pages, minus the rendering."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def csrf(self) -> str:
        return next((c.value or "" for c in self.jar if c.name == "csrftoken"), "")

    def request(
        self, path: str, *, form: dict[str, Any] | None = None, body: Any = None
    ) -> tuple[int, str, str]:
        headers = {"Referer": self.base + "/"}
        data = None
        if form is not None:
            data = urllib.parse.urlencode(form, doseq=True).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
            headers["X-CSRFToken"] = self.csrf()
        url = path if path.startswith("http") else self.base + path
        request = urllib.request.Request(url, data=data, headers=headers)
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, response.geturl(), response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, url, exc.read().decode(errors="replace")
        except (TimeoutError, urllib.error.URLError, ConnectionError):
            # No answer within a minute, or none at all: reported as status 599, an error.
            return 599, url, ""


def _attr(html: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]*)"', html)
    return found.group(1) if found else ""


def _answer_scorecard(browser: Browser, html: str) -> tuple[int, str]:
    assignment = int(_attr(html, "data-assignment"))
    fieldsets = re.findall(r'<fieldset class="question"[^>]*>.*?</fieldset>', html, flags=re.S)
    answers: dict[str, dict[str, Any]] = {}
    after: set[str] = set()
    for block in fieldsets:
        name = _attr(block, "data-question")
        after |= set(filter(None, _attr(block, "data-after").split(",")))
        values = list(re.findall(r'type="radio"[^>]*value="([^"]+)"', block))
        values = [v for v in values if v != "not_understood"]
        if values:
            answers[name] = {"value": float(values[len(values) // 2]), "at_ms": 1500}
        else:
            answers[name] = {"value": float(_attr(block, "data-min")), "at_ms": 1500}
    early = {name: answers[name] for name in after if name in answers}
    if early:
        browser.request(
            f"/api/v1/rater/{SLUG}/scorecards/early",
            body={"assignment": assignment, "active_ms": 3000, "answers": early},
        )
    rest = {name: value for name, value in answers.items() if name not in early}
    return browser.request(
        f"/api/v1/rater/{SLUG}/scorecards",
        body={
            "assignment": assignment,
            "idempotency_key": f"stress-{assignment}-{time.monotonic_ns()}",
            "active_ms": 4000,
            "answers": rest,
        },
    )[::2]


def rater(base: str, stop: threading.Event, tally: Tally, *, impatient: bool = False) -> None:
    """Enrol, answer every task the session gives, and start again as a new rater. An impatient
    rater asks again at once after the enrolment rate limit (a script, or a person who keeps
    reloading): a flood the server must turn away without failing anyone else."""
    while not stop.is_set():
        browser = Browser(base)
        status, _, html = browser.request(f"/s/{SLUG}/")
        if status >= 500:
            tally.error(f"enrol page {status}")
            stop.wait(2)
            continue
        form = {
            "csrfmiddlewaretoken": browser.csrf(),
            "background": _attr(html, 'name="background" value') or "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": re.findall(r'name="languages" value="([^"]+)"', html) or ["en"],
        }
        status, _, html = browser.request(f"/s/{SLUG}/", form=form)
        if status == 429:
            # The enrolment rate limit (per address: every simulated rater shares one): wait as
            # a person would, instead of asking again at once.
            stop.wait(0 if impatient else 5)
            continue
        while not stop.is_set() and 'data-page="end"' not in html and status < 500:
            kind = _attr(html, "data-task")
            if kind == "scorecard":
                status, reply = _answer_scorecard(browser, html)
            elif kind in ("pair", "turing"):
                field_name, value = ("winner", "left") if kind == "pair" else ("guess", "ai")
                status, _, reply = browser.request(
                    f"/api/v1/rater/{SLUG}/{'pairs' if kind == 'pair' else 'turing'}",
                    body={
                        "assignment": int(_attr(html, "data-assignment")),
                        "idempotency_key": f"stress-{kind}-{time.monotonic_ns()}",
                        "active_ms": 3000,
                        field_name: value,
                    },
                )
            elif kind == "explanation":
                status, _, reply = browser.request(
                    f"/api/v1/rater/{SLUG}/explanations",
                    body={"response": int(_attr(html, "data-response")), "verdict": "yes"},
                )
            else:
                break  # a page without a task (full, closed): a new rater
            if status >= 500:
                tally.error(f"{kind} submit {status}")
                break
            if status in (200, 201):
                with tally.lock:
                    tally.answers += 1
                next_url = json.loads(reply).get("next") or f"/s/{SLUG}/task/"
            else:
                next_url = f"/s/{SLUG}/task/"
            status, _, html = browser.request(next_url)
            if status >= 500:
                tally.error(f"task page {status}")


def crawler(base: str, username: str, password: str, stop: threading.Event, tally: Tally) -> None:
    browser = Browser(base)
    browser.request("/accounts/login/")
    browser.request(
        "/accounts/login/",
        form={"csrfmiddlewaretoken": browser.csrf(), "username": username, "password": password},
    )
    while not stop.is_set():
        for path in CRAWL:
            status, _, _ = browser.request(path)
            with tally.lock:
                tally.pages += 1
            if status >= 500:
                tally.error(f"GET {path} {status}")
            if stop.is_set():
                return


def jobs(base: str, token: str, browser: Browser, stop: threading.Event, tally: Tally) -> None:
    """An export and a screening rerun every minute (the first at once)."""
    api = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    while not stop.is_set():
        request = urllib.request.Request(
            f"{base}/api/v1/studies/{SLUG}/exports/",
            data=json.dumps({"format": "raw"}).encode(),
            headers=api,
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response, tally.lock:
                tally.exports.append(int(json.loads(response.read())["id"]))
        except urllib.error.HTTPError as exc:
            tally.error(f"export request {exc.code}")
        page = browser.request(f"/studies/{SLUG}/screening/")[2]
        form = {"csrfmiddlewaretoken": browser.csrf(), "rerun": "1"}
        form["top_k"] = _attr(page, 'name="top_k" value') or "5"
        status = browser.request(f"/studies/{SLUG}/screening/run/", form=form)[0]
        with tally.lock:
            tally.screening.append(status)
        if status >= 500:
            tally.error(f"screening rerun {status}")
        stop.wait(60)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _watch_open_files(pid: int, stop: threading.Event, tally: Tally) -> None:
    fd_dir = Path(f"/proc/{pid}/fd")
    while not stop.wait(1):
        try:
            count = len(os.listdir(fd_dir))
        except OSError:
            return  # not Linux, or the server is gone
        with tally.lock:
            tally.peak_open_files = max(tally.peak_open_files, count)


def run(*, minutes: float, raters: int, folder: Path, impatient: bool = False) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        DEBUG="1",
        LAUGHLAB_VAR_DIR=str(folder),
        DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING",
    )
    env.setdefault("TEXT_MODEL_DIR", str(ROOT / "var" / "models"))
    _manage(env, "migrate", "--noinput")
    _manage(env, "seed_demo")
    code = (
        "from django.contrib.auth.models import User; "
        "from rest_framework.authtoken.models import Token; "
        "from django.conf import settings; "
        "u = User.objects.get(username=settings.DEMO_RESEARCHER_USERNAME); "
        "print(Token.objects.get_or_create(user=u)[0].key); "
        "print(settings.DEMO_RESEARCHER_USERNAME); print(settings.DEMO_RESEARCHER_PASSWORD)"
    )
    token, username, password = _manage(env, "shell", "-c", code).strip().splitlines()[-3:]
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = folder / "rundemo.log"
    demo = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "rundemo", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
    )
    tally = Tally()
    stop = threading.Event()
    started = time.monotonic()
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        researcher = Browser(base)
        researcher.request("/accounts/login/")
        researcher.request(
            "/accounts/login/",
            form={
                "csrfmiddlewaretoken": researcher.csrf(),
                "username": username,
                "password": password,
            },
        )
        threads = [
            threading.Thread(
                target=rater, args=(base, stop, tally), kwargs={"impatient": impatient}, daemon=True
            )
            for _ in range(raters)
        ]
        threads.append(
            threading.Thread(target=_watch_open_files, args=(demo.pid, stop, tally), daemon=True)
        )
        threads.append(
            threading.Thread(
                target=crawler, args=(base, username, password, stop, tally), daemon=True
            )
        )
        threads.append(
            threading.Thread(target=jobs, args=(base, token, researcher, stop, tally), daemon=True)
        )
        for thread in threads:
            thread.start()
        stop.wait(minutes * 60)
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
        # Every job asked for finishes within its usual time once the load stops.
        unfinished: dict[int, str] = {}
        deadline = time.monotonic() + 180
        api = {"Authorization": f"Token {token}"}
        while time.monotonic() < deadline:
            unfinished = {}
            for job in tally.exports:
                request = urllib.request.Request(
                    f"{base}/api/v1/studies/{SLUG}/exports/{job}/", headers=api
                )
                with urllib.request.urlopen(request, timeout=30) as response:
                    state = json.loads(response.read())["status"]
                if state != "done":
                    unfinished[job] = state
            if not unfinished:
                break
            time.sleep(1)
    finally:
        demo.send_signal(signal.SIGTERM)
        try:
            demo.wait(timeout=60)
        except subprocess.TimeoutExpired:
            demo.kill()
    log = log_path.read_text(errors="replace")
    report = {
        "minutes": minutes,
        "raters": raters,
        "impatient": impatient,
        "peak_open_files": tally.peak_open_files,
        "seconds": round(time.monotonic() - started, 1),
        "answers": tally.answers,
        "pages": tally.pages,
        "exports": len(tally.exports),
        "exports_unfinished": unfinished,
        "screening_reruns": {
            str(code): tally.screening.count(code) for code in set(tally.screening)
        },
        "server_errors": tally.server_errors[:20],
        "worker_deaths": re.findall(r"the [\w -]+ \(pid \d+\) exited with code [-\d]+", log),
        "critical_lines": [line for line in log.splitlines() if "CRITICAL" in line][:20],
        # A 503 the server gave for its database, with SQLite's own name for the error (a
        # busy timeout run out, or a write begun on a stale read): what a server error means.
        "database_unavailable": [
            line for line in log.splitlines() if "database unavailable during" in line
        ][:20],
    }
    report["ok"] = not (
        report["exports_unfinished"]
        or report["server_errors"]
        or report["worker_deaths"]
        or report["critical_lines"]
        or tally.answers == 0
    )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--raters", type=int, default=6)
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument(
        "--impatient",
        action="store_true",
        help="raters ask to enrol again at once after a 429 instead of waiting 5 s",
    )
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="laughlab-stress-"))
    report = run(minutes=args.minutes, raters=args.raters, folder=folder, impatient=args.impatient)
    print(json.dumps(report, indent=1))
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
