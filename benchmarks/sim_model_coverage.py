"""Coverage of the model comparison's intervals when items *and* raters vary.

Each replication simulates a fresh study (``apps.analysis.stats.simulation``: 3 sources of 20
items each, 40 raters with their own leniency and taste, each rater scoring 60% of the items,
30 pair judgments and Turing guesses per rater) and counts how often a 95% interval of
``compare_models`` contains its estimand, the population value over the source's jokes in
general rated by raters in general:

* source means (items and raters random), their differences, leniency-adjusted means;
* model-level Bradley-Terry strengths and differences, ``p_a_beats_b`` (direct share);
* judged-human rates and differences;
* the simultaneous (Bonferroni) intervals of each family of differences, counted per study:
  every difference inside its interval at once;
* the fixed-items interval against the same estimand (it is not built for it: it holds the
  items fixed), to show why the default interval must treat items as random;
* the naive two-way ("pigeonhole") bootstrap, resampling items and raters independently
  (Owen 2007), for the means and differences: it counts the rating noise once per factor.

Monte Carlo standard error of a coverage near 0.95 from n intervals: sqrt(0.95 * 0.05 / n).

Run from the project root:  .venv/bin/python benchmarks/sim_model_coverage.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from scipy.special import ndtr

from apps.analysis.stats.bootstrap import grouped_mean_ci
from apps.analysis.stats.bradley_terry import bt_bootstrap, bt_fit_matrix
from apps.analysis.stats.crossed import grouped_t_interval
from apps.analysis.stats.culture_sim import simulate_culture_study
from apps.analysis.stats.inputs import StudyInputs
from apps.analysis.stats.model_comparison import compare_models
from apps.analysis.stats.simulation import simulate_crossed_study


def pigeonhole_intervals(
    inputs: StudyInputs, sources: list[str], rounds: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals for each source mean and each difference (a, b), a < b."""
    item, rater, y = inputs.score_item, inputs.score_rater, inputs.score_value
    code = np.array([sources.index(s) for s in inputs.item_source])[item]
    w_item = rng.multinomial(inputs.n_items, np.full(inputs.n_items, 1 / inputs.n_items), rounds)
    w_rater = rng.multinomial(
        inputs.n_raters, np.full(inputs.n_raters, 1 / inputs.n_raters), rounds
    )
    weight = w_item[:, item] * w_rater[:, rater]
    means = np.stack(
        [
            (weight[:, code == s] * y[code == s]).sum(axis=1) / weight[:, code == s].sum(axis=1)
            for s in range(len(sources))
        ],
        axis=1,
    )
    pairs = [(a, b) for a in range(len(sources)) for b in range(a + 1, len(sources))]
    diffs = np.stack([means[:, a] - means[:, b] for a, b in pairs], axis=1)
    return np.nanquantile(means, [0.025, 0.975], axis=0), np.nanquantile(
        diffs, [0.025, 0.975], axis=0
    )


