"""Load benchmark of the rater flow: gunicorn + PostgreSQL on this machine, asyncio raters.

    .venv/bin/python benchmarks/load/run_load.py                 # baseline 10, then 200 raters
    .venv/bin/python benchmarks/load/run_load.py --raters 200 --baseline 10 --think-ms 0

The orchestrator (this process) makes a fresh `laughlab_load` database, seeds the demo study,
opens it up for many tasks, starts gunicorn, runs each load phase in a separate client process
(`--client`), checks the stored judgments against the acknowledged idempotency keys, stops
gunicorn by its PID and drops the database. Traffic goes only to 127.0.0.1.

Before the raters (unless `--ceiling-s 0`), the same gunicorn serves a minimal Django view for
`--ceiling-s` seconds (`GET /healthz`: every middleware, no database, a 16-byte JSON answer)
to as many keep-alive connections as the load phase has raters, with no pause: its requests per
second are the most this server and client can do on this machine, the ceiling the rater flow
is reported against (answers/s and requests/s as a share of it).

With `--worker` a Celery worker (one process, as a small deployment runs it) computes the results
while the raters answer, started and ready before the phase. A probe reads the database once a
second during the phase (how long the oldest stored judgment the latest results leave out has
waited) and records each run's claim, start and end; after the phase it computes every
judgment's wait, from its storing (`created_at`, its INSERT in the answer's transaction) to the
end of the run that included it, against the bound the design promises: one debounce interval
(AGGREGATE_DEBOUNCE_SECONDS) plus one aggregation, that run counted from when it was due (its
claim plus the debounce) and from its start, to its results stored. It also reports how late
the worker started each run after it was due.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import json
import os
import random
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_split import CpuSplit  # beside this file

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv" / "bin"
# LOAD_DB_NAME: a database of one's own when several checkouts share the server.
DB_NAME = os.environ.get("LOAD_DB_NAME", "laughlab_load")
SLUG = "demo"
HOST = "127.0.0.1"
TARGET_P99_MS = 50.0

# --------------------------------------------------------------------------------------------
# Client: a minimal HTTP/1.1 keep-alive client over asyncio streams, one connection per rater
# (as a browser would hold one), with its own cookie jar.
# --------------------------------------------------------------------------------------------


class HttpError(Exception):
    pass


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    set_cookies: list[str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Client:
    def __init__(self, port: int, timeout: float) -> None:
        self.port = port
        self.timeout = timeout
        self.cookies: dict[str, str] = {}
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.connects = 0
        self.requests = 0

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
        self.connects += 1

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> Response:
        """One request; a reused connection the server closed meanwhile is reopened once."""
        self.requests += 1
        for attempt in range(2):
            reused = self.writer is not None
            if not reused:
                await self._connect()
            try:
                return await asyncio.wait_for(
                    self._exchange(method, path, body, headers or {}), self.timeout
                )
            except (ConnectionError, asyncio.IncompleteReadError, HttpError) as exc:
                await self.close()
                if not reused or attempt == 1:
                    raise HttpError(f"{method} {path}: {exc!r}") from exc
        raise AssertionError("unreachable")

    async def _exchange(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> Response:
        assert self.reader is not None
        assert self.writer is not None
        lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{self.port}", "Connection: keep-alive"]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise HttpError("connection closed before a response")
        parts = status_line.decode("latin-1").split(" ", 2)
        status = int(parts[1])
        resp_headers: dict[str, str] = {}
        set_cookies: list[str] = []
        while True:
            line = (await self.reader.readline()).decode("latin-1").rstrip("\r\n")
            if not line:
                break
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                set_cookies.append(value)
            resp_headers[name] = value
        if resp_headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                chunks.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            payload = b"".join(chunks)
        elif "content-length" in resp_headers:
            payload = await self.reader.readexactly(int(resp_headers["content-length"]))
        else:
            payload = await self.reader.read()
            resp_headers["connection"] = "close"
        for cookie in set_cookies:
            name, _, rest = cookie.partition("=")
            value = rest.split(";", 1)[0]
            if "max-age=0" in cookie.lower():
                self.cookies.pop(name.strip(), None)
            else:
                self.cookies[name.strip()] = value
        if resp_headers.get("connection", "").lower() == "close":
            await self.close()
        return Response(status, resp_headers, set_cookies, payload)

    async def get_following(self, path: str) -> tuple[Response, str]:
        """GET, following redirects (at most 5) like a browser; returns the page and its path."""
        for _ in range(5):
            response = await self.request("GET", path)
            if response.status in (301, 302, 303) and "location" in response.headers:
                path = response.headers["location"]
                continue
            return response, path
        raise HttpError(f"redirect loop at {path}")


# --- page parsing ----------------------------------------------------------------------------

FORM_RE = re.compile(r"<form[^>]*\bdata-task=\"(\w+)\"[^>]*>")
ATTR_RE = re.compile(r"data-(assignment|response|submit-url|early-url)=\"([^\"]*)\"")
CSRF_RE = re.compile(r"name=\"csrfmiddlewaretoken\" value=\"([^\"]+)\"")
FIELDSET_RE = re.compile(r"<fieldset([^>]*data-question=\"(\w+)\"[^>]*)>(.*?)</fieldset>", re.S)
AFTER_RE = re.compile(r"data-after=\"([^\"]*)\"")
LAYOUT_RE = re.compile(r"data-layout=\"([^\"]*)\"")
ASSIGNMENT_RE = re.compile(r"data-assignment=\"\d+\"")
# The first step of a scorecard (the answers others depend on), recorded beside the answers.
EARLY = "scorecard-early"
RADIO_RE = re.compile(r"<input type=\"radio\" name=\"(\w+)\" value=\"([^\"]+)\"")
OPTION_RE = re.compile(r"<option value=\"([^\"]+)\"")
# The languages a rater reads (asked only in a study with several): every one is ticked.
LANGUAGE_RE = re.compile(r"<input type=\"checkbox\" name=\"languages\" value=\"([^\"]+)\"")


@dataclass
class Answer:
    rater: int
    kind: str
    key: str  # idempotency key, or "explanation:<response id>"
    status: int
    latency_ms: float
    replayed: bool = False
    retries: int = 0
    at_s: float = 0.0  # when the answer was sent, in seconds from the start of the phase


@dataclass
class RaterResult:
    index: int
    answers: list[Answer] = field(default_factory=list)
    enroll_status: int = 0
    enroll_ms: float = 0.0
    finished: bool = False
    error: str = ""
    connects: int = 0
    requests: int = 0


class KeptForms:
    """The forms a rater page keeps, one per layout, as it first showed them (rater.js
    `keepForm`): the answer names their layouts, and a next task of one of them comes as its
    items alone, shown in the kept form."""

    LIMIT = 8  # as rater.js and the server

    def __init__(self) -> None:
        self._forms: dict[str, str] = {}

    def keep(self, page: str) -> None:
        layout = LAYOUT_RE.search(page)
        name = layout.group(1) if layout else ""
        if name and name not in self._forms and len(self._forms) < self.LIMIT:
            self._forms[name] = page

    def layouts(self) -> list[str]:
        return list(self._forms)

    def form(self, layout: str) -> str | None:
        return self._forms.get(layout)


def _task_payload(
    kind: str,
    page: str,
    rng: random.Random,
    in_place: bool = True,
    kept: KeptForms | None = None,
) -> tuple[str, dict[str, Any], tuple[str, dict[str, Any]] | None]:
    """The answer to the page's task, and for a scorecard the first step that goes before it
    (the answers other questions depend on, as rater.js sends them), as (url, body).
    `in_place`: the answer asks for the next task (`with_next`), naming the layouts whose form
    the page keeps (`kept`), as rater.js does."""
    layouts = kept.layouts() if kept is not None and in_place else []
    attrs = dict(ATTR_RE.findall(FORM_RE.search(page).group(0)))  # type: ignore[union-attr]
    url = attrs["submit-url"]
    if kind == "explanation":
        verdict = {
            "response": int(attrs["response"]),
            "verdict": rng.choice(["yes", "no"]),
            "with_next": in_place,
            "layouts": layouts,
        }
        return url, verdict, None
    body: dict[str, Any] = {
        "assignment": int(attrs["assignment"]),
        "idempotency_key": uuid.uuid4().hex,
    }
    at_ms = rng.randint(1500, 4000)
    early: tuple[str, dict[str, Any]] | None = None
    if kind == "scorecard":
        answers: dict[str, dict[str, int]] = {}
        needed: set[str] = set()
        # Fieldsets come in the rubric's order, so increasing times respect answered_after.
        for tag, name, inner in FIELDSET_RE.findall(page):
            after = AFTER_RE.search(tag)
            needed.update(n for n in (after.group(1) if after else "").split(",") if n)
            values = [int(v) for n, v in RADIO_RE.findall(inner) if n == name]
            if values:
                answers[name] = {"value": rng.choice(values), "at_ms": at_ms}
                at_ms += rng.randint(400, 2500)
        body["answers"] = answers
        first = {name: answer for name, answer in answers.items() if name in needed}
        if first and attrs.get("early-url"):
            active = max(answer["at_ms"] for answer in first.values())
            early = (
                attrs["early-url"],
                {"assignment": body["assignment"], "active_ms": active, "answers": first},
            )
    elif kind == "pair":
        body["winner"] = rng.choice(["left", "right"])
    elif kind == "turing":
        body["guess"] = rng.choice(["ai", "human"])
    body["active_ms"] = at_ms
    body["with_next"] = in_place
    layout = LAYOUT_RE.search(page)
    body["layout"] = layout.group(1) if layout else ""
    body["layouts"] = layouts
    return url, body, early


def shown_next(page: str, data: dict[str, Any], kept: KeptForms | None = None) -> str | None:
    """The page after an answer that brought the next task, as rater.js shows it: the same
    page, or the form kept for the task's layout, with the next task's assignment (its items
    swapped in; only the assignment is read from them here); or the next task's whole form.
    None: the answer brought none (`next`)."""
    task = data.get("task")
    if not task:
        return None
    if task.get("content") is not None:
        layout = LAYOUT_RE.search(page)
        same = layout is not None and layout.group(1) == task["layout"]
        base = page if same else kept.form(task["layout"]) if kept is not None else None
        if base is None:
            return None
        return ASSIGNMENT_RE.sub(f'data-assignment="{task["id"]}"', base, count=1)
    return str(task["form"])


async def run_rater(
    index: int,
    port: int,
    think_ms: float,
    timeout: float,
    max_tasks: int,
    arrive_s: float = 0.0,
    phase_start: float = 0.0,
    in_place: bool = True,
) -> RaterResult:
    rng = random.Random(index)
    result = RaterResult(index)
    client = Client(port, timeout)
    kept = KeptForms()
    if arrive_s:
        await asyncio.sleep(arrive_s)
    try:
        entry = f"/s/{SLUG}/"
        started = time.perf_counter()
        page = await client.request("GET", entry)
        if page.status != 200:
            raise HttpError(f"entry GET {page.status}")
        backgrounds = sorted(set(re.findall(r'name="background" value="([^"]+)"', page.text)))
        select = re.search(r'<select name="age_band".*?</select>', page.text, re.S)
        ages = [a for a in OPTION_RE.findall(select.group(0)) if a] if select else []
        csrf = CSRF_RE.search(page.text)
        if not backgrounds or not ages or csrf is None:
            raise HttpError("enrolment form not understood")
        form = urlencode(
            {
                "csrfmiddlewaretoken": csrf.group(1),
                "background": backgrounds[index % len(backgrounds)],
                "age_band": ages[index % len(ages)],
                "consent": "on",
                "languages": LANGUAGE_RE.findall(page.text),
            },
            doseq=True,
        ).encode()
        enrolled = await client.request(
            "POST",
            entry,
            form,
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        result.enroll_status = enrolled.status
        if enrolled.status != 302:
            alerts = re.findall(r'role="alert">([^<]*)', enrolled.text)
            raise HttpError(f"enrol POST {enrolled.status}: {alerts}")
        current, path = await client.get_following(enrolled.headers["location"])
        result.enroll_ms = (time.perf_counter() - started) * 1000
        for _ in range(max_tasks):
            if current.status != 200:
                raise HttpError(f"GET {path} answered {current.status}")
            match = FORM_RE.search(current.text)
            if match is None:
                result.finished = path.rstrip("/").endswith("/end")
                if not result.finished:
                    raise HttpError(f"no task form on {path}")
                break
            kind = match.group(1)
            kept.keep(current.text)
            url, body, early = _task_payload(kind, current.text, rng, in_place, kept)
            think = rng.uniform(0.5, 1.5) * think_ms / 1000 if think_ms else 0.0
            headers = {
                "Content-Type": "application/json",
                "Accept": "application/json",
                "X-CSRFToken": client.cookies.get("csrftoken", ""),
            }
            if early is not None:
                # Surprise and coherence are set about halfway through the scorecard.
                if think:
                    await asyncio.sleep(think / 2)
                    think /= 2
                result.answers.append(await _send_early(client, index, early, headers, phase_start))
            if think:
                await asyncio.sleep(think)
            key = body.get("idempotency_key") or f"explanation:{body['response']}"
            payload = json.dumps(body).encode()
            t0 = time.perf_counter()
            sent_at = t0 - phase_start
            retries = 0
            while True:
                # As rater.js does: a lost connection or a 5xx is retried with the same key.
                try:
                    posted = await client.request("POST", url, payload, headers)
                except HttpError:
                    posted = Response(599, {}, [], b"")
                if (posted.status >= 500) and retries < 3:
                    retries += 1
                    await asyncio.sleep(0.2 * retries)
                    continue
                break
            answer = Answer(index, kind, key, posted.status, 0.0, retries=retries, at_s=sent_at)
            if not 200 <= posted.status < 300:
                answer.latency_ms = (time.perf_counter() - t0) * 1000
                result.answers.append(answer)
                raise HttpError(f"POST {url} answered {posted.status}: {posted.text[:200]}")
            data = json.loads(posted.body)
            answer.replayed = bool(data.get("replayed"))
            shown = shown_next(current.text, data, kept)
            if shown is not None:
                current = Response(200, {}, [], shown.encode())
            else:
                current, path = await client.get_following(data["next"])
            answer.latency_ms = (time.perf_counter() - t0) * 1000
            result.answers.append(answer)
        else:
            raise HttpError(f"more than {max_tasks} pages: the session did not end")
    except (TimeoutError, HttpError, OSError, ValueError, KeyError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        result.connects = client.connects
        result.requests = client.requests
        await client.close()
    return result


async def _send_early(
    client: Client,
    index: int,
    early: tuple[str, dict[str, Any]],
    headers: dict[str, str],
    phase_start: float,
) -> Answer:
    """The first step of a scorecard; a lost connection or a 5xx is retried, as rater.js does."""
    url, body = early
    t0 = time.perf_counter()
    retries = 0
    while True:
        try:
            posted = await client.request("POST", url, json.dumps(body).encode(), headers)
        except HttpError:
            posted = Response(599, {}, [], b"")
        if posted.status >= 500 and retries < 3:
            retries += 1
            await asyncio.sleep(0.2 * retries)
            continue
        break
    key = f"early:{body['assignment']}"
    answer = Answer(index, EARLY, key, posted.status, 0.0, retries=retries, at_s=t0 - phase_start)
    answer.latency_ms = (time.perf_counter() - t0) * 1000
    if posted.status != 200:
        raise HttpError(f"POST {url} answered {posted.status}: {posted.text[:200]}")
    return answer


async def run_client(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    # Raters arrive spread evenly over the ramp (all at once without one), as people clicking a
    # study link over the first minutes; every one of them is then in a session at the same time.
    raters = [
        run_rater(
            args.offset + i,
            args.port,
            args.think_ms,
            args.request_timeout,
            args.max_tasks,
            arrive_s=args.ramp_s * i / max(1, args.raters),
            phase_start=started,
            in_place=args.next_page == "in-place",
        )
        for i in range(args.raters)
    ]
    results = await asyncio.wait_for(asyncio.gather(*raters), args.phase_timeout)
    return {
        "seconds": time.perf_counter() - started,
        "raters": [asdict(r) for r in results],
    }


async def run_ceiling_client(args: argparse.Namespace) -> dict[str, Any]:
    """`args.raters` connections GETting the minimal view back to back for `args.ceiling_s`."""
    deadline = time.perf_counter() + args.ceiling_s
    failures = 0

    async def one() -> int:
        nonlocal failures
        client = Client(args.port, args.request_timeout)
        done = 0
        try:
            while time.perf_counter() < deadline:
                response = await client.request("GET", CEILING_PATH)
                if response.status == 200:
                    done += 1
                else:
                    failures += 1
        except HttpError:
            failures += 1
        finally:
            await client.close()
        return done

    started = time.perf_counter()
    counts = await asyncio.gather(*(one() for _ in range(args.raters)))
    return {"seconds": time.perf_counter() - started, "requests": sum(counts), "failed": failures}


# --------------------------------------------------------------------------------------------
# Orchestrator
# --------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"postgres://postgres@{HOST}:5432/{DB_NAME}",
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "SECURE_HSTS_SECONDS": "0",
            "RATE_LIMIT_ENROLL": "0",
            "RATE_LIMIT_SUBMIT": "0",
            "REDIS_URL": f"redis://{HOST}:6379/14",
            "LOG_LEVEL": "WARNING",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
    )
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(VENV / "python"), "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.stdout


CONFIGURE = """
from apps.studies.models import Study
from apps.raters.models import BackgroundGroup
s = Study.objects.get(slug=%(slug)r)
s.target_scorecards_per_item = 400
s.turing_judgments_per_item = 200
s.adaptive_pairing = False
s.pair_appearances_per_item = 60
s.tasks_per_session = %(tasks)d
s.session_minutes = 60
s.status = Study.Status.OPEN
s.save()
BackgroundGroup.objects.filter(study=s).update(quota=None)
print(s.items.count(), s.status)
"""

STUDY_ID = """
from apps.studies.models import Study
print("STUDYID" + str(Study.objects.get(slug=%(slug)r).pk))
"""

VERIFY = """
import json
from apps.judgments.models import Origin, PairJudgment, ScoreResponse, TuringJudgment
keys = []
for model in (ScoreResponse, PairJudgment, TuringJudgment):
    keys += list(model.objects.filter(rater__study__slug=%(slug)r, origin=Origin.COLLECTED)
                 .values_list("idempotency_key", flat=True))
