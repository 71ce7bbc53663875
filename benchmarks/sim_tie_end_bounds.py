"""Coverage of the one-sided bounds of end items on a board fitted with ties.

The tie-model counterpart of ``sim_end_bounds.py`` (same design, same columns; read its
docstring): ``n`` items (20 to 40) with true log-strengths N(0, spread^2), each in ``m`` random
perfect matchings, but every comparison is drawn from Davidson's or Rao-Kupper's
model with the study's tie parameter (nu = 0.5 or theta = 1.5: 20% ties between equal items,
fewer between distant ones). The bound is ``tie_ends.tie_one_sided_bounds`` with the model that
generated the data, exact and simultaneous, as the board uses it; an item with a tie is finite,
so end items are those with only wins or only losses. The estimand of an end item is ``t = s_i -
mean of the true strengths of the finite items of its component``, as in ``sim_end_bounds``.

Run from the project root:
    nice -n 10 .venv/bin/python benchmarks/sim_tie_end_bounds.py [--quick]
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
from sim_end_bounds import end_truth, fmt, ratio
from sim_ties_coverage import probabilities

from apps.analysis.stats.tie_ends import tie_one_sided_bounds
from apps.analysis.stats.ties import LEFT, RIGHT, TIE

# The study's tie parameter per model: 20% ties between two equally strong items either way.
TIE_PARAM = {"davidson": 0.5, "rao_kupper": 1.5}
STRATA = ((1.0, 3), (1.0, 6), (2.0, 3), (2.0, 6), (2.0, 12), (2.0, 24))


def simulate_study(
    rng: np.random.Generator, model: str, n_items: int, per_item: int, spread: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, outcome, true strengths) of one study."""
    truth = rng.normal(0.0, spread, n_items)
    pairs = [rng.permutation(n_items) for _ in range(per_item)]
    left = np.concatenate([p[0::2] for p in pairs])
    right = np.concatenate([p[1::2] for p in pairs])
    probs = probabilities(model, truth[left] - truth[right], TIE_PARAM[model])
    draw = rng.random(left.size)
    outcome = np.where(
        draw < probs[:, 0], LEFT, np.where(draw < probs[:, 0] + probs[:, 1], RIGHT, TIE)
    )
    return left, right, outcome, truth


def run_stratum(*, model: str, studies: int, per_item: int, spread: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_end, n_bounded, hits, any_miss, ties = [], [], [], [], []
    for _ in range(studies):
        n_items = int(rng.integers(10, 21)) * 2
        left, right, outcome, truth = simulate_study(rng, model, n_items, per_item, spread)
        eb = tie_one_sided_bounds(left, right, outcome, n_items, model=model)
        t = end_truth(truth, eb.end, eb.component)
        is_end = eb.end != 0
        bounded = is_end & ~np.isnan(eb.bound)
        hit = np.where(eb.end == 1, t >= eb.bound, t <= eb.bound)[bounded]
        n_end.append(float(is_end.sum()))
        n_bounded.append(float(bounded.sum()))
        hits.append(float(hit.sum()))
        any_miss.append(float(np.any(~hit)))
        ties.append(float(np.mean(outcome == TIE)))
    return {
        "ends": float(np.mean(n_end)),
        "ties": float(np.mean(ties)),
        "bounded": ratio(n_bounded, n_end),
        "cover": ratio(hits, n_bounded),
        "any_miss": ratio(any_miss, [1.0] * len(any_miss)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2028)
    parser.add_argument("--quick", action="store_true", help="100 studies per stratum")
    args = parser.parse_args()
    if args.quick:
        args.studies = 100
    print(
        f"{args.studies} studies per stratum and model, 20-40 items, seed {args.seed}; "
        "simultaneous exact 95% bound; value ± Monte Carlo SE (clustered by study)"
    )
    print(
        f"{'model':<10} {'spread':>6} {'m':>3} {'ties':>5} {'ends':>5} {'bounded':>10} "
        f"{'cover|end':>11} {'any miss':>11} {'s':>4}"
    )
    for model in TIE_PARAM:
        for k, (spread, per_item) in enumerate(STRATA):
            t0 = time.perf_counter()
            r = run_stratum(
                model=model,
                studies=args.studies,
                per_item=per_item,
                spread=spread,
                seed=args.seed + k,
            )
            print(
                f"{model:<10} {spread:>6.1f} {per_item:>3} {r['ties']:>5.2f} {r['ends']:>5.1f} "
                f"{fmt(r['bounded'], 2):>10} {fmt(r['cover']):>11} {fmt(r['any_miss']):>11} "
                f"{time.perf_counter() - t0:>4.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
