"""The local generator: a causal language model run in the worker process.

It answers the same chat messages as an endpoint (the `chat.Generator` interface). The model
comes from the server's settings only, never from a page or a run: the text models' causal LM
(apps.textmodels, shared with screening), or the folder GENERATION_LOCAL_MODEL_PATH names,
loaded once per process from local files by the same registry. A tokenizer with a chat template
formats the messages with it; one without (a plain causal LM) gets "role: text" lines and an
"assistant:" cue. Sampling uses the run's temperature and top_p, and the seed through a
dedicated torch generator, so the same seed gives the same tokens on the same machine.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.generation.chat import CallFailed, Reply, Sampling


def _load(model_path: str) -> tuple[Any, Any]:
    """A local folder's model through the text models' loader and per-process cache (one copy
    per worker whoever asks: generation, screening or content)."""
    from apps.textmodels.registry import ModelUnavailable, causal_lm, causal_lm_info_at

    try:
        lm = causal_lm(causal_lm_info_at(model_path))
    except ModelUnavailable as exc:
        raise OSError(str(exc)) from None
    return lm.tokenizer, lm.model


def plain_prompt(messages: list[dict[str, str]]) -> str:
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n".join([*lines, "assistant:"])


_NEXT_TURN = re.compile(r"\n\s*(user|assistant|system)\s*:", re.IGNORECASE)


def cut_at_next_turn(text: str) -> tuple[str, bool]:
    """A plain causal LM prompted with "role: text" lines goes on to write the next turns
    itself; its answer ends where it starts one. (text, whether it was cut)."""
    match = _NEXT_TURN.search(text)
    return (text[: match.start()], True) if match else (text, False)


@dataclass(frozen=True)
class LocalModel:
    model_path: str
    name: str = ""
    # Gives (tokenizer, model): the text models' configured causal LM; None loads `model_path`
    # (through the same registry).
    loader: Callable[[], tuple[Any, Any]] | None = None

    def complete(self, messages: list[dict[str, str]], sampling: Sampling) -> Reply:
        import torch

        started = time.monotonic()
        try:
            if self.loader is not None:
                tokenizer, model = self.loader()
            else:
                tokenizer, model = _load(self.model_path)
        except (OSError, ValueError) as exc:
            raise CallFailed(f"the local model cannot be loaded: {exc}", retryable=False) from None
        if getattr(tokenizer, "chat_template", None):
            ids = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )["input_ids"]
        else:
            ids = tokenizer(plain_prompt(messages), return_tensors="pt")["input_ids"]
        limit = _context_length(model) - sampling.max_tokens
        if limit < 1:
            raise CallFailed("max_tokens is larger than the local model's context", retryable=False)
        ids = ids[:, -limit:]
        generator = torch.Generator()
        generator.manual_seed(sampling.seed if sampling.seed is not None else torch.seed())
        eos = tokenizer.eos_token_id
        try:
            with torch.no_grad():
                out = _sample(
                    model,
                    ids,
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    max_new_tokens=sampling.max_tokens,
                    eos=eos,
                    generator=generator,
                )
        except (RuntimeError, ValueError) as exc:
            raise CallFailed(f"the local model failed: {exc}", retryable=False) from None
        new = out[0, ids.shape[1] :].tolist()
        stopped = bool(eos is not None and new and new[-1] == eos)
        text_ids = new[:-1] if stopped else new
        text = tokenizer.decode(text_ids, skip_special_tokens=True)
        if not getattr(tokenizer, "chat_template", None):
            text, cut = cut_at_next_turn(text)
            stopped = stopped or cut
        return Reply(
            text=text.strip(),
            finish_reason="stop" if stopped else "length",
            refusal="",
            prompt_tokens=int(ids.shape[1]),
            completion_tokens=len(new),
            latency_ms=round((time.monotonic() - started) * 1000.0, 1),
        )


def _context_length(model: Any) -> int:
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(model.config, name, None)
        if isinstance(value, int) and value > 1:
            return value
    return 2048


def _sample(
    model: Any,
    ids: Any,
    *,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    eos: int | None,
    generator: Any,
) -> Any:
    """Nucleus sampling one token at a time with the key-value cache. Written out rather than
    `model.generate`, so the seeded generator is the only source of randomness."""
    import torch

    # transformers renamed past_key_values to cache; take whichever this model's forward has.
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    past = None
    sequence = ids
    step_input = ids
    for _ in range(max_new_tokens):
        output = model(input_ids=step_input, use_cache=True, **{name: past})
        past = getattr(output, name)
        logits = output.logits[:, -1, :].float()
        if temperature <= 0:
            token = logits.argmax(dim=-1, keepdim=True)
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            sorted_probs, order = torch.sort(probs, descending=True)
            cumulative = torch.cumsum(sorted_probs, dim=-1)
            # Keep the smallest set whose mass reaches top_p (the first token always stays).
            sorted_probs[(cumulative - sorted_probs) > top_p] = 0.0
            choice = torch.multinomial(sorted_probs / sorted_probs.sum(), 1, generator=generator)
            token = order.gather(-1, choice)
        sequence = torch.cat([sequence, token], dim=-1)
        step_input = token
        if eos is not None and int(token[0, 0]) == eos:
            break
    return sequence
