"""The content evaluation of a study: weights per content type fitted from the human ratings,
the independence of the dimensions, and the tiers (L1 metrics, L2 judge, L3 humans) against
the humans. Stored whole in ContentEvaluation; the dashboard only reads it.

"Rated good", the outcome the weights are fitted on, one row per scorecard:

* when the rubric also asks an ``overall`` question, a scorecard is good when its overall answer
  lies in the top quarter of the scale (4 or 5 of 5);
* otherwise (the built-in content rubric), when the mean of its three answers is at least 4 of
  5 (the top quarter of the scale): a scorecard whose rater found the article good on balance.

The regressors of a scorecard are its item's means over the *other* raters (leave-one-out), so a
rater's own answers never explain their own verdict; items need two complete scorecards. With
the mean-based outcome the verdict is built from the same three questions, so the fit measures
how much each dimension, as the panel sees it, moves a rater's verdict: it is pulled towards
equal weights and cannot express a preference the raters do not show in their answers. A rubric
with an overall question gives a verdict independent of the three dimensions, which is the
sounder design when the weights matter.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from apps.content import independence, tiers
from apps.content import weights as weights_stats
from apps.content.models import ContentEvaluation, ContentWeights
from apps.content.selectors import (
    ContentItem,
    Scale,
    Scorecard,
    content_evaluation_get,
    content_exclusions,
    content_items_list,
    content_items_without_metrics,
    content_judge_runs,
    content_metrics_map,
    content_rubric_scales,
    content_scorecards_list,
)
from apps.core.errors import DomainError
from apps.studies.models import Item, Study

logger = logging.getLogger(__name__)

DIMENSIONS = weights_stats.DIMENSIONS
OVERALL_QUESTION = "overall"
# "Good" = top quarter of the scale: 4 of 1..5.
GOOD_SHARE = 0.75
DEFAULT_ROUNDS = 1000
MAX_ROUNDS = 20000
CONTENT_TYPES: tuple[str, ...] = tuple(t for t in Item.ContentType.values if t)
COMPOSITE = "composite"


def _require_content(study: Study) -> dict[str, Scale]:
    scales = content_rubric_scales(study=study)
    missing = [name for name in DIMENSIONS if name not in scales]
    if missing:
        raise DomainError(
            "The content evaluation needs a rubric asking fluency, informativeness and "
            f"originality; this study's rubric lacks {', '.join(missing)}.",
            field="rubric",
        )
    return scales


def _threshold(scale: Scale) -> float:
    return scale.min_value + GOOD_SHARE * (scale.max_value - scale.min_value)


def _complete(scorecards: Sequence[Scorecard]) -> list[Scorecard]:
    return [card for card in scorecards if all(name in card.answers for name in DIMENSIONS)]


def _item_sums(cards: Sequence[Scorecard]) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    sums: dict[int, np.ndarray] = defaultdict(lambda: np.zeros(len(DIMENSIONS)))
    counts: dict[int, int] = defaultdict(int)
    for card in cards:
        sums[card.item_id] = sums[card.item_id] + np.array(
            [card.answers[name] for name in DIMENSIONS], dtype=np.float64
        )
        counts[card.item_id] += 1
    return dict(sums), dict(counts)


def human_item_means(scorecards: Sequence[Scorecard]) -> dict[int, dict[str, float]]:
    """Per item, the mean answer to each dimension (every scorecard answering it counts)."""
    sums: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for card in scorecards:
        for name, value in card.answers.items():
            sums[card.item_id][name] += value
            counts[card.item_id][name] += 1
    return {
        item: {name: sums[item][name] / counts[item][name] for name in counts[item]}
        for item in counts
    }


def _fit_rows(
    cards: Sequence[Scorecard], scales: dict[str, Scale]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, items): leave-one-out item means, the verdict, the item, one row per scorecard."""
    complete = _complete(cards)
    sums, counts = _item_sums(complete)
    overall = scales.get(OVERALL_QUESTION)
    mean_threshold = float(np.mean([_threshold(scales[name]) for name in DIMENSIONS]))
    xs, ys, items = [], [], []
    for card in complete:
        n = counts[card.item_id]
        if n < 2:
            continue
        own = np.array([card.answers[name] for name in DIMENSIONS], dtype=np.float64)
        if overall is not None:
            answer = card.answers.get(OVERALL_QUESTION)
            if answer is None:
                continue
            good = answer >= _threshold(overall)
        else:
            good = float(own.mean()) >= mean_threshold
        xs.append((sums[card.item_id] - own) / (n - 1))
        ys.append(1.0 if good else 0.0)
        items.append(card.item_id)
    return (
        np.asarray(xs, dtype=np.float64).reshape(-1, len(DIMENSIONS)),
        np.asarray(ys, dtype=np.float64),
        np.asarray(items, dtype=np.int64),
    )


