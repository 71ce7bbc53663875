"""Davidson and Rao-Kupper fits for pair judgments with ties: against the likelihood written
out term by term and maximised by BFGS, against leaderbot (an independent implementation, if
installed), against Bradley-Terry when there is no tie, parameter recovery, the bootstrap's
rounds against direct fits of the resampled data, and a small coverage simulation
(``benchmarks/sim_ties_coverage.py`` runs the full one)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize

from apps.analysis.stats.bradley_terry import DEFAULT_ALPHA, bt_fit
from apps.analysis.stats.ranks import ci_aware_ranks
from apps.analysis.stats.ties import (
    LEFT,
    RIGHT,
    TIE,
    TIE_MODELS,
    choose_tie_model,
    tie_bootstrap,
    tie_fit,
    tie_rates,
)


def outcome_probabilities(
    model: str, s_left: np.ndarray, s_right: np.ndarray, tie: float | np.ndarray
) -> np.ndarray:
    """(n, 3) probabilities of left preferred, right preferred, tie, as the models define them."""
    if model == "davidson":
        numerators = np.stack(
            [np.exp(s_left), np.exp(s_right), tie * np.exp((s_left + s_right) / 2)], axis=1
        )
        return np.asarray(numerators / numerators.sum(axis=1, keepdims=True))
    pi_l, pi_r = np.exp(s_left), np.exp(s_right)
    p_left = pi_l / (pi_l + tie * pi_r)
    p_right = pi_r / (pi_r + tie * pi_l)
    return np.stack([p_left, p_right, 1.0 - p_left - p_right], axis=1)


def simulate(
    model: str,
    strengths: np.ndarray,
    tie: float,
    n: int,
    rng: np.random.Generator,
    items: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n judgments of uniformly drawn pairs among ``items`` (default: all)."""
    pool = np.arange(strengths.size) if items is None else items
    a = rng.integers(0, pool.size, n)
    b = (a + rng.integers(1, pool.size, n)) % pool.size
    left, right = pool[a], pool[b]
    prob = outcome_probabilities(model, strengths[left], strengths[right], tie)
    u = rng.random(n)[:, None]
    outcome = (u > np.cumsum(prob, axis=1)).sum(axis=1)
    return left, right, np.minimum(outcome, 2)


