"""Reading a judgments file: plain lines a batch at a time, and the cyclic garbage collector
paused, against every line by line with the collector running, in one process.

    .venv/bin/python benchmarks/bench_judgment_parse.py              # the large set's file
    .venv/bin/python benchmarks/bench_judgment_parse.py --only crowd
    .venv/bin/python benchmarks/bench_judgment_parse.py --scale 10   # a tenth, for a try

`import_judgments` reads every line and checks it before it writes anything
(apps/judgments/importing.py). Plain scorecard lines (a kind, a rater, a background, an item and
numeric answers) are now read a batch at a time, column by column; `plain_lane=False` reads
every line by line, as before, and is the baseline. The import now also runs with the cyclic
garbage collector paused (apps/core/collector.py). The files are `benchmarks/bench_import.py`'s
(the same generator and seed); the study's items and question are given as the import's
context, so no database is needed. Each of the four combinations is timed three times, in
turn, from reading the lines (`read_records`, shared by all) to the parsed rows, and reported
with the ratio of its best time to the baseline's; the results are compared whole.
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")

import argparse
import gc
import hashlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import django

django.setup()

from bench_import import RUBRIC, SHAPES, Shape, write_dataset  # noqa: E402

from apps.core.collector import cyclic_collector_paused  # noqa: E402
from apps.core.lines import read_records  # noqa: E402
from apps.judgments.importing import (  # noqa: E402
    JUDGMENT_JSON_COLUMNS,
    ImportContext,
    ParsedJudgments,
    QuestionSpec,
    parse_judgments,
)


def _read(
    data: bytes, context: ImportContext, *, plain_lane: bool, paused: bool
) -> tuple[float, ParsedJudgments]:
    records = read_records(data, filename="judgments.jsonl", json_columns=JUDGMENT_JSON_COLUMNS)
    start = time.perf_counter()
    if paused:
        with cyclic_collector_paused():
            parsed = parse_judgments(records, context, plain_lane=plain_lane)
    else:
        parsed = parse_judgments(records, context, plain_lane=plain_lane)
    seconds = time.perf_counter() - start
    return seconds, parsed


VARIANTS = {
    "line by line, collector running (before)": (False, False),
    "line by line, collector paused": (False, True),
    "plain batches, collector running": (True, False),
    "plain batches, collector paused (now)": (True, True),
}


def bench(shape: Shape, seed: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix=f"laughlab-parse-{shape.name}-"))
    _, judgments_path, n_grades = write_dataset(shape, folder, seed=seed)
    data = judgments_path.read_bytes()
    question = RUBRIC["questions"][0]
    context = ImportContext(
        questions={question["name"]: QuestionSpec(question["name"], 0, 3)},
        items_with_explanation={f"t{i:06d}": False for i in range(shape.n_items)},
        backgrounds=frozenset(),
    )
    # Reading the lines (JSON decoding and its limits) is shared by all and timed alone.
    start = time.perf_counter()
    for _ in read_records(data, filename="judgments.jsonl", json_columns=JUDGMENT_JSON_COLUMNS):
        pass
    print(
        f"[{shape.name}] {n_grades:,} lines; reading them alone {time.perf_counter() - start:.2f} s"
    )
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    # Each result's digest, not the result: a million rows kept alive would make every later
    # reading's collector passes walk them too.
    digests: dict[str, str] = {}
    for repeat in range(3):
        for name, (plain_lane, paused) in VARIANTS.items():
            gc.collect()
            seconds, parsed = _read(data, context, plain_lane=plain_lane, paused=paused)
            times[name].append(seconds)
            if repeat == 0:
                text = repr((parsed.rows, parsed.errors, list(parsed.raters.items())))
                digests[name] = hashlib.sha256(text.encode()).hexdigest()
            del parsed
    baseline = min(next(iter(times.values())))
    first = next(iter(digests.values()))
    for name, runs in times.items():
        same = digests[name] == first
        print(
            f"[{shape.name}]   {name:<42} {min(runs):6.2f} s (best of 3), "
            f"{min(runs) / baseline:.2f} of the baseline; same result: {same}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SHAPES), default=None)
    parser.add_argument("--scale", type=int, default=1, help="divide every size by this")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    for name, shape in SHAPES.items():
        if args.only and name != args.only:
            continue
        if args.scale > 1:
            raters = None if shape.n_raters is None else max(1, shape.n_raters // args.scale)
            shape = Shape(name, shape.n_items // args.scale, shape.grades_per_item, raters)
        bench(shape, args.seed)


if __name__ == "__main__":
    main()
