"""Raters whose pair or Turing choices are anomalous: side bias, length bias, disagreement.

Public API
----------
``DEFAULT_THRESHOLD`` (0.02), ``DEFAULT_SIMULATIONS`` (999), ``DEFAULT_CHECKPOINTS`` (5),
``DEFAULT_PASSES`` (2), ``MIN_JUDGMENTS`` (10), ``MIN_LENGTH_PAIRS`` (5), ``MAX_LEANING``
(0.5), ``PAIR_TESTS``
(``("side", "length", "consensus")``), ``TURING_TESTS`` (``("turing_answer",
"turing_consensus")``); the inputs ``PairJudgments`` and ``TuringJudgments`` (from
``rater_consensus``, re-exported here).
``TestResult`` (``statistic``, ``p_value``, ``z``, ``n``, ``checkpoints``)
    One test of one rater: Fisher's statistic over the checkpoints, its p-value calibrated by
    simulation, the standardised statistic on the whole sequence, the judgments it used.
``RaterScreen`` (``rater``, ``n_pairs``, ``n_turing``, ``tests``, ``combined_p``,
``proposed``, ``evidence``)
    ``tests``: name -> TestResult for the tests that ran; ``combined_p``: None when none ran;
    ``evidence``: the counts a sentence needs (see ``_pair_evidence``, ``_turing_evidence``).
``Screening`` (``raters``, ``threshold``, ``simulations``, ``checkpoints``, ``seed``,
``position_offset``, ``spread``, ``turing_prior_weight``, ``left_out``)
``screen_raters(n_raters, *, pairs=None, turing=None, seed, threshold=DEFAULT_THRESHOLD,
simulations=DEFAULT_SIMULATIONS, checkpoints=DEFAULT_CHECKPOINTS,
min_judgments=MIN_JUDGMENTS, passes=DEFAULT_PASSES, left_out=None) -> Screening``
    Every test for every rater with at least ``min_judgments`` decisive pairs (or Turing
    judgments), one combined p-value per rater, and ``proposed = combined_p <= threshold``.
    ``left_out``: raters (e.g. already excluded) whose judgments never enter the consensus.
    A proposal, never a decision: the exclusions page shows it to a researcher.

The null hypothesis: an honest rater
------------------------------------
An honest rater's choices follow what the other raters predict (``rater_consensus``: a
Bradley-Terry fit with a study-wide position effect on the others' pairs; the others' share of
"AI" for a Turing item), up to the rater's own leaning: honest people differ a little in how
often they choose left, the longer joke or "AI", and in how closely they follow the consensus.
So under the null each choice is Bernoulli with the consensus probability, its log-odds moved
for the whole sequence by u ~ N(mu, tau**2) along each test's direction (below). (mu, tau) per
test are estimated from all raters robustly, so that a minority of anomalous raters barely
moves them: z / sqrt(V) has median mu and z - mu sqrt(V) has variance 1 + tau**2 V (z: a
rater's standardised statistic, V its null variance), taken from the median and the median
absolute deviation, and bounded by ``MAX_LEANING`` (see ``_spread``). Without the leaning a test of one rater's 40 Turing answers fired for 10%
of honest raters whose "AI" rates differed by a sd of 0.3 log-odds, and more the more answers
they gave; with it, honest raters are flagged at the nominal rate however long their session.

The tests (per rater, on the judgments in submission order)
----------------------------------------------------------
Each is a standardised sum at a prefix of the sequence, with its normal-tail p-value:

- ``side``: the number of left choices against the consensus expectation sum(p) (it holds the
  other raters' pooled left share), variance sum p (1 - p); two-sided; the leaning moves every
  pair's log-odds towards the left.
- ``length``: among pairs whose items differ in length, the number of times the longer item
  won against sum(q), q = P(longer wins) under the consensus; one-sided (the longer item more
  often than predicted); the leaning moves log-odds towards the longer item. Pairs of equal or
  unknown length are left out; the test runs with at least ``MIN_LENGTH_PAIRS`` of them.
- ``consensus``: the rater's log-likelihood under the consensus, sum y log p + (1 - y)
  log(1 - p), against its exact null mean sum [p log p + (1 - p) log(1 - p)] and variance sum
  p (1 - p) logit(p)**2 (each choice Bernoulli with the consensus probability); lower tail,
  normal approximation; the leaning scales the log-odds, logit (1 + u). The normal tail is
  only an ingredient of Fisher's statistic: the p-value reported is calibrated by simulation,
  so the approximation's error in the far tail or with few judgments does not reach it.
- ``turing_answer``: the number of "AI" answers against sum(q); two-sided.
- ``turing_consensus``: the log-likelihood under q, as ``consensus``; lower tail.

Checkpoints (as Chatbot Arena's anomalous-user test, Chiang et al. 2024, "Chatbot Arena: An
Open Platform for Evaluating LLMs by Human Preference", ICML): each test's p-values at
``checkpoints`` prefixes of the sequence (the whole sequence and up to ``checkpoints - 1``
prefix lengths drawn at random from 5 .. n - 1) are combined by Fisher's statistic
X = -2 sum log p, which weighs a bias present from the start more than one that appears late.
The prefixes are nested, so X is not chi-square with 2K degrees of freedom (it has a heavier
tail): it is never referred to that distribution.

Calibration by simulation, and the combination of the tests
-----------------------------------------------------------
``simulations`` sequences are drawn under the null (the rater's own pairs and items, in their
order, with the same checkpoints), every test is recomputed on each, and

- a test's p-value is the share of the B + 1 sequences (the observed one and the B simulated
  ones) whose X is at least the observed X;
- the tests are combined by their smallest p-value, itself calibrated on the same sequences
  (the min-p method of Westfall & Young 1993, "Resampling-Based Multiple Testing", Wiley): the
  joint null of one rater's tests is simulated, so their dependence needs no Bonferroni bound.
  ``combined_p`` is the share of the B + 1 sequences whose smallest test p-value is at most
  the observed one.

Under the simulated null this is an exact Monte Carlo test, P(combined_p <= t) <= t. What the
simulation does not hold (the consensus's own error, the correlation of one rater's choices
through their taste for an item, the leaning's estimate) was measured in
``benchmarks/sim_pair_raters.py`` (see ``benchmarks/README.md``): at ``DEFAULT_THRESHOLD`` =
0.02 honest raters were proposed in 1.1-2.7% of cases in every scenario there (Monte Carlo se
at most 0.5%), so the rate stays well under 5%; at 0.05 the scenario of long sessions (100
pairs and 40 Turing items per rater) reached 5.5%.

Two passes: anomalous raters also pull the consensus (contrarians flatten it, side-biased
raters inflate the position effect) and the leaning estimates. So the raters the first pass
proposes are left out of everyone's consensus and of the leaning estimates, and every rater is
screened again (unless the first pass proposed half the raters or more: then the "consensus"
is not a majority's and nothing is left out).

Randomness: every rater's checkpoints and simulations come from
``numpy.random.default_rng([seed, kind, rater])`` (kind 0 pairs, 1 Turing), so one rater's
result does not depend on which other raters were screened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit, log_expit, log_ndtr

from apps.analysis.stats.rater_consensus import (
    PairConsensus,
    PairJudgments,
    TuringConsensus,
    TuringJudgments,
    longer_sign,
    pair_consensus,
    turing_consensus,
)

__all__ = [
    "DEFAULT_CHECKPOINTS",
    "DEFAULT_PASSES",
    "DEFAULT_SIMULATIONS",
    "DEFAULT_THRESHOLD",
    "MAX_LEANING",
    "MIN_JUDGMENTS",
    "MIN_LENGTH_PAIRS",
    "PAIR_TESTS",
    "TURING_TESTS",
    "PairJudgments",
    "RaterScreen",
    "Screening",
    "TestResult",
    "TuringJudgments",
    "screen_raters",
]

DEFAULT_THRESHOLD = 0.02
DEFAULT_SIMULATIONS = 999
DEFAULT_CHECKPOINTS = 5
DEFAULT_PASSES = 2
MIN_JUDGMENTS = 10
MIN_LENGTH_PAIRS = 5
# The largest location or sd of an honest rater's own leaning, in log-odds (0.5: choosing left
# 62% of the time where others choose 50%; following the consensus 50% more or less steeply).
MAX_LEANING = 0.5
PAIR_TESTS = ("side", "length", "consensus")
TURING_TESTS = ("turing_answer", "turing_consensus")

# The shortest prefix a random checkpoint may stop at: a p-value from fewer choices says little.
_FIRST_CHECKPOINT = 5
# Elements of a (rounds x judgments) work array.
_CHUNK_ELEMENTS = 2_000_000
_LOG2 = float(np.log(2.0))
# The leaning is estimated from at least this many raters, and taken as none below it.
_MIN_RATERS_FOR_SPREAD = 8
_MEDIAN_ABS_NORMAL = 0.6744897501960817

# ---------------------------------------------------------------------------------------------
# Tests at checkpoints, calibrated by simulation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TestResult:
    # Fisher's -2 sum log p over the checkpoints (nominal normal-tail p-values).
    statistic: float
    # The share of the simulated and observed sequences with a statistic at least as large.
    p_value: float
    # The standardised sum on the whole sequence: side and turing_answer > 0 mean more left /
    # "AI" answers than predicted, length > 0 the longer item more often, consensus and
    # turing_consensus < 0 less agreement than predicted.
    z: float
    n: int
    checkpoints: tuple[int, ...]


@dataclass(frozen=True)
class RaterScreen:
    rater: int
    n_pairs: int
    n_turing: int
    tests: dict[str, TestResult] = field(default_factory=dict)
    combined_p: float | None = None
    proposed: bool = False
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Screening:
    raters: list[RaterScreen]
    threshold: float
    simulations: int
    checkpoints: int
    seed: int
    position_offset: float | None
    # Per test, the (location, sd) in log-odds of honest raters' own leaning (see _spread).
    spread: dict[str, tuple[float, float]]
    turing_prior_weight: float | None
    # Raters whose judgments were left out of the consensus (proposed by the first pass).
    left_out: tuple[int, ...] = ()


def _checkpoints(n: int, wanted: int, rng: np.random.Generator) -> np.ndarray:
    first = min(_FIRST_CHECKPOINT, n)
    candidates = np.arange(first, n)
    extra = rng.choice(candidates, size=min(wanted - 1, candidates.size), replace=False)
    return np.sort(np.append(extra, n)).astype(np.int64)


@dataclass(frozen=True)
class _Test:
    """A statistic linear in the choices y: S = y @ weight + offset per checkpoint, with its
    null mean and variance; ``tail`` "two", "upper" or "lower"; ``direction`` (count tests)
    the log-odds direction a rater's own leaning moves (per row)."""

    name: str
    weight: np.ndarray  # (n, K)
    offset: np.ndarray  # (K,)
    mean: np.ndarray  # (K,)
    var: np.ndarray  # (K,)
    tail: str
    n: int
    direction: np.ndarray | None