def two_components(model: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """9 items in two topics (items 0-4 and 5-8), with ties in both."""
    rng = np.random.default_rng(seed)
    strengths = rng.normal(0.0, 1.0, 9)
    tie = 0.5 if model == "davidson" else 1.6
    l1, r1, o1 = simulate(model, strengths, tie, 300, rng, items=np.arange(5))
    l2, r2, o2 = simulate(model, strengths, tie, 200, rng, items=np.arange(5, 9))
    return np.r_[l1, l2], np.r_[r1, r2], np.r_[o1, o2], 9


def reference_fit(
    model: str, left: np.ndarray, right: np.ndarray, outcome: np.ndarray, n_items: int, alpha: float
) -> tuple[np.ndarray, float, float]:
    """The penalised likelihood written out from the model's definition, maximised by BFGS on
    (s, log nu) for Davidson and (s, log(theta - 1)) for Rao-Kupper. Returns the scores centred
    per topic, the tie parameter and the unpenalised log-likelihood at the optimum."""

    def log_lik(params: np.ndarray) -> float:
        s, z = params[:-1], params[-1]
        si, sj = s[left], s[right]
        if model == "davidson":
            nu = np.exp(z)
            denominator = np.exp(si) + np.exp(sj) + nu * np.exp((si + sj) / 2)
            p_left = np.exp(si) / denominator
            p_right = np.exp(sj) / denominator
            p_tie = nu * np.exp((si + sj) / 2) / denominator
        else:
            theta = 1.0 + np.exp(z)
            p_left = np.exp(si) / (np.exp(si) + theta * np.exp(sj))
            p_right = np.exp(sj) / (np.exp(sj) + theta * np.exp(si))
            p_tie = 1.0 - p_left - p_right
        p = np.select([outcome == LEFT, outcome == RIGHT], [p_left, p_right], p_tie)
        return float(np.log(p).sum())

    def objective(params: np.ndarray) -> float:
        return -log_lik(params) + alpha * float(np.sum(params[:-1] ** 2))

    result = minimize(
        objective, np.zeros(n_items + 1), method="BFGS", jac="3-point", options={"gtol": 1e-9}
    )
    s = result.x[:-1]
    topic = np.r_[np.zeros(5, dtype=int), np.ones(4, dtype=int)]
    s = s - np.array([s[topic == t].mean() for t in (0, 1)])[topic]
    z = result.x[-1]
    tie = float(np.exp(z)) if model == "davidson" else float(1.0 + np.exp(z))
    return s, tie, log_lik(result.x)


# --- the fit against independent implementations ----------------------------------------------


@pytest.mark.parametrize("model", TIE_MODELS)
def test_fit_equals_the_term_by_term_likelihood_maximised_by_bfgs(model: str) -> None:
    left, right, outcome, n = two_components(model, seed=3)
    assert (outcome == TIE).mean() > 0.1
    fit = tie_fit(left, right, outcome, n, model=model)
    ref_scores, ref_tie, ref_log_lik = reference_fit(model, left, right, outcome, n, DEFAULT_ALPHA)
    assert fit.converged
    assert fit.model == model
    assert fit.n_components == 2
    np.testing.assert_allclose(fit.scores, ref_scores, atol=1e-5)
    assert fit.tie_param == pytest.approx(ref_tie, abs=1e-5)
    assert fit.log_lik == pytest.approx(ref_log_lik, abs=1e-5)
    # 9 items in 2 topics: 7 free strengths and the shared tie parameter.
    assert fit.n_params == 8
    assert fit.aic == pytest.approx(2 * 8 - 2 * fit.log_lik)


@pytest.mark.slow  # ~15 s, most of it numba compiling leaderbot's likelihood
@pytest.mark.parametrize("model", TIE_MODELS)
def test_fit_equals_leaderbot(model: str) -> None:
    leaderbot_models = pytest.importorskip("leaderbot.models")
    rng = np.random.default_rng(7)
    strengths = rng.normal(0.0, 0.8, 10)
    tie = 0.5 if model == "davidson" else 1.6
    left, right, outcome = simulate(model, strengths, tie, 4000, rng)
    # leaderbot's input: one row per pair [i, j] with counts [i preferred, j preferred, ties].
    a, b = np.minimum(left, right), np.maximum(left, right)
    preferred = np.where(outcome == LEFT, left, right)
    pairs = sorted(set(zip(a.tolist(), b.tolist(), strict=True)))
    x, y = [], []
    for i, j in pairs:
        sel = (a == i) & (b == j)
        decisive = sel & (outcome != TIE)
        x.append([i, j])
        y.append(
            [
                int((decisive & (preferred == i)).sum()),
                int((decisive & (preferred == j)).sum()),
                int((sel & (outcome == TIE)).sum()),
            ]
        )
    data = {"X": x, "Y": y, "models": [f"item{i}" for i in range(10)]}
    cls = leaderbot_models.Davidson if model == "davidson" else leaderbot_models.RaoKupper
    # k_cov=None, k_tie=0: the original model with one tie parameter and no covariance.
    theirs = cls(data, k_cov=None, k_tie=0)
    theirs.train()
    # leaderbot's parameters: the scores (no ridge; its only constraint, (sum of scores)^2,
    # fixes the centring and leaves the likelihood alone) and the tie parameter's logarithm:
    # log nu (Davidson, P(tie) ~ e^{mu}) or log theta (Rao-Kupper, P(i over j) =
    # sigmoid(x_i - x_j - eta)).
    their_scores = theirs.param[:10] - theirs.param[:10].mean()
    their_tie = float(np.exp(theirs.param[-1]))
    # A ridge far below the data's pull, so both fit the plain likelihood.
    ours = tie_fit(left, right, outcome, 10, model=model, alpha=1e-12)
    np.testing.assert_allclose(ours.scores, their_scores, atol=1e-5)
    assert ours.tie_param == pytest.approx(their_tie, rel=1e-5)


@pytest.mark.parametrize("model", TIE_MODELS)
def test_without_ties_both_models_are_bradley_terry(model: str) -> None:
    rng = np.random.default_rng(11)
    strengths = rng.normal(0.0, 1.0, 12)
    left, right, _ = simulate("davidson", strengths, 0.0, 3000, rng)
    p_left = 1.0 / (1.0 + np.exp(strengths[right] - strengths[left]))
    outcome = np.where(rng.random(left.size) < p_left, LEFT, RIGHT)
    winners = np.where(outcome == LEFT, left, right)
    losers = np.where(outcome == LEFT, right, left)
    bt = bt_fit(winners, losers, 12)
    fit = tie_fit(left, right, outcome, 12, model=model)
    np.testing.assert_allclose(fit.scores, bt.scores, atol=1e-6)
    assert fit.tie_param == (0.0 if model == "davidson" else 1.0)
    assert fit.converged
    bt_log_lik = -np.sum(np.log1p(np.exp(bt.scores[losers] - bt.scores[winners])))
    assert fit.log_lik == pytest.approx(bt_log_lik, abs=1e-6)


def test_one_tie_among_thousands_leaves_davidson_next_to_bradley_terry() -> None:
    # The boundary nu = 0 is the limit of the interior fits, not a separate case.
    rng = np.random.default_rng(12)
    strengths = rng.normal(0.0, 1.0, 12)
    left, right, _ = simulate("davidson", strengths, 0.0, 5000, rng)
    p_left = 1.0 / (1.0 + np.exp(strengths[right] - strengths[left]))
    outcome = np.where(rng.random(left.size) < p_left, LEFT, RIGHT)
    bt = tie_fit(left, right, outcome, 12)
    outcome[0] = TIE
    fit = tie_fit(left, right, outcome, 12)
    assert 0.0 < fit.tie_param < 1e-3
    np.testing.assert_allclose(fit.scores, bt.scores, atol=0.01)


# --- recovery and model choice -------------------------------------------------------------


@pytest.mark.parametrize(("model", "tie"), [("davidson", 0.4), ("rao_kupper", 1.5)])
def test_each_model_recovers_its_own_parameters_and_is_chosen(model: str, tie: float) -> None:
    rng = np.random.default_rng(21)
    strengths = np.linspace(-2.0, 2.0, 25)
    left, right, outcome = simulate(model, strengths, tie, 60_000, rng)
    fit = tie_fit(left, right, outcome, 25, model=model)
    # Standard errors here are ~0.03 for a score and ~0.01 for the tie parameter.
    np.testing.assert_allclose(fit.scores, strengths - strengths.mean(), atol=0.1)
    assert np.corrcoef(fit.scores, strengths)[0, 1] > 0.999
    assert fit.tie_param == pytest.approx(tie, abs=0.04)
    choice = choose_tie_model(left, right, outcome, 25)
    assert choice.chosen == model
    other = "rao_kupper" if model == "davidson" else "davidson"
    # A clear choice: the true model's AIC is lower by far more than the usual 10 points.
    assert choice.aic[other] - choice.aic[model] > 50
    assert choice.n_params == choice.davidson.n_params == choice.rao_kupper.n_params == 25
    assert choice.log_lik[model] == pytest.approx(getattr(choice, model).log_lik)
    assert choice.aic[model] - choice.aic[other] == pytest.approx(
        -2 * (choice.log_lik[model] - choice.log_lik[other])
    )


def test_a_draw_in_aic_goes_to_davidson() -> None:
    left = np.array([0, 1, 2, 0])
    right = np.array([1, 2, 0, 2])
    outcome = np.array([LEFT, LEFT, RIGHT, RIGHT])
    choice = choose_tie_model(left, right, outcome, 3)
    assert choice.aic["davidson"] == pytest.approx(choice.aic["rao_kupper"])
    assert choice.chosen == "davidson"


# --- boundaries and shapes -------------------------------------------------------------------


def test_only_ties_give_an_infinite_tie_parameter_and_equal_scores() -> None:
    left, right = np.array([0, 1, 0]), np.array([1, 2, 2])
    for model in TIE_MODELS:
        fit = tie_fit(left, right, np.full(3, TIE), 3, model=model)
        assert fit.tie_param == np.inf
        assert np.all(fit.scores == 0.0)
        assert fit.log_lik == 0.0


def test_an_item_never_compared_is_its_own_component_with_score_zero() -> None:
    rng = np.random.default_rng(5)
    left, right, outcome = simulate("davidson", np.array([0.5, 0.0, -0.5]), 0.4, 200, rng)
    fit = tie_fit(left, right, outcome, 4)
    assert fit.n_components == 2
    assert fit.scores[3] == 0.0
    assert fit.component[3] != fit.component[0]
    assert fit.n_params == 4 - 2 + 1
    empty = tie_fit(np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0, dtype=int), 2)
    assert np.isnan(empty.tie_param)
    assert np.all(empty.scores == 0.0)