def _scorecards_with_overall(study: Study, cards: list[Scorecard]) -> list[Scorecard]:
    """The scorecards with their overall answer added, for a rubric that asks one."""
    from apps.judgments.models import ScoreAnswer

    overall = dict(
        ScoreAnswer.objects.filter(
            response__study=study, question__name=OVERALL_QUESTION
        ).values_list("response_id", "value")
    )
    return [
        Scorecard(
            pk=card.pk,
            item_id=card.item_id,
            rater_id=card.rater_id,
            active_seconds=card.active_seconds,
            answers={
                **card.answers,
                **({OVERALL_QUESTION: overall[card.pk]} if card.pk in overall else {}),
            },
        )
        for card in cards
    ]


def _hash(data: Any) -> str:
    return hashlib.sha256(
        json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()
    ).hexdigest()


def _weights_fit(
    study: Study,
    items: list[ContentItem],
    cards: list[Scorecard],
    scales: dict[str, Scale],
) -> tuple[list[weights_stats.WeightsFit], dict[str, str]]:
    type_of = {item.pk: item.content_type for item in items}
    x, y, row_items = _fit_rows(cards, scales)
    types = np.array([type_of.get(int(pk), "") for pk in row_items], dtype=object)
    wanted = list(CONTENT_TYPES)
    if any(item.content_type == "" for item in items):
        wanted.append("")
    fits = []
    hashes = {}
    for content_type in wanted:
        mask = types == content_type
        fits.append(
            weights_stats.fit_weights(
                content_type=content_type,
                x=x[mask],
                y=y[mask],
                items=row_items[mask],
                seed=int(study.random_seed),
            )
        )
        hashes[content_type] = _hash(
            {
                "x": np.round(x[mask], 10).tolist(),
                "y": y[mask].tolist(),
                "items": row_items[mask].tolist(),
                "seed": int(study.random_seed),
            }
        )
    return fits, hashes


def _outcome_label(scales: dict[str, Scale]) -> str:
    if OVERALL_QUESTION in scales:
        return f"overall answer >= {_threshold(scales[OVERALL_QUESTION]):g}"
    threshold = float(np.mean([_threshold(scales[name]) for name in DIMENSIONS]))
    return f"mean of the three answers >= {threshold:g}"


def _store_weights(
    study: Study,
    fits: list[weights_stats.WeightsFit],
    hashes: dict[str, str],
    outcome: str,
) -> list[ContentWeights]:
    rows = []
    with transaction.atomic():
        for fit in fits:
            rows.append(
                ContentWeights.objects.create(
                    study=study,
                    content_type=fit.content_type,
                    fluency=fit.weights[0],
                    informativeness=fit.weights[1],
                    originality=fit.weights[2],
                    is_default=fit.is_default,
                    method=fit.method,
                    n_items=fit.n_items,
                    quality={**fit.quality, "outcome": outcome},
                    data_hash=hashes[fit.content_type],
                    seed=int(study.random_seed),
                )
            )
    return rows


def _inputs(study: Study) -> tuple[dict[str, Scale], Any, list[ContentItem], list[Scorecard]]:
    scales = _require_content(study)
    exclusions = content_exclusions(study=study)
    items = content_items_list(study=study, exclusions=exclusions)
    cards = content_scorecards_list(study=study, exclusions=exclusions)
    if OVERALL_QUESTION in scales:
        cards = _scorecards_with_overall(study, cards)
    return scales, exclusions, items, cards


