"""Coverage of bootstrap intervals when raters differ: rater-clustered against iid resampling.

Two simulations, each repeated ``--reps`` times with fresh raters:

* mean: every rater scores the same items, ``score = item effect + rater leniency + noise``.
  The target is the population mean score of those items (leniency averages out over the
  population of raters). Intervals from ``mean_ci`` with ``clusters=rater`` and without.
* Bradley-Terry: every rater has their own taste (a rater-by-item random effect added to the
  true log-strengths) and judges random pairs. The target is what the pooled fit converges to
  with infinitely many raters: the BT fit to the population win probabilities
  E[sigmoid(s_i - s_j + taste difference)], computed by Gauss-Hermite quadrature (taste
  attenuates differences, so this is not the raw ``s``). Intervals from ``bt_bootstrap`` with
  ``cluster="rater"`` and ``cluster="none"``; coverage is averaged over items.

A 95% interval should cover about 95% of the time. Monte Carlo standard error of a coverage
near 0.95 from ``reps`` replications: sqrt(0.95 * 0.05 / reps) (0.010 for 500).

Run from the project root:  .venv/bin/python benchmarks/sim_coverage.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats.bootstrap import mean_ci
from apps.analysis.stats.bradley_terry import bt_bootstrap, bt_fit_matrix


def mean_coverage(
    *,
    reps: int,
    n_raters: int,
    n_items: int,
    leniency_sd: float,
    noise_sd: float,
    rounds: int,
    seed: int,
) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    item_effect = rng.normal(4.0, 1.0, n_items)
    truth = float(item_effect.mean())
    hits = {"rater": 0, "iid": 0}
    for rep in range(reps):
        leniency = rng.normal(0.0, leniency_sd, n_raters)
        scores = (
            item_effect[None, :]
            + leniency[:, None]
            + rng.normal(0.0, noise_sd, (n_raters, n_items))
        ).ravel()
        raters = np.repeat(np.arange(n_raters), n_items)
        for name, clusters in (("rater", raters), ("iid", None)):
            ci = mean_ci(scores, clusters=clusters, rounds=rounds, seed=seed * 100_000 + rep)
            hits[name] += ci.ci_low <= truth <= ci.ci_high
    return {name: count / reps for name, count in hits.items()}


def population_bt_scores(true_scores: np.ndarray, taste_sd: float) -> np.ndarray:
    """The pooled BT estimand under rater taste: BT fit to population win probabilities."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(64)
    weights = weights / weights.sum()
    # The difference of two independent tastes has sd taste_sd * sqrt(2).
    diff = true_scores[:, None] - true_scores[None, :]
    noise = taste_sd * np.sqrt(2.0) * nodes
    prob = (weights / (1.0 + np.exp(-(diff[:, :, None] + noise)))).sum(axis=2)
    np.fill_diagonal(prob, 0.0)
    # Large pseudo-counts make the ridge irrelevant: this is the population maximum likelihood.
    return bt_fit_matrix(prob * 1e6, alpha=1e-9).scores


def bt_coverage(
    *,
    reps: int,
    n_items: int,
    n_raters: int,
    per_rater: int,
    taste_sd: float,
    rounds: int,
    seed: int,
) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    true_scores = np.linspace(-1.0, 1.0, n_items)
    truth = population_bt_scores(true_scores, taste_sd)
    hits = {"rater": 0.0, "none": 0.0}
    for rep in range(reps):
        taste = rng.normal(0.0, taste_sd, (n_raters, n_items))
        raters = np.repeat(np.arange(n_raters), per_rater)
        a = rng.integers(0, n_items, raters.size)
        b = (a + rng.integers(1, n_items, raters.size)) % n_items
        strength = true_scores[None, :] + taste
        p_a = 1.0 / (1.0 + np.exp(-(strength[raters, a] - strength[raters, b])))
        a_wins = rng.random(raters.size) < p_a
        winners, losers = np.where(a_wins, a, b), np.where(a_wins, b, a)
        for name in hits:
            boot = bt_bootstrap(
                winners,
                losers,
                n_items,
                clusters=raters,
                rounds=rounds,
                seed=seed * 100_000 + rep,
                cluster=name,
            )
            hits[name] += float(np.mean((boot.ci_low <= truth) & (truth <= boot.ci_high)))
    return {name: total / reps for name, total in hits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--quick", action="store_true", help="150 replications, 500 rounds")
    args = parser.parse_args()
    if args.quick:
        args.reps, args.rounds = 150, 500

    print(f"{args.reps} replications, {args.rounds} bootstrap rounds, nominal level 0.95")
    mc_se = np.sqrt(0.95 * 0.05 / args.reps)
    t0 = time.perf_counter()
    mean_setup: dict[str, Any] = {
        "n_raters": 30,
        "n_items": 20,
        "leniency_sd": 0.8,
        "noise_sd": 1.0,
    }
    mean_cov = mean_coverage(reps=args.reps, rounds=args.rounds, seed=args.seed, **mean_setup)
    t1 = time.perf_counter()
    bt_setup: dict[str, Any] = {"n_items": 8, "n_raters": 40, "per_rater": 30, "taste_sd": 1.0}
    bt_cov = bt_coverage(reps=args.reps, rounds=args.rounds, seed=args.seed, **bt_setup)
    t2 = time.perf_counter()

    print(f"{'statistic':<44} {'rater-clustered':>16} {'iid':>8} {'time s':>7}")
    print(
        f"{'mean score (30 raters x 20 items, leniency)':<44} "
        f"{mean_cov['rater']:>16.3f} {mean_cov['iid']:>8.3f} {t1 - t0:>7.1f}"
    )
    print(
        f"{'BT scores (8 items, 40 raters x 30, taste)':<44} "
        f"{bt_cov['rater']:>16.3f} {bt_cov['none']:>8.3f} {t2 - t1:>7.1f}"
    )
    print(f"Monte Carlo standard error of a coverage near 0.95: {mc_se:.3f}")


if __name__ == "__main__":
    main()