def test_weights_count_identical_judgments() -> None:
    rng = np.random.default_rng(8)
    left, right, outcome = simulate("rao_kupper", np.array([0.4, 0.0, -0.3, 0.2]), 1.5, 300, rng)
    counts = rng.integers(1, 4, left.size)
    weighted = tie_fit(left, right, outcome, 4, model="rao_kupper", weights=counts)
    repeated = tie_fit(
        np.repeat(left, counts),
        np.repeat(right, counts),
        np.repeat(outcome, counts),
        4,
        model="rao_kupper",
    )
    np.testing.assert_allclose(weighted.scores, repeated.scores, atol=1e-10)
    assert weighted.tie_param == pytest.approx(repeated.tie_param, rel=1e-10)


def test_left_and_right_swapped_with_outcomes_mirrored_give_the_same_fit() -> None:
    rng = np.random.default_rng(9)
    left, right, outcome = simulate("davidson", np.array([0.4, 0.0, -0.3, 0.2]), 0.5, 400, rng)
    mirrored = np.select([outcome == LEFT, outcome == RIGHT], [RIGHT, LEFT], TIE)
    a = tie_fit(left, right, outcome, 4)
    b = tie_fit(right, left, mirrored, 4)
    np.testing.assert_allclose(a.scores, b.scores, atol=1e-12)
    assert a.tie_param == pytest.approx(b.tie_param, rel=1e-12)


