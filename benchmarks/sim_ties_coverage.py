"""Coverage of the tie models' bootstrap intervals when raters differ in taste and in ties.

Each replication simulates a fresh study: 20-40 items with log-strengths ~ N(0, 0.8^2), 30-60
raters who each judge 30-50 uniformly drawn pairs. Every rater has a personal taste (a
rater-by-item offset, sd 0.5, added to the log-strengths) and a personal tie propensity (their
Davidson nu, or their Rao-Kupper theta - 1, is the study's value times e^{N(0, 0.6^2)}), so a
rater's judgments are correlated and clustering matters. The study's tie parameter is drawn so
that 10-20% of answers are ties (the SemEval-2026 humor arena saw 12-19%). Davidson studies are
fitted with Davidson, Rao-Kupper studies with Rao-Kupper, by ``tie_bootstrap`` resampling
raters (``clusters=raters``): expanded percentile intervals for the strengths, and for the tie
parameter the default bias-corrected expanded interval and, on the same rounds, the plain
expanded one; for contrast, resampling judgments (``clusters=None``).

Estimands (what the pooled fit converges to with infinitely many raters drawn like these):
the model fitted to the population outcome probabilities of every pair, each an average over
the raters' taste difference (sd 0.5 sqrt 2) and tie propensity by 40 x 40-point
Gauss-Hermite quadrature. Its scores, centred to mean 0 as the fit's are, are the target of
each item's interval; its nu (theta) the target of the tie interval. Taste attenuates
differences, so these are not the planted log-strengths.

"missed low" is the share of studies whose tie interval lies below the target (the rest of
the misses lie above). Coverage of the strengths is pooled over items and studies; its Monte Carlo standard error is
the between-study sd of the per-study coverage / sqrt(studies) (items of one study share
raters). The tie parameter's is binomial: sqrt(p (1 - p) / studies).

Also timed: one ``tie_bootstrap`` of 1,000 rater-clustered rounds for 100 items, 20,000
judgments and 60 raters, per model.

Run from the project root, one model at a time to keep a run under ~5 minutes:
    nice -n 10 .venv/bin/python benchmarks/sim_ties_coverage.py --models davidson [--quick]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats.ties import LEFT, RIGHT, TIE, TIE_MODELS, tie_bootstrap, tie_fit

TASTE_SD = 0.5
TIE_PROPENSITY_SD = 0.6
STRENGTH_SD = 0.8
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(40)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def probabilities(model: str, gap: np.ndarray, tie: np.ndarray | float) -> np.ndarray:
    """(n, 3): left preferred, right preferred, tie, for log-strength gaps left - right."""
    if model == "davidson":
        numerators = np.stack(
            [np.exp(gap / 2), np.exp(-gap / 2), np.broadcast_to(tie, gap.shape)], axis=1
        )
        return np.asarray(numerators / numerators.sum(axis=1, keepdims=True))
    p_left = 1.0 / (1.0 + tie * np.exp(-gap))
    p_right = 1.0 / (1.0 + tie * np.exp(gap))
    return np.stack([p_left, p_right, 1.0 - p_left - p_right], axis=1)


def rater_tie(model: str, tie: float, offset: np.ndarray) -> np.ndarray:
    """A rater's own tie parameter: nu e^offset, or 1 + (theta - 1) e^offset."""
    if model == "davidson":
        return np.asarray(tie * np.exp(offset))
    return np.asarray(1.0 + (tie - 1.0) * np.exp(offset))


def population_fit(model: str, strengths: np.ndarray, tie: float) -> tuple[np.ndarray, float]:
    """The estimand: the model fitted to the population outcome probabilities of every pair."""
    i, j = np.triu_indices(strengths.size, 1)
    gap = strengths[i] - strengths[j]
    prob = np.zeros((i.size, 3))
    for taste_node, taste_w in zip(NODES, WEIGHTS, strict=True):
        d = gap + TASTE_SD * np.sqrt(2.0) * taste_node
        for tie_node, tie_w in zip(NODES, WEIGHTS, strict=True):
            own = rater_tie(model, tie, TIE_PROPENSITY_SD * np.array(tie_node))
            prob += taste_w * tie_w * probabilities(model, d, float(own))
    outcome = np.tile([LEFT, RIGHT, TIE], i.size)
    # Large pseudo-counts and a negligible ridge: the population maximum likelihood.
    fit = tie_fit(
        np.repeat(i, 3),
        np.repeat(j, 3),
        outcome,
        strengths.size,
        model=model,
        weights=prob.ravel() * 1e6,
        alpha=1e-9,
    )
    return fit.scores, fit.tie_param


