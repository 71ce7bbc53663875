"""The rater bootstrap's draws: each round counted on its own against every round at once, in
one process.

    .venv/bin/python benchmarks/bench_cluster_draws.py
    .venv/bin/python benchmarks/bench_cluster_draws.py --repeats 50

`cluster_draws` (apps/analysis/stats/bootstrap.py) gives, for r bootstrap rounds, how many times
each of n raters is drawn: a (raters, rounds) array that the sparse products of the clustered
intervals and of the k-rater reliability read. From the same draws it was counted in one flat
`bincount` over every round (the baseline below); from 2,000 raters on, each round is now
counted on its own. The shapes are those the aggregation meets: rounds come in batches of about
two million draws, so 75,000 raters (the crowd set's one-grade raters) come 26 rounds at a time.
Each way is timed in turn, best of three blocks of `--repeats` calls, and the counts are
compared whole.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apps.analysis.stats.bootstrap import cluster_draws

SHAPES = ((200, 1000), (1_000, 2_000), (2_000, 1_000), (5_000, 400), (25_000, 80), (75_000, 26))


def all_rounds_at_once(rng: np.random.Generator, n: int, r: int) -> np.ndarray:
    """The baseline: every round's counts in one flat bincount, then laid out by rater."""
    idx = rng.integers(0, n, size=(r, n))
    idx *= r
    idx += np.arange(r, dtype=np.int64)[:, None]
    return np.bincount(idx.ravel(), minlength=n * r).reshape(n, r).astype(np.float64)


def best_ms(
    draw: Callable[[np.random.Generator, int, int], np.ndarray], n: int, r: int, repeats: int
) -> float:
    times = []
    for block in range(3):
        start = time.perf_counter()
        for seed in range(repeats):
            draw(np.random.default_rng(block * repeats + seed), n, r)
        times.append((time.perf_counter() - start) / repeats * 1000)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"{'raters':>8} {'rounds':>7} {'all at once ms':>15} {'now ms':>8} {'ratio':>6}  same")
    for n, r in SHAPES:
        before = best_ms(all_rounds_at_once, n, r, args.repeats)
        now = best_ms(cluster_draws, n, r, args.repeats)
        same = np.array_equal(
            all_rounds_at_once(np.random.default_rng(7), n, r),
            cluster_draws(np.random.default_rng(7), n, r),
        )
        print(f"{n:>8,} {r:>7,} {before:>15.2f} {now:>8.2f} {now / before:>6.2f}  {same}")


if __name__ == "__main__":
    main()