def test_tie_rates_count_each_items_ties_and_judgments() -> None:
    left = np.array([0, 0, 1, 2, 2, 0])
    right = np.array([1, 2, 2, 0, 1, 1])
    outcome = np.array([TIE, LEFT, TIE, RIGHT, TIE, TIE])
    ties, comparisons = tie_rates(left, right, outcome, 4)
    assert ties.tolist() == [2, 4, 2, 0]
    assert comparisons.tolist() == [4, 4, 4, 0]
    assert ties.dtype.kind == "i"
    assert comparisons.dtype.kind == "i"


BAD_INPUTS = [
    ({"left": np.array([0, 1]), "right": np.array([1])}, "equal length"),
    ({"outcome": np.array([0, 3, 1])}, "outcome must be"),
    ({"outcome": np.array([0, -1, 1])}, "outcome must be"),
    ({"outcome": np.array([0.0, 1.0, 2.0])}, "outcome must be an integer"),
    ({"left": np.array([0.0, 1.0, 2.0])}, "left must be an integer"),
    ({"right": np.array([1, 2, 5])}, "out of range"),
    ({"left": np.array([-1, 1, 2])}, "out of range"),
    ({"right": np.array([1, 1, 0])}, "compared with itself"),
    ({"n_items": -1}, "n_items"),
    ({"n_items": 3.0}, "n_items must be an integer"),
    ({"left": np.array([[0, 1, 2]])}, "1-D"),
]


