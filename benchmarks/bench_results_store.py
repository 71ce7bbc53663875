"""Storing and reading a study's results document: PostgreSQL's `jsonb` (Django's `JSONField`)
against `json` (`apps.core.document_field.DocumentJSONField`, what the results use now), in the
same process on the same document.

    .venv/bin/python benchmarks/bench_import.py --postgres --no-report --only crowd   # first
    .venv/bin/python benchmarks/bench_results_store.py             # its crowd document, 5 rounds
    .venv/bin/python benchmarks/bench_results_store.py --rounds 3 --study bench-large

The document is the one `bench_import.py` left stored in its database (`laughlab_bench_import`,
study `bench-crowd` unless `--study` names another). Two scratch tables hold it, one with a
`jsonb` and one with a `json` column, both LZ4-compressed as the results' column is. Each round
stores it in each (an UPDATE, committed) with the value exactly as each field sends it, and
reads it back through each field, alternating; the ratio `json` / `jsonb` is the figure to read
(the machine's noise cancels in it). Both read back equal to the document.

Needs PostgreSQL on 127.0.0.1:5432 (user postgres); uses its own database `laughlab_bench`
(BENCH_DB_NAME), dropped and created afresh.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from common import setup_django

SOURCE = "postgres://postgres@127.0.0.1:5432/laughlab_bench_import"


def stored_document(study: str) -> Any:
    import psycopg2

    with psycopg2.connect(SOURCE) as source, source.cursor() as cursor:
        cursor.execute(
            "SELECT r.payload::text FROM analysis_studyresult r "
            "JOIN studies_study s ON s.id = r.study_id WHERE s.slug = %s",
            [study],
        )
        row = cursor.fetchone()
    source.close()
    if row is None:
        raise SystemExit(f"no results of {study!r} in {SOURCE}: run bench_import.py first")
    return json.loads(row[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", default="bench-crowd")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    document = stored_document(args.study)
    setup_django(postgres=True)

    from django.db import connection, models, transaction

    from apps.analysis.models import CompactJSONEncoder
    from apps.core.document_field import DocumentJSONField

    fields = {
        "jsonb": models.JSONField(encoder=CompactJSONEncoder),
        "json": DocumentJSONField(encoder=CompactJSONEncoder),
    }
    with connection.cursor() as cursor:
        for kind in fields:
            cursor.execute(
                f"CREATE TABLE bench_{kind} (id int PRIMARY KEY, payload {kind} COMPRESSION lz4)"
            )
            cursor.execute(f"INSERT INTO bench_{kind} VALUES (1, '{{}}')")
    size = len(fields["json"].get_db_prep_value(document, connection))
    print(f"document of {args.study}: {size / 1e6:.1f} MB of JSON; {args.rounds} rounds each")
    times: dict[str, dict[str, list[float]]] = {k: {"store": [], "read": []} for k in fields}
    for _ in range(args.rounds):
        for kind, field in fields.items():
            started = time.perf_counter()
            with transaction.atomic(), connection.cursor() as cursor:
                value = field.get_db_prep_value(document, connection)
                cursor.execute(f"UPDATE bench_{kind} SET payload = %s WHERE id = 1", [value])
            stored = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT payload FROM bench_{kind} WHERE id = 1")
                back = field.from_db_value(cursor.fetchone()[0], None, connection)  # type: ignore[arg-type]
            read = time.perf_counter()
            if back != document:
                raise SystemExit(f"{kind}: the document read back differs")
            times[kind]["store"].append(stored - started)
            times[kind]["read"].append(read - stored)
    for step in ("store", "read"):
        jsonb, json_ = times["jsonb"][step], times["json"][step]
        ratios = [b / a for a, b in zip(jsonb, json_, strict=True)]
        print(
            f"  {step:<5}  jsonb {min(jsonb):.3f}-{max(jsonb):.3f} s   json {min(json_):.3f}-"
            f"{max(json_):.3f} s   json / jsonb median {statistics.median(ratios):.2f} "
            f"(range {min(ratios):.2f}-{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
