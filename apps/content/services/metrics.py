"""Computing and storing the automatic L1 metrics of a study's items (ContentMetrics)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.db import transaction
from django.utils import timezone
from numpy.typing import NDArray

from apps.content import metrics
from apps.content import text as text_tools
from apps.content.models import ContentMetrics
from apps.studies.models import Item, Study
from apps.textmodels.registry import ModelInfo, embedder, embedding_info

_UPDATED = ["values", "missing", "tokenizer", "models_used", "computed_at"]


def text_embeddings(
    texts: Sequence[str], *, model: ModelInfo | None = None
) -> list[NDArray[np.float64] | None]:
    """One unit vector per text: the normalised mean of its paragraphs' embeddings.

    Sentence encoders read a bounded number of tokens, so an article embedded whole would be
    judged on its first paragraphs only; averaging the paragraphs covers all of it. A text
    without paragraphs has no embedding. All paragraphs go through the model in one batch.
    The model is the one screening's coherence uses (`apps.textmodels`).
    """
    pieces = [text_tools.paragraphs(t) for t in texts]
    flat = [p for paragraphs in pieces for p in paragraphs]
    if not flat:
        return [None] * len(texts)
    encoded = embedder(model).encode(flat)
    out: list[NDArray[np.float64] | None] = []
    row = 0
    for paragraphs in pieces:
        if not paragraphs:
            out.append(None)
            continue
        mean = encoded[row : row + len(paragraphs)].mean(axis=0)
        row += len(paragraphs)
        norm = float(np.linalg.norm(mean))
        out.append(mean / norm if norm > 0 else None)
    return out


def content_metrics_compute(*, study: Study, item_ids: Sequence[int] | None = None) -> int:
    """Compute the L1 metrics of the study's items and store them, replacing earlier ones.

    Attention checks are not articles and are left out. With `item_ids`, only those items
    are stored (ids of other studies' or deleted items are skipped), but semantic novelty
    still compares each with the whole study's corpus of its language, so an item's novelty
    does not depend on which batch it was computed in. Returns how many items were stored.
    The model runs outside any transaction; only the upsert is one.
    """
    corpus = list(
        Item.objects.filter(study=study, is_attention_check=False)
        .only("id", "text", "language")
        .order_by("pk")
    )
    wanted = set(item_ids) if item_ids is not None else None
    if not corpus or (wanted is not None and not wanted & {item.pk for item in corpus}):
        return 0
    info = embedding_info()
    covered = [
        i
        for i, item in enumerate(corpus)
        if not info.unavailable and info.covers(item.language) and item.text.strip()
    ]
    embeddings: list[NDArray[np.float64] | None] = [None] * len(corpus)
    if covered:
        vectors = text_embeddings([corpus[i].text for i in covered], model=info)
        for i, vector in zip(covered, vectors, strict=True):
            embeddings[i] = vector
    results = metrics.compute(
        [item.text for item in corpus],
        [item.language for item in corpus],
        embeddings,
        embedding_model=info.short_name,
        embedding_languages=list(info.languages),
    )
    now = timezone.now()
    rows = [
        ContentMetrics(
            item_id=item.pk,
            values=result.values,
            missing=result.missing,
            tokenizer=result.tokenizer[:100],
            models_used={"semantic_novelty": info.label},
            computed_at=now,
        )
        for item, result in zip(corpus, results, strict=True)
        if wanted is None or item.pk in wanted
    ]
    with transaction.atomic():
        ContentMetrics.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["item"],
            update_fields=_UPDATED,
            batch_size=500,
        )
    return len(rows)
