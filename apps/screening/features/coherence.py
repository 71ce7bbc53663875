"""Coherence: the cosine similarity of the setup's and the punchline's sentence embeddings.

    coherence = e(setup) · e(punchline),  e = the unit-length sentence embedding

in [-1, 1] (about 0 for unrelated sentences, near 1 for paraphrases). The setup and punchline
are those of `split.py`: for a one-sentence Chinese text, the last 30% of its characters (a run
of Latin letters or digits counting as one) against the rest.

The model is the one `apps.textmodels.registry.embedder()` loads: by default the multilingual
Universal Sentence Encoder v3 (Chinese, English and 13 more languages), or any local
sentence-transformers folder named by `EMBEDDING_MODEL_PATH`. An item whose language the model
does not cover (`EMBEDDING_MODEL_LANGUAGES`) is missing with a reason naming the model and the
language: an English-only model turns Chinese into unknown tokens, and the number it gave would
mean nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from apps.screening.features import FeatureValue
from apps.textmodels.registry import ModelInfo, embedder, embedding_info


def coherence_scores(
    setups: Sequence[str],
    punchlines: Sequence[str],
    languages: Sequence[str],
    *,
    model: ModelInfo | None = None,
) -> list[FeatureValue]:
    """Cosine similarity of each setup with its punchline, in [-1, 1], or why it is missing.

    `model` defaults to the configured embedding model (`embedding_info()`)."""
    if not len(setups) == len(punchlines) == len(languages):
        raise ValueError("setups, punchlines and languages must have the same length")
    info = model or embedding_info()
    results: list[FeatureValue | None] = [None] * len(setups)
    wanted: list[int] = []
    for i, (setup, punchline, language) in enumerate(
        zip(setups, punchlines, languages, strict=True)
    ):
        if info.unavailable:
            results[i] = FeatureValue(None, info.unavailable[:200])
        elif not info.covers(language):
            results[i] = FeatureValue(None, info.not_covered(language))
        elif not setup.strip() or not punchline.strip():
            results[i] = FeatureValue(None, "too short to split into setup and punchline")
        else:
            wanted.append(i)
    if wanted:
        # One encode over the distinct texts: dialogue contexts and scenarios are often shared
        # by the items several models wrote for the same prompt.
        texts = list(dict.fromkeys([setups[i] for i in wanted] + [punchlines[i] for i in wanted]))
        index = {text: row for row, text in enumerate(texts)}
        embeddings = embedder(info).encode(texts)
        a = embeddings[[index[setups[i]] for i in wanted]]
        b = embeddings[[index[punchlines[i]] for i in wanted]]
        cosines = np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0)
        for i, cosine in zip(wanted, cosines, strict=True):
            results[i] = FeatureValue(float(cosine))
    return [r for r in results if r is not None]
