"""Coverage of the k-rater reliability interval, and the empirical k-rater reliability against
the Spearman-Brown prediction, in studies simulated with planted variances.

Each simulated study: ``n_items`` items with true effects ``u`` (drawn from a normal and then
rescaled to the planted sample variance exactly, so "these items" have the planted variance),
``n_raters`` raters each rating every item with probability ``share`` (one-way, unbalanced),
``score = u[item] + leniency[rater] + noise`` with leniency ~ N(0, sl^2) and noise ~ N(0, se^2).
The truth is the planted ICC(1) = su^2 / (su^2 + sl^2 + se^2) (leniency counts as error, as in
the one-way model), and ICC(1,k) = k ICC / (1 + (k - 1) ICC).

Per study: ``k_rater_reliability`` with the plain and the expanded percentile interval (the
same seed, so the same bootstrap rounds), and, for comparison, the plain percentile interval of
the uncentred rater bootstrap (``_bootstrap_icc(centre=False)``: raters resampled from the raw
ratings). Coverage is the share of studies whose 95% interval for ICC(1) contains the truth;
the ICC(1,k) intervals are the Spearman-Brown step-up of the ICC interval, so their coverage is
the same for every k (checked here at k = 5). Monte Carlo standard error of a coverage p from
``reps`` studies: sqrt(p (1 - p) / reps).

Last, the split-half ranking correlations (200 splits) and their time on one simulated study of
the other benchmarks' full size (``--quick``: a tenth of it).

Run from the project root:  nice -n 10 .venv/bin/python benchmarks/sim_reliability.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Before numpy is imported: one BLAS thread, as the workers run (as benchmarks/common.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats.reliability import (
    SplitHalf,
    _bootstrap_icc,
    _ratings,
    k_rater_reliability,
    spearman_brown,
    split_half_ranking_pairs,
    split_half_ranking_scores,
)

K_CHECK = 5
SCENARIOS: list[tuple[str, dict[str, float]]] = [
    (
        "one-way, no leniency (40 items, 60 raters, share 0.5)",
        {"n_items": 40, "n_raters": 60, "share": 0.5, "su": 1.0, "sl": 0.0, "se": 1.5},
    ),
    (
        "leniency, sparse (100 items, 150 raters, share 0.12)",
        {"n_items": 100, "n_raters": 150, "share": 0.12, "su": 1.0, "sl": 0.7, "se": 1.3},
    ),
    (
        "leniency, small (30 items, 40 raters, share 0.5)",
        {"n_items": 30, "n_raters": 40, "share": 0.5, "su": 0.6, "sl": 0.5, "se": 1.0},
    ),
    (
        "leniency, dense (30 items, 20 raters, share 0.8)",
        {"n_items": 30, "n_raters": 20, "share": 0.8, "su": 0.5, "sl": 0.8, "se": 1.0},
    ),
]


def simulate(
    rng: np.random.Generator,
    *,
    n_items: float,
    n_raters: float,
    share: float,
    su: float,
    sl: float,
    se: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    effect = rng.normal(0.0, 1.0, int(n_items))
    effect = (effect - effect.mean()) / effect.std(ddof=1) * su
    leniency = rng.normal(0.0, sl, int(n_raters))
    item, rater = np.nonzero(rng.random((int(n_items), int(n_raters))) < share)
    value = effect[item] + leniency[rater] + rng.normal(0.0, se, item.size)
    return item, rater, value, su**2 / (su**2 + sl**2 + se**2)


def run(setup: dict[str, float], *, reps: int, rounds: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    n_items = int(setup["n_items"])
    hits = {"percentile": 0, "expanded": 0, "uncentred": 0, "k5": 0}
    width = {"percentile": 0.0, "expanded": 0.0}
    estimates, empirical, predicted = [], [], []
    truth = float("nan")
    for rep in range(reps):
        item, rater, value, truth = simulate(rng, **setup)
        study_seed = seed * 100_000 + rep
        for name in ("percentile", "expanded"):
            res = k_rater_reliability(
                item,
                rater,
                value,
                n_items,
                ks=(K_CHECK,),
                rounds=rounds,
                seed=study_seed,
                interval=name,
                draws=100,
            )
            assert res.icc is not None
            assert res.icc_ci_low is not None
            assert res.icc_ci_high is not None
            hits[name] += res.icc_ci_low <= truth <= res.icc_ci_high
            width[name] += res.icc_ci_high - res.icc_ci_low
            if name == "percentile":
                estimates.append(res.icc)
                at_k = res.by_k[0]
                assert at_k.ci_low is not None
                assert at_k.ci_high is not None
                hits["k5"] += at_k.ci_low <= spearman_brown(truth, K_CHECK) <= at_k.ci_high
                if at_k.empirical is not None and at_k.value is not None:
                    empirical.append(at_k.empirical)
                    predicted.append(at_k.value)
        it, ra, va = _ratings(item, rater, value, n_items)
        plain = _bootstrap_icc(
            it,
            ra,
            va,
            n_items,
            int(ra.max()) + 1,
            rounds,
            np.random.default_rng(study_seed),
            centre=False,
        )
        low, high = np.quantile(plain[np.isfinite(plain)], [0.025, 0.975])
        hits["uncentred"] += low <= truth <= high
    out = {name: count / reps for name, count in hits.items()}
    out.update({f"width_{name}": total / reps for name, total in width.items()})
    out["truth"] = truth
    out["mean_icc"] = float(np.mean(estimates))
    out["truth_k5"] = spearman_brown(truth, K_CHECK)
    out["empirical_k5"] = float(np.mean(empirical)) if empirical else float("nan")
    out["predicted_k5"] = float(np.mean(predicted)) if predicted else float("nan")
    out["n_empirical"] = len(empirical)
    return out


def split_half_timing(*, scale: int, seed: int) -> list[tuple[str, SplitHalf, float]]:
    """Split-half correlations (200 splits) on one study of the benchmarks' full size
    (``benchmarks/common.py``: 2,000 items in topics of 20, 600 raters, 100,000 pairs, 50,000
    scorecards), divided by ``scale``; true strengths ~ N(0, 1), answers on a 1-7 scale."""
    rng = np.random.default_rng(seed)
    n_items, n_raters, n_pairs, n_cards = (x // scale for x in (2000, 600, 100_000, 50_000))
    strength = rng.normal(0.0, 1.0, n_items)
    rater = rng.integers(0, n_raters, n_pairs)
    topic = rng.integers(0, n_items // 20, n_pairs)
    a = rng.integers(0, 20, n_pairs)
    b = (a + rng.integers(1, 20, n_pairs)) % 20
    left, right = topic * 20 + a, topic * 20 + b
    winner_is_left = rng.random(n_pairs) < 1.0 / (1.0 + np.exp(strength[right] - strength[left]))
    drawn = rng.integers(0, n_items, n_cards) * n_raters + rng.integers(0, n_raters, n_cards)
    key = np.unique(drawn)  # one scorecard per (item, rater)
    item, who = key // n_raters, key % n_raters
    value = np.clip(np.rint(4.0 + strength[item] + rng.normal(0.0, 1.3, item.size)), 1, 7)
    out: list[tuple[str, SplitHalf, float]] = []
    t0 = time.perf_counter()
    pairs = split_half_ranking_pairs(left, right, winner_is_left, rater, n_items, seed=seed)
    name = f"pairs ({n_pairs:,} judgments, {n_items // 20} topics)"
    out.append((name, pairs, time.perf_counter() - t0))
    t0 = time.perf_counter()
    scores = split_half_ranking_scores(item, who, value, n_items, seed=seed)
    out.append((f"scores ({item.size:,} answers)", scores, time.perf_counter() - t0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--quick", action="store_true", help="100 studies, 500 rounds, a tenth-size study"
    )
    args = parser.parse_args()
    scale = 1
    if args.quick:
        args.reps, args.rounds, scale = 100, 500, 10
    print(f"{args.reps} studies per scenario, {args.rounds} bootstrap rounds, nominal level 0.95")
    rows = []
    for number, (name, setup) in enumerate(SCENARIOS):
        t0 = time.perf_counter()
        res = run(setup, reps=args.reps, rounds=args.rounds, seed=args.seed + number)
        rows.append((name, res, time.perf_counter() - t0))

    print("\ncoverage of the 95% interval for ICC(1) (Monte Carlo standard error in brackets)")
    print(
        f"{'scenario':<56} {'truth':>6} {'mean est':>8} {'percentile':>14} {'expanded':>14}"
        f" {'uncentred':>14} {'k=5 (pct)':>10} {'time s':>7}"
    )

    def cov(p: float) -> str:
        return f"{p:.3f} ({np.sqrt(p * (1 - p) / args.reps):.3f})"

    for name, res, seconds in rows:
        print(
            f"{name:<56} {res['truth']:>6.3f} {res['mean_icc']:>8.3f} {cov(res['percentile']):>14}"
            f" {cov(res['expanded']):>14} {cov(res['uncentred']):>14} {res['k5']:>10.3f}"
            f" {seconds:>7.1f}"
        )
    print("\nmean interval width for ICC(1)")
    for name, res, _ in rows:
        print(
            f"{name:<56} percentile {res['width_percentile']:.4f}"
            f"  expanded {res['width_expanded']:.4f}"
        )
    print(f"\nsplit-half ranking correlation, 200 splits, one study at 1/{scale} of full size")
    print(f"{'data':<40} {'mean':>6} {'q025':>6} {'q975':>6} {'S-B':>6} {'items':>6} {'time s':>7}")
    for name, half, seconds in split_half_timing(scale=scale, seed=args.seed):
        numbers = (half.mean, half.q025, half.q975, half.spearman_brown)
        shown = " ".join("  none" if x is None else f"{x:>6.3f}" for x in numbers)
        line = f"{name:<40} {shown} {half.n_items_mean or 0:>6.0f} {seconds:>7.1f}"
        print(f"{line}  {half.reason}" if half.reason else line)
    print(
        f"\nk = {K_CHECK}: empirical k-rater reliability (Wong & Paritosh) against Spearman-Brown"
    )
    print(f"{'scenario':<56} {'truth':>6} {'S-B':>6} {'empirical':>9} {'studies':>8}")
    for name, res, _ in rows:
        print(
            f"{name:<56} {res['truth_k5']:>6.3f} {res['predicted_k5']:>6.3f}"
            f" {res['empirical_k5']:>9.3f} {res['n_empirical']:>8}"
        )


if __name__ == "__main__":
    main()
