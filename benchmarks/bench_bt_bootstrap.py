"""Bradley-Terry fit and 1,000-round bootstrap: our code against the naive choix baseline.

Data: 100 items with true log-strengths ~ N(0, 1), 100,000 pair judgments from 600 raters
(simulated from a seed). Raters have their own noise: a discrimination factor (lognormal,
sd 0.3 on the log scale) that scales every strength difference they see, a personal taste
(sd 0.3 per item) and an activity level (some raters judge far more pairs than others).

Measured in one process:

* full fit: ``choix.ilsr_pairwise`` on the judgment list, ``choix.ilsr_pairwise_dense`` on the
  win-count matrix, ``choix.opt_pairwise`` with our ridge (not with --quick), and ``bt_fit``
  (own damped Newton on the compressed counts);
* bootstrap: the naive baseline (resample the judgment list, refit with
  ``choix.ilsr_pairwise``; only a few rounds are timed and the per-round time extrapolated to
  1,000 rounds), a compressed iid bootstrap refitting with choix's dense ILSR (also
  extrapolated), and ``bt_bootstrap`` with 1,000 rounds, rater-clustered and iid.

Run from the project root:  .venv/bin/python benchmarks/bench_bt_bootstrap.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import choix
import numpy as np

from apps.analysis.stats.bradley_terry import DEFAULT_ALPHA, bt_bootstrap, bt_fit, win_matrix


def simulate(
    n_items: int, n_judgments: int, n_raters: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.0, 1.0, n_items)
    activity = rng.lognormal(0.0, 1.0, n_raters)
    raters = rng.choice(n_raters, size=n_judgments, p=activity / activity.sum())
    discrimination = rng.lognormal(0.0, 0.3, n_raters)
    taste = rng.normal(0.0, 0.3, (n_raters, n_items))
    a = rng.integers(0, n_items, n_judgments)
    b = (a + rng.integers(1, n_items, n_judgments)) % n_items
    diff = truth[a] + taste[raters, a] - truth[b] - taste[raters, b]
    a_wins = rng.random(n_judgments) < 1.0 / (1.0 + np.exp(-discrimination[raters] * diff))
    return np.where(a_wins, a, b), np.where(a_wins, b, a), raters, truth


def timed(fn, repeat: int = 1):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--raters", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--baseline-rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 baseline rounds, 200 own rounds")
    args = parser.parse_args()
    if args.quick:
        args.baseline_rounds, args.rounds = 3, 200

    n = args.items
    winners, losers, raters, truth = simulate(n, args.judgments, args.raters, args.seed)
    # choix's list-based fitters loop in Python; a list of int tuples is ~3x faster for them
    # than a numpy array, so the baseline gets the list.
    data = list(zip(winners.tolist(), losers.tolist(), strict=True))
    print(
        f"{n} items, {args.judgments:,} judgments, {args.raters} raters; "
        f"{args.rounds} bootstrap rounds (baseline: {args.baseline_rounds} timed, extrapolated)"
    )

    # --- single full fit ------------------------------------------------------------------------
    t_choix_list, s_list = timed(lambda: choix.ilsr_pairwise(n, data), repeat=2)
    t_matrix, wins = timed(lambda: win_matrix(winners, losers, n), repeat=3)
    t_choix_dense, s_dense = timed(lambda: choix.ilsr_pairwise_dense(wins), repeat=3)
    t_own, fit = timed(lambda: bt_fit(winners, losers, n), repeat=3)
    t_opt, s_opt = float("nan"), None
    if not args.quick:
        # Same ridge as ours, so the same answer; but a Python loop over the judgment list.
        t_opt, s_opt = timed(lambda: choix.opt_pairwise(n, data, alpha=DEFAULT_ALPHA))
    diff_list = np.abs(fit.scores - (s_list - s_list.mean())).max()
    diff_dense = np.abs(fit.scores - (s_dense - s_dense.mean())).max()
    print("\nsingle full fit (best of 2-3)")
    print(f"  {'method':<46} {'time ms':>9} {'max |diff| vs own':>18}")
    print(
        f"  {'choix.ilsr_pairwise (judgment list)':<46} {1e3 * t_choix_list:>9.1f} {diff_list:>18.1e}"
    )
    print(
        f"  {'choix.ilsr_pairwise_dense (+ counting ' + f'{1e3 * t_matrix:.0f} ms)':<46} "
        f"{1e3 * (t_choix_dense + t_matrix):>9.1f} {diff_dense:>18.1e}"
    )
    if s_opt is not None:
        diff_opt = np.abs(fit.scores - (s_opt - s_opt.mean())).max()
        label = f"choix.opt_pairwise (list, alpha={DEFAULT_ALPHA})"
        print(f"  {label:<46} {1e3 * t_opt:>9.1f} {diff_opt:>18.1e}")
    print(f"  {'own bt_fit (counts + Newton, incl. counting)':<46} {1e3 * t_own:>9.1f} {'-':>18}")
    print(
        f"  own fit: {t_choix_list / t_own:.0f}x faster than ilsr_pairwise; "
        f"time ratio ilsr_pairwise_dense / own = {(t_choix_dense + t_matrix) / t_own:.2f}; "
        f"{fit.iterations} Newton iterations"
    )

    # --- bootstrap ------------------------------------------------------------------------------
    rng = np.random.default_rng(args.seed + 1)

    def naive_rounds() -> None:
        for _ in range(args.baseline_rounds):
            idx = rng.integers(0, len(data), len(data)).tolist()
            choix.ilsr_pairwise(n, [data[i] for i in idx])

    t_naive, _ = timed(naive_rounds)
    naive_per_round = t_naive / args.baseline_rounds
    naive_total = t_choix_list + args.rounds * naive_per_round

    dense_rounds = max(10, args.baseline_rounds * 3)
    counts = wins.ravel()

    def dense_iid_rounds() -> None:
        for _ in range(dense_rounds):
            resampled = rng.multinomial(args.judgments, counts / counts.sum()).reshape(n, n)
            choix.ilsr_pairwise_dense(resampled.astype(float))

    t_dense, _ = timed(dense_iid_rounds)
    dense_total = t_matrix + t_choix_dense + args.rounds * t_dense / dense_rounds

    t_rater, boot = timed(
        lambda: bt_bootstrap(
            winners, losers, n, clusters=raters, rounds=args.rounds, seed=args.seed
        )
    )
    t_iid, boot_iid = timed(
        lambda: bt_bootstrap(
            winners, losers, n, clusters=None, rounds=args.rounds, seed=args.seed, cluster="none"
        )
    )

    print(f"\nfit + {args.rounds}-round bootstrap")
    print(f"  {'method':<58} {'total s':>8} {'ms/round':>9} {'speed-up':>9}")
    rows = [
        ("naive: resample list + choix.ilsr_pairwise (extrapolated)", naive_total),
        ("compressed iid + choix.ilsr_pairwise_dense (extrapolated)", dense_total),
        ("own bt_bootstrap, iid (cluster='none')", t_iid),
        ("own bt_bootstrap, rater-clustered (cluster='rater')", t_rater),
    ]
    for label, total in rows:
        print(
            f"  {label:<58} {total:>8.2f} {1e3 * total / args.rounds:>9.2f} "
            f"{naive_total / total:>8.0f}x"
        )
    print(
        f"\nrater-clustered bootstrap is {naive_total / t_rater:.0f}x faster than the naive "
        f"baseline (target >= 100x); naive per round {1e3 * naive_per_round:.0f} ms"
    )
    width_rater = float(np.mean(boot.ci_high - boot.ci_low))
    width_iid = float(np.mean(boot_iid.ci_high - boot_iid.ci_low))
    print(
        f"mean 95% CI width: rater-clustered {width_rater:.3f}, iid {width_iid:.3f} "
        f"(ratio {width_rater / width_iid:.2f}); disconnected rounds {boot.disconnected_rounds}"
    )
    corr = float(np.corrcoef(fit.scores, truth)[0, 1])
    print(f"correlation of fitted with true log-strengths: {corr:.3f}")


if __name__ == "__main__":
    main()
