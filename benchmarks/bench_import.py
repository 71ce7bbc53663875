"""Bring-your-own-data benchmark: import items, import judgments, aggregate, as a researcher does.

Two generated datasets of the shape of public crowd-rating sets:

(a) "crowd": 15,000 short texts, each graded 0-3 by five judges, every grade its own rater
    (75,000 grades, 75,000 raters, no rater ids in the source). Target: import items +
    import judgments + aggregate under 20 s in total on the 2-core machine, peak memory of
    each step under 1.5 GB.
(b) "large": 50,000 items, 1,000,000 grades (0-3) from 5,000 raters (200 items each).
    Target: the three steps under 2 minutes in total, peak memory under 1.5 GB.

Each step runs as its own `manage.py` process, exactly as a researcher runs it, so its wall
time includes Django's start-up and its peak memory (max RSS of that process) is its own. The
study uses a one-question rubric on a 0-3 scale made with `create_study --rubric FILE.json`.
After the steps it reports the size of the printable HTML report.

    .venv/bin/python benchmarks/bench_import.py                 # both datasets, SQLite
    .venv/bin/python benchmarks/bench_import.py --only crowd    # one of them
    .venv/bin/python benchmarks/bench_import.py --postgres      # PostgreSQL on 127.0.0.1
    .venv/bin/python benchmarks/bench_import.py --scale 10      # a tenth of each, for a try
    .venv/bin/python benchmarks/bench_import.py --only large --upload   # judgments via the API
    .venv/bin/python benchmarks/bench_import.py --compare-slider      # integer vs decimal grades

Before the steps, the project's modules are compiled to bytecode (`__pycache__`), as they are
in an installed project after its first start; a step's time is then its work, not the
compiling of the sources.

On PostgreSQL (`--postgres`) each import step is also reported beside its floor: the time
PostgreSQL itself takes to COPY the rows that step stored (every table the step grew, read back
with COPY TO) into empty copies of those tables with the same columns, defaults, checks and
indexes (foreign keys aside), in one transaction, from a client that only streams bytes. What
the step takes beyond the floor is parsing, checking and formatting in Python, the foreign-key
checks and the round trips.

With `--slider` the one question is a slider (0-3 in steps of 0.25) and the grades are decimals
on its grid (most of them fractions); `--compare-slider` runs the integer and the slider version
of each dataset one after the other in this process and prints the slider's CPU time per step as
a ratio of the integer one (the machine's noise cancels in the ratio, not in the absolute times).

With `--upload` the judgments file is not imported by the command but uploaded as a researcher's
script does: `POST /api/v1/studies/SLUG/judgments/` (multipart) to a web server (`runserver`,
one process) that keeps the file and answers 202, and a Celery worker (the embedded
filesystem broker, one process) that imports it, polled through the import's status URL until
it is done. The step's time runs from the upload's start to the job's end; its peak memory is
the larger of the web server's and the worker's.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

RUBRIC: dict[str, Any] = {
    "slug": "crowd-grade",
    "name": "Crowd grade 0-3",
    "kind": "humor",
    "questions": [
        {
            "name": "grade",
            "kind": "likert",
            "min_value": 0,
            "max_value": 3,
            "prompt": {"en": "How funny is it?", "zh": "有多好笑？"},
            "anchors": {
                "en": {"0": "Not funny", "3": "Very funny"},
                "zh": {"0": "不好笑", "3": "非常好笑"},
            },
        }
    ],
}


@dataclass(frozen=True)
class Shape:
    name: str
    n_items: int
    grades_per_item: int
    # None: every grade its own rater; otherwise raters each grade n_items * grades / n_raters.
    n_raters: int | None


# The same question as a continuous slider on the same ends: decimals on a grid of quarters.
SLIDER_RUBRIC: dict[str, Any] = {
    **RUBRIC,
    "slug": "crowd-slider",
    "questions": [{**RUBRIC["questions"][0], "kind": "slider", "step": 0.25}],
}

SHAPES = {
    "crowd": Shape("crowd", 15_000, 5, None),
    "large": Shape("large", 50_000, 20, 5_000),
}


def write_dataset(
    shape: Shape, folder: Path, *, seed: int, slider: bool = False
) -> tuple[Path, Path, int]:
    """Items and judgments files of this shape; returns their paths and the grade count."""
    rng = np.random.default_rng(seed)
    n_items, per_item = shape.n_items, shape.grades_per_item
    strength = rng.normal(0, 0.8, n_items)
    items_path = folder / f"{shape.name}-items.jsonl"
    with items_path.open("w", encoding="utf-8") as out:
        for i in range(n_items):
            line = {
                "id": f"t{i:06d}",
                "text": f"short humorous text number {i} with a punchline",
                "source": ("model-a", "model-b", "human")[i % 3],
                "lang": "en",
            }
            out.write(json.dumps(line) + "\n")
    if shape.n_raters is None:
        raters = np.arange(n_items * per_item)
    else:
        # Each rater grades a contiguous run of items, wrapping, so every item gets
        # `per_item` distinct raters and every rater the same number of items.
        per_rater = n_items * per_item // shape.n_raters
        raters = np.empty(n_items * per_item, dtype=np.int64)
        position = 0
        for r in range(shape.n_raters):
            raters[position : position + per_rater] = r
            position += per_rater
    item_of = np.arange(n_items * per_item) % n_items
    if shape.n_raters is not None:
        item_of = np.empty_like(item_of)
        per_rater = n_items * per_item // shape.n_raters
        for r in range(shape.n_raters):
            start = (r * per_rater) % n_items
            item_of[r * per_rater : (r + 1) * per_rater] = (
                np.arange(start, start + per_rater) % n_items
            )
    leniency = rng.normal(0, 0.4, int(raters.max()) + 1)
    latent = 1.5 + strength[item_of] + leniency[raters] + rng.normal(0, 0.8, len(raters))
    grades: list[float] | list[int]
    if slider:
        grades = (np.clip(np.rint(latent * 4), 0, 12) / 4).tolist()
    else:
        grades = np.clip(np.rint(latent), 0, 3).astype(int).tolist()
    judgments_path = folder / f"{shape.name}-judgments.jsonl"
    with judgments_path.open("w", encoding="utf-8") as out:
        for r, i, g in zip(raters.tolist(), item_of.tolist(), grades, strict=True):
            judgment: dict[str, object] = {
                "kind": "score",
                "rater": f"g{r:07d}",
                "background": "unknown",
                "item": f"t{i:06d}",
                "grade": g,
            }
            out.write(json.dumps(judgment) + "\n")
    return items_path, judgments_path, len(raters)


def run_step(args: list[str], env: dict[str, str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS in MB, output, CPU seconds) of one manage.py process.

    The CPU time (user + system) is what the step costs; the wall time also holds the waits of
    a machine shared with other jobs."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{output}")
    return wall, usage.ru_maxrss / 1024, output.strip(), usage.ru_utime + usage.ru_stime


def _table_counts(dsn: str) -> dict[str, int]:
    """Rows in each of the database's own tables (public schema)."""
    import psycopg2

    with psycopg2.connect(dsn) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        tables = [row[0] for row in cursor.fetchall()]
        counts = {}
        for table in tables:
            cursor.execute(f'SELECT count(*) FROM "{table}"')
            counts[table] = int(cursor.fetchone()[0])
    connection.close()
    return counts


