"""Automatic L1 metrics of generated articles, per item (pure: no Django).

Notation, for one text cut as `apps.content.text` describes: n words w_1..w_n; k sentences
with L_1..L_k words; m paragraphs with P_1..P_m sentences; W_i the set of lowercased
non-stop words of sentence i; CV(x) = σ(x)/μ(x), σ the population standard deviation
(ddof = 0: the text is the whole population, not a sample of it).

Fluency (regular sentence length and paragraph structure):

- `sentence_length_cv` = CV(L_1..L_k), in [0, √(k−1)] (0 = all sentences the same length).
  Missing with fewer than two sentences.
- `paragraph_cv` = CV(P_1..P_m), in [0, √(m−1)]. Missing with fewer than two paragraphs.
- `fluency` = mean of 1/(1 + cv) over the two CVs above that exist, in (0, 1]; 1 = perfectly
  regular. Missing when neither exists (one sentence).

Informativeness (entities and numbers, little repetition):

- `entity_density` = entities / n, in [0, 1]. English: a word with two capital letters or more
  and none in lower case (an acronym: "NASA", "U.S."), or a capitalised word that is not the
  first of its sentence (the pronoun "I" and its contractions excepted). Chinese: a word that
  jieba.posseg tags as a person (nr, nrt, nrfg), place (ns), organisation (nt) or other proper
  noun (nz), and a Latin word starting with a capital letter. Missing for other languages
  (capitalisation means something else in German) and for a text without words.
- `number_density` = numbers / n, in [0, 1]. A number is a word of digits with separators and
  an optional percent sign or date unit ("3.5%", "1,200", "2026", "2026年"), or a run of Chinese numerals with an
  optional 百分之 before it, a decimal part after 点 and a date unit 年/月/日/号 after it
  ("百分之三十", "一九四九年", "三点五"); "万一" (in case) is not a number. Missing without
  words.
- `adjacent_redundancy` = mean over i = 1..k−1 of Jaccard(W_i, W_i+1) = |W_i ∩ W_i+1| /
  |W_i ∪ W_i+1| (0 when both sets are empty), in [0, 1]. Stop words are left out because two
  sentences share "the" and "的" whatever they say (a language without a stop-word list keeps
  all its words). Missing with fewer than two sentences.
- `informativeness` = mean of min(1, (entity_density + number_density) / INFO_DENSITY_REF)
  and 1 − adjacent_redundancy, over those that exist, in [0, 1]. INFO_DENSITY_REF = 0.2: one
  entity or number every five words counts as fully dense (news prose runs at 0.1-0.2).

Originality (varied wording, content words, new meaning):

- `distinct_2` = distinct bigrams / bigrams, in [0, 1]; bigrams are pairs of adjacent
  lowercased words within a sentence (none across a sentence boundary). It falls with length,
  so compare texts of similar length. Missing without a single bigram.
- `stopword_ratio` = stop words / n, in [0, 1] (lists in `apps.content.stopwords`). Missing
  without words or for a language without a list.
- `semantic_novelty` = 1 − max_j cos(e, e_j) over the other items j of the corpus in the same
  language, clipped from [0, 2] to [0, 1] (a text no closer to any other than orthogonal is
  fully novel). e is the text's sentence embedding (the caller's choice; the service uses
  the normalised mean of its paragraphs' embeddings). Missing for a language the embedding
  model does not cover (the reason names the model and the language), and when the corpus
  holds no other item in that language.
- `originality` = mean of distinct_2, 1 − stopword_ratio and semantic_novelty over those that
  exist, in [0, 1].

A dimension score averages the components that exist, so a one-paragraph text still has a
fluency and a Chinese text (no embedding) an originality; which components went into it is
visible in `missing`. A text empty after stripping has every metric missing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean, pstdev

import numpy as np
from numpy.typing import NDArray

from apps.content import text as text_tools
from apps.content.stopwords import stopwords_for

# The three dimension scores, each in [0, 1].
DIMENSION_NAMES: tuple[str, ...] = ("fluency", "informativeness", "originality")

# Every metric stored in ContentMetrics.values (or listed in .missing with a reason).
METRIC_NAMES: tuple[str, ...] = (
    "sentence_length_cv",
    "paragraph_cv",
    "fluency",
    "entity_density",
    "number_density",
    "adjacent_redundancy",
    "informativeness",
    "distinct_2",
    "stopword_ratio",
    "semantic_novelty",
    "originality",
)

INFO_DENSITY_REF = 0.2

_ARABIC_NUMBER = re.compile(r"[+-]?\d+(?:[.,]\d+)*(?:[%％]|[年月日号])?")
_CHINESE_NUMBER = re.compile(
    r"(?:百分之)?[零〇一二两三四五六七八九十百千万亿]+(?:点[零〇一二两三四五六七八九]+)?[年月日号]?"
)
_NOT_NUMBERS = frozenset({"万一"})
_CHINESE_ENTITY_TAGS = ("nr", "ns", "nt", "nz")
_ENTITY_LANGUAGES = frozenset({"en", "zh"})

EMPTY = "the text is empty"
NO_WORDS = "the text has no words"
ONE_SENTENCE = "needs at least two sentences"
ONE_PARAGRAPH = "needs at least two paragraphs"


@dataclass
class MetricsResult:
    """The metrics of one text: {name: value}, {name: why it is missing}, how it was cut."""

    values: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    tokenizer: str = ""


def coefficient_of_variation(lengths: Sequence[int]) -> float:
    """σ/μ with the population σ; the caller ensures two values or more with a positive mean."""
    return pstdev(lengths) / fmean(lengths)


def regularity(cv: float) -> float:
    """1/(1 + cv): 1 for a perfectly regular text, towards 0 as the spread grows."""
    return 1.0 / (1.0 + cv)


def is_number(word: str) -> bool:
    if word in _NOT_NUMBERS:
        return False
    return bool(_ARABIC_NUMBER.fullmatch(word) or _CHINESE_NUMBER.fullmatch(word))


def _is_acronym(surface: str) -> bool:
    return sum(c.isupper() for c in surface) >= 2 and not any(c.islower() for c in surface)


def is_entity(word: text_tools.Word, *, language: str, sentence_initial: bool) -> bool:
    """Whether `word` names something (see the module docstring for the rule per language)."""
    if language == text_tools.CHINESE:
        if word.tag:
            return word.tag.startswith(_CHINESE_ENTITY_TAGS)
        return word.text[:1].isupper()
    if _is_acronym(word.text):
        return True
    if sentence_initial or not word.text[:1].isupper():
        return False
    return not (word.norm == "i" or word.norm.startswith(("i'", "i’")))


def jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _text_metrics(text: str, language: str) -> MetricsResult:
    lang = text_tools.primary_language(language)
    result = MetricsResult(tokenizer=text_tools.tokenizer_name(lang))
    values, missing = result.values, result.missing
    if not text.strip():
        for name in METRIC_NAMES:
            missing[name] = EMPTY
        return result
    structure = [
        [text_tools.words(sentence, lang) for sentence in paragraph]
        for paragraph in text_tools.paragraph_sentences(text)
    ]
    # Sentences without words (a paragraph of punctuation alone) do not count.
    structure = [[s for s in paragraph if s] for paragraph in structure]
    structure = [paragraph for paragraph in structure if paragraph]
    sentences = [s for paragraph in structure for s in paragraph]
    all_words = [w for s in sentences for w in s]
    n = len(all_words)
    stopwords = stopwords_for(lang)

    # Fluency.
    regular: list[float] = []
    if len(sentences) >= 2:
        values["sentence_length_cv"] = coefficient_of_variation([len(s) for s in sentences])
        regular.append(regularity(values["sentence_length_cv"]))
    else:
        missing["sentence_length_cv"] = ONE_SENTENCE if sentences else NO_WORDS
    if len(structure) >= 2:
        values["paragraph_cv"] = coefficient_of_variation([len(p) for p in structure])
        regular.append(regularity(values["paragraph_cv"]))
    else:
        missing["paragraph_cv"] = ONE_PARAGRAPH if structure else NO_WORDS
    if regular:
        values["fluency"] = fmean(regular)
    else:
        missing["fluency"] = missing["sentence_length_cv"]

    # Informativeness.
    informative: list[float] = []
    if n == 0:
        missing["entity_density"] = missing["number_density"] = NO_WORDS
    else:
        values["number_density"] = sum(is_number(w.text) for w in all_words) / n
        if lang in _ENTITY_LANGUAGES:
            entities = sum(
                is_entity(w, language=lang, sentence_initial=i == 0)
                for s in sentences
                for i, w in enumerate(s)
            )
            values["entity_density"] = entities / n
            density = values["entity_density"] + values["number_density"]
            informative.append(min(1.0, density / INFO_DENSITY_REF))
        else:
            missing["entity_density"] = f"no entity rule for the language {lang or 'unknown'}"
    if len(sentences) >= 2:
        content = [
            {w.norm for w in s if stopwords is None or w.norm not in stopwords} for s in sentences
        ]
        values["adjacent_redundancy"] = fmean(jaccard(a, b) for a, b in itertools.pairwise(content))
        informative.append(1.0 - values["adjacent_redundancy"])
    else:
        missing["adjacent_redundancy"] = ONE_SENTENCE if sentences else NO_WORDS
    if informative:
        values["informativeness"] = fmean(informative)
    else:
        missing["informativeness"] = missing["entity_density"]

    # Originality without the corpus (semantic novelty is added by `compute`).
    bigrams = [(a.norm, b.norm) for s in sentences for a, b in itertools.pairwise(s)]
    if bigrams:
        values["distinct_2"] = len(set(bigrams)) / len(bigrams)
    else:
        missing["distinct_2"] = "needs at least one sentence of two words" if n else NO_WORDS
    if n == 0:
        missing["stopword_ratio"] = NO_WORDS
    elif stopwords is None:
        missing["stopword_ratio"] = f"no stop-word list for the language {lang or 'unknown'}"
    else:
        values["stopword_ratio"] = sum(w.norm in stopwords for w in all_words) / n
    return result


def _novelty(
    embeddings: Sequence[NDArray[np.floating] | None] | None,
    languages: Sequence[str],
    *,
    embedding_model: str,
    embedding_languages: Sequence[str],
) -> list[tuple[float | None, str]]:
    langs = [text_tools.primary_language(language) for language in languages]
    covered = {text_tools.primary_language(code) for code in embedding_languages}
    if embeddings is None:
        return [(None, "no sentence embeddings were computed")] * len(langs)
    out: list[tuple[float | None, str]] = []
    unit: list[NDArray[np.float64] | None] = []
    for vector in embeddings:
        if vector is None:
            unit.append(None)
            continue
        v = np.asarray(vector, dtype=np.float64).ravel()
        norm = float(np.linalg.norm(v))
        unit.append(v / norm if norm > 0 else None)
    for i, lang in enumerate(langs):
        if lang not in covered:
            names = ", ".join(sorted(covered)) or "no language"
            out.append(
                (
                    None,
                    f"the embedding model {embedding_model or 'configured'} covers {names}, "
                    f"not {lang or 'an unknown language'}",
                )
            )
            continue
        own = unit[i]
        if own is None:
            out.append((None, "the text has no embedding"))
            continue
        others = [u for j, u in enumerate(unit) if j != i and u is not None and langs[j] == lang]
        if not others:
            out.append((None, f"the corpus has no other item in {lang} to compare with"))
            continue
        nearest = float(np.max(np.stack(others) @ own))
        out.append((float(np.clip(1.0 - nearest, 0.0, 1.0)), ""))
    return out


def compute(
    texts: Sequence[str],
    languages: Sequence[str],
    embeddings: Sequence[NDArray[np.floating] | None] | None = None,
    *,
    embedding_model: str = "",
    embedding_languages: Sequence[str] = (),
) -> list[MetricsResult]:
    """The metrics of every text of a corpus, in order.

    `embeddings[i]` is text i's sentence embedding, or None when it has none (a language the
    model does not cover, an empty text); `embeddings` None means none was computed at all.
    Semantic novelty compares each text with all the others of the same language.
    `embedding_model` and `embedding_languages` name the model and what it covers, for the
    reasons of missing novelty.
    """
    if len(texts) != len(languages) or (embeddings is not None and len(embeddings) != len(texts)):
        raise ValueError("texts, languages and embeddings must have the same length")
    results = [_text_metrics(t, language) for t, language in zip(texts, languages, strict=True)]
    novelty = _novelty(
        embeddings,
        languages,
        embedding_model=embedding_model,
        embedding_languages=embedding_languages,
    )
    for result, text, (value, reason) in zip(results, texts, novelty, strict=True):
        if not text.strip():
            continue
        if value is None:
            result.missing["semantic_novelty"] = reason
        else:
            result.values["semantic_novelty"] = value
        parts: list[float] = []
        if "distinct_2" in result.values:
            parts.append(result.values["distinct_2"])
        if "stopword_ratio" in result.values:
            parts.append(1.0 - result.values["stopword_ratio"])
        if value is not None:
            parts.append(value)
        if parts:
            result.values["originality"] = fmean(parts)
        else:
            result.missing["originality"] = result.missing.get("stopword_ratio", NO_WORDS)
    return results
