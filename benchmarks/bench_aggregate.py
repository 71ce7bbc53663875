"""End-to-end aggregation benchmarks: database rows -> stored results.

(a) `manage.py aggregate` on a pairs study: 100 items, 600 raters, 100,000 pair judgments;
    target under 5 s. Reported also as a ratio against the naive Bradley-Terry bootstrap
    (resample the judgment list, refit with choix.ilsr_pairwise), timed in the same process.
(b) a full recompute of a study of 2,000 items, 600 raters, 200,000 scorecard answers
    (50,000 scorecards x 4 questions) and 100,000 pair judgments; target under 30 s, with the
    peak memory of the process.

The data go into a throwaway SQLite database in a temporary folder (or, with --postgres, a
database `laughlab_bench` on 127.0.0.1 that is dropped and recreated). Run from the project root:

    .venv/bin/python benchmarks/bench_aggregate.py            # both scenarios, 1,000 rounds
    .venv/bin/python benchmarks/bench_aggregate.py --quick    # smaller, 200 rounds
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# common fixes the BLAS threads before numpy is first imported (numpy is imported lazily here).
from common import make_full_study, make_study, setup_django


def _naive_bt_round_seconds(study: Any, rounds: int, seed: int) -> float:
    """The baseline: resample the judgment list and refit with choix.ilsr_pairwise."""
    import choix
    import numpy as np

    from apps.analysis.selectors import study_inputs_load

    inputs = study_inputs_load(study=study)
    winners = np.where(inputs.pair_winner_is_left, inputs.pair_left, inputs.pair_right)
    losers = np.where(inputs.pair_winner_is_left, inputs.pair_right, inputs.pair_left)
    data = np.stack([winners, losers], axis=1)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(rounds):
        sample = data[rng.integers(len(data), size=len(data))]
        choix.ilsr_pairwise(inputs.n_items, sample.tolist(), alpha=0.01)
    return (time.perf_counter() - start) / rounds


def _timed_aggregate(study: Any, rounds: int) -> dict[str, float]:
    from apps.analysis import services
    from apps.analysis.selectors import study_inputs_load
    from apps.analysis.stats.report import compute_results

    start, cpu_start = time.perf_counter(), time.process_time()
    inputs = study_inputs_load(study=study)
    loaded = time.perf_counter()
    compute_results(inputs, seed=1, rounds=rounds)
    computed, cpu_computed = time.perf_counter(), time.process_time()
    services.study_aggregate(study=study, rounds=rounds, seed=1)
    end, cpu_end = time.perf_counter(), time.process_time()
    return {
        "load": loaded - start,
        "compute": computed - loaded,
        "aggregate_total": end - computed,
        # CPU time of this process (user + system): on a shared machine, what the work costs.
        "aggregate_cpu": cpu_end - cpu_computed,
        "load_compute_cpu": cpu_computed - cpu_start,
    }


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the data, 200 rounds")
    parser.add_argument(
        "--postgres", action="store_true", help="use PostgreSQL on 127.0.0.1 instead of SQLite"
    )
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    rounds = args.rounds or (200 if args.quick else 1000)
    setup_django(args.postgres)

    print(f"rounds={rounds} database={'postgresql' if args.postgres else 'sqlite'}")
    t = time.perf_counter()
    pairs_study = make_study(
        "bench-pairs",
        n_items=100,
        n_raters=600 // scale,
        n_scorecards=0,
        n_pairs=100_000 // scale,
        topic_size=100,
        seed=11,
    )
    print(
        f"(a) built 100 items, {100_000 // scale} pair judgments in {time.perf_counter() - t:.1f} s"
    )
    naive = _naive_bt_round_seconds(pairs_study, rounds=5, seed=3)
    timing = _timed_aggregate(pairs_study, rounds)
    naive_total = naive * rounds
    print(
        f"(a) aggregate end to end {timing['aggregate_total']:.2f} s (load {timing['load']:.2f} s, "
        f"compute {timing['compute']:.2f} s); target < 5 s; CPU {timing['aggregate_cpu']:.2f} s\n"
        f"    naive BT bootstrap alone: {naive * 1000:.0f} ms/round x {rounds} = {naive_total:.0f} s; "
        f"ratio naive / whole aggregation = {naive_total / timing['aggregate_total']:.0f}x"
    )

    rss_before = _peak_rss_mb()
    t = time.perf_counter()
    full_study = make_full_study("bench-full", scale=scale, seed=12)
    print(
        f"(b) built {2000 // scale} items, {200_000 // scale} scorecard answers, {100_000 // scale} pairs "
        f"in {time.perf_counter() - t:.1f} s"
    )
    timing = _timed_aggregate(full_study, rounds)
    print(
        f"(b) full recompute {timing['aggregate_total']:.2f} s (load {timing['load']:.2f} s, compute "
        f"{timing['compute']:.2f} s); target < 30 s; CPU {timing['aggregate_cpu']:.2f} s; "
        f"peak RSS {_peak_rss_mb():.0f} MB "
        f"(before the study was built: {rss_before:.0f} MB)"
    )


if __name__ == "__main__":
    main()