expl = list(ScoreResponse.objects.filter(rater__study__slug=%(slug)r, origin=Origin.COLLECTED)
            .exclude(explanation_match="").values_list("pk", flat=True))
print("LOADJSON" + json.dumps({"keys": keys, "explanations": expl}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, deadline: float) -> None:
    while time.time() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=1) as s:
                s.sendall(f"GET /s/{SLUG}/ HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError("gunicorn did not become ready")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# The judgments the results read (apps/analysis/selectors.py): an attention check's answer is
# not evidence, and storing it does not mark the results stale, so no run is owed for it.
EVIDENCE_SQL = """
    SELECT r.created_at FROM judgments_scoreresponse r
        JOIN studies_item i ON i.id = r.item_id
        WHERE r.study_id = %(study)s AND NOT i.is_attention_check
    UNION ALL SELECT p.created_at FROM judgments_pairjudgment p
        JOIN studies_item l ON l.id = p.left_id JOIN studies_item r ON r.id = p.right_id
        WHERE p.study_id = %(study)s AND NOT l.is_attention_check AND NOT r.is_attention_check
    UNION ALL SELECT t.created_at FROM judgments_turingjudgment t
        JOIN studies_item i ON i.id = t.item_id
        WHERE t.study_id = %(study)s AND NOT i.is_attention_check
"""

LAG_SQL = f"""
WITH latest AS (
    SELECT computed_at, duration_seconds,
           computed_at - make_interval(secs => duration_seconds) AS started
    FROM analysis_studyresult WHERE study_id = %(study)s
), waiting AS (
    SELECT min(created_at) AS oldest FROM ({EVIDENCE_SQL}) stored
    WHERE created_at > coalesce((SELECT started FROM latest), '-infinity'::timestamptz)
      AND created_at >= %(since)s
)
SELECT extract(epoch FROM now() - (SELECT oldest FROM waiting)),
       (SELECT duration_seconds FROM latest),
       (SELECT extract(epoch FROM last_started_at) FROM analysis_aggregationstate
        WHERE study_id = %(study)s AND last_finished_at > last_started_at),
       (SELECT extract(epoch FROM last_finished_at) FROM analysis_aggregationstate
        WHERE study_id = %(study)s AND last_finished_at > last_started_at),
       (SELECT extract(epoch FROM scheduled_at) FROM analysis_aggregationstate
        WHERE study_id = %(study)s AND scheduled),
       extract(epoch FROM now())
"""

STORED_SQL = f"""
SELECT extract(epoch FROM created_at) FROM ({EVIDENCE_SQL}) stored
WHERE created_at >= %(since)s
"""


class LagProbe(threading.Thread):
    """Once a second: how long the oldest judgment the latest results leave out has waited,
    and each finished run's start and end; after the phase, every judgment's wait.

    A run reads the judgments stored before it started (its `last_started_at`; the inputs
    are read after it) and its results are there once it finished (`last_finished_at`, set
    with the stored document). A judgment's wait is therefore exact: from its storing to the
    end of the first run that started after it. Each wait is held against the bound the
    design promises for it: one debounce interval plus that run, from when it was due and from
    its start, to its results stored. The once-a-second samples are kept for their percentiles; their
    maximum can miss up to a second of a peak, the waits cannot.
    """

    def __init__(self, dsn: str, study_id: int) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.study_id = study_id
        self.samples: list[float] = []
        self.durations: list[float] = []  # each run's `duration_seconds` (its computation)
        self.runs: dict[float, float] = {}  # each finished run's start -> its end (epoch s)
        self.stored: list[float] = []  # when each judgment of the phase was stored (epoch s)
        # Each claim (its due time less the debounce) -> when the probe first saw it. A claim
        # stays visible until its run starts, about a debounce, so a once-a-second read sees
        # each. A claim is dated by its evidence, which may precede the start of the run before
        # it; it belongs to the first run that started after it was seen.
        self.claims: dict[float, float] = {}
        self.since = 0.0  # the phase's start, the database's clock (epoch seconds)
        self.stopping = threading.Event()

    def run(self) -> None:
        import psycopg2

        connection = psycopg2.connect(self.dsn)
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                # Only the judgments of this phase: the demo's seeded ones are older than any run.
                cursor.execute("SELECT now()")
                since = cursor.fetchone()[0]
                self.since = since.timestamp()
                query = {"study": self.study_id, "since": since}
                while not self.stopping.wait(1.0):
                    cursor.execute(LAG_SQL, query)
                    waited, duration, started, finished, scheduled, seen = cursor.fetchone()
                    self.samples.append(float(waited or 0.0))
                    if started is not None and float(started) not in self.runs:
                        self.runs[float(started)] = float(finished)
                        self.durations.append(float(duration))
                    if scheduled is not None:
                        self.claims.setdefault(float(scheduled), float(seen))
                cursor.execute(STORED_SQL, query)
                self.stored = sorted(float(at) for (at,) in cursor.fetchall())
        finally:
            connection.close()

    def _claim_of(self, start: float) -> float | None:
        """The claim of the run that started at ``start``: the one last seen first before it."""
        seen = [(first_seen, claim) for claim, first_seen in self.claims.items()]
        before = [claim for first_seen, claim in sorted(seen) if first_seen <= start]
        return before[-1] if before else None

    def waits(self, debounce: float) -> Waits:
        """Each judgment's wait for the first finished run that started after it was stored,
        and its excess over the bound (negative: within it), counting one aggregation from
        the run's start and from the moment it was due (its claim + the debounce)."""
        starts = sorted(self.runs)
        found = Waits()
        for at in self.stored:
            first = bisect.bisect_left(starts, at)
            if first == len(starts):
                found.pending += 1
                continue
            started = starts[first]
            finished = self.runs[started]
            claimed = self._claim_of(started)
            found.at.append(at)
            found.waits.append(finished - at)
            found.from_start.append(finished - at - (debounce + finished - started))
            # Due at claim + debounce: the bound is then finished - claim.
            found.from_due.append(found.from_start[-1] if claimed is None else claimed - at)
        return found

    def summary(self, debounce: float) -> str:
        if not self.samples:
            return "no samples"
        found = self.waits(debounce)
        if not found.waits:
            return f"no run finished after a judgment of the phase ({found.pending} judgments)"
        wholes = [end - start for start, end in self.runs.items()]
        delays = sorted(
            start - claim - debounce
            for start in self.runs
            if (claim := self._claim_of(start)) is not None
        )
        late = (
            f"p50 {_percentile(delays, 50):.3f} s, max {delays[-1]:.3f} s" if delays else "no run"
        )
        return (
            f"results lag, sampled each second over {len(self.samples)} s: p50 "
            f"{_percentile(self.samples, 50):.1f} s, p95 {_percentile(self.samples, 95):.1f} s, "
            f"max {max(self.samples):.1f} s; {len(self.runs)} runs, computing "
            f"{statistics.fmean(self.durations):.1f} s mean and {max(self.durations):.1f} s "
            f"longest, {max(wholes):.1f} s the longest from start to results stored; "
            f"started after their claim + the debounce: {late}\n"
            f"  each judgment's wait for results that include it ({len(found.waits)} "
            f"judgments; {found.pending} after the last run's start): p50 "
            f"{_percentile(found.waits, 50):.1f} s, max {max(found.waits):.1f} s\n"
            f"  beyond one debounce ({debounce:.0f} s) + its run from its start to its results "
            f"stored: {self._verdict(found, found.from_start)}\n"
            f"  beyond one debounce + its run from when it was due to its results stored: "
            f"{self._verdict(found, found.from_due)}"
        )

    def _verdict(self, found: Waits, excess: list[float]) -> str:
        worst = max(excess)
        at = found.at[excess.index(worst)]
        started = min(start for start in self.runs if start >= at)
        claimed = self._claim_of(started)
        run = (f"claimed {claimed - self.since:.1f}, " if claimed is not None else "") + (
            f"started {started - self.since:.1f}, results stored "
            f"{self.runs[started] - self.since:.1f}"
        )
        beyond = sum(1 for e in excess if e > 0)
        verdict = (
            f"WITHIN, the closest {abs(worst):.3f} s within"
            if beyond == 0
            else f"BEYOND, the worst by {worst:.3f} s"
        )
        return (
            f"{beyond} -> {verdict} (the judgment stored at second {at - self.since:.1f}; its "
            f"run {run})"
        )


@dataclass
class Waits:
    """Each included judgment's storing time, wait and excess over the two bounds."""

    at: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    from_start: list[float] = field(default_factory=list)
    from_due: list[float] = field(default_factory=list)
    pending: int = 0  # stored after the last finished run's start


def _start_worker(env: dict[str, str], work: Path) -> subprocess.Popen[bytes]:
    """One worker process with its beat (the periodic sweeps), as a small deployment runs them,
    after one aggregation in this process: the phase starts from current results and no run
    claimed, and the broker's database holds no task of an earlier run."""
    import redis

    _manage(env, "aggregate", SLUG)
    redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    spawned = _database_now(env["DATABASE_URL"])
    worker = subprocess.Popen(
        [
            str(VENV / "celery"),
            "-A",
            "config",
            "worker",
            "--beat",
            "--schedule",
            str(work / "celerybeat-schedule"),
            "--concurrency",
            "1",
            # Information, into a file: the lines of runs whose claim was served (below).
            "-l",
            "info",
            "--logfile",
            str(work / WORKER_LOG),
        ],
        cwd=ROOT,
        env=env,
    )
    _wait_for_heartbeat(env["DATABASE_URL"], spawned, worker, work / WORKER_LOG)
    return worker


WORKER_LOG = "worker.log"
# apps/analysis/services.py, study_aggregate_queued: a message whose claim had been moved earlier
# and whose moved run was in.
SERVED_LINE = ": served by the run started at "


def served_messages(work: Path) -> int:
    """How many queued runs computed nothing because their claim had been moved earlier (a
    judgment stored before another request's claim) and the moved run had read it all."""
    log = work / WORKER_LOG
    if not log.exists():
        return 0
    with log.open(encoding="utf-8", errors="replace") as lines:
        return sum(1 for line in lines if SERVED_LINE in line)


def _database_now(dsn: str) -> Any:
    import psycopg2

    with contextlib.closing(psycopg2.connect(dsn)) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def _wait_for_heartbeat(
    dsn: str, since: Any, worker: subprocess.Popen[bytes], log: Path, timeout: float = 120.0
) -> None:
    """Until the worker has recorded its start-up heartbeat (`worker_ready`): the phase
    measures a running worker, as a deployment has one, not the seconds it takes to start.
    Before this wait, the first run of the phase could be due before the worker consumed its
    queue, and the lag it left was the worker's start-up."""
    import psycopg2

    deadline = time.monotonic() + timeout
    with contextlib.closing(psycopg2.connect(dsn)) as connection:
        connection.autocommit = True
        with connection.cursor() as cursor:
            while time.monotonic() < deadline:
                if worker.poll() is not None:
                    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                    raise SystemExit(
                        f"the Celery worker exited with status {worker.returncode}:\n{tail}"
                    )
                cursor.execute("SELECT 1 FROM core_workerheartbeat WHERE seen_at >= %s", [since])
                if cursor.fetchone():
                    return
                time.sleep(0.2)
    raise SystemExit(f"the Celery worker did not start within {timeout:.0f} s")


# The minimal Django view the rater flow is measured against (apps/core/health.py).
CEILING_PATH = "/healthz"


def _client(options: list[str], out: Path, timeout: float) -> dict[str, Any]:
    """Run a client phase in its own process (this file with `options`); its JSON result."""
    command = [str(VENV / "python"), __file__, *options, "--out", str(out)]
    subprocess.run(command, check=True, timeout=timeout)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _ceiling(args: argparse.Namespace, port: int, out: Path) -> dict[str, Any]:
    options = ["--ceiling-client", "--port", str(port), "--raters", str(args.raters)]
    options += ["--ceiling-s", str(args.ceiling_s)]
    data = _client(options, out, args.ceiling_s + 120)
    data["per_s"] = data["requests"] / data["seconds"]
    return data


def _phase(
    args: argparse.Namespace,
    port: int,
    raters: int,
    offset: int,
    out: Path,
    next_page: str = "in-place",
) -> dict:
    options = [
        "--next-page",
        next_page,
        "--client",
        "--port",
        str(port),
        "--raters",
        str(raters),
        "--offset",
        str(offset),
        "--think-ms",
        str(args.think_ms),
        "--ramp-s",
        str(args.ramp_s),
        "--max-tasks",
        str(args.tasks * 2 + 5),
        "--phase-timeout",
        str(args.phase_timeout),
    ]
    data = _client(options, out, args.phase_timeout + 30)
    answers = [a for r in data["raters"] for a in r["answers"]]
    every_ok = [a for a in answers if 200 <= a["status"] < 300]
    # "Answers" are the judgments (submit + next page); scorecards' first steps are reported
    # on their own (p99 by kind, and `early_*`).
    ok = [a for a in every_ok if a["kind"] != EARLY]
    early = [a["latency_ms"] for a in every_ok if a["kind"] == EARLY]
    latencies = [a["latency_ms"] for a in ok]
    errors: dict[str, int] = {}
    for a in answers:
        if not 200 <= a["status"] < 300:
            errors[str(a["status"])] = errors.get(str(a["status"]), 0) + 1
    rater_errors = [r["error"] for r in data["raters"] if r["error"]]
    summary = {
        "raters": raters,
        "seconds": data["seconds"],
        "answers_ok": len(ok),
        "throughput": len(ok) / data["seconds"],
        "p50": _percentile(latencies, 50),
        "p95": _percentile(latencies, 95),
        "p99": _percentile(latencies, 99),
        "max": max(latencies, default=float("nan")),
        "mean": statistics.fmean(latencies) if latencies else float("nan"),
        "enroll_p99": _percentile([r["enroll_ms"] for r in data["raters"] if r["enroll_ms"]], 99),
        "errors_by_status": errors,
        "rater_errors": len(rater_errors),
        "rater_error_samples": rater_errors[:5],
        "finished": sum(r["finished"] for r in data["raters"]),
        "replayed": sum(a["replayed"] for a in ok),
        "retries": sum(a["retries"] for a in answers),
        "connections": sum(r["connects"] for r in data["raters"]),
        "requests": sum(r["requests"] for r in data["raters"]),
        "p99_by_minute": [
            round(
                _percentile([a["latency_ms"] for a in ok if m * 60 <= a["at_s"] < m * 60 + 60], 99),
                1,
            )
            for m in range(int(max((a["at_s"] for a in ok), default=0) // 60) + 1)
        ],
        "by_kind_p99": {
            kind: round(
                _percentile([a["latency_ms"] for a in every_ok if a["kind"] == kind], 99), 1
            )
            for kind in sorted({a["kind"] for a in every_ok})
        },
        "early_steps": len(early),
        "early_p50": _percentile(early, 50),
        "early_p99": _percentile(early, 99),
        "acked": [a["key"] for a in ok],
    }
    return summary


def _print_phase(name: str, s: dict[str, Any]) -> None:
    print(
        f"{name:>9}: {s['raters']} raters, {s['answers_ok']} answers in {s['seconds']:.1f} s = "
        f"{s['throughput']:.1f} answers/s; submit+next ms p50 {s['p50']:.1f} p95 {s['p95']:.1f} "
        f"p99 {s['p99']:.1f} max {s['max']:.1f}; finished {s['finished']}/{s['raters']}; "
        f"errors {s['errors_by_status'] or 'none'}; rater failures {s['rater_errors']}; "
        f"retries {s['retries']}; connections {s['connections']}"
    )
    print(f"{'':>9}  p99 by kind {s['by_kind_p99']}; enrolment p99 {s['enroll_p99']:.1f} ms")
    if s["early_steps"]:
        print(
            f"{'':>9}  scorecard first steps {s['early_steps']}: ms p50 {s['early_p50']:.1f} "
            f"p99 {s['early_p99']:.1f}"
        )
    print(f"{'':>9}  p99 by minute of the phase {s['p99_by_minute']}")
    for sample in s["rater_error_samples"]:
        print(f"{'':>9}  ! {sample}")


# Method, path, status and the server's own time for the request in milliseconds: set beside
# the client's latencies, it tells time spent in Django from time spent queueing before it.
ACCESS_FORMAT = "%(m)s %(U)s %(s)s %(M)s"


def orchestrate(args: argparse.Namespace) -> int:
    env = _env()
    work = Path(tempfile.mkdtemp(prefix="laughlab-load-"))
    env["LAUGHLAB_VAR_DIR"] = str(work)
    env["STATIC_ROOT"] = str(work / "static")
    pg = ["-h", HOST, "-U", "postgres"]
    subprocess.run(["dropdb", "--if-exists", *pg, DB_NAME], check=True)
    subprocess.run(["createdb", *pg, DB_NAME], check=True)
    server: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    code = 1
    try:
        t = time.perf_counter()
        _manage(env, "migrate", "--noinput", "-v", "0")
        _manage(env, "seed_demo", "--skip-aggregate")
        _manage(env, "collectstatic", "--noinput", "-v", "0")
        info = _manage(env, "shell", "-c", CONFIGURE % {"slug": SLUG, "tasks": args.tasks})
        print(f"set-up {time.perf_counter() - t:.1f} s; demo study items/status: {info.strip()}")
        port = _free_port()
        server = subprocess.Popen(
            [
                str(VENV / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"{HOST}:{port}",
                "--workers",
                str(args.workers),
                "--worker-class",
                args.worker_class,
                "--threads",
                str(args.threads),
                "--log-level",
                "warning",
                *(
                    ["--access-logfile", str(args.access_log), "--access-logformat", ACCESS_FORMAT]
                    if args.access_log
                    else []
                ),
            ],
            cwd=ROOT,
            env=env,
        )
        _wait_ready(port, time.time() + 60)
        print(
            f"gunicorn pid {server.pid} on {HOST}:{port}, {args.workers} workers x "
            f"{args.threads} threads ({args.worker_class}); {os.cpu_count()} CPUs; "
            f"think time {args.think_ms} ms; {args.tasks} tasks per session"
        )
        ceiling: dict[str, Any] | None = None
        if args.ceiling_s > 0:
            ceiling = _ceiling(args, port, work / "ceiling.json")
            print(
                f"  ceiling: GET {CEILING_PATH} (a minimal Django view) on {args.raters} "
                f"connections for {ceiling['seconds']:.1f} s: {ceiling['per_s']:.1f} requests/s; "
                f"failed {ceiling['failed']}"
            )
        phases: dict[str, dict[str, Any]] = {}
        if args.baseline:
            phases["baseline"] = _phase(args, port, args.baseline, 0, work / "baseline.json")
            _print_phase("baseline", phases["baseline"])
        probe: LagProbe | None = None
        if args.worker:
            worker = _start_worker(env, work)
            study_id = int(
                _manage(env, "shell", "-c", STUDY_ID % {"slug": SLUG}).split("STUDYID", 1)[1]
            )
            probe = LagProbe(env["DATABASE_URL"], study_id)
            probe.start()
        if args.next_page == "both":
            # The same raters' flow with the next page as a request of its own, first, on the
            # same server: the ratio below is measured in one run.
            phases["load-request"] = _phase(
                args, port, args.raters, 200_000, work / "load-request.json", "request"
            )
            _print_phase("load, next page requested", phases["load-request"])
        assert server is not None
        split = CpuSplit(server.pid, worker.pid if worker is not None else None)
        split.start()
        load_started = time.monotonic()
        phases["load"] = _phase(
            args,
            port,
            args.raters,
            100_000,
            work / "load.json",
            "request" if args.next_page == "request" else "in-place",
        )
        split.stop()
        _print_phase("load", phases["load"])
        print(f"  {split.summary(time.monotonic() - load_started)}")
        if "load-request" in phases:
            before, after = phases["load-request"], phases["load"]
            print(
                f"  next task in place / next page requested: answers/s "
                f"{after['throughput'] / before['throughput']:.2f}x, requests an answer "
                f"{after['requests'] / max(1, after['answers_ok']):.2f} / "
                f"{before['requests'] / max(1, before['answers_ok']):.2f}"
            )
        if probe is not None:
            probe.stopping.set()
            probe.join()
            debounce = float(env.get("AGGREGATE_DEBOUNCE_SECONDS", "10"))
            print(f"  {probe.summary(debounce)}")
            print(
                f"  claims moved earlier by a judgment stored before them, whose first message "
                f"then computed nothing: {served_messages(work)} (the worker's log)"
            )
        if ceiling is not None:
            load = phases["load"]
            per_s = load["requests"] / load["seconds"]
            print(
                f"  against the ceiling: {load['throughput']:.1f} answers/s and {per_s:.1f} "
                f"requests/s ({load['requests'] / max(1, load['answers_ok']):.2f} requests an "
                f"answer, enrolment included) = {load['throughput'] / ceiling['per_s']:.3f} "
                f"answers and {per_s / ceiling['per_s']:.3f} requests per ceiling request"
            )

        out = _manage(env, "shell", "-c", VERIFY % {"slug": SLUG})
        stored = json.loads(out.split("LOADJSON", 1)[1])
        acked_all = [k for p in phases.values() for k in p["acked"]]
        acked_keys = [k for k in acked_all if not k.startswith("explanation:")]
        acked_expl = [int(k.split(":")[1]) for k in acked_all if k.startswith("explanation:")]
        stored_keys: list[str] = stored["keys"]
        lost = set(acked_keys) - set(stored_keys)
        extra = set(stored_keys) - set(acked_keys)
        doubled = len(stored_keys) - len(set(stored_keys))
        acked_twice = len(acked_keys) - len(set(acked_keys))
        expl_lost = set(acked_expl) - set(stored["explanations"])
        expl_extra = set(stored["explanations"]) - set(acked_expl)
        integrity = not (lost or extra or doubled or acked_twice or expl_lost or expl_extra)
        print(
            f"integrity: acknowledged judgments {len(acked_keys)}, stored {len(stored_keys)}; "
            f"lost {len(lost)}, unacknowledged extra {len(extra)}, doubled {doubled}; "
            f"explanation verdicts acknowledged {len(acked_expl)}, stored "
            f"{len(stored['explanations'])}, lost {len(expl_lost)}, extra {len(expl_extra)} "
            f"-> {'EXACT' if integrity else 'MISMATCH'}"
        )
        load = phases["load"]
        no_errors = not load["errors_by_status"] and not load["rater_errors"]
        met = load["p99"] < TARGET_P99_MS and no_errors
        print(
            f"target p99 < {TARGET_P99_MS:.0f} ms at {args.raters} raters with no errors: "
            f"{'MET' if met else 'NOT MET'} (p99 {load['p99']:.1f} ms, errors "
            f"{'none' if no_errors else 'yes'})"
        )
        if "baseline" in phases:
            ratio = load["p99"] / phases["baseline"]["p99"]
            print(f"p99 ratio load/baseline: {ratio:.1f}x")
        code = 0 if integrity else 2
    finally:
        for process in (worker, server):
            if process is not None:
                _terminate(process)
        subprocess.run(["dropdb", "--if-exists", *pg, DB_NAME], check=False)
    return code


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """Stop a process by its PID: SIGTERM, then SIGKILL if it has not gone within 30 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--raters", type=int, default=200)
    parser.add_argument("--baseline", type=int, default=10, help="raters in the baseline phase")
    parser.add_argument("--tasks", type=int, default=20, help="tasks per session")
    parser.add_argument("--think-ms", type=float, default=0.0, help="mean pause before answers")
    parser.add_argument(
        "--ramp-s", type=float, default=0.0, help="seconds over which the raters arrive"
    )
    # gunicorn's own advice (2 x cores + 1 sync workers), and the worker class docker-compose
    # runs: one request per process at a time, so no request waits on another's interpreter lock.
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1) + 1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--access-log", type=Path, help="gunicorn's log of each request's server time (ms)"
    )
    parser.add_argument("--worker-class", default="sync", choices=["sync", "gthread"])
    parser.add_argument(
        "--ceiling-s",
        type=float,
        default=20.0,
        help="seconds of the minimal-view ceiling before the raters (0: none)",
    )
    parser.add_argument(
        "--worker",
        action="store_true",
        help="a Celery worker computes the results during the load phase; their lag is measured",
    )
    parser.add_argument(
        "--next-page",
        default="in-place",
        choices=["in-place", "request", "both"],
        help="the answer carries the next task (in-place, as rater.js does), or the next page is "
        "a request of its own (request, as before 2026-12-04); both: one load phase of each",
    )
    parser.add_argument("--phase-timeout", type=float, default=600.0)
    parser.add_argument("--request-timeout", type=float, default=60.0)
    # Client-process options.
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ceiling-client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--max-tasks", type=int, default=45, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client or args.ceiling_client:
        result = asyncio.run(run_client(args) if args.client else run_ceiling_client(args))
        args.out.write_text(json.dumps(result))
        return 0
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
