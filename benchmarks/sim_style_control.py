"""Style control: does regressing out joke length recover the true order of the sources, and
do its intervals cover?

Each replication simulates a fresh study: 4 sources of 15 items whose jokes differ in length
(mean log length falls from the first source to the last, 0.35 apart, sd 0.3 within a source),
a planted length effect (raters prefer longer jokes by ``--beta`` per standard deviation of
log length) and true source strengths that rise from the first source to the last, so the
length effect reverses the order a plain Bradley-Terry model gives. Item qualities vary within
a source (sd 0.3, independent of length). 60 raters judge 50 random pairs each; every rater
has their own length preference (beta + N(0, 0.2)) and their own taste for each item (sd 0.5),
so a rater's judgments are correlated and clustering matters.

Estimands (raters random, the study's items fixed, as the intervals are built): what the fits
converge to with infinitely many raters on this study's items, computed from the population
win probabilities (Gauss-Hermite quadrature over taste and the rater's length preference):
the source-level contextual fit (statsmodels' GLM on the fractional outcomes of every item
pair, an implementation independent of ours) gives theta* and beta*; the item-level estimand is
the population BT fit of the items minus beta* . (z_i - mean z). The "true order" of the
sources is the order of their items' planted mean quality.

Reported: how often the controlled and the plain board give the true order of the 4 sources
(exactly, and the share of the 6 pairs in the right order); coverage of the 95% Wald intervals
of the controlled theta differences and of beta (target 93-97%) and of the plain differences
against their own estimand; coverage of the controlled item scores' bootstrap intervals; and
the Spearman correlation of item scores with the planted item quality. Monte Carlo standard
errors come from the spread of the per-study coverage over studies (a study's intervals share
its raters). Then the time of ``style_controlled_items`` on 100 items, 20,000 comparisons and
200 rounds.

Run from the project root:  nice -n 10 .venv/bin/python benchmarks/sim_style_control.py
[--reps 400] [--rounds 400] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import statsmodels.api as sm
from scipy.stats import spearmanr

from apps.analysis.stats.bradley_terry import bt_fit_matrix
from apps.analysis.stats.style_control import style_controlled_items

N_SOURCES, PER_SOURCE = 4, 15
LOG_LENGTH_MEANS = np.log(40.0) - 0.35 * np.arange(N_SOURCES)
TRUE_STRENGTH = np.array([-0.3, -0.1, 0.1, 0.3])
ITEM_SD, LENGTH_SD, TASTE_SD, BETA_SD = 0.3, 0.3, 0.5, 0.2
N_RATERS, PER_RATER = 60, 50


def simulate_study(rng: np.random.Generator, beta: float) -> dict[str, Any]:
    src = np.repeat(np.arange(N_SOURCES), PER_SOURCE)
    n = src.size
    log_length = rng.normal(LOG_LENGTH_MEANS[src], LENGTH_SD)
    quality = TRUE_STRENGTH[src] + rng.normal(0.0, ITEM_SD, n)
    # The module standardises over the compared items; the planted effect is per sd of those.
    z = (log_length - log_length.mean()) / log_length.std()
    rater = np.repeat(np.arange(N_RATERS), PER_RATER)
    left = rng.integers(0, n, rater.size)
    right = (left + rng.integers(1, n, rater.size)) % n
    taste = rng.normal(0.0, TASTE_SD, (N_RATERS, n))
    beta_r = beta + rng.normal(0.0, BETA_SD, N_RATERS)
    utility = quality[None, :] + taste
    eta = utility[rater, left] - utility[rater, right] + beta_r[rater] * (z[left] - z[right])
    left_won = rng.random(rater.size) < 1.0 / (1.0 + np.exp(-eta))
    return {
        "src": src,
        "log_length": log_length,
        "quality": quality,
        "z": z,
        "left": left,
        "right": right,
        "left_won": left_won,
        "rater": rater,
    }


def population_probabilities(quality: np.ndarray, z: np.ndarray, beta: float) -> np.ndarray:
    """P(i beats j) averaged over raters: taste difference and the rater's length slope."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(48)
    weights = weights / weights.sum()
    dz = z[:, None] - z[None, :]
    mean = quality[:, None] - quality[None, :] + beta * dz
    sd = np.sqrt(2.0 * TASTE_SD**2 + (BETA_SD * dz) ** 2)
    prob = (weights / (1.0 + np.exp(-(mean[:, :, None] + sd[:, :, None] * nodes)))).sum(axis=2)
    np.fill_diagonal(prob, 0.0)
    return np.asarray(prob)


