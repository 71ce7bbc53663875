"""Server time of every researcher page on the benchmark-size study.

A study of 2,000 items, 600 raters, 200,000 scorecard answers and 100,000 pair judgments is built
in a throwaway database (see common.py) and aggregated once; then each page is requested through
Django's test client (the whole request cycle, no network) and the median of several requests is
reported, in milliseconds and as a ratio to the login page measured in the same process (the
baseline that absorbs machine noise). Target: every page under 300 ms.

    .venv/bin/python benchmarks/bench_dashboard.py           # full size
    .venv/bin/python benchmarks/bench_dashboard.py --quick   # a tenth of the data
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import make_full_study, setup_django


def _median_ms(client, url: str, repeat: int) -> tuple[float, int, int]:  # type: ignore[no-untyped-def]
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm caches (templates, payload parse paths)
    times = []
    status = 0
    queries = 0
    for _ in range(repeat):
        reset_queries()
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        status = response.status_code
        queries = len(captured)
    return statistics.median(times), status, queries


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    setup_django(args.postgres)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from apps.analysis.services import study_aggregate
    from apps.studies.services import study_member_add

    start = time.perf_counter()
    study = make_full_study("bench-dash", scale=scale, seed=21)
    study_aggregate(study=study, rounds=200, seed=1)
    print(f"built and aggregated the study in {time.perf_counter() - start:.1f} s")
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    study_member_add(study=study, user=user)
    client = Client()
    baseline_ms, _, _ = _median_ms(client, "/accounts/login/", args.repeat)
    client.force_login(user)
    pages = [
        "/studies/",
        f"/studies/{study.slug}/",
        f"/studies/{study.slug}/progress/",
        f"/studies/{study.slug}/settings/",
        f"/studies/{study.slug}/results/",
        *(
            f"/studies/{study.slug}/results/{section}/"
            for section in ("leaderboard", "items", "agreement", "turing", "quality", "safety")
        ),
        f"/studies/{study.slug}/results/items/?sort=bt_score&dir=desc&page=3",
        f"/studies/{study.slug}/exports/",
    ]
    print(f"baseline (login page): {baseline_ms:.1f} ms")
    print(f"{'page':60} {'status':>6} {'queries':>7} {'ms':>8} {'x base':>7}")
    worst = 0.0
    for url in pages:
        ms, status, queries = _median_ms(client, url, args.repeat)
        worst = max(worst, ms)
        print(f"{url:60} {status:>6} {queries:>7} {ms:>8.1f} {ms / baseline_ms:>7.1f}")
    print(f"slowest page {worst:.0f} ms; target < 300 ms")


if __name__ == "__main__":
    main()
