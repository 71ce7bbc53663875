"""False alarms and detection of the anomalous-rater screen (apps/analysis/stats/pair_raters.py).

Each replication is one study simulated by ``apps/analysis/stats/pair_raters_sim.py`` (its
docstring describes the honest raters, with taste, a study-wide position effect and a shared
length effect, and the planted side-biased, length-maximising, contrarian and random raters):
``--items`` items in topics of 20, ``--raters`` raters, ``--per-kind`` of each anomaly kind.

Scenarios: 30 pairs per rater; 30 pairs and 15 Turing items; 15 pairs; and, where false alarms
are highest, no planted anomaly at all with 100 pairs and 40 Turing items per rater (long
sessions make the tests sensitive to honest raters' own leanings and tastes).

Reported: the share of honest raters proposed (false alarms) with its Monte Carlo standard
error (from the spread between studies, since raters of one study share its consensus), and
the share of each anomaly kind proposed, at the default threshold and at others.

Run from the project root:  nice -n 10 .venv/bin/python benchmarks/sim_pair_raters.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats.pair_raters import (
    DEFAULT_PASSES,
    DEFAULT_SIMULATIONS,
    DEFAULT_THRESHOLD,
    screen_raters,
)
from apps.analysis.stats.pair_raters_sim import (
    KINDS,
    LENGTH_EFFECT,
    POSITION_EFFECT,
    TASTE_SD,
    simulate_rater_study,
)

THRESHOLDS = (0.01, 0.02, 0.03, 0.05)


def run(
    *,
    reps: int,
    seed: int,
    n_items: int,
    n_raters: int,
    per_rater: int,
    turing_per_rater: int,
    per_kind: int,
    simulations: int,
    passes: int,
) -> dict[str, Any]:
    """Per study and threshold: honest raters proposed, and anomalous ones per kind."""
    rng = np.random.default_rng(seed)
    honest_rates: dict[float, list[float]] = {t: [] for t in THRESHOLDS}
    caught = {t: dict.fromkeys(KINDS, 0) for t in THRESHOLDS}
    planted = dict.fromkeys(KINDS, 0)
    # Per test: how often an honest rater's own p-value is at most 5% (the tests one by one).
    per_test: dict[str, list[int]] = {}
    for rep in range(reps):
        pairs, turing, kinds = simulate_rater_study(
            rng,
            n_items=n_items,
            n_raters=n_raters,
            per_rater=per_rater,
            turing_per_rater=turing_per_rater,
            per_kind=per_kind,
        )
        result = screen_raters(
            n_raters,
            pairs=pairs,
            turing=turing,
            seed=seed + rep,
            simulations=simulations,
            passes=passes,
        )
        combined = np.array([s.combined_p for s in result.raters], dtype=float)
        honest = kinds == ""
        for t in THRESHOLDS:
            honest_rates[t].append(float(np.mean(combined[honest] <= t)))
            for kind in KINDS:
                caught[t][kind] += int(np.sum(combined[kinds == kind] <= t))
        for kind in KINDS:
            planted[kind] += int(np.sum(kinds == kind))
        for screen in result.raters:
            if kinds[screen.rater] != "":
                continue
            for name, test in screen.tests.items():
                per_test.setdefault(name, [0, 0])
                per_test[name][0] += test.p_value <= 0.05
                per_test[name][1] += 1
    return {
        "false_alarm": {
            t: (
                float(np.mean(v)),
                float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0,
            )
            for t, v in honest_rates.items()
        },
        "detection": {
            t: {k: caught[t][k] / planted[k] if planted[k] else float("nan") for k in KINDS}
            for t in THRESHOLDS
        },
        "planted": planted,
        "honest": int(reps * (n_raters - per_kind * len(KINDS))),
        "per_test": {name: hit / total for name, (hit, total) in per_test.items()},
    }


def report(title: str, out: dict[str, Any], seconds: float) -> None:
    print(f"\n{title}  ({seconds:.0f} s; {out['honest']} honest raters)")
    print(f"{'threshold':>9} {'false alarms (MC se)':>22} " + " ".join(f"{k:>10}" for k in KINDS))
    for t in THRESHOLDS:
        fa, se = out["false_alarm"][t]
        mark = "*" if t == DEFAULT_THRESHOLD else " "
        row = " ".join(f"{out['detection'][t][k]:>10.3f}" for k in KINDS)
        print(f"{t:>8.2f}{mark} {fa:>13.4f} ({se:.4f}) {row}")
    tests = ", ".join(f"{name} {rate:.3f}" for name, rate in out["per_test"].items())
    print(f"honest raters with a test's own p <= 0.05: {tests}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--reps", type=int, default=80, help="studies per scenario (half in the last)"
    )
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--raters", type=int, default=60)
    parser.add_argument("--pairs", type=int, default=30, help="pairs per rater")
    parser.add_argument("--turing", type=int, default=15, help="Turing items per rater")
    parser.add_argument("--per-kind", type=int, default=3, help="planted raters of each kind")
    parser.add_argument("--simulations", type=int, default=DEFAULT_SIMULATIONS)
    parser.add_argument("--passes", type=int, default=DEFAULT_PASSES)
    parser.add_argument("--scenario", type=int, default=None, help="run only this scenario (1-4)")
    parser.add_argument("--quick", action="store_true", help="20 studies per scenario")
    args = parser.parse_args()
    if args.quick:
        args.reps = 20
    print(
        f"{args.reps} studies per scenario: {args.items} items (topics of 20), {args.raters} "
        f"raters ({args.per_kind} of each anomaly kind), {args.pairs} pairs and "
        f"{args.turing} Turing items per rater; {args.simulations} null simulations per rater, "
        f"{args.passes} pass(es); "
        f"taste sd {TASTE_SD}, position {POSITION_EFFECT}, length {LENGTH_EFFECT}/SD; "
        f"default threshold {DEFAULT_THRESHOLD} (*)"
    )
    common = {
        "n_items": args.items,
        "n_raters": args.raters,
        "simulations": args.simulations,
        "passes": args.passes,
    }
    pairs, turing = args.pairs, args.turing
    scenarios: list[tuple[str, dict[str, Any]]] = [
        (f"{pairs} pairs per rater", {"per_rater": pairs, "turing_per_rater": 0}),
        (
            f"{pairs} pairs and {turing} Turing items",
            {"per_rater": pairs, "turing_per_rater": turing},
        ),
        (f"{pairs // 2} pairs per rater", {"per_rater": pairs // 2, "turing_per_rater": 0}),
        (
            "no anomaly; 100 pairs and 40 Turing items",
            {"per_rater": 100, "turing_per_rater": 40, "per_kind": 0},
        ),
    ]
    for number, (title, setup) in enumerate(scenarios):
        if args.scenario is not None and number + 1 != args.scenario:
            continue
        setup = {"per_kind": args.per_kind, "reps": args.reps, **setup}
        if setup["per_kind"] == 0:
            setup["reps"] = max(1, args.reps // 2)
        started = time.perf_counter()
        out = run(**common, **setup, seed=args.seed + number)
        report(title, out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