def estimands(study: dict[str, Any], beta: float) -> dict[str, np.ndarray]:
    """The fits' limits with infinitely many raters, on this study's items (every pair equally
    often, as the simulation draws them)."""
    src, z = study["src"], study["z"]
    prob = population_probabilities(study["quality"], z, beta)
    i, j = np.triu_indices(src.size, 1)
    contrast = np.zeros((i.size, N_SOURCES))
    contrast[np.arange(i.size), src[i]] += 1.0
    contrast[np.arange(i.size), src[j]] -= 1.0
    out: dict[str, np.ndarray] = {}
    for name, x in (
        ("controlled", np.column_stack([contrast[:, 1:], z[i] - z[j]])),
        ("plain", contrast[:, 1:]),
    ):
        with warnings.catch_warnings():
            # Fractional outcomes are the population shares, not counts.
            warnings.simplefilter("ignore")
            params = sm.GLM(prob[i, j], x, family=sm.families.Binomial()).fit(tol=1e-12).params
        theta = np.concatenate([[0.0], params[: N_SOURCES - 1]])
        out[name] = theta - theta.mean()
        if name == "controlled":
            out["beta"] = np.asarray(params[N_SOURCES - 1 :])
    # The ML solution does not depend on the count scale; at scale 1 a ridge of 1e-10 moves it
    # by ~1e-9 and Newton converges in a few steps (at 1e6 round-off stalls it).
    plain_items = bt_fit_matrix(prob, alpha=1e-10).scores
    out["items"] = plain_items - out["beta"][0] * (z - z.mean())
    return out


