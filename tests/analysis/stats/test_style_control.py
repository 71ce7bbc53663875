"""Style-controlled Bradley-Terry (`style_control`): the source fit and its cluster-robust
covariance against statsmodels' GLM, recovery of a planted order on one large study, covariate
checks, order changes on hand data, and a small coverage run of
benchmarks/sim_style_control.py (which runs the full one)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import stdtrit
from scipy.stats import spearmanr

from apps.analysis.stats.bradley_terry import bt_bootstrap
from apps.analysis.stats.style_control import (
    order_changes,
    style_controlled_items,
    style_controlled_sources,
)
from tests.benchmark_modules import benchmark_module


def _study(
    seed: int,
    *,
    n_sources: int = 4,
    per_source: int = 12,
    n_raters: int = 40,
    per_rater: int = 40,
    beta: float = 0.4,
    strength: tuple[float, ...] = (-0.3, -0.1, 0.1, 0.3),
) -> dict[str, np.ndarray]:
    """Sources whose jokes get shorter as they get better; raters prefer longer jokes (their own
    slope around ``beta`` per sd of log length) and have their own taste per item."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n_sources), per_source)
    n = src.size
    log_length = rng.normal(np.log(40.0) - 0.35 * src, 0.3)
    quality = np.asarray(strength)[src] + rng.normal(0.0, 0.3, n)
    z = (log_length - log_length.mean()) / log_length.std()
    rater = np.repeat(np.arange(n_raters), per_rater)
    left = rng.integers(0, n, rater.size)
    right = (left + rng.integers(1, n, rater.size)) % n
    utility = quality[None, :] + rng.normal(0.0, 0.5, (n_raters, n))
    slope = beta + rng.normal(0.0, 0.2, n_raters)
    eta = utility[rater, left] - utility[rater, right] + slope[rater] * (z[left] - z[right])
    won = rng.random(rater.size) < 1.0 / (1.0 + np.exp(-eta))
    offense = (rng.random(n) < 0.3).astype(float)
    return {
        "src": src,
        "log_length": log_length,
        "offense": offense,
        "quality": quality,
        "left": left,
        "right": right,
        "won": won,
        "rater": rater,
    }


def _reference_design(s: dict[str, np.ndarray], n_sources: int) -> np.ndarray:
    """The difference design built independently: source 0 as reference, log length
    standardised over the items, the 0/1 offense flag as given."""
    lf, rt, src = s["left"], s["right"], s["src"]
    z = (s["log_length"] - s["log_length"].mean()) / s["log_length"].std()
    cols = [
        (src[lf] == k).astype(float) - (src[rt] == k).astype(float) for k in range(1, n_sources)
    ]
    cols += [z[lf] - z[rt], s["offense"][lf] - s["offense"][rt]]
    return np.column_stack(cols)


