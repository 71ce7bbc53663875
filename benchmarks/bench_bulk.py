"""Bulk rows into PostgreSQL: COPY (what `apps.core.bulk.bulk_insert` now uses there) against the
multi-row INSERT statements it used before, in the same process on the same rows.

The rows are an import's scorecard responses (the columns `apps.judgments.services` writes,
keys returned, as the import needs them for the answers). Each round inserts them inside a
transaction that is rolled back, alternating the two paths, so both meet the same table and
indexes; the ratio INSERT / COPY is the figure to read (the machine's noise cancels in it).

    .venv/bin/python benchmarks/bench_bulk.py                 # 200,000 rows, 3 rounds each
    .venv/bin/python benchmarks/bench_bulk.py --rows 50000 --rounds 2

Needs PostgreSQL on 127.0.0.1:5432 (user postgres); uses its own database `laughlab_bench`
(BENCH_DB_NAME), dropped and created afresh.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import make_study, setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    setup_django(postgres=True)

    from django.db import connection, models, transaction
    from django.utils import timezone

    from apps.core import bulk
    from apps.judgments.models import ScoreResponse
    from apps.raters.models import RaterSession

    study = make_study(
        "bulk", n_items=2000, n_raters=200, n_scorecards=0, n_pairs=0, topic_size=20, seed=1
    )
    sessions = list(RaterSession.objects.filter(rater__study=study).values_list("rater_id", "pk"))
    items = list(study.items.values_list("pk", flat=True))
    now = timezone.now()
    columns = (
        "study_id",
        "rater_id",
        "session_id",
        "seconds_into_session",
        "active_seconds",
        "idempotency_key",
        "origin",
        "submitted_at",
        "created_at",
        "meta",
        "item_id",
        "explanation_match",
        "explanation_answered_at",
    )

    def rows(tag: str) -> list[tuple[object, ...]]:
        return [
            (
                study.pk,
                *sessions[k % len(sessions)],
                float(k % 1800),
                None,
                f"bench-{tag}-{k}",
                "imported",
                now,
                now,
                {},
                # One scorecard per rater and item, as the table requires.
                items[(k // len(sessions)) % len(items)],
                "",
                None,
            )
            for k in range(args.rows)
        ]

    fields = [ScoreResponse._meta.get_field(name) for name in columns]
    concrete = [f for f in fields if isinstance(f, models.Field)]
    quote = connection.ops.quote_name
    names = ", ".join(quote(str(f.column)) for f in concrete)

    def run(path: str, tag: str) -> float:
        data = rows(tag)
        converters = [(k, c) for k, c in enumerate(map(bulk._converter, concrete)) if c is not None]
        with transaction.atomic():
            start = time.perf_counter()
            if path == "copy":
                keys = bulk._copy(ScoreResponse, concrete, names, converters, data, returning=True)
            else:
                keys = bulk._insert(
                    ScoreResponse, names, len(concrete), converters, data, returning=True
                )
            took = time.perf_counter() - start
            assert len(keys) == args.rows
            transaction.set_rollback(True)
        return took

    times: dict[str, list[float]] = {"insert": [], "copy": []}
    for r in range(args.rounds):
        for path in ("insert", "copy") if r % 2 == 0 else ("copy", "insert"):
            times[path].append(run(path, f"{path}{r}"))
    insert, copy = statistics.median(times["insert"]), statistics.median(times["copy"])
    print(f"{args.rows:,} scorecard responses, keys returned; median of {args.rounds} rounds")
    print(f"  INSERT (1,000 rows a statement): {insert:6.2f} s  {args.rows / insert:>9,.0f} rows/s")
    print(
        f"  COPY ({bulk.COPY_CHUNK:,} rows a chunk):      {copy:6.2f} s  {args.rows / copy:>9,.0f} rows/s"
    )
    print(f"  INSERT / COPY: {insert / copy:.2f}")


if __name__ == "__main__":
    main()
