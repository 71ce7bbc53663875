"""The rater bootstrap's draws: each round counted on its own against every round at once, in
one process.

    .venv/bin/python benchmarks/bench_cluster_draws.py
    .venv/bin/python benchmarks/bench_cluster_draws.py --repeats 50

`cluster_draws` (apps/analysis/stats/bootstrap.py) gives, for r bootstrap rounds, how many times
each of n raters is drawn: a (raters, rounds) array that the sparse products of the clustered
intervals and of the k-rater reliability read. From the same draws it was counted in one flat
`bincount` over every round (the baseline below); from 2,000 raters on, each round is now
counted on its own, into a row, and the rows are turned into the (raters, rounds) layout in one
copy. Before 2026-12-07 each round's counts were written straight into a column
(`into_columns` below): every count then landed on its own cache line. The shapes are those the aggregation meets: rounds come in batches of about
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


def into_columns(rng: np.random.Generator, n: int, r: int) -> np.ndarray:
    """Each round counted on its own, written straight into its column (up to 2026-12-07)."""
    idx = rng.integers(0, n, size=(r, n))
    draws = np.empty((n, r))
    for k in range(r):
        draws[:, k] = np.bincount(idx[k], minlength=n)
    return draws


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
    print(
        f"{'raters':>8} {'rounds':>7} {'all at once ms':>15} {'columns ms':>11} {'now ms':>8}"
        f" {'/ at once':>10} {'/ columns':>10}  same"
    )
    for n, r in SHAPES:
        before = best_ms(all_rounds_at_once, n, r, args.repeats)
        columns = best_ms(into_columns, n, r, args.repeats)
        now = best_ms(cluster_draws, n, r, args.repeats)
        want = all_rounds_at_once(np.random.default_rng(7), n, r)
        same = np.array_equal(want, cluster_draws(np.random.default_rng(7), n, r))
        same &= np.array_equal(want, into_columns(np.random.default_rng(7), n, r))
        print(
            f"{n:>8,} {r:>7,} {before:>15.2f} {columns:>11.2f} {now:>8.2f}"
            f" {now / before:>10.2f} {now / columns:>10.2f}  {same}"
        )


if __name__ == "__main__":
    main()