def test_source_fit_and_rater_clustered_errors_match_statsmodels_glm() -> None:
    s = _study(3)
    covariates = np.column_stack([s["log_length"], s["offense"]])
    fit = style_controlled_sources(
        s["left"], s["right"], s["won"], s["rater"], s["src"], 4, covariates, ["length", "offense"]
    )
    assert fit.converged
    assert fit.plain_converged
    assert fit.beta_names == ("length", "offense")
    assert fit.standardised == (True, False)
    x = _reference_design(s, 4)
    y = s["won"].astype(float)
    glm = sm.GLM(y, x, family=sm.families.Binomial())
    bare = glm.fit(cov_type="cluster", cov_kwds={"groups": s["rater"], "use_correction": False})
    default = glm.fit(cov_type="cluster", cov_kwds={"groups": s["rater"]})
    # Our parameters on the reference coding: theta_k - theta_0, then beta.
    ours = np.concatenate([fit.theta[1:] - fit.theta[0], fit.beta])
    np.testing.assert_allclose(ours, bare.params, atol=1e-6)
    # The same contrasts' covariance from ours (centred theta, beta).
    jac = np.zeros((5, 6))
    jac[:3, 1:4] = np.eye(3)
    jac[:3, 0] = -1.0
    jac[3:, 4:] = np.eye(2)
    se = np.sqrt(np.diag(jac @ fit.cov @ jac.T))
    g, n_obs, k = 40, y.size, x.shape[1]
    assert fit.n_clusters == g
    assert fit.n_pairs == n_obs
    # Ours is CR1, G/(G-1); statsmodels' default adds (N-1)/(N-K); without correction, none.
    np.testing.assert_allclose(se, bare.bse * np.sqrt(g / (g - 1)), rtol=1e-6)
    np.testing.assert_allclose(se * np.sqrt((n_obs - 1) / (n_obs - k)), default.bse, rtol=1e-6)
    # The plain board is the same code with the source contrasts alone.
    plain = sm.GLM(y, x[:, :3], family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": s["rater"], "use_correction": False}
    )
    np.testing.assert_allclose(fit.plain_theta[1:] - fit.plain_theta[0], plain.params, atol=1e-6)
    plain_diff_se = (fit.plain_diff_high[1:, 0] - fit.plain_diff[1:, 0]) / float(
        stdtrit(g - 1, 0.975)
    )
    np.testing.assert_allclose(plain_diff_se, plain.bse * np.sqrt(g / (g - 1)), rtol=1e-6)
    # Reported theta is centred; intervals are Wald with the t_{G-1} quantile.
    assert abs(fit.theta.sum()) < 1e-12
    assert abs(fit.plain_theta.sum()) < 1e-12
    q = float(stdtrit(g - 1, 0.975))
    np.testing.assert_allclose(fit.beta_low, fit.beta - q * fit.beta_se)
    np.testing.assert_allclose(fit.theta_high, fit.theta + q * fit.theta_se)
    np.testing.assert_allclose(fit.diff, fit.theta[:, None] - fit.theta[None, :])


def test_controlled_fit_recovers_the_planted_order_that_the_plain_fit_reverses() -> None:
    s = _study(5, per_source=25, n_raters=300, per_rater=60)
    covariates = s["log_length"][:, None]
    items = style_controlled_items(
        s["left"], s["right"], s["won"], s["rater"], s["src"], 4, covariates, ["length"],
        rounds=200, seed=7,
    )  # fmt: skip
    fit = items.sources
    realised = np.bincount(s["src"], weights=s["quality"]) / np.bincount(s["src"])
    assert np.array_equal(np.argsort(fit.theta), np.argsort(realised))
    # Length pushes the longest-writing (truly weakest) source up: the plain board is reversed.
    assert fit.plain_theta[0] > fit.plain_theta[3]
    assert fit.diff_low[3, 0] > 0
    assert fit.plain_diff_high[3, 0] < 0.1
    # beta is attenuated by taste (sd 0.5) and item differences, but clearly there.
    assert 0.3 < fit.beta[0] < 0.45
    assert fit.beta_low[0] > 0.2
    assert items.beta_low[0] < fit.beta[0] < items.beta_high[0]
    rho_controlled = spearmanr(items.scores, s["quality"]).statistic
    rho_plain = spearmanr(items.plain_scores, s["quality"]).statistic
    assert rho_controlled > rho_plain + 0.2
    # Controlled scores = plain scores minus beta . (x - mean), centred like the plain ones.
    z = (s["log_length"] - s["log_length"].mean()) / s["log_length"].std()
    np.testing.assert_allclose(items.scores, items.plain_scores - fit.beta[0] * z, atol=1e-12)
    assert abs(items.scores.mean()) < 1e-12
    assert np.all(items.ci_low < items.scores)
    assert np.all(items.scores < items.ci_high)
    # The plain item intervals are bt_bootstrap's, draw for draw.
    boot = bt_bootstrap(
        np.where(s["won"], s["left"], s["right"]),
        np.where(s["won"], s["right"], s["left"]),
        s["src"].size,
        clusters=s["rater"],
        rounds=200,
        seed=7,
        interval="expanded",
    )
    np.testing.assert_allclose(items.plain_low, boot.ci_low, atol=1e-12)
    np.testing.assert_allclose(items.plain_high, boot.ci_high, atol=1e-12)
    np.testing.assert_array_equal(items.plain_rank, boot.rank)


