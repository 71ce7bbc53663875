"""Per-request cost of the rater flow, in process: queries and milliseconds per page and answer.

    .venv/bin/python benchmarks/load/profile_requests.py                # 60 raters, 20 tasks each
    .venv/bin/python benchmarks/load/profile_requests.py --raters 120 --profile scorecard-get

The load benchmark (run_load.py) measures latency under concurrency; this one says where a
single request spends its time, with nothing else running: it makes a fresh `laughlab_profile`
database on PostgreSQL, seeds and opens the demo study exactly as run_load.py does, and walks
raters through whole sessions with Django's test client (all middleware, sessions, CSRF and
templates included; no HTTP server). For every request it records the number of SQL statements
and the time (wall clock, and this process's CPU time: the part that holds the interpreter
lock in gunicorn), and reports the median and 90th percentile per request kind over the raters after
the first quarter (so the study already holds answers, as during a load run). `--profile KIND`
prints the cProfile of that request kind (e.g. `scorecard-get`, `pair-post+next`);
`--statements` prints the SQL statements of a request of every kind (one of its most frequent
count), one line each, so each can be set against the minimum that request needs
(benchmarks/load/README.md).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_load  # noqa: E402  (the page parsing and study set-up are the load benchmark's)

DB_NAME = os.environ.get("PROFILE_DB_NAME", "laughlab_profile")


def _setup_environment() -> None:
    env = run_load._env()
    env["DATABASE_URL"] = f"postgres://postgres@{run_load.HOST}:5432/{DB_NAME}"
    os.environ.update(env)
    pg = ["-h", run_load.HOST, "-U", "postgres"]
    subprocess.run(["dropdb", "--if-exists", *pg, DB_NAME], check=True)
    subprocess.run(["createdb", *pg, DB_NAME], check=True)


def _drop_database() -> None:
    from django.db import connections

    connections.close_all()
    subprocess.run(
        ["dropdb", "--if-exists", "-h", run_load.HOST, "-U", "postgres", DB_NAME], check=True
    )


class Recorder:
    def __init__(self, profile_kind: str | None) -> None:
        self.samples: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
        self.profile_kind = profile_kind
        self.last_queries: list[str] = []
        # Per kind and statement count, the last request's statements: the report shows a
        # request of the kind's usual count, not its last one (often the session's end).
        self.statements: dict[str, dict[int, list[str]]] = defaultdict(dict)
        self.query_time: dict[str, list[float]] = defaultdict(list)
        self.profiler = cProfile.Profile()

    def call(self, kind: str, keep: bool, request: Any) -> Any:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from apps.core.compiled import readable

        profiling = keep and kind == self.profile_kind
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            cpu = time.process_time()
            if profiling:
                self.profiler.enable()
            response = request()
            if profiling:
                self.profiler.disable()
            elapsed = (time.perf_counter() - started) * 1000
            cpu = (time.process_time() - cpu) * 1000
        if keep:
            self.samples[kind].append((len(queries.captured_queries), elapsed, cpu))
            # A prepared read's EXECUTE shown as the SQL it runs (apps/core/compiled.py).
            sent = [readable(q["sql"]) for q in queries.captured_queries]
            self.statements[kind][len(queries.captured_queries)] = sent
            if profiling:
                self.last_queries = sent
                for sql, query in zip(sent, queries.captured_queries, strict=True):
                    self.query_time[sql[:90]].append(float(query["time"]) * 1000)
        return response

    def report_statements(self) -> None:
        for kind in sorted(self.statements):
            counts = [q for q, _, _ in self.samples[kind]]
            usual = max(set(counts), key=counts.count)
            print(f"{kind}: {usual} statements (the most frequent count)")
            for sql in self.statements[kind][usual]:
                print(f"  {' '.join(sql.split())[:150]}")

    def report(self) -> None:
        width = max(18, *(len(kind) for kind in self.samples))
        print(
            f"{'request':<{width}} {'n':>5} {'queries':>8} {'ms p50':>8} {'ms p90':>8} "
            f"{'cpu p50':>8}"
        )
        for kind in sorted(self.samples):
            rows = self.samples[kind]
            times = sorted(ms for _, ms, _ in rows)
            print(
                f"{kind:<{width}} {len(rows):>5} {statistics.median(q for q, _, _ in rows):>8.0f} "
                f"{statistics.median(times):>8.1f} {times[int(0.9 * (len(times) - 1))]:>8.1f} "
                f"{statistics.median(c for _, _, c in rows):>8.1f}"
            )
        answers: dict[str, list[float]] = defaultdict(list)
        for kind, rows in self.samples.items():
            if "-post+next" in kind:
                answers[kind.partition("-post+next")[2]].extend(c for _, _, c in rows)
        for tag, cpu in sorted(answers.items()):
            # Every answer with its next task, whatever its kind, in the mix the study gave.
            print(
                f"answers with their next task{tag}: {len(cpu)}, CPU ms mean "
                f"{statistics.mean(cpu):.2f}, total {sum(cpu):.0f}"
            )
        if self.profile_kind and self.profile_kind not in self.samples:
            print(f"No request of kind {self.profile_kind!r}; the kinds are those listed above.")
        elif self.profile_kind:
            if os.environ.get("PROFILE_DUMP"):
                self.profiler.dump_stats(os.environ["PROFILE_DUMP"])
            out = io.StringIO()
            stats = pstats.Stats(self.profiler, stream=out)
            profiled = len(self.samples[self.profile_kind])
            print(
                f"Python function calls per {self.profile_kind} request: "
                f"{stats.total_calls / profiled:,.0f} ({profiled} requests)"  # type: ignore[attr-defined]
            )
            stats.sort_stats(os.environ.get("PROFILE_SORT", "cumulative")).print_stats(40)
            print(out.getvalue())
            print(f"Database time per statement of {self.profile_kind} (ms: total, mean):")
            slowest = sorted(self.query_time.items(), key=lambda entry: -sum(entry[1]))
            for sql, times in slowest[:15]:
                print(f"  {sum(times):8.1f} {statistics.mean(times):6.2f}  {sql}")
            print(f"SQL of the last {self.profile_kind} request:")
            for sql in self.last_queries:
                print(f"  {sql[:400]}")


def _walk(
    index: int, keep: bool, recorder: Recorder, in_place: bool, kept_forms: bool = True
) -> None:
    """One rater's whole session. `kept_forms`: the page keeps the forms it has shown, as
    rater.js does; without, every task of another layout than the page's comes as its whole
    form, and its requests are recorded under their kind with " (no kept forms)"."""
    from django.test import Client

    rng = random.Random(index)
    client = Client(enforce_csrf_checks=True)
    kept = run_load.KeptForms() if kept_forms else None
    tag = "" if kept_forms else " (no kept forms)"
    entry = f"/s/{run_load.SLUG}/"
    page = client.get(entry).content.decode()
    backgrounds = sorted(set(re.findall(r'name="background" value="([^"]+)"', page)))
    select = re.search(r'<select name="age_band".*?</select>', page, re.S)
    ages = [a for a in run_load.OPTION_RE.findall(select.group(0)) if a] if select else []
    csrf = run_load.CSRF_RE.search(page)
    if not backgrounds or not ages or csrf is None:
        raise SystemExit("enrolment form not understood")
    enrolled = client.post(
        entry,
        {
            "csrfmiddlewaretoken": csrf.group(1),
            "background": backgrounds[index % len(backgrounds)],
            "age_band": ages[index % len(ages)],
            "consent": "on",
            "languages": run_load.LANGUAGE_RE.findall(page),
        },
    )
    if enrolled.status_code != 302:
        raise SystemExit(f"enrolment answered {enrolled.status_code}")
    path = enrolled["Location"]
    kind = "first"
    text = ""
    while True:
        if path:
            response = recorder.call(f"{kind}-get", keep, lambda p=path: client.get(p))
            if response.status_code == 302:
                path = response["Location"]
                if path.rstrip("/").endswith("/end"):
                    return
                continue
            text = response.content.decode()
        match = run_load.FORM_RE.search(text)
        if match is None:
            return
        kind = match.group(1)
        if kept is not None:
            kept.keep(text)
        url, body, early = run_load._task_payload(kind, text, rng, in_place, kept)
        if early is not None:
            first = recorder.call(
                "scorecard-early-post",
                keep,
                lambda u=early[0], b=early[1]: client.post(
                    u,
                    json.dumps(b),
                    content_type="application/json",
                    headers={
                        "X-CSRFToken": client.cookies["csrftoken"].value,
                        "Accept": "application/json",
                    },
                ),
            )
            if first.status_code != 200:
                raise SystemExit(
                    f"{early[0]} answered {first.status_code}: {first.content[:300]!r}"
                )
        posted = recorder.call(
            f"{kind}-post+next{tag}" if in_place else f"{kind}-post",
            keep,
            lambda u=url, b=body: client.post(
                u,
                json.dumps(b),
                content_type="application/json",
                headers={
                    "X-CSRFToken": client.cookies["csrftoken"].value,
                    "Accept": "application/json",
                },
            ),
        )
        if not 200 <= posted.status_code < 300:
            raise SystemExit(f"{url} answered {posted.status_code}: {posted.content[:300]!r}")
        data = posted.json()
        shown = run_load.shown_next(text, data, kept)
        if shown is not None:
            # Shown in place, as rater.js does: no request for the next page.
            text, path = shown, ""
        else:
            path = data["next"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raters", type=int, default=60)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--profile", default=None, help="a request kind to cProfile")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument(
        "--statements",
        action="store_true",
        help="the SQL of a request of each kind, of its most frequent count",
    )
    parser.add_argument(
        "--kept-forms",
        default="on",
        choices=["on", "alternate"],
        help="the page keeps the forms it has shown, as rater.js does (on); alternate: every "
        "other rater does not, so both are measured in this one process",
    )
    parser.add_argument(
        "--next-page",
        default="in-place",
        choices=["in-place", "request"],
        help="the answer carries the next task (in-place: `KIND-post+next`, as rater.js "
        "does), or the next page is a request of its own (`KIND-post`, then `KIND-get`)",
    )
    args = parser.parse_args()
    _setup_environment()
    import django

    django.setup()
    from django.core.management import call_command

    try:
        call_command("migrate", "--noinput", verbosity=0)
        call_command("seed_demo", "--skip-aggregate", stdout=io.StringIO())
        exec(run_load.CONFIGURE % {"slug": run_load.SLUG, "tasks": args.tasks})
        from django.conf import settings

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        recorder = Recorder(args.profile)
        for index in range(args.raters):
            _walk(
                index,
                index >= args.raters // 4,
                recorder,
                args.next_page == "in-place",
                kept_forms=args.kept_forms == "on" or index % 2 == 0,
            )
        recorder.report()
        if args.statements:
            recorder.report_statements()
    finally:
        if not args.keep:
            _drop_database()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
