"""Coverage of the one-sided bounds of undefeated and never-winning items, and the ranks they give.

Each simulated study: ``n`` items (20 to 40, drawn per study) with true log-strengths
N(0, spread^2), compared in ``m`` rounds of a random perfect matching (so every item has exactly
``m`` comparisons: 3, 6, 12, and 24 as a denser contrast), judged by 12 raters without taste (P(i beats j) =
sigmoid(s_i - s_j)). Sparse enough that items end undefeated or never winning.

Per end item the estimand is ``t = s_i - mean_{j finite in its component} s_j`` (true strengths;
the finite set is the one the study produced). Reported, pooled over studies:

* ``ends``: end items per study; ``finite``: share of their bounds that are finite (a flat
  profile gives -inf / +inf: the data say nothing); ``ident``: share of end items whose
  component has an identified finite-centre scale (``EndBounds.identified``).
* ``cover|end``: P(t >= bound | the item ended undefeated), likewise t <= bound for never-won,
  pooled; ``cover|fin``: the same among finite bounds only. Monte Carlo standard errors are
  clustered by study (items of one study share the finite centre).
* ``miss/item``: P(an item ends undefeated *and* its lower bound misses t), per item of the
  design: the frequentist error rate of the bound as a procedure (never-won is the mirror
  image). The exact cut guarantees <= 1 - level when the other strengths are known.
* Ranks (``end_ranks``, finite items' intervals from ``bt_bootstrap`` on the finite-finite
  comparisons, rater-clustered, expanded percentile, 95%): ``best``: P(an undefeated item is the
  true best of its component); ``best@1``: P(the true best item of a component has rank 1),
  over components with an undefeated item; ``wrong``: share of the order claims involving an end
  item ("j clearly above i": lower end of j > upper end of i) that are false in truth.

Run from the project root:  nice -n 10 .venv/bin/python benchmarks/sim_end_bounds.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from apps.analysis.stats.bradley_terry import bt_bootstrap
from apps.analysis.stats.ends import end_ranks, finite_comparison_mask, one_sided_bounds

N_RATERS = 12
# (name, cut, level, simultaneous): the bound as first specified (chi-square cut), the exact
# cut, the exact cut at the level that matches a 95% two-sided board's per-side risk, and the
# exact cut made simultaneous over the board.
BOUNDS = (
    ("chi2 95%", "chi2", 0.95, False),
    ("exact 95%", "exact", 0.95, False),
    ("exact 97.5%", "exact", 0.975, False),
    ("simult 95%", "exact", 0.95, True),
)
# (spread of the true log-strengths, comparisons per item). The brief's range is 3-12 per item;
# the last stratum is a denser design (as in a study where an item won all of its ~24 games).
STRATA = ((1.0, 3), (1.0, 6), (1.0, 12), (2.0, 3), (2.0, 6), (2.0, 12), (2.0, 24))
KEYS = (
    "hits",
    "miss_up",
    "n_end",
    "n_bounded",
    "n_fin",
    "hits_fin",
    "any_miss",
    "items",
    "best",
    "n_up",
    "best1",
    "n_comp",
    "wrong",
    "claims",
)


def simulate_study(
    rng: np.random.Generator, n_items: int, per_item: int, spread: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(winners, losers, raters, true strengths) of one study."""
    truth = rng.normal(0.0, spread, n_items)
    a_list, b_list = [], []
    for _ in range(per_item):
        perm = rng.permutation(n_items)
        a_list.append(perm[0::2])
        b_list.append(perm[1::2])
    a, b = np.concatenate(a_list), np.concatenate(b_list)
    a_wins = rng.random(a.size) < 1.0 / (1.0 + np.exp(-(truth[a] - truth[b])))
    raters = rng.integers(0, N_RATERS, a.size)
    return np.where(a_wins, a, b), np.where(a_wins, b, a), raters, truth


def end_truth(truth: np.ndarray, end: np.ndarray, component: np.ndarray) -> np.ndarray:
    """t_i = s_i - mean of the true strengths of the finite items of i's component (nan if none)."""
    out = np.full(truth.shape, np.nan)
    for label in np.unique(component):
        members = component == label
        fin = members & (end == 0)
        if fin.any():
            out[members] = truth[members] - truth[fin].mean()
    return out


