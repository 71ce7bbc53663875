"""How well L1 predicts people, on real crowd ratings: the Humicroedit headlines.

The pool is the fifth of Humicroedit's training split that the shipped prior was *not* trained
on (`apps.screening.prior.holdout_mask` with the prior's own seed), so every condition below is
evaluated on items none of its parts has seen. For each seed, a random `--study` items (400) are
the study's rated items (what a calibration may fit on); every other pool item is held out and
only evaluated. Conditions:

- `defaults`: the method's FunnyScore with its documented coefficients (a = b = 1, c = 2);
- `features`: the method's three features, OLS-calibrated on the study items (as before);
- `features+gate`: the same with the coherence-gated surprise (surprise × coherence) added;
- `learned`: the learned L1 (ridge on the item embedding beside the features and the
  coherence-gated surprise), fitted on the study items;
- `prior`: the shipped prior alone (no study data);
- `prior+study`: the learned L1 with the prior's prediction as a column, fitted on the study items.

Per condition, over seeds: Spearman rho with the held-out crowd means (with a 95% percentile
bootstrap interval over held-out items, from the first seed, and the mean over seeds), the share
of the crowd's top quartile that a top-half sieve keeps (same), and RMSE beside predicting the
study items' mean. Also, per seed, what the platform's own validation (repeated 20 x 5-fold on
the study items only) says and whether its rho interval covers the held-out rho.

Then the applicability rule with no signal: the study items' crowd means are shuffled
(`--null` times) and the rule (held-out rho's lower bound above 0 and beating the scorer in
place) is applied to the learned fit; the share of shuffles where it would apply is the rule's
false-alarm rate.

Last, throughput: features per second with and without the item embedding the learned L1
needs, in this process, one thread (the embedding's cost as a share of screening's).

    .venv/bin/python benchmarks/bench_l1_quality.py                 # 5 seeds, 100 shuffles
    .venv/bin/python benchmarks/bench_l1_quality.py --quick         # 2 seeds, 20 shuffles

Features of the pool (surprise needs Gemma 3 270M, prepared by `make install`) are cached in
`var/bench-cache/` by the pool's hash, so a second run takes a minute.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np
from common import ROOT, setup_django

CSV = ROOT.parent / "shared" / "reference" / "humicroedit" / "task-1_train.csv"
CACHE = ROOT / "var" / "bench-cache"


def _features(texts: list[str]) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(features n x 3, embeddings n x d, seconds for the features, seconds for embeddings)."""
    from apps.screening.features.coherence import coherence_scores
    from apps.screening.features.embedding import item_embeddings
    from apps.screening.features.split import split_item
    from apps.screening.features.surprise import surprise_scores
    from apps.screening.features.valence import valence_scores
    from apps.textmodels.registry import causal_lm_info, embedding_info

    languages = ["en"] * len(texts)
    lm, em = causal_lm_info(), embedding_info()
    # Warm up both models outside the clock.
    surprise_scores(texts[:2], [None, None], languages[:2], model=lm)
    item_embeddings(texts[:2], languages[:2], model=em)
    started = time.perf_counter()
    splits = [split_item(t, language="en", level="single", context=[], scenario="") for t in texts]
    s = surprise_scores([x.text for x in splits], [x.boundary for x in splits], languages, model=lm)
    c = coherence_scores(
        [x.setup for x in splits], [x.punchline for x in splits], languages, model=em
    )
    v = valence_scores([x.text for x in splits], languages)
    feature_seconds = time.perf_counter() - started
    started = time.perf_counter()
    e = item_embeddings(texts, languages, model=em)
    embedding_seconds = time.perf_counter() - started
    matrix = np.array(
        [
            [
                np.nan if a.value is None else a.value,
                np.nan if b.value is None else b.value,
                np.nan if d.penalty is None else d.penalty,
            ]
            for a, b, d in zip(s, c, v, strict=True)
        ]
    )
    embeddings = np.vstack([np.asarray(x.vector, dtype=np.float64) for x in e])
    return matrix, embeddings, feature_seconds, embedding_seconds


def _pool(limit: int | None) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, float]:
    from apps.screening import prior as prior_module

    prior = prior_module.packaged_prior()
    assert prior is not None, "the shipped prior is missing: run manage.py build_l1_prior"
    rows = prior_module.read_humicroedit(CSV)
    hold = prior_module.holdout_mask(len(rows), seed=prior.seed)
    pool = [row for row, h in zip(rows, hold, strict=True) if h]
    if limit:
        pool = pool[:limit]
    texts = [row.text for row in pool]
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    cache = CACHE / f"humicroedit-{key}.npz"
    if cache.is_file():
        data = np.load(cache)
        features, embeddings, ratio = data["features"], data["embeddings"], float(data["ratio"])
    else:
        features, embeddings, fs, es = _features(texts)
        ratio = es / fs
        print(
            f"features of {len(texts)} headlines: {len(texts) / fs:.1f} items/s; item "
            f"embedding: {len(texts) / es:.0f} items/s; screening with the embedding takes "
            f"{1 + ratio:.3f}x the time without it"
        )
        CACHE.mkdir(parents=True, exist_ok=True)
        np.savez(cache, features=features, embeddings=embeddings, ratio=ratio)
    human = np.array([row.mean_grade for row in pool])
    return texts, features, embeddings, human, ratio


