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

How: the model runs over the whole sequence once; the output projection (for Gemma's 262k-token
vocabulary the largest single piece of work per token, and batch x length x vocabulary floats of
memory if done at once) is applied only to the positions that are scored, a few hundred at a time,
and each token's NLL is logsumexp(logits) - logit(token), the same number log_softmax gives.

Missing, with the reason: no model configured, the item's language not in the model's
languages, or too few tokens (at least one scored token on each side is needed).
The model is the one `apps.textmodels.registry.causal_lm()` loads (`SURPRISE_MODEL_PATH`; by
default the prepared Gemma 3 270M), once per process from local files only; it needs a fast
tokenizer (with offsets).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apps.screening.features import FeatureValue
from apps.screening.features.split import tail_count
from apps.textmodels.registry import ModelInfo, causal_lm, causal_lm_info

# Padded tokens per forward pass: the logits alone are batch x length x vocabulary floats.
BATCH_TOKENS = 2048
MAX_BATCH_ITEMS = 32
# Scored positions per output projection: HEAD_CHUNK x vocabulary floats at a time (128 MB for
# Gemma's 262k tokens).
HEAD_CHUNK = 128


@dataclass(frozen=True)
class _Prepared:
    ids: list[int]
    setup: list[int]  # positions whose NLL is the setup's
    punchline: list[int]

    def key(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return tuple(self.ids), tuple(self.setup)


# The surprisal jump of a tokenised text, per loaded model: a text screened again (a
# calibration recomputes the rated items' features, a re-run after an import, a second study
# with the same items) costs a dictionary lookup instead of a forward pass. Keyed by the model
# object itself, so another model (or the same file loaded with other settings) never shares
# an entry, and an unloaded model's entries go with it.
_JUMPS: weakref.WeakKeyDictionary[Any, dict[tuple[tuple[int, ...], tuple[int, ...]], float]] = (
    weakref.WeakKeyDictionary()
)
_JUMPS_PER_MODEL = 200_000


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


def _token_nll(model: Any, batch: list[_Prepared], pad_id: int) -> list[Any]:
    """Per item of `batch`, the NLL of its scored tokens: position t's token given those before
    it, in the order of `setup + punchline`."""
    import torch

    length = max(len(p.ids) for p in batch)
    ids = torch.full((len(batch), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), length), dtype=torch.long)
    for row, p in enumerate(batch):
        # Right padding: the real tokens keep positions 0..n-1, and a causal model never
        # looks ahead at the padding.
        ids[row, : len(p.ids)] = torch.tensor(p.ids, dtype=torch.long)
        mask[row, : len(p.ids)] = 1
    rows = [row for row, p in enumerate(batch) for _ in range(len(p.setup) + len(p.punchline))]
    positions = [t for p in batch for t in (*p.setup, *p.punchline)]
    softcap = getattr(model.config, "final_logit_softcapping", None) or getattr(
        getattr(model.config, "text_config", None), "final_logit_softcapping", None
    )
    head = model.get_output_embeddings()
    with torch.inference_mode():
        hidden = model.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
        row_index = torch.tensor(rows, dtype=torch.long)
        position_index = torch.tensor(positions, dtype=torch.long)
        # The hidden state before token t predicts it.
        states = hidden[row_index, position_index - 1]
        targets = ids[row_index, position_index]
        pieces = []
        for start in range(0, len(positions), HEAD_CHUNK):
            logits = head(states[start : start + HEAD_CHUNK]).float()
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            chosen = logits.gather(1, targets[start : start + HEAD_CHUNK, None])[:, 0]
            pieces.append(torch.logsumexp(logits, dim=-1) - chosen)
        nll = torch.cat(pieces).numpy()
    out = []
    offset = 0
    for p in batch:
        n = len(p.setup) + len(p.punchline)
        out.append(nll[offset : offset + n])
        offset += n
    return out


