"""The results page's reliability section (`by_group` with the study beside its groups), against
the code of an earlier commit, in one process.

    .venv/bin/python benchmarks/bench_reliability.py                   # against e4f0ea4
    .venv/bin/python benchmarks/bench_reliability.py --against REV     # any earlier commit
    .venv/bin/python benchmarks/bench_reliability.py --quick           # a tenth of the sizes
    .venv/bin/python benchmarks/bench_reliability.py --against 3ea4aad --threads 2   # as the
                                                                       # aggregation calls it
    .venv/bin/python benchmarks/bench_reliability.py --shape crowd     # every grade its own rater

The input is `bench_import.py`'s "large" shape (50,000 items of three sources, 1,000,000
grades 0-3 from 5,000 raters, 200 each), or with `--shape crowd` its "crowd" shape (15,000
items of three sources, five grades 0-3 each, every grade its own rater: 75,000 raters), as
`reliability_section` passes it: one call for the study and its three sources, 100 splits,
1,000 bootstrap rounds, 200 empirical draws. The earlier code is read with
`git show REV:apps/analysis/stats/reliability.py` and loaded as a second module beside the
current one, so both run in this process, alternating, three times;
the ratio of their times is what the machine's noise leaves alone. It then sets the two
results side by side: the split halves and the ICCs and intervals equal to 1e-9; the groups'
empirical k-rater reliability differs by Monte Carlo error only (the groups now read the
study's random orders, see `_k_rater_by_group`), and the study's equals to 1e-9.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats import reliability

ROOT = Path(__file__).resolve().parents[1]

KS = (1, 3, 5, 10, 15, 20)


def earlier(rev: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{rev}:apps/analysis/stats/reliability.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "reliability_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("reliability_before", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def dataset(
    scale: int, shape: str = "large"
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """bench_import.py's "large" shape: each rater grades a contiguous run of items; or its
    "crowd" shape: five grades an item, each from a rater of its own."""
    rng = np.random.default_rng(21)
    source = np.array(["model-a", "model-b", "human"], dtype=object)
    if shape == "crowd":
        n_items = 15_000 // scale
        item = np.repeat(np.arange(n_items), 5)
        latent = 1.5 + rng.normal(0, 0.6, n_items)[item] + rng.normal(0, 0.9, item.size)
        grade = np.clip(np.rint(latent), 0, 3)
        return source[np.arange(n_items) % 3], (item, np.arange(item.size), grade)
    n_items, per_item, n_raters = 50_000 // scale, 20, 5_000 // scale
    per_rater = n_items * per_item // n_raters
    rater = np.repeat(np.arange(n_raters), per_rater)
    start = (np.arange(n_raters) * per_rater) % n_items
    item = ((start[:, None] + np.arange(per_rater)) % n_items).ravel()
    strength = rng.normal(0, 0.8, n_items)
    leniency = rng.normal(0, 0.4, n_raters)
    latent = 1.5 + strength[item] + leniency[rater] + rng.normal(0, 0.8, rater.size)
    grade = np.clip(np.rint(latent), 0, 3)
    return source[np.arange(n_items) % 3], (item, rater, grade)


def run(
    module: ModuleType, source: np.ndarray, scores: Any, threads: int
) -> tuple[float, dict[str, Any]]:
    # Asked only when more than one: code before 2026-12-05 has no `threads`.
    more = {"threads": threads} if threads > 1 else {}
    started = time.perf_counter()
    found = module.by_group(
        source,
        scores=scores,
        splits=100,
        rounds=1000,
        seed=7,
        ks=KS,
        whole="\x00study",
        **more,
    )
    return time.perf_counter() - started, found


def largest_difference(before: dict[str, Any], now: dict[str, Any]) -> tuple[float, float]:
    """(largest difference of the split halves, ICCs and intervals; largest difference of the
    groups' empirical values)."""
    exact, drawn = 0.0, 0.0
    for label, entry in now.items():
        old = before[label]
        pairs = [(old.scores.mean, entry.scores.mean), (old.scores.q025, entry.scores.q025)]
        pairs += [(old.k_rater.icc, entry.k_rater.icc)]
        pairs += [(old.k_rater.icc_ci_low, entry.k_rater.icc_ci_low)]
        pairs += [(old.k_rater.icc_ci_high, entry.k_rater.icc_ci_high)]
        for a, b in zip(old.k_rater.by_k, entry.k_rater.by_k, strict=True):
            if a.empirical is not None and b.empirical is not None:
                if label == "\x00study":
                    pairs.append((a.empirical, b.empirical))
                else:
                    drawn = max(drawn, abs(a.empirical - b.empirical))
        exact = max(exact, *(abs(a - b) for a, b in pairs))
    return exact, drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="e4f0ea4")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--threads", type=int, default=1, help="by_group's threads (the aggregation asks for 2)"
    )
    parser.add_argument("--shape", choices=("large", "crowd"), default="large")
    args = parser.parse_args()
    before = earlier(args.against)
    source, scores = dataset(10 if args.quick else 1, args.shape)
    print(
        f"{source.size:,} items in 3 sources, {scores[0].size:,} grades; "
        f"against {args.against}, {args.threads} thread(s), three runs each, alternating"
    )
    ratios = []
    found_before: dict[str, Any] = {}
    found_now: dict[str, Any] = {}
    for repeat in range(3):
        seconds_before, found_before = run(before, source, scores, args.threads)
        seconds_now, found_now = run(reliability, source, scores, args.threads)
        ratios.append(seconds_before / seconds_now)
        print(
            f"  run {repeat + 1}: before {seconds_before:.2f} s, now {seconds_now:.2f} s: "
            f"{ratios[-1]:.2f}x"
        )
    exact, drawn = largest_difference(found_before, found_now)
    print(f"  median ratio {float(np.median(ratios)):.2f}x")
    print(f"  largest difference of split halves, ICCs, intervals, study's empirical: {exact:.1e}")
    print(f"  largest difference of a group's empirical value (Monte Carlo): {drawn:.4f}")


if __name__ == "__main__":
    main()