@pytest.mark.parametrize(("change", "message"), BAD_INPUTS)
def test_malformed_judgments_are_refused_by_every_function(
    change: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {
        "left": np.array([0, 1, 2]),
        "right": np.array([1, 2, 0]),
        "outcome": np.array([LEFT, TIE, RIGHT]),
        "n_items": 3,
    }
    args.update(change)
    calls = [
        lambda: tie_fit(**args),  # type: ignore[arg-type]
        lambda: choose_tie_model(**args),  # type: ignore[arg-type]
        lambda: tie_rates(**args),  # type: ignore[arg-type]
        lambda: tie_bootstrap(**args, clusters=None, rounds=5, seed=1),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "thurstone"}, "model must be one of"),
        ({"tie_interval": "percentile"}, "tie_interval must be one of"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"rounds": 0}, "rounds"),
        ({"rounds": 2.5}, "rounds"),
        ({"seed": 1.5}, "seed"),
        ({"level": 1.0}, "level"),
        ({"level": 0.0}, "level"),
        ({"clusters": np.array([0, 1])}, "clusters must have one rater label per judgment"),
    ],
)
def test_malformed_bootstrap_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"clusters": None, "rounds": 5, "seed": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        tie_bootstrap(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([0, 2, 1]), 3, **args)  # type: ignore[arg-type]


def test_weights_must_be_one_finite_non_negative_count_per_judgment() -> None:
    left, right, outcome = np.array([0, 1]), np.array([1, 2]), np.array([LEFT, TIE])
    for weights, message in ((np.array([1.0]), "one entry"), (np.array([1.0, -1.0]), ">= 0")):
        with pytest.raises(ValueError, match=message):
            tie_fit(left, right, outcome, 3, weights=weights)


# --- the bootstrap ----------------------------------------------------------------------------