def _log_p(z: np.ndarray, tail: str, informative: np.ndarray) -> np.ndarray:
    if tail == "two":
        out = np.minimum(_LOG2 + log_ndtr(-np.abs(z)), 0.0)
    elif tail == "upper":
        out = log_ndtr(-z)
    else:
        out = log_ndtr(z)
    # A checkpoint with no variance (no informative judgment yet) says nothing: p = 1.
    return np.where(informative, out, 0.0)


def _count_test(
    name: str, logit: np.ndarray, sign: np.ndarray, prefix: np.ndarray, tail: str
) -> _Test:
    """The number of rows with y = 1 (sign +1) or y = 0 (sign -1), rows of sign 0 left out."""
    p = expit(logit)
    q = np.where(sign >= 0, p, 1.0 - p) * (sign != 0)
    return _Test(
        name=name,
        weight=prefix * sign[:, None].astype(np.float64),
        offset=(sign < 0).astype(np.float64) @ prefix,
        mean=q @ prefix,
        var=(q * (1.0 - q)) @ prefix,
        tail=tail,
        n=int(np.count_nonzero(sign)),
        direction=sign.astype(np.float64),
    )


def _likelihood_test(name: str, logit: np.ndarray, prefix: np.ndarray) -> _Test:
    """The log-likelihood sum y log p + (1 - y) log(1 - p) = sum y logit + log(1 - p)."""
    p = expit(logit)
    base = log_expit(-logit)
    return _Test(
        name=name,
        weight=prefix * logit[:, None],
        offset=base @ prefix,
        mean=(p * logit + base) @ prefix,
        var=(p * (1.0 - p) * logit**2) @ prefix,
        tail="lower",
        n=int(logit.size),
        # An honest rater who follows the consensus more or less closely: logit * (1 + u).
        direction=logit.copy(),
    )


