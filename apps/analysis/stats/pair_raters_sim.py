"""Simulated studies with honest and planted anomalous raters, for the anomalous-rater screen's
false-alarm rate and power (tests/analysis/stats/test_pair_raters.py and
benchmarks/sim_pair_raters.py).

Honest raters (the model the screen must not flag):

* every item has a true strength ~ N(0, 1) and a length in words (log-normal around 25 words,
  sd 0.5 on the log scale); everyone prefers longer jokes by ``LENGTH_EFFECT`` log-odds per SD
  of log length (a real length effect, shared by all raters);
* every rater has their own taste: a N(0, ``TASTE_SD``) deviation on every item's strength;
* a study-wide position effect: ``POSITION_EFFECT`` log-odds for the left item (about 55% left
  choices between equal items);
* pairs are drawn within topics of 20 items (one topic per rater), sides at random;
* Turing: half the items are AI; P("AI") = sigmoid(item's detectability + the rater's own
  leaning), detectability ~ N(+-0.5, 0.6) by truth, leaning ~ N(0, ``LEANING_SD``).

Planted anomalies (``KINDS``), ``per_kind`` raters of each kind:

* side: chooses left with a probability drawn from U(0.75, 0.85) whatever the items (on Turing
  items: "AI" with that probability);
* length: chooses the longer item in 90% of pairs (Turing: honest);
* contrarian: chooses the item an honest rater would not, P(left) = 1 - honest P(left)
  (Turing: the answer an honest rater would not give);
* random: clicks at random, 50/50 (Turing too).
"""

from __future__ import annotations

import numpy as np

from apps.analysis.stats.rater_consensus import PairJudgments, TuringJudgments

TASTE_SD = 0.6
POSITION_EFFECT = 0.2
LENGTH_EFFECT = 0.4
LEANING_SD = 0.3
KINDS = ("side", "length", "contrarian", "random")
TOPIC_SIZE = 20


def simulate_rater_study(
    rng: np.random.Generator,
    *,
    n_items: int,
    n_raters: int,
    per_rater: int,
    turing_per_rater: int,
    per_kind: int,
) -> tuple[PairJudgments, TuringJudgments | None, np.ndarray]:
    """One study: its pair judgments, its Turing judgments (None with ``turing_per_rater`` 0)
    and each rater's kind ("" for an honest rater). Every rater judges ``per_rater`` distinct
    pairs of one topic (at most 190 in a topic of 20)."""
    topic_size = TOPIC_SIZE
    n_topics = max(1, n_items // topic_size)
    strength = rng.normal(0.0, 1.0, n_items)
    log_length = rng.normal(np.log(25.0), 0.5, n_items)
    length = np.maximum(1, np.round(np.exp(log_length)))
    standard = (log_length - log_length.mean()) / log_length.std()
    appeal = strength + LENGTH_EFFECT * standard
    kinds = np.array([""] * n_raters, dtype=object)
    planted = rng.choice(n_raters, size=per_kind * len(KINDS), replace=False)
    for i, kind in enumerate(KINDS):
        kinds[planted[i * per_kind : (i + 1) * per_kind]] = kind

    left, right, left_won, rater = [], [], [], []
    for r in range(n_raters):
        taste = appeal + rng.normal(0.0, TASTE_SD, n_items)
        topic = int(rng.integers(n_topics))
        members = np.arange(topic * topic_size, min((topic + 1) * topic_size, n_items))
        # Distinct unordered pairs of the topic, sides at random.
        all_pairs = np.array([(a, b) for a in members for b in members if a < b])
        pick = all_pairs[rng.choice(len(all_pairs), size=per_rater, replace=False)]
        swap = rng.random(per_rater) < 0.5
        a = np.where(swap, pick[:, 1], pick[:, 0])
        b = np.where(swap, pick[:, 0], pick[:, 1])
        honest = 1.0 / (1.0 + np.exp(-(taste[a] - taste[b] + POSITION_EFFECT)))
        kind = kinds[r]
        if kind == "side":
            p_left = np.full(per_rater, rng.uniform(0.75, 0.85))
        elif kind == "length":
            p_left = np.where(
                length[a] > length[b], 0.9, np.where(length[a] < length[b], 0.1, honest)
            )
        elif kind == "contrarian":
            p_left = 1.0 - honest
        elif kind == "random":
            p_left = np.full(per_rater, 0.5)
        else:
            p_left = honest
        left.append(a)
        right.append(b)
        left_won.append(rng.random(per_rater) < p_left)
        rater.append(np.full(per_rater, r))
    pairs = PairJudgments(
        left=np.concatenate(left),
        right=np.concatenate(right),
        left_won=np.concatenate(left_won),
        rater=np.concatenate(rater),
        n_items=n_items,
        item_length=length,
    )
    if not turing_per_rater:
        return pairs, None, kinds

    is_ai = np.arange(n_items) % 2 == 0
    detectable = rng.normal(np.where(is_ai, 0.5, -0.5), 0.6)
    items, guesses, owners = [], [], []
    for r in range(n_raters):
        seen = rng.choice(n_items, size=turing_per_rater, replace=False)
        honest_ai = 1.0 / (1.0 + np.exp(-(detectable[seen] + rng.normal(0.0, LEANING_SD))))
        kind = kinds[r]
        if kind == "side":
            p_ai = np.full(seen.size, rng.uniform(0.75, 0.85))
        elif kind == "contrarian":
            p_ai = 1.0 - honest_ai
        elif kind == "random":
            p_ai = np.full(seen.size, 0.5)
        else:
            p_ai = honest_ai
        items.append(seen)
        guesses.append(rng.random(seen.size) < p_ai)
        owners.append(np.full(seen.size, r))
    turing = TuringJudgments(
        item=np.concatenate(items),
        guessed_ai=np.concatenate(guesses),
        rater=np.concatenate(owners),
        n_items=n_items,
    )
    return pairs, turing, kinds