def run_stratum(
    *, studies: int, per_item: int, spread: float, rounds: int, seed: int
) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows: dict[str, dict[str, list[float]]] = {
        name: {key: [] for key in KEYS} for name, *_ in BOUNDS
    }
    for study in range(studies):
        n_items = int(rng.integers(10, 21)) * 2
        winners, losers, raters, truth = simulate_study(rng, n_items, per_item, spread)
        bounds = {
            name: one_sided_bounds(
                winners, losers, n_items, level=level, cut=cut, simultaneous=simultaneous
            )
            for name, cut, level, simultaneous in BOUNDS
        }
        ends = bounds["exact 95%"]
        mask = finite_comparison_mask(winners, losers, ends.end)
        boot = bt_bootstrap(
            winners[mask],
            losers[mask],
            n_items,
            clusters=raters[mask],
            rounds=rounds,
            seed=seed * 10_000 + study,
            interval="expanded",
        )
        t = end_truth(truth, ends.end, ends.component)
        is_end = ends.end != 0
        for name, eb in bounds.items():
            r = rows[name]
            bounded = is_end & ~np.isnan(eb.bound)
            hit = np.where(eb.end == 1, t >= eb.bound, t <= eb.bound)[bounded]
            finite = np.isfinite(eb.bound[bounded])
            r["n_end"].append(float(is_end.sum()))
            r["n_bounded"].append(float(bounded.sum()))
            r["hits"].append(float(hit.sum()))
            r["miss_up"].append(float(np.sum(~hit & (eb.end[bounded] == 1))))
            r["any_miss"].append(float(np.any(~hit)))
            r["hits_fin"].append(float(hit[finite].sum()))
            r["n_fin"].append(float(finite.sum()))
            r["items"].append(float(n_items))
            ranks = end_ranks(ends.scores, boot.ci_low, boot.ci_high, eb)
            low = np.where(eb.end == 1, eb.bound, np.where(eb.end == -1, -np.inf, boot.ci_low))
            high = np.where(eb.end == 1, np.inf, np.where(eb.end == -1, eb.bound, boot.ci_high))
            best_hits = n_up = best1 = n_comp = wrong = claims = 0
            for label in np.unique(eb.component[bounded]):
                members = np.flatnonzero(eb.component == label)
                top = members[np.argmax(truth[members])]
                ups = members[eb.end[members] == 1]
                best_hits += int(np.sum(ups == top))
                n_up += ups.size
                if ups.size:
                    n_comp += 1
                    best1 += int(ranks[top] == 1)
                # Order claims "j clearly above i" that involve an end item (nan never claims).
                above = low[members][:, None] > high[members][None, :]
                involved = (eb.end[members][:, None] != 0) | (eb.end[members][None, :] != 0)
                claim = above & involved
                false = truth[members][:, None] < truth[members][None, :]
                claims += int(claim.sum())
                wrong += int((claim & false).sum())
            r["best"].append(best_hits)
            r["n_up"].append(n_up)
            r["best1"].append(best1)
            r["n_comp"].append(n_comp)
            r["wrong"].append(wrong)
            r["claims"].append(claims)
    return {name: summarise(r) for name, r in rows.items()}


def ratio(num: list[float], den: list[float]) -> tuple[float, float]:
    """Pooled ratio sum(num) / sum(den) and its study-clustered standard error."""
    x, n = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if n.sum() == 0:
        return float("nan"), float("nan")
    p = x.sum() / n.sum()
    k = x.size
    se = np.sqrt(k / max(k - 1, 1) * np.sum((x - p * n) ** 2)) / n.sum()
    return float(p), float(se)


def summarise(r: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "ends": float(np.mean(r["n_end"])),
        "bounded": ratio(r["n_bounded"], r["n_end"]),
        "finite": ratio(r["n_fin"], r["n_bounded"]),
        "cover": ratio(r["hits"], r["n_bounded"]),
        "cover_fin": ratio(r["hits_fin"], r["n_fin"]),
        "miss_item": ratio(r["miss_up"], r["items"]),
        "any_miss": ratio(r["any_miss"], [1.0] * len(r["any_miss"])),
        "best": ratio(r["best"], r["n_up"]),
        "best1": ratio(r["best1"], r["n_comp"]),
        "wrong": ratio(r["wrong"], r["claims"]),
        "claims": float(np.mean(r["claims"])),
    }


def fmt(value: tuple[float, float], digits: int = 3) -> str:
    return f"{value[0]:.{digits}f}±{value[1]:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--quick", action="store_true", help="60 studies per stratum")
    args = parser.parse_args()
    if args.quick:
        args.studies = 60
    print(
        f"{args.studies} studies per stratum, 20-40 items, {N_RATERS} raters, "
        f"{args.rounds} bootstrap rounds, seed {args.seed}; value ± Monte Carlo SE"
    )
    header = (
        f"{'spread':>6} {'m':>3} {'bound':<12} {'ends':>5} {'bounded':>10} {'finite':>10} "
        f"{'cover|end':>11} {'cover|fin':>11} {'miss/item':>11} {'any miss':>11} "
        f"{'best':>11} {'best@1':>11} {'claims':>6} {'wrong':>11} {'s':>4}"
    )
    print(header)
    for k, (spread, per_item) in enumerate(STRATA):
        t0 = time.perf_counter()
        res = run_stratum(
            studies=args.studies,
            per_item=per_item,
            spread=spread,
            rounds=args.rounds,
            seed=args.seed + k,
        )
        took = time.perf_counter() - t0
        for name, r in res.items():
            print(
                f"{spread:>6.1f} {per_item:>3} {name:<12} {r['ends']:>5.1f} "
                f"{fmt(r['bounded'], 2):>10} {fmt(r['finite'], 2):>10} "
                f"{fmt(r['cover']):>11} {fmt(r['cover_fin']):>11} "
                f"{fmt(r['miss_item']):>11} {fmt(r['any_miss']):>11} {fmt(r['best']):>11} "
                f"{fmt(r['best1']):>11} {r['claims']:>6.2f} {fmt(r['wrong']):>11} "
                f"{took:>4.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