def rated_study(
    model: str, seed: int, n_items: int = 12, n_raters: int = 30, per_rater: int = 40
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    strengths = np.linspace(-1.0, 1.0, n_items)
    tie = 0.4 if model == "davidson" else 1.5
    left, right, outcome = simulate(model, strengths, tie, n_raters * per_rater, rng)
    return left, right, outcome, np.repeat(np.arange(n_raters), per_rater)


@pytest.mark.parametrize("model", TIE_MODELS)
def test_intervals_are_expanded_percentiles_of_fits_to_the_rater_weighted_judgments(
    model: str,
) -> None:
    left, right, outcome, raters = rated_study(model, seed=31)
    rounds, n_raters = 60, 30
    boot = tie_bootstrap(
        left, right, outcome, 12, clusters=raters, rounds=rounds, seed=4, model=model
    )
    plain = tie_bootstrap(
        left,
        right,
        outcome,
        12,
        clusters=raters,
        rounds=rounds,
        seed=4,
        model=model,
        tie_interval="expanded",
    )
    # The bootstrap's draws of raters (one batch at this size), each round fitted directly.
    draws = np.random.default_rng(4).multinomial(
        n_raters, np.full(n_raters, 1 / n_raters), size=rounds
    )
    fits = [
        tie_fit(left, right, outcome, 12, model=model, weights=draw[raters].astype(float))
        for draw in draws
    ]
    scores = np.array([f.scores for f in fits])
    ties = np.array([f.tie_param for f in fits])
    # Hesterberg's expanded percentile interval for G = 30 raters.
    z = np.sqrt(n_raters / (n_raters - 1)) * stats.t.ppf(0.975, n_raters - 1)
    tail = stats.norm.cdf(-z)
    # Rounds stop at a Newton step < 1e-3; convergence is quadratic, so each round's scores
    # sit within ~1e-6 of the exact fit.
    np.testing.assert_allclose(boot.ci_low, np.quantile(scores, tail, axis=0), atol=1e-5)
    np.testing.assert_allclose(boot.ci_high, np.quantile(scores, 1 - tail, axis=0), atol=1e-5)
    np.testing.assert_array_equal(plain.ci_low, boot.ci_low)
    assert plain.tie_ci_low == pytest.approx(np.quantile(ties, tail), abs=1e-5)
    assert plain.tie_ci_high == pytest.approx(np.quantile(ties, 1 - tail), abs=1e-5)
    # The default for the tie parameter: the same tails moved by Efron's bias correction.
    fit = tie_fit(left, right, outcome, 12, model=model)
    z0 = stats.norm.ppf(np.mean(ties < fit.tie_param))
    assert boot.tie_ci_low == pytest.approx(np.quantile(ties, stats.norm.cdf(2 * z0 - z)), abs=1e-5)
    assert boot.tie_ci_high == pytest.approx(
        np.quantile(ties, stats.norm.cdf(2 * z0 + z)), abs=1e-5
    )


@pytest.mark.parametrize("model", TIE_MODELS)
def test_bootstrap_intervals_hold_the_fit_and_ranks_follow_them(model: str) -> None:
    left, right, outcome, raters = rated_study(model, seed=32)
    boot = tie_bootstrap(left, right, outcome, 12, clusters=raters, rounds=400, seed=5, model=model)
    fit = tie_fit(left, right, outcome, 12, model=model)
    np.testing.assert_allclose(boot.fit.scores, fit.scores)
    assert np.all(boot.ci_low < fit.scores)
    assert np.all(fit.scores < boot.ci_high)
    assert boot.tie_ci_low < fit.tie_param < boot.tie_ci_high
    expected_rank = ci_aware_ranks(fit.scores, boot.ci_low, boot.ci_high, component=fit.component)
    assert np.array_equal(boot.rank, expected_rank)
    assert boot.rank.min() == 1
    assert boot.rank[0] > 1  # the weakest item is clearly beaten
    assert (boot.rounds, boot.seed, boot.level, boot.cluster) == (400, 5, 0.95, "rater")
    assert boot.disconnected_rounds == 0
    again = tie_bootstrap(
        left, right, outcome, 12, clusters=raters, rounds=400, seed=5, model=model
    )
    np.testing.assert_array_equal(again.ci_low, boot.ci_low)


def test_iid_resampling_is_reported_and_gives_narrower_intervals_when_raters_differ() -> None:
    rng = np.random.default_rng(34)
    n_items, n_raters, per_rater = 10, 30, 40
    strengths = np.linspace(-1.0, 1.0, n_items)
    raters = np.repeat(np.arange(n_raters), per_rater)
    taste = rng.normal(0.0, 1.2, (n_raters, n_items))
    a = rng.integers(0, n_items, raters.size)
    b = (a + rng.integers(1, n_items, raters.size)) % n_items
    prob = outcome_probabilities(
        "davidson", strengths[a] + taste[raters, a], strengths[b] + taste[raters, b], 0.4
    )
    outcome = np.minimum((rng.random(a.size)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1), 2)
    clustered = tie_bootstrap(a, b, outcome, n_items, clusters=raters, rounds=400, seed=1)
    iid = tie_bootstrap(a, b, outcome, n_items, clusters=None, rounds=400, seed=1)
    assert iid.cluster == "none"
    width = clustered.ci_high - clustered.ci_low
    assert np.mean(iid.ci_high - iid.ci_low) < 0.9 * np.mean(width)


def test_bootstrap_leaves_a_never_compared_item_undefined_and_counts_split_rounds() -> None:
    # A chain 0-1-2 where the link 1-2 comes from one rater only: rounds without that rater
    # split the component.
    left = np.array([0, 0, 1, 0, 1, 0, 1, 0])
    right = np.array([1, 1, 0, 1, 0, 1, 2, 1])
    outcome = np.array([LEFT, TIE, LEFT, RIGHT, LEFT, TIE, TIE, LEFT])
    raters = np.array([0, 1, 2, 3, 0, 1, 4, 2])
    boot = tie_bootstrap(left, right, outcome, 4, clusters=raters, rounds=200, seed=2)
    assert np.isnan(boot.ci_low[3])
    assert np.isnan(boot.ci_high[3])
    assert boot.rank[3] == 1
    assert np.all(np.isfinite(boot.ci_low[:3]))
    # P(rater 4 not drawn among 5) = (4/5)^5 = 0.33.
    assert 0.2 * 200 < boot.disconnected_rounds < 0.45 * 200


# --- coverage -------------------------------------------------------------------------------


def population_davidson(
    strengths: np.ndarray, nu: float, taste_sd: float, log_nu_sd: float
) -> tuple[np.ndarray, float]:
    """What the pooled Davidson fit converges to with infinitely many raters like the
    simulated ones: the fit to the population outcome probabilities of every pair (each
    pair's over the raters' taste difference and tie propensity, by Gauss-Hermite)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    n = strengths.size
    i, j = np.triu_indices(n, 1)
    gap = strengths[i] - strengths[j]
    prob = np.zeros((i.size, 3))
    for taste_node, taste_w in zip(nodes, weights, strict=True):
        for nu_node, nu_w in zip(nodes, weights, strict=True):
            d = gap + taste_sd * np.sqrt(2.0) * taste_node
            prob += (
                taste_w
                * nu_w
                * outcome_probabilities(
                    "davidson", d, np.zeros_like(d), nu * np.exp(log_nu_sd * nu_node)
                )
            )
    left = np.repeat(i, 3)
    right = np.repeat(j, 3)
    outcome = np.tile([LEFT, RIGHT, TIE], i.size)
    fit = tie_fit(left, right, outcome, n, weights=prob.ravel() * 1e6, alpha=1e-9)
    return fit.scores, fit.tie_param


@pytest.mark.slow
def test_rater_clustered_intervals_cover_the_pooled_davidson_parameters() -> None:
    rng = np.random.default_rng(2026)
    n_items, n_raters, per_rater, taste_sd, log_nu_sd, nu = 20, 40, 40, 0.5, 0.6, 0.35
    strengths = np.linspace(-1.2, 1.2, n_items)
    truth, truth_nu = population_davidson(strengths, nu, taste_sd, log_nu_sd)
    hits, nu_hits, tie_share = [], [], []
    for study in range(100):
        raters = np.repeat(np.arange(n_raters), per_rater)
        taste = rng.normal(0.0, taste_sd, (n_raters, n_items))
        rater_nu = nu * np.exp(rng.normal(0.0, log_nu_sd, n_raters))
        a = rng.integers(0, n_items, raters.size)
        b = (a + rng.integers(1, n_items, raters.size)) % n_items
        prob = outcome_probabilities(
            "davidson",
            strengths[a] + taste[raters, a],
            strengths[b] + taste[raters, b],
            rater_nu[raters],
        )
        outcome = np.minimum((rng.random(a.size)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1), 2)
        tie_share.append(np.mean(outcome == TIE))
        boot = tie_bootstrap(a, b, outcome, n_items, clusters=raters, rounds=500, seed=study)
        hits.append(np.mean((boot.ci_low <= truth) & (truth <= boot.ci_high)))
        nu_hits.append(boot.tie_ci_low <= truth_nu <= boot.tie_ci_high)
    assert 0.10 < np.mean(tie_share) < 0.20
    # 100 studies: Monte Carlo error ~0.01 for the pooled strengths, ~0.022 for nu.
    assert 0.92 <= np.mean(hits) <= 0.98
    assert np.mean(nu_hits) >= 0.88


def test_no_tie_interval_where_the_resamples_lie_off_the_estimate() -> None:
    """Many small topics with a few pairs each (the demo's design) and few rounds: the tie
    parameter's resamples can all lie on one side of the estimate; then it has no interval,
    and says why, instead of a narrow one beside it."""
    found = []
    for trial in range(24):
        rng = np.random.default_rng(trial)
        n_items = 70
        topic = np.arange(n_items) // 4
        quality = rng.normal(0, 1, n_items)
        left = rng.integers(0, n_items, 240)
        right = np.minimum(topic[left] * 4 + (left % 4 + rng.integers(1, 4, 240)) % 4, 69)
        keep = left != right
        left, right = left[keep], right[keep]
        p_left = 1 / (1 + np.exp(quality[right] - quality[left]))
        outcome = np.where(rng.random(left.size) < p_left, LEFT, RIGHT)
        outcome[::6] = TIE
        rater = rng.integers(0, 24, left.size)
        boot = tie_bootstrap(
            left, right, outcome, n_items, clusters=rater, rounds=30, seed=1, model="rao_kupper"
        )
        if boot.tie_interval_reason is not None:
            assert boot.tie_interval_reason == "resamples_far_from_estimate"
            assert np.isnan(boot.tie_ci_low)
            assert np.isnan(boot.tie_ci_high)
            found.append(trial)
        else:
            assert boot.tie_ci_low <= boot.fit.tie_param <= boot.tie_ci_high
    assert found, "the design puts the resamples off the estimate at times (trials 0 and 22)"
