"""Active pair selection against uniform random pairing: judgments needed to rank well.

Simulates items with known Bradley-Terry strengths, hands out pairs one judgment at a time
(each outcome drawn from the true win probability), refits every ``--check-every`` judgments
and records the first count at which Kendall's tau between the fitted and the true scores
reaches ``--target``. Both designs start with the same minimum-exposure rule
(``min_appearances``); "uniform" is ``choose_pair`` with an endless warm-up, i.e. a uniformly
random allowed pair.

Run from the project root:  .venv/bin/python benchmarks/sim_active_pairs.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from scipy.stats import kendalltau

from apps.analysis.stats.active import choose_pair
from apps.analysis.stats.bradley_terry import bt_fit_matrix


def judgments_to_target(
    true_scores: np.ndarray,
    *,
    active: bool,
    seed: int,
    target: float,
    check_every: int,
    max_judgments: int,
    min_appearances: int,
) -> int:
    """First number of judgments at which Kendall tau(fit, truth) >= target (or the cap)."""
    n = true_scores.size
    wins = np.zeros((n, n))
    appearances = np.zeros(n, dtype=np.int64)
    outcome_rng = np.random.default_rng(seed)
    warmup = 0 if active else max_judgments + 1
    for step in range(1, max_judgments + 1):
        i, j = choose_pair(
            wins,
            n,
            appearances=appearances,
            min_appearances=min_appearances,
            candidates=None,
            seed=seed * 1_000_003 + step,
            warmup=warmup,
        )
        p_i = 1.0 / (1.0 + np.exp(-(true_scores[i] - true_scores[j])))
        if outcome_rng.random() < p_i:
            wins[i, j] += 1
        else:
            wins[j, i] += 1
        appearances[[i, j]] += 1
        if step % check_every == 0:
            tau = kendalltau(bt_fit_matrix(wins).scores, true_scores).statistic
            if tau >= target:
                return step
    return max_judgments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--spread", type=float, default=1.0, help="sd of true log-strengths")
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--check-every", type=int, default=25)
    parser.add_argument("--max-judgments", type=int, default=40_000)
    parser.add_argument("--min-appearances", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="3 seeds, 30 items")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.items = 3, 30

    print(
        f"{args.items} items, true log-strengths ~ N(0, {args.spread}^2), target Kendall tau "
        f"{args.target}, checked every {args.check_every} judgments, {args.seeds} seeds"
    )
    print(f"{'seed':>4} {'uniform':>9} {'active':>9} {'saving':>8} {'active s':>9}")
    uniform_counts, active_counts = [], []
    for seed in range(args.seeds):
        truth = np.random.default_rng(10_000 + seed).normal(0.0, args.spread, args.items)
        common = {
            "seed": seed,
            "target": args.target,
            "check_every": args.check_every,
            "max_judgments": args.max_judgments,
            "min_appearances": args.min_appearances,
        }
        u = judgments_to_target(truth, active=False, **common)
        t0 = time.perf_counter()
        a = judgments_to_target(truth, active=True, **common)
        elapsed = time.perf_counter() - t0
        uniform_counts.append(u)
        active_counts.append(a)
        print(f"{seed:>4} {u:>9} {a:>9} {1 - a / u:>8.1%} {elapsed:>9.1f}")
    mean_u, mean_a = float(np.mean(uniform_counts)), float(np.mean(active_counts))
    print(
        f"mean {mean_u:>9.0f} {mean_a:>9.0f} {1 - mean_a / mean_u:>8.1%}   "
        f"(active needs {mean_a / mean_u:.2f}x the judgments of uniform)"
    )
    capped = sum(c >= args.max_judgments for c in uniform_counts + active_counts)
    if capped:
        print(f"warning: {capped} runs hit the cap of {args.max_judgments} judgments")


if __name__ == "__main__":
    main()
