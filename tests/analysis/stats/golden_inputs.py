"""A synthetic study's StudyInputs, built from a seed, for the results-are-unchanged test.

`fixtures/stats/golden_results.json` holds the document `compute_study_document` produced for
these inputs (seed 7, 200 rounds) before the statistics were vectorised (commit 65d32f4); the
test holds today's code to it.
"""

from __future__ import annotations

import numpy as np

from apps.analysis.stats.inputs import QuestionInfo, StudyInputs

QUESTIONS = [
    QuestionInfo("surprise", "likert", 1, 5),
    QuestionInfo("coherence", "likert", 1, 5),
    QuestionInfo("funniness", "likert", 1, 7),
    QuestionInfo("offensive", "binary", 0, 1),
]
GROUPS = ["technical", "content_operations", "administrative_support", "traditional_industries"]


def golden_inputs() -> StudyInputs:
    rng = np.random.default_rng(20261201)
    n_items, n_raters = 60, 40
    sources = [("model-a", "model-b", "human")[i % 3] for i in range(n_items)]
    levels = [("single", "multi_turn", "scenario")[(i // 3) % 3] for i in range(n_items)]
    humor = [("pun", "callback", "absurd")[(i // 2) % 3] for i in range(n_items)]
    strength = rng.normal(0, 1, n_items)
    leniency = rng.normal(0, 0.5, n_raters)
    s_item, s_rater, s_q, s_val, s_sec = [], [], [], [], []
    for r in range(n_raters):
        for i in rng.choice(n_items, size=12, replace=False):
            seconds = float(rng.uniform(0, 1800))
            for q, question in enumerate(QUESTIONS):
                if question.kind == "binary":
                    value = float(rng.random() < 0.05)
                else:
                    mid = (question.min_value + question.max_value) / 2
                    value = float(
                        np.clip(
                            round(mid + strength[i] + leniency[r] + rng.normal(0, 1)),
                            question.min_value,
                            question.max_value,
                        )
                    )
                s_item.append(int(i))
                s_rater.append(r)
                s_q.append(q)
                s_val.append(value)
                s_sec.append(seconds)
    p_left, p_right, p_win, p_rater = [], [], [], []
    for r in range(n_raters):
        seen: set[tuple[int, int]] = set()
        while len(seen) < 15:
            a, b = (int(x) for x in rng.choice(n_items, size=2, replace=False))
            if (min(a, b), max(a, b)) in seen:
                continue
            seen.add((min(a, b), max(a, b)))
            p_left.append(a)
            p_right.append(b)
            p_win.append(bool(rng.random() < 1 / (1 + np.exp(strength[b] - strength[a]))))
            p_rater.append(r)
    t_item, t_rater, t_guess = [], [], []
    for r in range(n_raters):
        for i in rng.choice(n_items, size=5, replace=False):
            t_item.append(int(i))
            t_rater.append(r)
            t_guess.append(bool(rng.random() < 0.6))
    has_expl = np.array([i % 4 == 0 for i in range(n_items)])
    e_item = [i for i in s_item[:: len(QUESTIONS)] if has_expl[i]]
    return StudyInputs(
        item_ids=[f"j{i:03d}" for i in range(n_items)],
        item_source=sources,
        item_level=levels,
        item_humor_type=humor,
        item_topic=[f"t{i // 6}" for i in range(n_items)],
        item_safety_intercepted=np.array([i == 5 for i in range(n_items)]),
        item_has_explanation=has_expl,
        rater_ids=[f"r{r:02d}" for r in range(n_raters)],
        rater_group=[GROUPS[r % 4] for r in range(n_raters)],
        groups=GROUPS,
        questions=QUESTIONS,
        score_item=np.array(s_item, dtype=np.int64),
        score_rater=np.array(s_rater, dtype=np.int64),
        score_question=np.array(s_q, dtype=np.int64),
        score_value=np.array(s_val),
        score_seconds=np.array(s_sec),
        pair_left=np.array(p_left, dtype=np.int64),
        pair_right=np.array(p_right, dtype=np.int64),
        pair_winner_is_left=np.array(p_win, dtype=bool),
        pair_rater=np.array(p_rater, dtype=np.int64),
        turing_item=np.array(t_item, dtype=np.int64),
        turing_rater=np.array(t_rater, dtype=np.int64),
        turing_guess_ai=np.array(t_guess, dtype=bool),
        explanation_item=np.array(e_item, dtype=np.int64),
        explanation_match=(np.arange(len(e_item)) % 3 == 0).astype(np.int64),
    )
