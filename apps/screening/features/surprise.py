"""Surprise: how much harder the punchline is to predict than the setup, for a causal LM.

surprise = mean NLL of the punchline's tokens - mean NLL of the setup's tokens, in nats, where
each token's NLL is -log p(token | every token before it) from one forward pass over the whole
sequence (setup, then punchline; see `split.py` for where one ends). The sequence's first token
has no context and is not counted. A positive value: the ending surprises the model more than
the opening did.

Which tokens belong to the punchline: with a character boundary (a last sentence, a reply, a
scenario's response), every token that ends after the boundary (a token straddling it counts
as the punchline's); for a one-sentence text, the last 30% of the model's own tokens
(`split.tail_count`). Special tokens (BOS, EOS) are never counted. A sequence longer than the
model's context keeps its end: the setup loses its first tokens.

Missing, with the reason: no model configured, the item's language not in the model's
languages, or too few tokens (at least one scored token on each side is needed).
The model (`SURPRISE_MODEL_PATH`, a transformers directory with a fast tokenizer) is loaded
once per process from local files only.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apps.screening.features import FeatureValue, language_covered
from apps.screening.features.split import tail_count

# Padded tokens per forward pass: the logits alone are batch x length x vocabulary floats.
BATCH_TOKENS = 2048
MAX_BATCH_ITEMS = 32


@dataclass(frozen=True)
class _Prepared:
    ids: list[int]
    setup: list[int]  # positions whose NLL is the setup's
    punchline: list[int]


@functools.cache
def load_model(model_path: str, threads: int) -> tuple[Any, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    if not tokenizer.is_fast:
        raise ValueError(f"{model_path}: surprisal needs a fast tokenizer (tokenizer.json)")
    model = AutoModelForCausalLM.from_pretrained(
        model_path, local_files_only=True, dtype=torch.float32
    )
    model.eval()
    return tokenizer, model


def _context_length(tokenizer: Any, model: Any) -> int:
    config = model.config
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 1:
            return value
    return min(int(tokenizer.model_max_length), 4096)


def _prepare(
    tokenizer: Any, special: set[int], text: str, boundary: int | None, context: int
) -> _Prepared | str:
    encoded = tokenizer(text, add_special_tokens=True, return_offsets_mapping=True)
    ids: list[int] = list(encoded["input_ids"])
    offsets: list[tuple[int, int]] = [tuple(o) for o in encoded["offset_mapping"]]
    text_positions = [
        p for p, (start, end) in enumerate(offsets) if end > start and ids[p] not in special
    ]
    if boundary is None:
        k = tail_count(len(text_positions))
        if k == 0:
            return "too few tokens to split into setup and punchline"
        punch_start = text_positions[-k]
    else:
        after = [p for p in text_positions if offsets[p][1] > boundary]
        if not after:
            return "too few tokens: the punchline has none"
        punch_start = after[0]
    cut = max(0, len(ids) - context)
    if cut >= punch_start:
        return "the punchline is longer than the language model's context"
    ids = ids[cut:]
    setup = [p - cut for p in text_positions if cut < p < punch_start]
    punchline = [p - cut for p in text_positions if p >= punch_start]
    if not setup:
        return "too few tokens: the setup has none that the model can score"
    return _Prepared(ids=ids, setup=setup, punchline=punchline)


def _batches(prepared: list[tuple[int, _Prepared]]) -> list[list[tuple[int, _Prepared]]]:
    ordered = sorted(prepared, key=lambda pair: len(pair[1].ids))
    batches: list[list[tuple[int, _Prepared]]] = []
    current: list[tuple[int, _Prepared]] = []
    for pair in ordered:
        longest = len(pair[1].ids)  # sorted: the newcomer is the longest
        if current and (
            (len(current) + 1) * longest > BATCH_TOKENS or len(current) >= MAX_BATCH_ITEMS
        ):
            batches.append(current)
            current = []
        current.append(pair)
    if current:
        batches.append(current)
    return batches


def _token_nll(model: Any, batch: list[_Prepared], pad_id: int) -> Any:
    """NLL of every token given the ones before it: row b, column t-1 is token t's."""
    import torch

    length = max(len(p.ids) for p in batch)
    ids = torch.full((len(batch), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), length), dtype=torch.long)
    for row, p in enumerate(batch):
        # Right padding: the real tokens keep positions 0..n-1, and a causal model never
        # looks ahead at the padding.
        ids[row, : len(p.ids)] = torch.tensor(p.ids, dtype=torch.long)
        mask[row, : len(p.ids)] = 1
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]),
            ids[:, 1:].reshape(-1),
            reduction="none",
        )
    return nll.reshape(len(batch), length - 1).numpy()


def surprise_scores(
    texts: Sequence[str],
    boundaries: Sequence[int | None],
    languages: Sequence[str],
    *,
    model_path: str,
    model_languages: Sequence[str],
    threads: int = 1,
) -> list[FeatureValue]:
    """Surprisal jump (nats) of each text's punchline over its setup, or why it is missing."""
    if not len(texts) == len(boundaries) == len(languages):
        raise ValueError("texts, boundaries and languages must have the same length")
    if not model_path:
        return [FeatureValue(None, "no language model configured (SURPRISE_MODEL_PATH)")] * len(
            texts
        )
    results: list[FeatureValue | None] = [None] * len(texts)
    wanted: list[int] = []
    for i, language in enumerate(languages):
        if language_covered(language, model_languages):
            wanted.append(i)
        else:
            covered = ", ".join(model_languages) or "no language"
            results[i] = FeatureValue(
                None,
                f"the language model {Path(model_path).name} covers {covered}, "
                f"not {language or 'an unknown language'}",
            )
    if wanted:
        tokenizer, model = load_model(model_path, threads)
        context = _context_length(tokenizer, model)
        pad_id = tokenizer.pad_token_id
        if pad_id is None:
            pad_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        special = set(tokenizer.all_special_ids)
        prepared: list[tuple[int, _Prepared]] = []
        for i in wanted:
            outcome = _prepare(tokenizer, special, texts[i], boundaries[i], context)
            if isinstance(outcome, str):
                results[i] = FeatureValue(None, outcome)
            else:
                prepared.append((i, outcome))
        for batch in _batches(prepared):
            nll = _token_nll(model, [p for _, p in batch], pad_id)
            for row, (i, p) in enumerate(batch):
                setup = float(nll[row, [t - 1 for t in p.setup]].mean())
                punchline = float(nll[row, [t - 1 for t in p.punchline]].mean())
                results[i] = FeatureValue(punchline - setup)
    return [r for r in results if r is not None]
