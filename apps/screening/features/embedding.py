"""The item's own sentence embedding: what the learned L1 and its prior read.

The whole item text is encoded (a multi-turn reply or a scenario response by itself: the context
enters through coherence, which compares the reply with it). The model is the one
`apps.textmodels.registry.embedder()` loads (by default the multilingual Universal Sentence
Encoder); an item whose language it does not cover has no embedding, with the reason.

Stored as float32 bytes (2 KiB for 512 numbers): the learned L1 and its prior are linear in it,
and float32 keeps every digit the encoder itself computes (it runs in float32).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from apps.textmodels.registry import ModelInfo, embedder, embedding_info


@dataclass(frozen=True)
class EmbeddingValue:
    vector: NDArray[np.float32] | None
    missing: str = ""


def item_embeddings(
    texts: Sequence[str], languages: Sequence[str], *, model: ModelInfo | None = None
) -> list[EmbeddingValue]:
    """Unit-length embeddings of the texts, or why one is missing."""
    if len(texts) != len(languages):
        raise ValueError("texts and languages must have the same length")
    info = model or embedding_info()
    results: list[EmbeddingValue | None] = [None] * len(texts)
    wanted: list[int] = []
    for i, (text, language) in enumerate(zip(texts, languages, strict=True)):
        if info.unavailable:
            results[i] = EmbeddingValue(None, info.unavailable[:200])
        elif not info.covers(language):
            results[i] = EmbeddingValue(None, info.not_covered(language)[:200])
        elif not text.strip():
            results[i] = EmbeddingValue(None, "empty text")
        else:
            wanted.append(i)
    if wanted:
        vectors = embedder(info).encode([texts[i] for i in wanted]).astype(np.float32)
        for i, vector in zip(wanted, vectors, strict=True):
            results[i] = EmbeddingValue(vector)
    return [r for r in results if r is not None]


def to_bytes(vector: NDArray[np.float32] | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes | memoryview | None) -> NDArray[np.float64] | None:
    if not data:
        return None
    return np.frombuffer(bytes(data), dtype="<f4").astype(np.float64)