def simulate_study(
    model: str, rng: np.random.Generator
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n_items = int(rng.integers(20, 41))
    n_raters = int(rng.integers(30, 61))
    strengths = rng.normal(0.0, STRENGTH_SD, n_items)
    # Tie parameters that give 10-20% ties with these strengths and raters.
    tie = float(rng.uniform(0.25, 0.5)) if model == "davidson" else float(rng.uniform(1.3, 1.6))
    per_rater = rng.integers(30, 51, n_raters)
    raters = np.repeat(np.arange(n_raters), per_rater)
    taste = rng.normal(0.0, TASTE_SD, (n_raters, n_items))
    own_tie = rater_tie(model, tie, rng.normal(0.0, TIE_PROPENSITY_SD, n_raters))
    a = rng.integers(0, n_items, raters.size)
    b = (a + rng.integers(1, n_items, raters.size)) % n_items
    gap = strengths[a] + taste[raters, a] - strengths[b] - taste[raters, b]
    prob = probabilities(model, gap, own_tie[raters])
    outcome = np.minimum((rng.random(a.size)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1), 2)
    return strengths, tie, a, b, outcome, raters


# (key, resampled units, tie interval): the default, its tie interval without the bias
# correction (the same rounds: same seed), and iid resampling for contrast.
VARIANTS = (
    ("rater", "raters", "expanded_bc"),
    ("rater_plain", "raters", "expanded"),
    ("none", "judgments", "expanded_bc"),
)


def coverage(model: str, *, reps: int, rounds: int, seed: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    per_study: dict[str, list[float]] = {key: [] for key, _, _ in VARIANTS}
    tie_hits: dict[str, list[bool]] = {key: [] for key, _, _ in VARIANTS}
    tie_below: dict[str, list[bool]] = {key: [] for key, _, _ in VARIANTS}
    widths: dict[str, list[float]] = {key: [] for key, _, _ in VARIANTS}
    tie_share, disconnected = [], []
    for rep in range(reps):
        strengths, tie, a, b, outcome, raters = simulate_study(model, rng)
        truth, truth_tie = population_fit(model, strengths, tie)
        tie_share.append(float(np.mean(outcome == TIE)))
        for key, units, tie_interval in VARIANTS:
            boot = tie_bootstrap(
                a,
                b,
                outcome,
                strengths.size,
                clusters=raters if units == "raters" else None,
                rounds=rounds,
                seed=seed * 100_000 + rep,
                model=model,
                tie_interval=tie_interval,
            )
            inside = (boot.ci_low <= truth) & (truth <= boot.ci_high)
            per_study[key].append(float(np.mean(inside)))
            tie_hits[key].append(bool(boot.tie_ci_low <= truth_tie <= boot.tie_ci_high))
            tie_below[key].append(bool(boot.tie_ci_high < truth_tie))
            widths[key].append(float(np.mean(boot.ci_high - boot.ci_low)))
            if key == "rater":
                disconnected.append(boot.disconnected_rounds)
    out: dict[str, dict[str, float]] = {}
    for key in per_study:
        cov = np.array(per_study[key])
        hit = np.array(tie_hits[key], dtype=float)
        out[key] = {
            "strength": float(cov.mean()),
            "strength_se": float(cov.std(ddof=1) / np.sqrt(reps)),
            "tie": float(hit.mean()),
            "tie_se": float(np.sqrt(hit.mean() * (1 - hit.mean()) / reps)),
            "tie_missed_low": float(np.mean(tie_below[key])),
            "width": float(np.mean(widths[key])),
        }
    out["data"] = {
        "tie_share_min": float(np.min(tie_share)),
        "tie_share_mean": float(np.mean(tie_share)),
        "tie_share_max": float(np.max(tie_share)),
        "disconnected_rounds": float(np.sum(disconnected)),
    }
    return out


def speed(model: str, seed: int) -> float:
    """Seconds for one 1,000-round rater-clustered bootstrap: 100 items, 20,000 judgments."""
    rng = np.random.default_rng(seed)
    strengths = rng.normal(0.0, 1.0, 100)
    a = rng.integers(0, 100, 20_000)
    b = (a + rng.integers(1, 100, a.size)) % 100
    prob = probabilities(model, strengths[a] - strengths[b], 0.4 if model == "davidson" else 1.4)
    outcome = np.minimum((rng.random(a.size)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1), 2)
    raters = rng.integers(0, 60, a.size)
    t0 = time.perf_counter()
    tie_bootstrap(a, b, outcome, 100, clusters=raters, rounds=1000, seed=seed, model=model)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=250, help="studies per model")
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--models", nargs="+", choices=TIE_MODELS, default=list(TIE_MODELS))
    parser.add_argument("--quick", action="store_true", help="60 studies, 500 rounds")
    args = parser.parse_args()
    if args.quick:
        args.reps, args.rounds = 60, 500

    for model in args.models:
        print(
            f"speed, {model}: 1,000 rater-clustered rounds, 100 items, 20,000 judgments, 60 "
            f"raters: {speed(model, args.seed):.2f} s"
        )
    print(f"{args.reps} studies per model, {args.rounds} bootstrap rounds, nominal level 0.95")
    print(
        f"{'model':<11} {'resampling':<10} {'tie interval':<12} {'strengths':>15} "
        f"{'tie parameter':>15} {'missed low':>10} {'mean width':>10}"
    )
    for model in args.models:
        t0 = time.perf_counter()
        result = coverage(model, reps=args.reps, rounds=args.rounds, seed=args.seed)
        elapsed = time.perf_counter() - t0
        for key, units, tie_interval in VARIANTS:
            r = result[key]
            print(
                f"{model:<11} {units:<10} {tie_interval:<12} "
                f"{r['strength']:>7.3f} ± {r['strength_se']:.3f} "
                f"{r['tie']:>7.3f} ± {r['tie_se']:.3f} {r['tie_missed_low']:>10.3f} "
                f"{r['width']:>10.3f}"
            )
        d = result["data"]
        print(
            f"  ties per study: {d['tie_share_min']:.1%} to {d['tie_share_max']:.1%} (mean "
            f"{d['tie_share_mean']:.1%}); rounds with a split component: "
            f"{int(d['disconnected_rounds'])}; {elapsed:.0f} s"
        )
    print("± is one Monte Carlo standard error")


if __name__ == "__main__":
    main()