def _formula(features: np.ndarray, coefficients: object) -> np.ndarray:
    """FunnyScore of each row (surprise, coherence, penalty; NaN = missing)."""
    from apps.screening import calibration as calib

    assert isinstance(coefficients, calib.Coefficients)
    return np.array(
        [
            calib.funny_score(
                None if np.isnan(s) else s,
                None if np.isnan(c) else c,
                None if np.isnan(p) else p,
                coefficients,
            )
            for s, c, p in features
        ],
        dtype=np.float64,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--study", type=int, default=400)
    parser.add_argument("--null", type=int, default=100)
    parser.add_argument("--items", type=int, default=None, help="use only this many pool items")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.null = 2, 20
    setup_django(postgres=False)

    from apps.screening import calibration as calib
    from apps.screening import learned
    from apps.screening import prior as prior_module

    prior = prior_module.packaged_prior()
    assert prior is not None
    _, features, embeddings, human, ratio = _pool(args.items)
    n = len(human)
    gated = learned.feature_block(features[:, 0], features[:, 1], features[:, 2])
    prior_scores = prior.predict(embeddings)
    with_prior = np.column_stack([gated, prior_scores])
    names = (*learned.FEATURE_COLUMNS, learned.PRIOR_COLUMN)
    default_scores = _formula(features, calib.DEFAULT_COEFFICIENTS)
    print(
        f"pool: {n} Humicroedit headlines the prior never saw; study {args.study} per seed, "
        f"{n - args.study} held out"
    )
    results: dict[str, list[tuple[float, float, float, float]]] = {}
    first: dict[str, tuple[learned.Estimate, learned.Estimate]] = {}
    covered = 0
    applied = 0
    for seed in range(args.seeds):
        order = np.random.default_rng(1000 + seed).permutation(n)
        study, held = order[: args.study], order[args.study :]
        y = human[study]
        baseline = learned.rmse(np.full(len(held), y.mean()), human[held])

        ols = calib.fit(features[study], y, seed=seed, folds=5).coefficients
        ols_scores = _formula(features[held], ols)
        model = learned.fit_ridge(gated[study], embeddings[study], y, names=learned.FEATURE_COLUMNS)
        # The method's features with the coherence-gated surprise, no embedding: what the
        # interaction adds by itself.
        gate_only = learned.fit_ridge(gated[study], None, y, names=learned.FEATURE_COLUMNS)
        refined = learned.fit_ridge(with_prior[study], embeddings[study], y, names=names)
        scored = {
            "defaults": default_scores[held],
            "features": ols_scores,
            "features+gate": gate_only.predict(gated[held], None),
            "learned": model.predict(gated[held], embeddings[held]),
            "prior": prior_scores[held],
            "prior+study": refined.predict(with_prior[held], embeddings[held]),
        }
        for name, predicted in scored.items():
            rho, kept = learned.bootstrap_figures(predicted, human[held], seed=seed, rounds=300)
            if seed == 0:
                first[name] = (rho, kept)
            results.setdefault(name, []).append(
                (
                    rho.value or 0.0,
                    kept.value or 0.0,
                    learned.rmse(predicted, human[held]),
                    baseline,
                )
            )
        # The platform's own verdict, from the study items alone.
        check = learned.validate(
            learned.ridge_fitter(with_prior[study], embeddings[study], y, names=names),
            y,
            seed=seed,
            current=prior_scores[study],
            repeats=20,
            rounds=300,
        )
        truth = results["prior+study"][-1][0]
        low, high = check.rho.ci_low or 0.0, check.rho.ci_high or 0.0
        covered += low <= truth <= high
        applied += check.applicable
        print(
            f"  seed {seed}: validation on the study items says rho {check.rho.value:.3f} "
            f"[{low:.3f}, {high:.3f}] (prior on them {check.current_rho:.3f}): "
            f"{'applies' if check.applicable else 'does not apply'}; held-out rho {truth:.3f}"
        )

    print()
    print(
        f"{'condition':<12} {'rho (seed 0, 95% CI)':<26} {'mean rho':>9} "
        f"{'top-Q kept (seed 0)':<24} {'mean kept':>9} {'RMSE':>6} {'mean-only':>9}"
    )
    for name, rows in results.items():
        rho, kept = first[name]
        values = np.array(rows)
        print(
            f"{name:<12} {rho.value:6.3f} [{rho.ci_low:6.3f}, {rho.ci_high:6.3f}]    "
            f"{values[:, 0].mean():9.3f} {kept.value:6.1%} [{kept.ci_low:5.1%}, {kept.ci_high:5.1%}]"
            f"  {values[:, 1].mean():9.1%} {values[:, 2].mean():6.3f} {values[:, 3].mean():9.3f}"
        )
    print(
        f"\nvalidation interval covered the held-out rho in {covered} of {args.seeds} seeds; "
        f"the fit applied itself in {applied} of {args.seeds}"
    )

    # The rule with no signal: shuffled crowd means.
    fired = fired_bound = 0
    rng = np.random.default_rng(7)
    study = np.random.default_rng(1000).permutation(n)[: args.study]
    for _ in range(args.null):
        y = rng.permutation(human[study])
        for kind, columns, current in (("learned", gated[study], default_scores[study]),):
            check = learned.validate(
                learned.ridge_fitter(columns, embeddings[study], y, names=learned.FEATURE_COLUMNS),
                y,
                seed=int(rng.integers(1 << 30)),
                current=current,
                repeats=10,
                rounds=200,
            )
            del kind
            fired += check.applicable
            fired_bound += (check.rho.ci_low or 0.0) > 0
    if args.null:
        print(
            f"no signal ({args.null} shuffles): the rule applied the fit in {fired / args.null:.1%}; "
            f"the rho bound alone was above 0 in {fired_bound / args.null:.1%}"
        )
    print(f"throughput: screening with the item embedding takes {1 + ratio:.3f}x the time")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