def test_constant_and_collinear_covariates_are_dropped_and_reported() -> None:
    s = _study(8)
    n = s["src"].size
    # A language column constant over the compared items (nan on an item nobody compared),
    # a source-level column (it is the source effect) and a full set of level indicators.
    lang = np.ones(n)
    level = np.arange(n) % 2
    columns = {
        "length": s["log_length"],
        "lang": lang,
        "is_model_b": (s["src"] == 1).astype(float),
        "single": (level == 0).astype(float),
        "multi_turn": (level == 1).astype(float),
    }
    extra_item = n  # one more item, never compared, with unknown covariates
    covariates = np.vstack([np.column_stack(list(columns.values())), np.full(5, np.nan)])
    item_source = np.append(s["src"], 0)
    fit = style_controlled_sources(
        s["left"], s["right"], s["won"], s["rater"], item_source, 4, covariates, list(columns)
    )
    assert fit.dropped == {"lang": "constant", "is_model_b": "collinear", "multi_turn": "collinear"}
    assert fit.beta_names == ("length", "single")
    assert covariates.shape[0] == extra_item + 1
    reduced = style_controlled_sources(
        s["left"], s["right"], s["won"], s["rater"], s["src"], 4,
        np.column_stack([columns["length"], columns["single"]]), ["length", "single"],
    )  # fmt: skip
    np.testing.assert_allclose(fit.beta, reduced.beta, atol=1e-10)
    np.testing.assert_allclose(fit.theta, reduced.theta, atol=1e-10)


def test_inputs_are_validated_with_the_problem_named() -> None:
    s = _study(9)
    args = (s["left"], s["right"], s["won"], s["rater"], s["src"], 4)
    x = s["log_length"][:, None].copy()
    x[s["left"][0]] = np.nan
    with pytest.raises(ValueError, match="'length' is missing or not finite for 1 compared"):
        style_controlled_sources(*args, x, ["length"])
    with pytest.raises(ValueError, match="covariate_names has 2 names for 1"):
        style_controlled_sources(*args, s["log_length"][:, None], ["a", "b"])
    bad_source = s["src"].copy()
    bad_source[0] = 4
    with pytest.raises(ValueError, match="item_source code is outside"):
        style_controlled_sources(*args[:4], bad_source, 4, s["log_length"][:, None], ["length"])
    # Sources 0-1 and 2-3 never meet: their strengths would be on two scales.
    cross = (s["src"][s["left"]] < 2) != (s["src"][s["right"]] < 2)
    keep = ~cross
    with pytest.raises(ValueError, match="not connected"):
        style_controlled_sources(
            s["left"][keep], s["right"][keep], s["won"][keep], s["rater"][keep], s["src"], 4,
            s["log_length"][:, None], ["length"],
        )  # fmt: skip


def test_one_rater_gives_estimates_without_intervals_and_says_why() -> None:
    s = _study(10)
    one = np.zeros_like(s["rater"])
    fit = style_controlled_sources(
        s["left"], s["right"], s["won"], one, s["src"], 4, s["log_length"][:, None], ["length"]
    )
    assert fit.reason is not None
    assert fit.reason == "too_few_raters"
    assert np.all(np.isfinite(fit.theta))
    assert np.all(np.isnan(fit.theta_low))
    assert np.all(np.isnan(fit.beta_high))
    items = style_controlled_items(
        s["left"], s["right"], s["won"], one, s["src"], 4, s["log_length"][:, None], ["length"],
        rounds=20, seed=1,
    )  # fmt: skip
    assert items.reason == fit.reason
    assert np.all(np.isnan(items.ci_low))
    assert np.all(items.rank == 1)