def surprise_scores(
    texts: Sequence[str],
    boundaries: Sequence[int | None],
    languages: Sequence[str],
    *,
    model: ModelInfo | None = None,
) -> list[FeatureValue]:
    """Surprisal jump (nats) of each text's punchline over its setup, or why it is missing.

    `model` defaults to the configured causal language model (`causal_lm_info()`)."""
    if not len(texts) == len(boundaries) == len(languages):
        raise ValueError("texts, boundaries and languages must have the same length")
    info = model or causal_lm_info()
    if info.unavailable:
        return [FeatureValue(None, info.unavailable[:200])] * len(texts)
    results: list[FeatureValue | None] = [None] * len(texts)
    wanted: list[int] = []
    for i, language in enumerate(languages):
        if info.covers(language):
            wanted.append(i)
        else:
            results[i] = FeatureValue(None, info.not_covered(language))
    if wanted:
        loaded = causal_lm(info)
        tokenizer, lm = loaded.tokenizer, loaded.model
        if not tokenizer.is_fast:
            raise ValueError(f"{info.path}: surprisal needs a fast tokenizer (tokenizer.json)")
        context = _context_length(tokenizer, lm)
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
        known = _JUMPS.setdefault(lm, {})
        if len(known) > _JUMPS_PER_MODEL:
            known.clear()
        todo = []
        for i, p in prepared:
            jump = known.get(p.key())
            if jump is None:
                todo.append((i, p))
            else:
                results[i] = FeatureValue(jump)
        for batch in _batches(todo):
            for (i, p), nll in zip(
                batch, _token_nll(lm, [p for _, p in batch], pad_id), strict=True
            ):
                setup = float(nll[: len(p.setup)].mean())
                punchline = float(nll[len(p.setup) :].mean())
                known[p.key()] = punchline - setup
                results[i] = FeatureValue(punchline - setup)
    return [r for r in results if r is not None]


def mean_surprisal_scores(
    texts: Sequence[str], languages: Sequence[str], *, model: ModelInfo | None = None
) -> list[FeatureValue]:
    """Mean per-token surprisal (nats) of each whole text, or why it is missing:

        mean over t >= 1 of -log p(token_t | token_0 .. token_t-1)

    over the text's own tokens (special tokens never counted; a BOS token, when the tokenizer
    adds one, is context only). The yardstick behind surprise: a coherent sentence reads as
    more predictable than the same words shuffled."""
    if len(texts) != len(languages):
        raise ValueError("texts and languages must have the same length")
    info = model or causal_lm_info()
    if info.unavailable:
        return [FeatureValue(None, info.unavailable[:200])] * len(texts)
    results: list[FeatureValue | None] = [None] * len(texts)
    prepared: list[tuple[int, _Prepared]] = []
    wanted = [i for i, language in enumerate(languages) if info.covers(language)]
    for i, language in enumerate(languages):
        if i not in wanted:
            results[i] = FeatureValue(None, info.not_covered(language))
    if wanted:
        loaded = causal_lm(info)
        tokenizer, lm = loaded.tokenizer, loaded.model
        context = _context_length(tokenizer, lm)
        special = set(tokenizer.all_special_ids)
        pad_id = tokenizer.pad_token_id
        if pad_id is None:
            pad_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        for i in wanted:
            ids = list(tokenizer(texts[i], add_special_tokens=True)["input_ids"])[-context:]
            scored = [p for p in range(1, len(ids)) if ids[p] not in special]
            if not scored:
                results[i] = FeatureValue(None, "too few tokens")
            else:
                prepared.append((i, _Prepared(ids=ids, setup=[], punchline=scored)))
        for batch in _batches(prepared):
            for (i, _), nll in zip(
                batch, _token_nll(lm, [p for _, p in batch], pad_id), strict=True
            ):
                results[i] = FeatureValue(float(nll.mean()))
    return [r for r in results if r is not None]