def run(reps: int, rounds: int, beta: float, seed: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    pairs = list(combinations(range(N_SOURCES), 2))
    res: dict[str, list[float]] = {
        k: []
        for k in (
            "exact_controlled",
            "exact_plain",
            "exact_estimand",
            "pairs_controlled",
            "pairs_plain",
            "cov_diff",
            "cov_plain_diff",
            "cov_beta",
            "cov_items",
            "cov_items_plain",
            "rho_controlled",
            "rho_plain",
            "rho_estimand",
            "beta_hat",
            "beta_star",
            "nonconverged",
        )
    }
    for rep in range(reps):
        study = simulate_study(rng, beta)
        truth = estimands(study, beta)
        src = study["src"]
        # Order of the sources by their items' planted mean quality in this study.
        realised = np.bincount(src, weights=study["quality"]) / np.bincount(src)
        true_order = np.argsort(-realised)
        fit = style_controlled_items(
            study["left"],
            study["right"],
            study["left_won"],
            study["rater"],
            src,
            N_SOURCES,
            study["log_length"][:, None],
            ["log_length"],
            rounds=rounds,
            seed=seed * 100_000 + rep,
        )
        board = fit.sources
        res["exact_controlled"].append(float(np.array_equal(np.argsort(-board.theta), true_order)))
        res["exact_plain"].append(float(np.array_equal(np.argsort(-board.plain_theta), true_order)))
        res["exact_estimand"].append(
            float(np.array_equal(np.argsort(-truth["controlled"]), true_order))
        )
        for name, theta in (("controlled", board.theta), ("plain", board.plain_theta)):
            right = [(theta[a] - theta[b]) * (realised[a] - realised[b]) > 0 for a, b in pairs]
            res[f"pairs_{name}"].append(float(np.mean(right)))
        hits, plain_hits = [], []
        for a, b in pairs:
            target = truth["controlled"][a] - truth["controlled"][b]
            hits.append(board.diff_low[a, b] <= target <= board.diff_high[a, b])
            target = truth["plain"][a] - truth["plain"][b]
            plain_hits.append(board.plain_diff_low[a, b] <= target <= board.plain_diff_high[a, b])
        res["cov_diff"].append(float(np.mean(hits)))
        res["cov_plain_diff"].append(float(np.mean(plain_hits)))
        res["cov_beta"].append(float(board.beta_low[0] <= truth["beta"][0] <= board.beta_high[0]))
        res["beta_hat"].append(float(board.beta[0]))
        res["beta_star"].append(float(truth["beta"][0]))
        items = truth["items"]
        res["cov_items"].append(float(np.mean((fit.ci_low <= items) & (items <= fit.ci_high))))
        plain_truth = items + truth["beta"][0] * (study["z"] - study["z"].mean())
        res["cov_items_plain"].append(
            float(np.mean((fit.plain_low <= plain_truth) & (plain_truth <= fit.plain_high)))
        )
        quality = study["quality"]
        res["rho_controlled"].append(float(spearmanr(fit.scores, quality).statistic))
        res["rho_plain"].append(float(spearmanr(fit.plain_scores, quality).statistic))
        res["rho_estimand"].append(float(spearmanr(items, quality).statistic))
        res["nonconverged"].append(float(fit.nonconverged_rounds))
    return res


def timing(seed: int) -> tuple[float, float]:
    """Seconds for the source fit alone and for the items with 200 rounds: 100 items (5 sources
    of 20), 400 raters x 50 = 20,000 comparisons, two covariates."""
    from apps.analysis.stats.style_control import style_controlled_sources

    rng = np.random.default_rng(seed)
    n, n_raters, per = 100, 400, 50
    src = np.repeat(np.arange(5), 20)
    x = np.column_stack([rng.normal(3.0, 0.5, n), rng.integers(0, 2, n)])
    quality = rng.normal(0.0, 0.5, n)
    rater = np.repeat(np.arange(n_raters), per)
    left = rng.integers(0, n, rater.size)
    right = (left + rng.integers(1, n, rater.size)) % n
    eta = quality[left] - quality[right] + 0.4 * (x[left, 0] - x[right, 0])
    won = rng.random(rater.size) < 1.0 / (1.0 + np.exp(-eta))
    args = (left, right, won, rater, src, 5, x, ["log_length", "offense"])
    t0 = time.perf_counter()
    style_controlled_sources(*args)
    t1 = time.perf_counter()
    style_controlled_items(*args, rounds=200, seed=seed)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def _line(label: str, values: list[float], *, binary: bool = False, band: bool = True) -> str:
    v = np.asarray(values)
    se = np.sqrt(v.mean() * (1 - v.mean()) / v.size) if binary else v.std(ddof=1) / np.sqrt(v.size)
    line = f"  {label:<52} {v.mean():>7.3f} {se:>7.3f}"
    if band:
        line += "  yes" if 0.93 <= v.mean() <= 0.97 else "  no"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--beta", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--quick", action="store_true", help="60 studies, 200 rounds")
    args = parser.parse_args()
    if args.quick:
        args.reps, args.rounds = 60, 200

    t0 = time.perf_counter()
    res = run(args.reps, args.rounds, args.beta, args.seed)
    elapsed = time.perf_counter() - t0
    print(
        f"{args.reps} studies ({N_SOURCES} sources x {PER_SOURCE} items, {N_RATERS} raters x "
        f"{PER_RATER} pairs), beta {args.beta} per sd of log length, {args.rounds} bootstrap "
        f"rounds: {elapsed:.1f} s ({1000 * elapsed / args.reps:.0f} ms a study)"
    )
    print(f"  {'order of the 4 sources':<52} {'share':>7} {'MC se':>7}")
    print(
        _line(
            "controlled board gives the true order",
            res["exact_controlled"],
            binary=True,
            band=False,
        )
    )
    print(_line("plain board gives the true order", res["exact_plain"], binary=True, band=False))
    print(
        _line(
            "controlled estimand has the true order", res["exact_estimand"], binary=True, band=False
        )
    )
    print(_line("pairs in the true order, controlled", res["pairs_controlled"], band=False))
    print(_line("pairs in the true order, plain", res["pairs_plain"], band=False))
    print(f"  {'interval (95%)':<52} {'cover':>7} {'MC se':>7}  in 93-97%")
    print(_line("controlled theta differences (Wald, CR1, t)", res["cov_diff"]))
    print(_line("beta (log length, per sd)", res["cov_beta"], binary=True))
    print(_line("plain theta differences (same code, beta = 0)", res["cov_plain_diff"]))
    print(_line("controlled item scores (two-stage bootstrap)", res["cov_items"]))
    print(_line("plain item scores (same bootstrap)", res["cov_items_plain"]))
    print(f"  {'item scores vs planted quality (Spearman, mean)':<52}")
    print(_line("controlled", res["rho_controlled"], band=False))
    print(_line("plain", res["rho_plain"], band=False))
    print(_line("controlled estimand (infinitely many raters)", res["rho_estimand"], band=False))
    print(
        f"  beta: planted {args.beta}, estimand mean {np.mean(res['beta_star']):.3f}, "
        f"estimate mean {np.mean(res['beta_hat']):.3f}; rounds not converged "
        f"{int(np.sum(res['nonconverged']))}"
    )
    fit_s, items_s = timing(args.seed)
    print(
        f"timing, 100 items, 20,000 comparisons, 2 covariates: source fit {fit_s * 1000:.0f} ms, "
        f"items with 200 bootstrap rounds {items_s:.2f} s"
    )


if __name__ == "__main__":
    main()
