"""The local generator with a real causal language model: a tiny random-weight GPT-2 built here,
generating a few tokens for real, through the same run as an endpoint."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from apps.generation.chat import Sampling
from apps.generation.local import LocalModel, cut_at_next_turn
from apps.generation.models import GenerationOutput
from apps.generation.services import endpoint_save, generation_run_start
from apps.studies.models import Item
from apps.studies.services import study_create
from tests.generation.helpers import make_set, single

SENTENCES = [
    "Why did the programmer quit his job? Because he did not get arrays.",
    "My cat thinks the keyboard is a warm bed with buttons.",
    "程序员为什么总是分不清万圣节和圣诞节？因为 Oct 31 等于 Dec 25。",
    "猫觉得键盘是一张会发光的床。",
    "system: user: assistant: joke funny explain why",
]


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(SENTENCES * 5, vocab_size=400, special_tokens=["<|endoftext|>"])
    tokenizer = GPT2TokenizerFast(tokenizer_object=bpe._tokenizer)
    tokenizer.eos_token = "<|endoftext|>"
    tokenizer.pad_token = "<|endoftext|>"
    config = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=2,
        n_positions=512,
        vocab_size=len(tokenizer),
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_local_model_generates_tokens_reproducibly_from_a_seed(tiny_gpt2: Path) -> None:
    model = LocalModel(model_path=str(tiny_gpt2))
    messages = [{"role": "user", "content": "Tell a joke about cats."}]
    first = model.complete(messages, Sampling(1.1, 0.9, 8, seed=42))
    again = model.complete(messages, Sampling(1.1, 0.9, 8, seed=42))
    assert first.completion_tokens is not None
    assert 1 <= first.completion_tokens <= 8
    assert first.prompt_tokens is not None
    assert first.prompt_tokens > 0
    assert first.finish_reason in {"stop", "length"}
    assert (first.text, first.completion_tokens) == (again.text, again.completion_tokens)
    other = [model.complete(messages, Sampling(1.1, 0.9, 8, seed=s)).text for s in range(5)]
    assert len(set(other)) > 1  # sampling, not a fixed answer


@pytest.mark.django_db
def test_a_run_on_the_local_model_lands_candidates(
    tiny_gpt2: Path, settings: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    settings.GENERATION_LOCAL_MODEL_PATH = str(tiny_gpt2)
    study = study_create(slug="local", rubric_slug="humor")
    prompts = make_set(study, single("p1", "cats"), single("p2", "猫", lang="zh", topic="猫"))
    local = endpoint_save(study=study, values={"name": "tiny-gpt2", "kind": "local"})
    with django_capture_on_commit_callbacks(execute=True):
        run = generation_run_start(
            study=study,
            prompt_set_ids=[prompts.pk],
            endpoint_ids=[local.pk],
            max_tokens=6,
            seed=3,
            explain=True,
        )
    outputs = list(run.outputs.select_related("item"))
    assert len(outputs) == 2
    for output in outputs:
        assert output.status in {GenerationOutput.Status.DONE, GenerationOutput.Status.INTERCEPTED}
        assert output.completion_tokens is not None
        assert 1 <= output.completion_tokens <= 6
        assert output.item is not None
        assert output.item.stage in {Item.Stage.CANDIDATE, Item.Stage.HELD}
        assert output.item.generation["kind"] == "local"
        assert output.item.generation["seed"] == 3


@pytest.mark.django_db
def test_by_default_the_local_generator_is_the_text_models_causal_lm(
    tiny_gpt2: Path, settings: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    from apps.textmodels.registry import causal_lm_info

    # No folder of its own: the generator runs the causal LM screening uses.
    settings.GENERATION_LOCAL_MODEL_PATH = ""
    settings.SURPRISE_MODEL_PATH = str(tiny_gpt2)
    study = study_create(slug="shared", rubric_slug="humor")
    prompts = make_set(study, single("p1", "cats"))
    local = endpoint_save(study=study, values={"name": "shared-lm", "kind": "local"})
    with django_capture_on_commit_callbacks(execute=True):
        run = generation_run_start(
            study=study,
            prompt_set_ids=[prompts.pk],
            endpoint_ids=[local.pk],
            max_tokens=5,
            seed=1,
            explain=False,
        )
    output = run.outputs.select_related("item").get()
    assert output.completion_tokens is not None
    assert 1 <= output.completion_tokens <= 5
    assert output.item is not None
    assert output.item.generation["model"] == causal_lm_info().label


def test_a_plain_models_answer_ends_where_it_starts_writing_the_next_turn() -> None:
    assert cut_at_next_turn("A cat joke.\nuser: another one\nassistant: no") == (
        "A cat joke.",
        True,
    )
    assert cut_at_next_turn("Line one.\nLine two, no role.") == (
        "Line one.\nLine two, no role.",
        False,
    )
    assert cut_at_next_turn("笑话。\n User : 再来") == ("笑话。", True)


def test_a_folder_of_its_own_loads_through_the_text_models_registry_once_per_process(
    tiny_gpt2: Path, settings: Any
) -> None:
    """GENERATION_LOCAL_MODEL_PATH names a folder: the model is the one the text models'
    registry loads and caches for that folder (screening pointed at it gets the same copy)."""
    from apps.textmodels.registry import causal_lm, causal_lm_info_at

    settings.GENERATION_LOCAL_MODEL_PATH = str(tiny_gpt2)
    shared = causal_lm(causal_lm_info_at(str(tiny_gpt2)))
    model = LocalModel(model_path=str(tiny_gpt2))
    reply = model.complete([{"role": "user", "content": "cats"}], Sampling(1.0, 1.0, 3, seed=1))
    assert reply.completion_tokens is not None
    from apps.generation import local

    tokenizer, loaded = local._load(str(tiny_gpt2))
    assert loaded is shared.model
    assert tokenizer is shared.tokenizer


def test_a_missing_folder_is_a_clear_failure_not_a_crash(tmp_path: Path) -> None:
    from apps.generation.chat import CallFailed

    model = LocalModel(model_path=str(tmp_path / "nowhere"))
    with pytest.raises(CallFailed, match="no model folder at"):
        model.complete([{"role": "user", "content": "cats"}], Sampling(1.0, 1.0, 3, seed=1))