def test_an_undefeated_source_is_flagged_and_the_others_fitted_without_its_cross_pairs() -> None:
    s = _study(11)
    src_l, src_r = s["src"][s["left"]], s["src"][s["right"]]
    won = s["won"].copy()
    won[(src_l == 3) & (src_r != 3)] = True
    won[(src_r == 3) & (src_l != 3)] = False
    x = s["log_length"][:, None]
    fit = style_controlled_sources(s["left"], s["right"], won, s["rater"], s["src"], 4, x, ["l"])
    assert fit.source_flags == {3: "undefeated"}
    assert fit.converged
    assert np.isnan(fit.theta[3])
    assert np.isnan(fit.diff_low[3, 0])
    assert abs(np.nansum(fit.theta)) < 1e-12
    keep = (src_l != 3) | (src_r == 3)
    without = style_controlled_sources(
        s["left"][keep], s["right"][keep], won[keep], s["rater"][keep], s["src"], 4, x, ["l"]
    )
    np.testing.assert_allclose(fit.theta[:3], without.theta[:3], atol=1e-10)
    np.testing.assert_allclose(fit.beta, without.beta, atol=1e-10)


def test_order_changes_lists_flips_and_separations_that_appear_or_vanish() -> None:
    names = ["model-a", "model-b", "model-c", "human"]
    # Plain: a clearly above b and human, b and c clearly above human; a-c and b-c overlap.
    plain = np.array([1.0, 0.0, 0.5, -1.0])
    plain_low = np.array([0.8, -0.2, 0.1, -1.3])
    plain_high = np.array([1.2, 0.2, 0.9, -0.7])
    # Controlled: b clearly above a (a flip), c clearly above a (a separation appears), human
    # overlaps a and b (two separations vanish), c stays clearly above human, b-c overlap.
    controlled = np.array([-0.5, 0.3, 0.4, -0.4])
    controlled_low = np.array([-0.7, 0.1, 0.2, -1.0])
    controlled_high = np.array([-0.3, 0.5, 0.6, 0.15])
    out = order_changes(
        plain, plain_low, plain_high, controlled, controlled_low, controlled_high, names
    )
    summary = [(r["change"], r["a"], r["b"], r["plain"], r["controlled"]) for r in out]
    assert summary == [
        ("flipped", "model-a", "model-b", "a_above", "b_above"),
        ("separation_lost", "model-a", "human", "a_above", "overlap"),
        ("separation_lost", "model-b", "human", "a_above", "overlap"),
        ("separation_gained", "model-c", "model-a", "overlap", "a_above"),
    ]
    flip = out[0]
    assert (flip["a_index"], flip["b_index"]) == (0, 1)
    assert flip["plain_diff"] == pytest.approx(1.0)
    assert flip["controlled_diff"] == pytest.approx(-0.8)
    # Nothing changes, nothing is listed; entries of different components are never compared.
    assert order_changes(plain, plain_low, plain_high, plain, plain_low, plain_high, names) == []
    apart = order_changes(
        plain, plain_low, plain_high, controlled, controlled_low, controlled_high, names,
        component=np.array([0, 1, 0, 1]),
    )  # fmt: skip
    assert [(r["change"], r["a"], r["b"]) for r in apart] == [
        ("separation_lost", "model-b", "human"),
        ("separation_gained", "model-c", "model-a"),
    ]
    # An undefined interval separates nothing.
    undefined = controlled_low.copy()
    undefined[1] = np.nan
    changes = order_changes(
        plain, plain_low, plain_high, controlled, undefined, controlled_high, names
    )
    assert ("separation_lost", "model-a", "model-b") in [
        (r["change"], r["a"], r["b"]) for r in changes
    ]
    with pytest.raises(ValueError, match="names has 3 entries for 4"):
        order_changes(plain, plain_low, plain_high, plain, plain_low, plain_high, names[:3])


def _benchmark() -> ModuleType:
    return benchmark_module("sim_style_control.py")


@pytest.mark.slow
def test_small_coverage_run_of_the_simulation() -> None:
    res = _benchmark().run(reps=60, rounds=200, beta=0.4, seed=31)
    mean = {k: float(np.mean(v)) for k, v in res.items()}
    # 60 studies: Monte Carlo standard errors ~0.015 (differences, items ~0.005), 0.028 (beta).
    assert 0.90 <= mean["cov_diff"] <= 0.99
    assert 0.87 <= mean["cov_beta"] <= 1.0
    assert 0.92 <= mean["cov_items"] <= 0.97
    assert mean["exact_plain"] < 0.1 < 0.5 < mean["exact_controlled"]
    assert mean["pairs_controlled"] > 0.85 > 0.35 > mean["pairs_plain"]