def item_level_coverage(reps: int, rounds: int, rng: np.random.Generator) -> dict[str, list[bool]]:
    """Item means (30 raters, answers on a 1-7 scale with rater leniency) and item
    Bradley-Terry scores (20 items, 40 raters x 30 pairs, each rater with a taste per item):
    percentile intervals as before against the studentized / expanded ones now used."""
    hits: dict[str, list[bool]] = {}
    n_items, n_raters = 20, 30
    mu = rng.normal(4.0, 1.2, n_items)
    spread = np.hypot(0.8, 1.2)  # leniency and noise
    cuts = np.arange(1.5, 7.0, 1.0)
    # E[clip(round(latent), 1, 7)] = 1 + sum_k P(latent > cut_k)
    truth_mean = 1.0 + ndtr((mu[:, None] - cuts[None, :]) / spread).sum(axis=1)
    true_strength = np.linspace(-1.5, 1.5, 20)
    nodes, weights = np.polynomial.hermite_e.hermegauss(64)
    weights = weights / weights.sum()
    diff = true_strength[:, None] - true_strength[None, :]
    prob = (weights / (1 + np.exp(-(diff[:, :, None] + np.sqrt(2.0) * nodes)))).sum(axis=2)
    np.fill_diagonal(prob, 0.0)
    truth_bt = bt_fit_matrix(prob * 1e6, alpha=1e-9).scores
    for rep in range(reps):
        latent = mu[:, None] + rng.normal(0, 0.8, n_raters)[None, :]
        latent = latent + rng.normal(0, 1.2, (n_items, n_raters))
        answers = np.clip(np.round(latent), 1, 7).ravel()
        item = np.repeat(np.arange(n_items), n_raters)
        _, low, high, _ = grouped_mean_ci(answers, item, n_items, rounds=rounds, seed=rep)
        hits.setdefault("item mean, percentile bootstrap (before)", []).extend(
            ((low <= truth_mean) & (truth_mean <= high)).tolist()
        )
        _, low, high, _ = grouped_t_interval(answers, item, n_items, bounds=(1, 7))
        hits.setdefault("item mean, studentized t (now)", []).extend(
            ((low <= truth_mean) & (truth_mean <= high)).tolist()
        )
        taste = rng.normal(0.0, 1.0, (40, 20))
        raters = np.repeat(np.arange(40), 30)
        a = rng.integers(0, 20, raters.size)
        b = (a + rng.integers(1, 20, raters.size)) % 20
        gap = true_strength[a] - true_strength[b] + taste[raters, a] - taste[raters, b]
        a_wins = rng.random(raters.size) < 1.0 / (1.0 + np.exp(-gap))
        winners, losers = np.where(a_wins, a, b), np.where(a_wins, b, a)
        for name, interval in (
            ("percentile (before)", "percentile"),
            ("expanded (now)", "expanded"),
        ):
            boot = bt_bootstrap(
                winners, losers, 20, clusters=raters, rounds=rounds, seed=rep, interval=interval
            )
            hits.setdefault(f"item BT score, {name}", []).extend(
                ((boot.ci_low <= truth_bt) & (truth_bt <= boot.ci_high)).tolist()
            )
    return hits


SCENARIOS: dict[str, dict[str, float]] = {
    # Items differ a lot, raters rate 60% of them.
    "items vary (default)": {},
    # Ratings noisy, items alike, raters rate 30% of them: here the rating noise dominates and
    # the pigeonhole bootstrap, which counts it once per crossed factor, over-covers.
    "noisy ratings, similar items": {
        "item_sd": 0.15,
        "noise_sd": 2.5,
        "leniency_sd": 0.15,
        "rate_share": 0.3,
        "strength_sd": 0.2,
        "taste_sd": 1.5,
    },
}


def _record_joint(joint: dict[str, bool], name: str, interval: dict | None, target: float) -> None:
    low = None if interval is None else interval.get("ci_low")
    high = None if interval is None else interval.get("ci_high")
    inside = low is not None and high is not None and low <= target <= high
    joint[name] = joint.get(name, True) and inside


