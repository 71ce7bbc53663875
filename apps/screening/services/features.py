"""Computing and storing the L1 features (surprise, coherence, valence) of a batch of items."""

from __future__ import annotations

import time
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from apps.screening.features.coherence import coherence_scores
from apps.screening.features.embedding import item_embeddings, to_bytes
from apps.screening.features.split import split_item
from apps.screening.features.surprise import surprise_scores
from apps.screening.features.valence import package_used, valence_scores
from apps.screening.models import ItemFeatures
from apps.studies.models import Item
from apps.textmodels.registry import causal_lm_info, embedding_info

_UPDATED = [
    "surprise",
    "surprise_missing",
    "coherence",
    "coherence_missing",
    "valence",
    "valence_penalty",
    "valence_missing",
    "embedding",
    "embedding_missing",
    "context_embedding",
    "models_used",
    "compute_seconds",
    "computed_at",
]


def item_features_compute(*, item_ids: Sequence[int]) -> int:
    """Compute the features of these items and store them, replacing any earlier ones.

    Ids of items that no longer exist are skipped. Returns how many items were stored. The
    models run outside any transaction; only the upsert is one.
    """
    items = list(
        Item.objects.filter(pk__in=list(item_ids))
        .only("id", "text", "language", "level", "context", "scenario")
        .order_by("pk")
    )
    if not items:
        return 0
    started = time.perf_counter()
    splits = [
        split_item(
            item.text,
            language=item.language,
            level=item.level,
            context=item.context if isinstance(item.context, list) else [],
            scenario=item.scenario,
        )
        for item in items
    ]
    languages = [item.language for item in items]
    language_model, embedding_model = causal_lm_info(), embedding_info()
    surprise = surprise_scores(
        [s.text for s in splits], [s.boundary for s in splits], languages, model=language_model
    )
    coherence = coherence_scores(
        [s.setup for s in splits], [s.punchline for s in splits], languages, model=embedding_model
    )
    # The whole item is scored for valence: setup and punchline together.
    valence = valence_scores([s.text for s in splits], languages)
    # The item's own text (a reply or response without its context) for the learned L1.
    embeddings = item_embeddings([item.text for item in items], languages, model=embedding_model)
    # What a reply or response answers: its split's setup is the dialogue or the scenario.
    answered = [
        i
        for i, (item, split) in enumerate(zip(items, splits, strict=True))
        if item.level in (Item.Level.MULTI_TURN, Item.Level.SCENARIO)
        and split.boundary is not None
        and split.setup.strip()
    ]
    contexts: dict[int, bytes | None] = {
        i: to_bytes(value.vector)
        for i, value in zip(
            answered,
            item_embeddings(
                [splits[i].setup for i in answered],
                [languages[i] for i in answered],
                model=embedding_model,
            ),
            strict=True,
        )
    }
    now = timezone.now()
    share = (time.perf_counter() - started) / len(items)
    rows = [
        ItemFeatures(
            item_id=item.pk,
            surprise=s.value,
            surprise_missing=s.missing[:200],
            coherence=c.value,
            coherence_missing=c.missing[:200],
            valence=v.value,
            valence_penalty=v.penalty,
            valence_missing=v.missing[:200],
            embedding=to_bytes(e.vector),
            embedding_missing=e.missing[:200],
            context_embedding=contexts.get(index),
            models_used={
                "surprise": language_model.label,
                "coherence": embedding_model.label,
                "valence": package_used(item.language),
                "embedding": embedding_model.label,
                "split": split.how,
            },
            compute_seconds=share,
            computed_at=now,
        )
        for index, (item, split, s, c, v, e) in enumerate(
            zip(items, splits, surprise, coherence, valence, embeddings, strict=True)
        )
    ]
    with transaction.atomic():
        ItemFeatures.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["item"],
            update_fields=_UPDATED,
            batch_size=500,
        )
    return len(rows)