def content_weights_fit(*, study: Study) -> list[ContentWeights]:
    """Fit and store one row of weights per content type (defaults, with the reason, where the
    ratings do not allow a fit). Earlier rows are kept as history; the latest one is current."""
    scales, _, items, cards = _inputs(study)
    fits, hashes = _weights_fit(study, items, cards, scales)
    return _store_weights(study, fits, hashes, _outcome_label(scales))


def _l1_timing(study: Study) -> dict[str, Any]:
    """Compute the metrics of items that have none, timing it: the L1 cost is measured here.

    When every item already has metrics, the timing of the previous evaluation is carried over
    (the metrics did not change); without one the L1 speed is shown as not measured."""
    missing = content_items_without_metrics(study=study)
    if missing:
        from apps.content.services.metrics import content_metrics_compute

        started = time.perf_counter()
        computed = content_metrics_compute(study=study, item_ids=missing)
        seconds = time.perf_counter() - started
        if computed:
            return {
                "items": int(computed),
                "seconds": seconds,
                "measured_at": timezone.now().isoformat(),
            }
    previous = content_evaluation_get(study=study)
    if previous is not None:
        timing = previous.payload.get("l1_timing") or {}
        if timing.get("seconds"):
            return dict(timing)
    return {"items": 0, "seconds": None, "measured_at": None}


def _composite_or_none(
    scores: dict[str, float] | None, w: tuple[float, float, float]
) -> float | None:
    return None if scores is None else weights_stats.composite(scores, w)


