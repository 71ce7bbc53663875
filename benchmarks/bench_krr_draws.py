"""The empirical k-rater reliability's random draws, against the code before, in one process.

    .venv/bin/python benchmarks/bench_krr_draws.py            # 50,000 items x 20 ratings
    .venv/bin/python benchmarks/bench_krr_draws.py --quick    # 5,000 items
    .venv/bin/python benchmarks/bench_krr_draws.py --crowd    # 15,000 items x 5 ratings
    .venv/bin/python benchmarks/bench_krr_draws.py --prefix   # places drawn against shuffles

`k_rater_reliability` (apps/analysis/stats/reliability.py) draws 200 random orders of every
item's ratings and correlates the means of the first k and the next k. The code before drew
them by sorting random keys over all the ratings at once (`one_sort_krr` below, kept here as
the baseline); now items are grouped by their number of ratings and each group's rows are
shuffled in place. The benchmark times both three times, alternating, reports the ratio, and
sets the two estimates side by side (equal within their Monte Carlo error; the draws differ).

`--crowd`: the shape of crowd-graded sets (five one-grade raters per item), where only k = 1
has 2k ratings and two places of each order are read. It times the empirical statistic with
those two places drawn (`_random_prefix`) against the same statistic with every row shuffled
whole (the code before; its first two places are the same draws as then), alternating.
`--prefix`: the choice `_prefix_cheaper` makes, timed: for rows of c ratings and d places
read, drawing the d places against shuffling the rows, per draw of every row.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats import reliability


def one_sort_krr(
    it: np.ndarray, va: np.ndarray, n_items: int, ks: Sequence[int], draws: int, min_items: int
) -> list[float | None]:
    """The code before: a random order of each item's ratings by one sort of all of them."""
    rng = np.random.default_rng(0)
    counts = np.bincount(it, minlength=n_items)
    order = np.argsort(it, kind="stable")
    it_sorted, va_sorted = it[order], va[order]
    start = np.concatenate(([0], np.cumsum(counts)))[:-1]
    eligible = [np.flatnonzero(counts >= 2 * k) for k in ks]
    sums: list[list[float]] = [[] for _ in ks]
    chunk = max(1, 2_000_000 // it.size)
    for first in range(0, draws, chunk):
        r = min(chunk, draws - first)
        shuffled = np.argsort(it_sorted[None, :] + rng.random((r, it.size)), axis=1)
        values = va_sorted[shuffled]
        for j, k in enumerate(ks):
            if eligible[j].size < min_items:
                continue
            picked = values[:, start[eligible[j]][:, None] + np.arange(2 * k)[None, :]]
            a = picked[:, :, :k].mean(axis=2)
            b = picked[:, :, k:].mean(axis=2)
            a = a - a.mean(axis=1, keepdims=True)
            b = b - b.mean(axis=1, keepdims=True)
            r_ab = (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
            sums[j].extend(r_ab.tolist())
    return [float(np.mean(found)) if found else None for found in sums]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--crowd", action="store_true", help="15,000 items x 5 ratings")
    parser.add_argument("--prefix", action="store_true", help="places drawn against shuffles")
    args = parser.parse_args()
    if args.prefix:
        prefix_grid()
        return
    if args.crowd:
        crowd()
        return
    n_items, per_item = (5_000, 20) if args.quick else (50_000, 20)
    rng = np.random.default_rng(3)
    it = np.repeat(np.arange(n_items), per_item)
    strength = rng.normal(0, 0.8, n_items)
    va = np.clip(np.rint(1.5 + strength[it] + rng.normal(0, 0.8, it.size)), 0, 3)
    ks = reliability.DEFAULT_KS
    print(f"{n_items:,} items x {per_item} ratings, 200 draws, k in {ks}")
    before: list[float | None] = []
    now: list[float | None] = []
    for repeat in range(3):
        started = time.perf_counter()
        before = one_sort_krr(it, va, n_items, ks, 200, 10)
        seconds_before = time.perf_counter() - started
        started = time.perf_counter()
        found = reliability._empirical_krr(it, va, n_items, ks, 200, 10, np.random.default_rng(0))[
            0
        ]
        seconds_now = time.perf_counter() - started
        now = [value for value, _ in found]
        print(
            f"  run {repeat + 1}: before {seconds_before:.2f} s, now {seconds_now:.2f} s: "
            f"{seconds_before / seconds_now:.1f}x"
        )
    for k, a, b in zip(ks, before, now, strict=True):
        if a is not None and b is not None:
            print(f"  k={k:<2} before {a:.4f}  now {b:.4f}  difference {b - a:+.4f}")


def _best_of(run: Callable[..., object], *args: object, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run(*args)
        best = min(best, time.perf_counter() - started)
    return best


def _shuffled(table: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permuted(np.broadcast_to(table, (r, *table.shape)), axis=2)


def prefix_grid() -> None:
    rng = np.random.default_rng(1)
    print("rows of c ratings, d places read: ms per draw of every row (best of 3)")
    for c, depth in ((3, 2), (5, 2), (9, 2), (20, 2), (5, 4), (7, 6), (12, 6), (30, 6),
                     (11, 10), (25, 10), (40, 20), (400, 40)):  # fmt: skip
        n = max(200, 100_000 // c)
        table = rng.random((n, c))
        r = max(1, 2_000_000 // table.size)
        whole = _best_of(_shuffled, table, r, rng) / r
        places = _best_of(reliability._random_prefix, table, r, depth, rng) / r
        chosen = "places" if reliability._prefix_cheaper(c, depth) else "shuffle"
        print(
            f"  c={c:<3} d={depth:<2} ({n:>6,} rows): shuffle {1e3 * whole:6.3f}, places "
            f"{1e3 * places:6.3f}, places / shuffle {places / whole:5.2f}; chosen: {chosen}"
        )


def crowd() -> None:
    n_items, per_item = 15_000, 5
    rng = np.random.default_rng(3)
    it = np.repeat(np.arange(n_items), per_item)
    strength = rng.normal(0, 0.8, n_items)
    va = np.clip(np.rint(1.5 + strength[it] + rng.normal(0, 0.8, it.size)), 0, 3)
    ks = reliability.DEFAULT_KS
    chosen = reliability._prefix_cheaper

    def run(places: bool) -> float | None:
        reliability._prefix_cheaper = chosen if places else (lambda c, depth: False)
        try:
            found = reliability._empirical_krr(
                it, va, n_items, ks, 200, 10, np.random.default_rng(0)
            )
        finally:
            reliability._prefix_cheaper = chosen
        return found[0][0][0]

    print(f"{n_items:,} items x {per_item} ratings, 200 draws, k = 1 read")
    ratios = []
    for repeat in range(3):
        whole = _best_of(run, False, repeats=1)
        places = _best_of(run, True, repeats=1)
        ratios.append(places / whole)
        print(
            f"  run {repeat + 1}: rows shuffled whole {whole:.3f} s, two places drawn "
            f"{places:.3f} s: {places / whole:.2f} of the time"
        )
    print(
        f"  median {sorted(ratios)[1]:.2f}; k = 1: whole {run(False):.4f}, places {run(True):.4f}"
    )


if __name__ == "__main__":
    main()