def _evaluate(tests: list[_Test], y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fisher statistics and whole-sequence z, (rows of y) x tests."""
    stats = np.empty((y.shape[0], len(tests)))
    last = np.empty((y.shape[0], len(tests)))
    for t, test in enumerate(tests):
        value = y @ test.weight + test.offset
        informative = test.var > 1e-12
        z = (value - test.mean) / np.sqrt(np.where(informative, test.var, 1.0))
        stats[:, t] = -2.0 * _log_p(z, test.tail, informative).sum(axis=1)
        last[:, t] = np.where(informative[-1], z[:, -1], 0.0)
    return stats, last


@dataclass
class _Sequence:
    """One rater's judgments of one kind, in order, with their tests and random stream."""

    logit: np.ndarray
    y: np.ndarray
    tests: list[_Test]
    checkpoints: np.ndarray
    rng: np.random.Generator
    observed: np.ndarray = field(init=False)
    z: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        stats, last = _evaluate(self.tests, self.y[None, :].astype(np.float64))
        self.observed, self.z = stats[0], last[0]


def _simulated(part: _Sequence, rounds: int, spread: dict[str, tuple[float, float]]) -> np.ndarray:
    """The tests' statistics on `rounds` sequences drawn under the null: each choice Bernoulli
    with the consensus probability, its log-odds moved per sequence by an honest rater's own
    leaning, N(location, sd**2) along each test's direction."""
    n = part.y.size
    out = np.empty((rounds, len(part.tests)))
    shifts = [
        (test.direction, *spread.get(test.name, (0.0, 0.0)))
        for test in part.tests
        if test.direction is not None
    ]
    chunk = max(1, _CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, rounds, chunk):
        r = min(chunk, rounds - start)
        logit = np.broadcast_to(part.logit, (r, n))
        for direction, location, sd in shifts:
            if direction is None or (location == 0.0 and sd == 0.0):
                continue
            u = location + sd * part.rng.standard_normal((r, 1))
            logit = logit + u * direction[None, :]
        draws = (part.rng.random((r, n)) < expit(logit)).astype(np.float64)
        out[start : start + r] = _evaluate(part.tests, draws)[0]
    return out


def _at_least(values: np.ndarray) -> np.ndarray:
    """Per entry, the share of its column's entries that are >= it."""
    total = values.shape[0]
    ordered = np.sort(values, axis=0)
    out = np.empty_like(values)
    for j in range(values.shape[1]):
        out[:, j] = total - np.searchsorted(ordered[:, j], values[:, j], side="left")
    return out / total


def _prefix(n: int, checkpoints: np.ndarray) -> np.ndarray:
    return (np.arange(n)[:, None] < checkpoints[None, :]).astype(np.float64)


def _pair_sequence(
    data: PairJudgments,
    consensus: PairConsensus,
    signs: np.ndarray,
    rows: np.ndarray,
    wanted: int,
    rng: Any,
) -> tuple[_Sequence, np.ndarray]:
    assert data.order is not None
    rows = rows[np.lexsort((rows, data.order[rows]))]
    logit = consensus.logit[rows]
    n = rows.size
    cps = _checkpoints(n, wanted, rng)
    prefix = _prefix(n, cps)
    sign = signs[rows]
    tests = [_count_test("side", logit, np.ones(n, dtype=np.int64), prefix, "two")]
    if np.count_nonzero(sign) >= MIN_LENGTH_PAIRS:
        tests.append(_count_test("length", logit, sign, prefix, "upper"))
    tests.append(_likelihood_test("consensus", logit, prefix))
    return _Sequence(logit, data.left_won[rows], tests, cps, rng), sign


def _turing_sequence(
    data: TuringJudgments, consensus: TuringConsensus, rows: np.ndarray, wanted: int, rng: Any
) -> _Sequence:
    assert data.order is not None
    rows = rows[np.lexsort((rows, data.order[rows]))]
    logit = consensus.logit[rows]
    n = rows.size
    cps = _checkpoints(n, wanted, rng)
    prefix = _prefix(n, cps)
    tests = [
        _count_test("turing_answer", logit, np.ones(n, dtype=np.int64), prefix, "two"),
        _likelihood_test("turing_consensus", logit, prefix),
    ]
    return _Sequence(logit, data.guessed_ai[rows], tests, cps, rng)


def _spread(parts: list[_Sequence]) -> dict[str, tuple[float, float]]:
    """Per test, the (location, sd) of honest raters' own leaning in its direction, in
    log-odds, from every screened rater.

    A rater whose log-odds are shifted by u along a test's direction has a whole-sequence z of
    about N(u sqrt(V), 1) (V: the test's null variance), so with u ~ N(mu, tau**2) across raters
    z / sqrt(V) has median mu and z - mu sqrt(V) has variance 1 + tau**2 V. Both are taken
    robustly, the median of z / sqrt(V) and the median absolute deviation of the centred z
    (median |N(0, 1)| = 0.6745), so a minority of anomalous raters barely moves them (a mean
    and a variance would follow them), while the honest majority sets what is expected (when
    anomalous raters pull the consensus, honest raters sit off zero, and the location says
    where). Fewer than ``_MIN_RATERS_FOR_SPREAD`` raters: (0, 0). Both are bounded by
    ``MAX_LEANING``: with short sequences V is small and (sigma**2 - 1) / V very noisy (10 pairs
    of a weak consensus gave tau = 2.5, honest raters simulated as following or opposing the
    consensus at random), and a leaning beyond the bound is what the screen looks for."""
    found: dict[str, tuple[list[float], list[float]]] = {}
    for part in parts:
        for t, test in enumerate(part.tests):
            if test.direction is None or test.var[-1] <= 1e-12:
                continue
            zs, vs = found.setdefault(test.name, ([], []))
            zs.append(float(part.z[t]))
            vs.append(float(test.var[-1]))
    spread: dict[str, tuple[float, float]] = {}
    for name, (z_list, v_list) in found.items():
        if len(z_list) < _MIN_RATERS_FOR_SPREAD:
            spread[name] = (0.0, 0.0)
            continue
        z, root = np.array(z_list), np.sqrt(np.array(v_list))
        location = float(np.median(z / root))
        sigma = float(np.median(np.abs(z - location * root))) / _MEDIAN_ABS_NORMAL
        tau = float(np.sqrt(max(0.0, sigma**2 - 1.0) / float(np.median(root**2))))
        spread[name] = (
            float(np.clip(location, -MAX_LEANING, MAX_LEANING)),
            min(tau, MAX_LEANING),
        )
    return spread


def _share(value: float) -> float | None:
    return None if not np.isfinite(value) else round(float(value), 4)


def _pair_evidence(
    part: _Sequence, sign: np.ndarray, consensus: PairConsensus, rater: int
) -> dict[str, Any]:
    p = expit(part.logit)
    y = part.y
    differs = sign != 0
    longer_won = np.where(sign > 0, y, ~y) & differs
    q = np.where(sign > 0, p, 1.0 - p)
    favoured = np.abs(part.logit) > 1e-9
    agrees = (y == (part.logit > 0)) & favoured
    return {
        "pairs": int(y.size),
        "left_choices": int(y.sum()),
        "expected_left": round(float(p.sum()), 1),
        "others_left_share": _share(consensus.others_left_share[rater]),
        "length_pairs": int(differs.sum()),
        "longer_choices": int(longer_won.sum()),
        "expected_longer": round(float(q[differs].sum()), 1),
        "others_longer_share": _share(consensus.others_longer_share[rater]),
        "favoured_pairs": int(favoured.sum()),
        "favoured_choices": int(agrees.sum()),
        "expected_favoured": round(float(np.maximum(p, 1.0 - p)[favoured].sum()), 1),
    }


def _turing_evidence(part: _Sequence, consensus: TuringConsensus, rater: int) -> dict[str, Any]:
    q = expit(part.logit)
    y = part.y
    decided = np.abs(part.logit) > 1e-9
    agrees = (y == (part.logit > 0)) & decided
    return {
        "turing": int(y.size),
        "ai_answers": int(y.sum()),
        "expected_ai": round(float(q.sum()), 1),
        "others_ai_share": _share(consensus.others_ai_share[rater]),
        "majority_items": int(decided.sum()),
        "majority_answers": int(agrees.sum()),
        "expected_majority": round(float(np.maximum(q, 1.0 - q)[decided].sum()), 1),
    }


def _rows_by_rater(rater: np.ndarray | None, n_raters: int) -> list[np.ndarray]:
    if rater is None:
        return [np.zeros(0, dtype=np.int64) for _ in range(n_raters)]
    order = np.argsort(rater, kind="stable")
    bounds = np.searchsorted(rater[order], np.arange(n_raters + 1))
    return [order[bounds[r] : bounds[r + 1]] for r in range(n_raters)]


def _screen_pass(
    n_raters: int,
    pair_data: PairJudgments | None,
    turing_data: TuringJudgments | None,
    left_out: np.ndarray,
    *,
    seed: int,
    threshold: float,
    simulations: int,
    checkpoints: int,
    min_judgments: int,
) -> Screening:
    """One screening of every rater against the consensus of the raters not ``left_out``."""
    pair_cons = (
        pair_consensus(pair_data, n_raters, left_out=left_out) if pair_data is not None else None
    )
    turing_cons = (
        turing_consensus(turing_data, n_raters, left_out=left_out)
        if turing_data is not None
        else None
    )
    pair_rows = _rows_by_rater(pair_data.rater if pair_data else None, n_raters)
    signs = longer_sign(pair_data) if pair_data is not None else np.zeros(0, dtype=np.int64)
    turing_rows = _rows_by_rater(turing_data.rater if turing_data else None, n_raters)

    # First every rater's sequences and observed statistics (the leaning spread needs them
    # all), then each rater's simulations.
    sequences: list[list[_Sequence]] = []
    evidence: list[dict[str, Any]] = []
    for r in range(n_raters):
        parts: list[_Sequence] = []
        found: dict[str, Any] = {}
        if pair_data is not None and pair_cons is not None and pair_rows[r].size >= min_judgments:
            rng = np.random.default_rng([seed, 0, r])
            part, sign = _pair_sequence(pair_data, pair_cons, signs, pair_rows[r], checkpoints, rng)
            parts.append(part)
            found.update(_pair_evidence(part, sign, pair_cons, r))
        if (
            turing_data is not None
            and turing_cons is not None
            and turing_rows[r].size >= min_judgments
        ):
            rng = np.random.default_rng([seed, 1, r])
            part = _turing_sequence(turing_data, turing_cons, turing_rows[r], checkpoints, rng)
            parts.append(part)
            found.update(_turing_evidence(part, turing_cons, r))
        sequences.append(parts)
        evidence.append(found)
    spread = _spread(
        [part for r, parts in enumerate(sequences) if not left_out[r] for part in parts]
    )

    screens = []
    for r, parts in enumerate(sequences):
        n_pairs, n_turing = int(pair_rows[r].size), int(turing_rows[r].size)
        if not parts:
            screens.append(RaterScreen(rater=r, n_pairs=n_pairs, n_turing=n_turing))
            continue
        stats = np.vstack(
            [
                np.concatenate([part.observed for part in parts]),
                np.hstack([_simulated(part, simulations, spread) for part in parts]),
            ]
        )
        p_each = _at_least(stats)
        smallest = p_each.min(axis=1)
        combined = float(np.mean(smallest <= smallest[0]))
        tests: dict[str, TestResult] = {}
        col = 0
        for part in parts:
            for t, test in enumerate(part.tests):
                tests[test.name] = TestResult(
                    statistic=float(part.observed[t]),
                    p_value=float(p_each[0, col]),
                    z=float(part.z[t]),
                    n=test.n,
                    checkpoints=tuple(int(c) for c in part.checkpoints),
                )
                col += 1
        screens.append(
            RaterScreen(
                rater=r,
                n_pairs=n_pairs,
                n_turing=n_turing,
                tests=tests,
                combined_p=combined,
                proposed=combined <= threshold,
                evidence=evidence[r],
            )
        )
    return Screening(
        raters=screens,
        threshold=threshold,
        simulations=simulations,
        checkpoints=checkpoints,
        seed=seed,
        position_offset=pair_cons.fit.offset if pair_cons is not None else None,
        spread=spread,
        turing_prior_weight=turing_cons.prior_weight if turing_cons is not None else None,
        left_out=tuple(int(r) for r in np.flatnonzero(left_out)),
    )


def screen_raters(
    n_raters: int,
    *,
    pairs: PairJudgments | None = None,
    turing: TuringJudgments | None = None,
    seed: int,
    threshold: float = DEFAULT_THRESHOLD,
    simulations: int = DEFAULT_SIMULATIONS,
    checkpoints: int = DEFAULT_CHECKPOINTS,
    min_judgments: int = MIN_JUDGMENTS,
    passes: int = DEFAULT_PASSES,
    left_out: np.ndarray | None = None,
) -> Screening:
    """Screen every rater (module docstring). A rater with fewer than ``min_judgments``
    decisive pairs gets no pair tests, and likewise for Turing judgments; a rater with no test
    has ``combined_p`` None and is never proposed.

    ``left_out`` (one flag per rater, e.g. raters already excluded): their judgments never
    enter the consensus or the leaning estimates; they are screened all the same.
    ``passes`` > 1: the raters a pass proposes are left out too in the next pass (unless the
    raters left out would be half the raters or more), and every rater is screened again; the
    last pass is returned."""
    if n_raters < 0:
        raise ValueError("n_raters must be >= 0")
    if not 0.0 < threshold < 1.0:
        raise ValueError("threshold must be in (0, 1)")
    if simulations < 1:
        raise ValueError("simulations must be >= 1")
    if checkpoints < 1:
        raise ValueError("checkpoints must be >= 1")
    if min_judgments < 1:
        raise ValueError("min_judgments must be >= 1")
    if passes < 1:
        raise ValueError("passes must be >= 1")
    pair_data = pairs.checked(n_raters) if pairs is not None else None
    turing_data = turing.checked(n_raters) if turing is not None else None

    def one_pass(left_out: np.ndarray) -> Screening:
        return _screen_pass(
            n_raters,
            pair_data,
            turing_data,
            left_out,
            seed=seed,
            threshold=threshold,
            simulations=simulations,
            checkpoints=checkpoints,
            min_judgments=min_judgments,
        )

    before = np.zeros(n_raters, dtype=bool)
    if left_out is not None:
        before = np.asarray(left_out, dtype=bool)
        if before.shape != (n_raters,):
            raise ValueError("left_out must have one entry per rater")
    result = one_pass(before)
    for _ in range(passes - 1):
        proposed = np.array([screen.proposed for screen in result.raters], dtype=bool)
        leave = before | proposed
        if not (leave & ~before).any() or 2 * leave.sum() >= n_raters:
            break
        result = one_pass(leave)
    return result
