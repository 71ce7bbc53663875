"""Coverage of agreement intervals when the raters are a sample of raters in general.

The estimand is an agreement coefficient of *these items* rated by *raters in general*: the
value the coefficient takes with (practically) every rater of the population. Each replication
draws fresh raters for the same items, with their own leniency (sd 0.5) and taste (a rater x
item effect, sd 0.6) on a 1-5 scale, each rating an item with probability 0.7. The truth is the
coefficient of the same items over a large rater sample (``--truth-raters``, default 3,000; 600
for the mean pairwise kappa, which grows with the square of the raters).

Intervals compared, all 95%:

* rater jackknife: delete-a-group jackknife over raters with t intervals (the exported one);
* rater bootstrap: percentile interval over rater bootstrap counts (pairs of copies of one
  rater excluded, see apps/analysis/stats/rater_agreement.py);
* item bootstrap: the earlier percentile interval that resampled items.

Monte Carlo standard error of a coverage near 0.95 from ``reps`` replications:
sqrt(0.95 * 0.05 / reps) (0.015 for 200).

Run from the project root:  .venv/bin/python benchmarks/sim_agreement_coverage.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats.agreement import fleiss_kappa_ci, krippendorff_alpha_ci
from apps.analysis.stats.bootstrap import bootstrap_weighted_statistic
from apps.analysis.stats.rater_agreement import (
    RaterUnits,
    jackknife_groups,
    mean_pair_kappa_intervals,
    pairwise_cohen_kappa,
    rater_agreement_intervals,
)

CATEGORIES = np.arange(1.0, 6.0)
LEVELS = ("ordinal", "interval")
STATS = ("fleiss", "ordinal", "interval", "kappa_unweighted", "kappa_quadratic")


def ratings(
    rng: np.random.Generator, item_effect: np.ndarray, n_raters: int, share: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_items = item_effect.size
    leniency = rng.normal(0.0, 0.5, n_raters)
    taste = rng.normal(0.0, 0.6, (n_raters, n_items))
    latent = 3.0 + item_effect[None, :] + leniency[:, None] + taste
    score = np.clip(np.rint(latent), 1, 5)
    rated = rng.random((n_raters, n_items)) < share
    rater, item = np.nonzero(rated)
    return item.astype(np.int64), rater.astype(np.int64), score[rater, item]


def truth(item_effect: np.ndarray, *, raters: int, pair_raters: int, share: float) -> dict:
    rng = np.random.default_rng(12345)
    item, rater, value = ratings(rng, item_effect, raters, share)
    units = RaterUnits.build(item, rater, value)
    full = units.coefficients(np.ones((1, units.n_raters)), LEVELS)
    out = {key: float(full[key][0]) for key in ("fleiss", *LEVELS)}
    item, rater, value = ratings(rng, item_effect, pair_raters, share)
    pairs = pairwise_cohen_kappa(item, rater, value, CATEGORIES)
    for weighting, kappa in pairs.kappa.items():
        out[f"kappa_{weighting}"] = float(np.nanmean(kappa))
    return out


def one_study(
    rng: np.random.Generator, item_effect: np.ndarray, n_raters: int, share: float, seed: int
) -> dict[str, dict[str, tuple[float, float]]]:
    item, rater, value = ratings(rng, item_effect, n_raters, share)
    n_items = item_effect.size
    jack = rater_agreement_intervals(item, rater, value, levels=LEVELS, seed=seed)
    pairs = pairwise_cohen_kappa(item, rater, value, CATEGORIES)
    kappas = mean_pair_kappa_intervals(pairs, seed=seed)
    out: dict[str, dict[str, tuple[float, float]]] = {"rater jackknife": {}}
    for key in ("fleiss", *LEVELS):
        out["rater jackknife"][key] = (jack[key].ci_low, jack[key].ci_high)
    for weighting, entry in kappas.items():
        out["rater jackknife"][f"kappa_{weighting}"] = (entry.ci_low, entry.ci_high)
    # Rater bootstrap: the same sums with bootstrap counts.
    units = RaterUnits.build(item, rater, value)
    boot = {}
    for key in ("fleiss", *LEVELS):

        def coefficient(w: np.ndarray, key: str = key) -> np.ndarray:
            return units.coefficients(w, LEVELS)[key]

        boot[key] = bootstrap_weighted_statistic(coefficient, units.n_raters, rounds=500, seed=seed)
    for weighting, kappa in pairs.kappa.items():
        defined = np.isfinite(kappa)
        raters, idx = np.unique(
            np.concatenate([pairs.left[defined], pairs.right[defined]]), return_inverse=True
        )
        li, ri, k = idx[: defined.sum()], idx[defined.sum() :], kappa[defined]

        def mean_kappa(
            w: np.ndarray, li: np.ndarray = li, ri: np.ndarray = ri, k: np.ndarray = k
        ) -> np.ndarray:
            both = w[:, li] * w[:, ri]
            with np.errstate(invalid="ignore", divide="ignore"):
                return (both @ k) / both.sum(axis=1)

        boot[f"kappa_{weighting}"] = bootstrap_weighted_statistic(
            mean_kappa, len(raters), rounds=500, seed=seed
        )
    out["rater bootstrap"] = boot
    fleiss = fleiss_kappa_ci(item, value, n_items, CATEGORIES, rounds=500, seed=seed)
    items = {"fleiss": (fleiss.ci_low, fleiss.ci_high)}
    for level in LEVELS:
        alpha = krippendorff_alpha_ci(item, rater, value, level=level, rounds=500, seed=seed)
        items[level] = (alpha.ci_low, alpha.ci_high)
    out["item bootstrap"] = items
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="60 replications")
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--raters", type=int, default=30)
    parser.add_argument("--truth-raters", type=int, default=3000)
    args = parser.parse_args()
    reps = 60 if args.quick else args.reps
    share = 0.7
    item_effect = np.random.default_rng(7).normal(0.0, 0.9, args.items)
    start = time.perf_counter()
    target = truth(item_effect, raters=args.truth_raters, pair_raters=600, share=share)
    hits: dict[str, dict[str, int]] = {}
    counted: dict[str, dict[str, int]] = {}
    rng = np.random.default_rng(2026)
    for rep in range(reps):
        for method, intervals in one_study(rng, item_effect, args.raters, share, rep).items():
            for key, (low, high) in intervals.items():
                if np.isfinite(low) and np.isfinite(high):
                    counted.setdefault(method, {}).setdefault(key, 0)
                    counted[method][key] += 1
                    hits.setdefault(method, {}).setdefault(key, 0)
                    hits[method][key] += int(low <= target[key] <= high)
    groups = jackknife_groups(args.raters, groups=50, seed=0)[1]
    print(
        f"{reps} studies: {args.items} items, {args.raters} raters (jackknife groups {groups}), "
        f"each rating an item with probability {share}; {time.perf_counter() - start:.0f} s"
    )
    print("truth: " + ", ".join(f"{key} {target[key]:.3f}" for key in STATS))
    header = f"{'interval':<18}" + "".join(f"{key:>18}" for key in STATS)
    print(header)
    for method in ("rater jackknife", "rater bootstrap", "item bootstrap"):
        cells = []
        for key in STATS:
            n = counted.get(method, {}).get(key, 0)
            cells.append(f"{hits[method][key] / n:>18.3f}" if n else f"{'-':>18}")
        print(f"{method:<18}" + "".join(cells))


if __name__ == "__main__":
    main()