def copy_floor(dsn: str, before: dict[str, int], after: dict[str, int]) -> tuple[float, int]:
    """(seconds, rows): PostgreSQL's own COPY of the rows a step added, into empty copies of the
    tables it grew (same columns, defaults, checks and indexes; no foreign keys), committed."""
    import io

    import psycopg2

    grown = [table for table, rows in after.items() if rows > before.get(table, 0)]
    connection = psycopg2.connect(dsn)
    try:
        cursor = connection.cursor()
        data = {}
        for table in grown:
            buffer = io.BytesIO()
            # Every row of a table the step grew; the step's rows are nearly all of them.
            cursor.copy_expert(f'COPY "{table}" TO STDOUT', buffer)
            data[table] = buffer.getvalue()
        connection.commit()
        for table in grown:
            cursor.execute(f'DROP TABLE IF EXISTS "floor_{table}"')
            cursor.execute(
                f'CREATE TABLE "floor_{table}" (LIKE "{table}" INCLUDING DEFAULTS '
                "INCLUDING CONSTRAINTS INCLUDING INDEXES)"
            )
        connection.commit()
        start = time.perf_counter()
        for table in grown:
            cursor.copy_expert(f'COPY "floor_{table}" FROM STDIN', io.BytesIO(data[table]))
        connection.commit()
        seconds = time.perf_counter() - start
        for table in grown:
            cursor.execute(f'DROP TABLE "floor_{table}"')
        connection.commit()
    finally:
        connection.close()
    return seconds, sum(after[table] - before.get(table, 0) for table in grown)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> tuple[float, float]:
    """Stop a server process: (its peak RSS in MB, the CPU seconds it used)."""
    process.terminate()
    _, _status, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def upload_step(slug: str, path: Path, env: dict[str, str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak MB, outcome, CPU seconds of web server and worker together, their
    start-up included): the judgments file through the API and a worker."""
    import urllib.request

    code = (
        "from django.contrib.auth.models import User; "
        "from rest_framework.authtoken.models import Token; "
        "u = User.objects.create_superuser('bench', password='bench-password-1'); "
        "print(Token.objects.create(user=u).key)"
    )
    _, _, token, _ = run_step(["shell", "-c", code], env)
    served = {**env, "CELERY_TASK_ALWAYS_EAGER": "0", "ALLOWED_HOSTS": "127.0.0.1"}
    port = _free_port()
    web = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runserver", f"127.0.0.1:{port}", "--noreload"],
        env=served,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-P", "solo", "-l", "WARNING"],
        env=served,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}/api/v1/studies/{slug}"
    headers = {"Authorization": f"Token {token.splitlines()[-1]}"}
    try:
        for _ in range(200):  # the server's start
            try:
                urllib.request.urlopen(urllib.request.Request(f"{base}/", headers=headers))
                break
            except OSError:
                time.sleep(0.1)
        start = time.perf_counter()
        result = subprocess.run(
            [
                "curl",
                "-sS",
                "-H",
                f"Authorization: {headers['Authorization']}",
                "-F",
                f"file=@{path}",
                f"{base}/judgments/",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        job = json.loads(result.stdout)
        if "status_url" not in job:
            raise SystemExit(f"the upload was refused: {result.stdout[:500]}")
        uploaded = time.perf_counter() - start
        deadline = time.perf_counter() + 900
        while job["status"] not in ("done", "failed") and time.perf_counter() < deadline:
            time.sleep(0.5)
            request = urllib.request.Request(job["status_url"], headers=headers)
            job = json.loads(urllib.request.urlopen(request).read())
        wall = time.perf_counter() - start
    finally:
        (web_mb, web_cpu), (worker_mb, worker_cpu) = _stop(web), _stop(worker)
        peak, cpu = max(web_mb, worker_mb), web_cpu + worker_cpu
    if job["status"] != "done":
        raise SystemExit(f"the import job did not finish: {json.dumps(job)[:500]}")
    outcome = (
        f"uploaded in {uploaded:.1f} s; job {job['status']}: {job['summary']['created']} "
        f"({job['lines_total']:,} lines); peak web {web_mb:.0f} MB, worker {worker_mb:.0f} MB"
    )
    return wall, peak, outcome, cpu


def environment(folder: Path, postgres: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DEBUG": "1",
            "LAUGHLAB_VAR_DIR": str(folder),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "LOG_LEVEL": "WARNING",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            # As a researcher without a worker running: the imports must not aggregate inline.
            "CELERY_TASK_ALWAYS_EAGER": "1",
        }
    )
    if postgres:
        for command in (["dropdb", "--if-exists"], ["createdb"]):
            subprocess.run(
                [*command, "-h", "127.0.0.1", "-U", "postgres", "laughlab_bench_import"],
                check=True,
            )
        env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/laughlab_bench_import"
    else:
        env["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    return env


def bench(
    shape: Shape,
    *,
    postgres: bool,
    seed: int,
    report: bool,
    legacy: bool,
    upload: bool = False,
    slider: bool = False,
) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix=f"laughlab-bench-{shape.name}-"))
    env = environment(folder, postgres)
    t = time.perf_counter()
    items_path, judgments_path, n_grades = write_dataset(shape, folder, seed=seed, slider=slider)
    print(
        f"[{shape.name}] wrote {shape.n_items:,} items and {n_grades:,} grades "
        f"({judgments_path.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t:.1f} s"
    )
    rubric_path = folder / "rubric.json"
    rubric_path.write_text(json.dumps(SLIDER_RUBRIC if slider else RUBRIC), encoding="utf-8")
    run_step(["migrate", "--verbosity", "0"], env)
    slug = f"bench-{shape.name}"
    if legacy:
        # The code before custom rubrics: the rubric is made in a shell, as researchers had to.
        code = (
            "import json; from apps.studies.models import Rubric, Question; "
            "from apps.studies.services import study_create; "
            f"spec = json.load(open({str(rubric_path)!r})); "
            "r = Rubric.objects.create(slug=spec['slug'], name=spec['name'], kind='humor'); "
            "[Question.objects.create(rubric=r, position=n + 1, **{k: v for k, v in q.items()}) "
            "for n, q in enumerate(spec['questions'])]; "
            f"study_create(slug={slug!r}, rubric_slug=spec['slug'])"
        )
        run_step(["shell", "-c", code], env)
        judgments_path.write_text(
            judgments_path.read_text().replace('"unknown"', '"technical"'), encoding="utf-8"
        )
    else:
        run_step(["create_study", slug, "--rubric", str(rubric_path)], env)
    results: dict[str, float] = {}
    total = 0.0
    total_cpu = 0.0
    peak = 0.0
    dsn = env["DATABASE_URL"] if postgres else ""
    for step, args in (
        ("import_items", ["import_items", slug, str(items_path)]),
        ("import_judgments", ["import_judgments", slug, str(judgments_path)]),
        ("aggregate", ["aggregate", slug]),
    ):
        counts = _table_counts(dsn) if dsn and step != "aggregate" else None
        if upload and step == "import_judgments":
            step = "upload_judgments"
            wall, rss, output, cpu = upload_step(slug, judgments_path, env)
        else:
            wall, rss, output, cpu = run_step(args, env)
        if counts is not None:
            floor, rows = copy_floor(dsn, counts, _table_counts(dsn))
            results[f"{step}_floor"] = floor
            output = f"{output[-60:]}  [floor: COPY of {rows:,} rows {floor:.1f} s]"
        total += wall
        total_cpu += cpu
        peak = max(peak, rss)
        results[step] = wall
        results[f"{step}_cpu"] = cpu
        results[f"{step}_rss_mb"] = rss
        print(
            f"[{shape.name}] {step:<17} {wall:7.1f} s wall {cpu:7.1f} s CPU  peak {rss:6.0f} MB"
            f"   {output[-130:]}"
        )
    results["total"] = total
    results["total_cpu"] = total_cpu
    results["peak_rss_mb"] = peak
    print(
        f"[{shape.name}] total             {total:7.1f} s wall {total_cpu:7.1f} s CPU  "
        f"peak {peak:6.0f} MB"
    )
    if report:
        out = folder / "report.html"
        wall, rss, _, _ = run_step(
            ["export", slug, "--format", "report-html", "--out", str(out)], env
        )
        results["report_bytes"] = out.stat().st_size
        print(
            f"[{shape.name}] report.html {out.stat().st_size / 1e6:.2f} MB "
            f"(written in {wall:.1f} s, peak {rss:.0f} MB)"
        )
    return results


def cache_bytecode() -> None:
    """Compile the project's modules to bytecode once, as an installed project has them. With
    PYTHONDONTWRITEBYTECODE set (as on some machines), every step's process would otherwise
    compile them from source again: 0.15-0.2 s a process, measured as the import's time."""
    for folder in ("apps", "config"):
        compileall.compile_dir(ROOT / folder, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=sorted(SHAPES), default=None)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--scale", type=int, default=1, help="divide every size by this")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument(
        "--legacy",
        action="store_true",
        help="for the code before custom rubrics and unknown backgrounds (the baseline)",
    )
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report size")
    parser.add_argument(
        "--upload",
        action="store_true",
        help="upload the judgments through the API to a web server and a worker",
    )
    parser.add_argument("--slider", action="store_true", help="a slider question, decimal grades")
    parser.add_argument(
        "--compare-slider",
        action="store_true",
        help="integer and slider versions one after the other, with CPU ratios",
    )
    args = parser.parse_args()
    cache_bytecode()
    names = [args.only] if args.only else ["crowd", "large"]
    print(f"database={'postgresql' if args.postgres else 'sqlite'} scale=1/{args.scale}")
    for name in names:
        shape = SHAPES[name]
        if args.scale > 1:
            shape = Shape(
                shape.name,
                shape.n_items // args.scale,
                shape.grades_per_item,
                None if shape.n_raters is None else max(shape.n_raters // args.scale, 1),
            )
        runs = [False, True] if args.compare_slider else [args.slider]
        measured = [
            bench(
                shape,
                postgres=args.postgres,
                seed=args.seed,
                report=not args.no_report,
                legacy=args.legacy,
                upload=args.upload,
                slider=slider,
            )
            for slider in runs
        ]
        if args.compare_slider:
            integer, decimal = measured
            for step in ("import_judgments", "aggregate", "total"):
                ratio = decimal[f"{step}_cpu"] / integer[f"{step}_cpu"]
                print(f"[{shape.name}] slider / integer CPU, {step:<17} {ratio:5.2f}")


if __name__ == "__main__":
    main()