def content_evaluation_compute(*, study: Study, rounds: int | None = None) -> ContentEvaluation:
    """Metrics for items without them, the weights, independence and tiers; stored as one
    payload with the seed, rounds and a hash of the inputs. Refused for a non-content rubric."""
    rounds = DEFAULT_ROUNDS if rounds is None else rounds
    if not 1 <= rounds <= MAX_ROUNDS:
        raise DomainError(f"rounds must be from 1 to {MAX_ROUNDS}.", field="rounds")
    _require_content(study)
    seed = int(study.random_seed)
    l1_timing = _l1_timing(study)

    scales, exclusions, items, cards = _inputs(study)
    fits, hashes = _weights_fit(study, items, cards, scales)
    weight_of = {fit.content_type: fit.weights for fit in fits}

    def w(item: ContentItem) -> tuple[float, float, float]:
        return weight_of.get(item.content_type) or weights_stats.default_weights(item.content_type)

    means = human_item_means(cards)
    metrics = content_metrics_map(study=study)
    ordered = items
    human_cols: dict[str, list[float | None]] = {
        name: [means.get(item.pk, {}).get(name) for item in ordered] for name in DIMENSIONS
    }
    human_composite = [_composite_or_none(means.get(item.pk), w(item)) for item in ordered]
    try:
        from apps.content.metrics import METRIC_NAMES

        metric_order: list[str] = list(METRIC_NAMES)
    except ImportError:  # the metrics module is absent: order by name
        metric_order = []
    present = {name for values in metrics.values() for name in values}
    metric_names = [n for n in metric_order if n in present] + sorted(present - set(metric_order))
    auto_cols: dict[str, list[float | None]] = {
        name: [metrics.get(item.pk, {}).get(name) for item in ordered] for name in metric_names
    }
    auto_composite = [_composite_or_none(metrics.get(item.pk), w(item)) for item in ordered]

    human_matrix = independence.correlation_matrix(
        human_cols, seed=seed, rounds=rounds, prefix="human"
    )
    # The three automatic dimension scores answer the same question as the human matrix; the
    # matrix of every metric also shows which metrics duplicate each other (a dimension score is
    # built from its own metrics, so those pairs correlate by construction).
    auto_matrix = independence.correlation_matrix(
        {name: auto_cols[name] for name in DIMENSIONS if name in auto_cols},
        seed=seed,
        rounds=rounds,
        prefix="automatic",
    )
    metrics_matrix = independence.correlation_matrix(
        auto_cols, seed=seed, rounds=rounds, prefix="metrics"
    )
    vs_human = independence.against_humans(
        {**auto_cols, COMPOSITE: auto_composite},
        {**human_cols, COMPOSITE: human_composite},
        seed=seed,
        rounds=rounds,
    )

    judge_runs = content_judge_runs(study=study, item_ids={item.pk for item in ordered})
    judge = judge_runs[0] if judge_runs else None
    judge_composite = (
        [_composite_or_none(judge.scores.get(item.pk), w(item)) for item in ordered]
        if judge is not None and judge.scores
        else None
    )
    type_by_pk = {item.pk: item for item in ordered}
    complete = [card for card in _complete(cards) if card.item_id in type_by_pk]
    card_composite = [
        weights_stats.composite(
            {name: float(v) for name, v in card.answers.items()}, w(type_by_pk[card.item_id])
        )
        for card in complete
    ]
    active = [card.active_seconds for card in cards if card.active_seconds is not None]
    tier_rows = tiers.evaluate_tiers(
        human=human_composite,
        automatic=auto_composite,
        automatic_seconds=l1_timing.get("seconds"),
        automatic_items=int(l1_timing.get("items") or 0),
        judge=judge_composite,
        judge_model=judge.model_name if judge is not None else None,
        judge_latency_seconds=judge.latency_seconds if judge is not None else None,
        judge_items=len(judge.scores) if judge is not None else 0,
        scorecard_item=[card.item_id for card in complete],
        scorecard_rater=[card.rater_id for card in complete],
        scorecard_value=[np.nan if v is None else v for v in card_composite],
        active_seconds=float(sum(active)),
        seed=seed,
        rounds=rounds,
    )
    payload: dict[str, Any] = {
        "weights": [fit.as_dict() for fit in fits],
        "composite": {
            "dimensions": list(DIMENSIONS),
            "outcome": _outcome_label(scales),
            "human_scale": [scales[DIMENSIONS[0]].min_value, scales[DIMENSIONS[0]].max_value],
        },
        "independence": {
            "human": human_matrix,
            "automatic": auto_matrix,
            "metrics": metrics_matrix,
        },
        "metric_vs_human": vs_human,
        "tiers": tier_rows,
        "judge_models": [run.model_name for run in judge_runs],
        "l1_timing": l1_timing,
        "counts": {
            "items": len(ordered),
            "rated_items": len(means),
            "scorecards": len(cards),
            "complete_scorecards": len(complete),
            "items_with_metrics": sum(1 for item in ordered if item.pk in metrics),
            "scorecards_without_active_time": len(cards) - len(active),
        },
        "exclusions_digest": exclusions.digest,
        "threshold": independence.FLAG_R,
        "level": 0.95,
    }
    input_hash = _hash(
        {
            "weights": sorted(hashes.items()),
            "metrics": sorted((pk, sorted(v.items())) for pk, v in metrics.items()),
            "judge": [(run.model_name, sorted(run.scores.items())) for run in judge_runs],
            "cards": [(c.pk, sorted(c.answers.items())) for c in cards],
            "types": [(item.pk, item.content_type) for item in ordered],
            "seed": seed,
            "rounds": rounds,
            "exclusions": exclusions.digest,
        }
    )
    # The weights and the evaluation built on them are stored together or not at all.
    with transaction.atomic():
        _store_weights(study, fits, hashes, _outcome_label(scales))
        evaluation, _ = ContentEvaluation.objects.update_or_create(
            study=study,
            defaults={
                "payload": payload,
                "seed": seed,
                "rounds": rounds,
                "input_hash": input_hash,
                "computed_at": timezone.now(),
            },
        )
    return evaluation


def content_evaluation_request(*, study: Study) -> None:
    """Queue the evaluation after commit; refused at once for a non-content rubric."""
    _require_content(study)
    study_id = study.pk
    transaction.on_commit(lambda: _enqueue(study_id))


def _enqueue(study_id: int) -> None:
    from apps.content.tasks import content_evaluation_task

    try:
        content_evaluation_task.delay(study_id)
    except Exception:  # the broker is down; nothing was stored, the researcher may retry
        logger.warning(
            "could not queue the content evaluation of study %s", study_id, exc_info=True
        )