def model_coverage(
    reps: int, rounds: int, rng: np.random.Generator, setup: dict[str, float]
) -> tuple[dict[str, list[bool]], float]:
    hits: dict[str, list[bool]] = {}

    def record(name: str, low: float | None, high: float | None, target: float) -> None:
        hits.setdefault(name, []).append(
            low is not None and high is not None and low <= target <= high
        )

    compute_seconds = 0.0
    for _ in range(reps):
        inputs, truth = simulate_crossed_study(rng, **setup)  # type: ignore[arg-type]
        tick = time.perf_counter()
        result = compare_models(inputs)
        compute_seconds += time.perf_counter() - tick
        k = {name: i for i, name in enumerate(truth.sources)}
        for name, entry in result["by_model"].items():
            i = k[name]
            q = entry["questions"]["funniness"]
            record("mean (items and raters random)", q["ci_low"], q["ci_high"], truth.mean[i])
            f = entry["fixed_items"]["funniness"]
            record("mean, fixed-items interval", f["ci_low"], f["ci_high"], truth.mean[i])
            a = entry["adjusted"]["funniness"]
            record("leniency-adjusted mean", a["ci_low"], a["ci_high"], truth.mean[i])
            b = entry["bt"]
            record("model BT strength", b["ci_low"], b["ci_high"], truth.bt[i])
            j = entry["judged_human"]
            record("judged-human rate", j["ci_low"], j["ci_high"], truth.judged_human[i])
        # The simultaneous (Bonferroni) intervals: a study counts when every difference of the
        # family lies inside its interval at once.
        joint: dict[str, bool] = {}

        for row in result["differences"]:
            a, b = k[row["a"]], k[row["b"]]
            if row["question"] == "funniness":
                _record_joint(
                    joint,
                    "mean differences, all at once (simultaneous)",
                    row["simultaneous"],
                    truth.mean[a] - truth.mean[b],
                )
            elif row["question"] == "bt":
                _record_joint(
                    joint,
                    "model BT differences, all at once (simultaneous)",
                    row["simultaneous"],
                    truth.bt[a] - truth.bt[b],
                )
                _record_joint(
                    joint,
                    "p_a_beats_b, all at once (simultaneous)",
                    row["p_a_beats_b"]["simultaneous"],
                    truth.p_beats[a, b],
                )
            elif row["question"] == "judged_human":
                _record_joint(
                    joint,
                    "judged-human differences, all at once (simultaneous)",
                    row["simultaneous"],
                    truth.judged_human[a] - truth.judged_human[b],
                )
            if row["question"] == "funniness":
                target = truth.mean[a] - truth.mean[b]
                record("mean difference", row["ci_low"], row["ci_high"], target)
            elif row["question"] == "bt":
                target = truth.bt[a] - truth.bt[b]
                record("model BT difference", row["ci_low"], row["ci_high"], target)
                p = row["p_a_beats_b"]
                record("p_a_beats_b", p["ci_low"], p["ci_high"], truth.p_beats[a, b])
            elif row["question"] == "judged_human":
                target = truth.judged_human[a] - truth.judged_human[b]
                record("judged-human difference", row["ci_low"], row["ci_high"], target)
        for name, inside in joint.items():
            hits.setdefault(name, []).append(inside)
        means_ci, diffs_ci = pigeonhole_intervals(inputs, truth.sources, rounds, rng)
        for i in range(len(truth.sources)):
            record("pigeonhole bootstrap: mean", means_ci[0, i], means_ci[1, i], truth.mean[i])
        pairs = [(a, b) for a in range(3) for b in range(a + 1, 3)]
        for col, (a, b) in enumerate(pairs):
            record(
                "pigeonhole bootstrap: difference",
                diffs_ci[0, col],
                diffs_ci[1, col],
                truth.mean[a] - truth.mean[b],
            )
    return hits, compute_seconds / reps


def culture_power(reps: int, rng: np.random.Generator) -> dict[str, float]:
    null_flagged = [
        bool(simulate_culture_study(rng, planted=0)[0].discovery.any()) for _ in range(reps)
    ]
    line_only = []
    found, false = [], []
    for _ in range(reps):
        test, cross, planted = simulate_culture_study(rng, planted=5)
        found.append(float(test.discovery[planted].mean()))
        false.append(int(test.discovery[~planted].sum()))
        line_only.append(float(np.mean(cross[~planted] < 0.3)))
    return {
        "studies without group effects that flag any item": float(np.mean(null_flagged)),
        "planted culture-dependent items found (power)": float(np.mean(found)),
        "false discoveries per study (35 items without effect)": float(np.mean(false)),
        "items without effect below the 0.3 line alone": float(np.mean(line_only)),
    }


def _table(hits: dict[str, list[bool]]) -> None:
    print(f"  {'interval (95%)':45s} {'coverage':>9s} {'n':>6s}  in 93-97%")
    for name, values in hits.items():
        share = float(np.mean(values))
        band = "yes" if 0.93 <= share <= 0.97 else "no"
        print(f"  {name:45s} {share:9.3f} {len(values):6d}  {band}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=400, help="bootstrap rounds")
    parser.add_argument("--quick", action="store_true", help="100 replications")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    reps = 100 if args.quick else args.reps
    rng = np.random.default_rng(args.seed)
    for scenario, setup in SCENARIOS.items():
        started = time.perf_counter()
        hits, per_study = model_coverage(reps, args.rounds, rng, setup)
        print(
            f"{scenario}: {reps} simulated studies, {time.perf_counter() - started:.1f} s "
            f"(compare_models {1000 * per_study:.1f} ms a study)"
        )
        _table(hits)
    started = time.perf_counter()
    item_reps = max(reps // 2, 20)
    hits = item_level_coverage(item_reps, 1000, rng)
    print(f"item level: {item_reps} simulated studies, {time.perf_counter() - started:.1f} s")
    _table(hits)
    started = time.perf_counter()
    culture_reps = max(reps // 5, 20)
    power = culture_power(culture_reps, rng)
    print(
        f"culture-dependence (40 items, 4 groups x 8 raters, q = 0.1): {culture_reps} studies "
        f"per row, {time.perf_counter() - started:.1f} s"
    )
    for name, value in power.items():
        print(f"  {name:55s} {value:7.3f}")


if __name__ == "__main__":
    main()
