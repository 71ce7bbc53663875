"""Cutting a text into paragraphs, sentences and words for the L1 metrics (pure, no Django).

Paragraphs are separated by blank lines (a line holding only whitespace counts as blank); a
single line break stays inside the paragraph. Sentences never cross a paragraph boundary.

Sentences end:

- at 。！？；anywhere, and at … / …… before Chinese text (no space needed after them; ；counts because Chinese
  writing joins full clauses with it where English would start a new sentence);
- at ! ? and … followed by a space, the end of the paragraph or a CJK character, and at . followed
  by a space or the end. A period inside a token ("3.5", "example.com") never ends a sentence.
- Closing quotes and brackets after the mark stay with the sentence they close. A sentence
  goes on when the next word starts in lower case ("Stop!" he said. -> one sentence), and a
  period after a title or Latin abbreviation ("Dr.", "e.g.") or a single capital initial
  ("J. Smith") never ends one. After a dotted acronym ("U.S.") the capital-letter rule
  decides: "the U.S. economy" stays one sentence, "in the U.S. Prices rose" becomes two (and
  so, wrongly but rarely, does "the U.S. Army"). So does it after "etc.", "Inc." or "No.",
  which end sentences as often as they sit inside one.
- A piece with no letter or digit at all ("...", a lone quote) joins the sentence before it.

Words:

- Every language: a number is one word: digits with decimal or thousands separators and an
  optional percent sign ("3.5%", "1,200", "2026"); a dotted acronym is one word ("u.s.");
  otherwise a word is a run of letters and digits, with inner apostrophes ("don't").
  Punctuation is not a word.
- Chinese: runs of CJK characters are segmented by jieba's precise mode with HMM off
  (`jieba.posseg.lcut(run, HMM=False)`, which gives the same words as `jieba.lcut(run,
  HMM=False)` plus their part-of-speech tags). Without the HMM, jieba only returns words of its
  dictionary or single characters, so the words of a text do not depend on what the Viterbi
  step guesses about unknown words; the price is that names missing from the dictionary come
  out as single characters (张伟 -> 张 / 伟). Latin words and numbers inside Chinese text are
  cut by the regex before jieba sees them, so "3.5" stays one number (jieba alone would cut it
  into 3 / . / 5), and a date unit after digits stays with them ("2026年" is one word, like
  the "一九四九年" of jieba's dictionary).

Each word keeps its surface form (for capitalisation), its lowercased form (for counting) and,
in Chinese, jieba's tag (for entities).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

CHINESE = "zh"

_CLOSERS = "\"'”’」』）)]】》〉"
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CHARS}]")
# A run of end marks with the closing quotes or brackets after it. "..." is an ellipsis.
_END = re.compile(rf"(?:[。！？；]+[!?！？。；…]*|…+|[.!?]+…*)[{re.escape(_CLOSERS)}]*")
_UNCONDITIONAL = "。！？；"
# Abbreviations that (almost) never end a sentence: titles before a name, Latin before an example.
_ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "vs",
        "mt",
        "gen",
        "gov",
        "sen",
        "rep",
        "fig",
        "e.g",
        "i.e",
        "cf",
        "approx",
    }
)
_HAS_WORD = re.compile(r"[^\W_]")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_NUMBER = r"\d+(?:[.,]\d+)*[%％]?"
_NUMBER_CHINESE = r"\d+(?:[.,]\d+)*(?:[%％]|[年月日号])?"
_ACRONYM = r"[A-Za-z](?:\.[A-Za-z])+\.?"
_WORDS = re.compile(rf"{_NUMBER}|{_ACRONYM}|[^\W_{_CJK_CHARS}]+(?:['’][^\W_{_CJK_CHARS}]+)*")
# In Chinese a date unit sticks to its number ("2026年"), as jieba keeps "一九四九年" whole.
_WORDS_CHINESE = re.compile(
    rf"(?P<latin>{_NUMBER_CHINESE}|{_ACRONYM}|[^\W_{_CJK_CHARS}]+(?:['’][^\W_{_CJK_CHARS}]+)*)"
    rf"|(?P<cjk>[{_CJK_CHARS}]+)"
)


@dataclass(frozen=True)
class Word:
    """One word: as written, lowercased, and jieba's part-of-speech tag ("" outside Chinese)."""

    text: str
    norm: str
    tag: str = ""


def primary_language(language: str) -> str:
    """'zh-Hans' -> 'zh', 'EN' -> 'en'."""
    return language.strip().replace("_", "-").split("-")[0].lower()


def paragraphs(text: str) -> list[str]:
    """The paragraphs of `text`, stripped, empty ones dropped."""
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text.strip()) if p.strip()]


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    marks = match.group(0).rstrip(_CLOSERS)
    rest = text[match.end() :]
    if not rest.strip():
        return True
    following = rest.lstrip()
    # Chinese marks end a sentence wherever they are, an ellipsis when Chinese text follows.
    if any(mark in _UNCONDITIONAL for mark in marks) or (
        marks.startswith("…") and _CJK.match(following)
    ):
        return True
    spaced = rest[:1].isspace()
    if marks == ".":
        if not spaced:
            return False  # 3.5, example.com
        word = re.search(r"([\w.]+)$", text[: match.start()])
        before = word.group(1) if word else ""
        if before.lower() in _ABBREVIATIONS or (len(before) == 1 and before.isupper()):
            return False
    elif not spaced and not _CJK.match(following):
        return False
    # "Stop!" he said. / Well... maybe: the sentence goes on in lower case.
    return not following[:1].islower()


def _paragraph_sentences(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _END.finditer(text):
        if match.end() <= start or not _ends_sentence(text, match):
            continue
        pieces.append(text[start : match.end()])
        start = match.end()
    pieces.append(text[start:])
    sentences: list[str] = []
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if sentences and (not _HAS_WORD.search(piece) or not _HAS_WORD.search(sentences[-1])):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def sentences(text: str) -> list[str]:
    """The sentences of `text`, paragraph by paragraph."""
    return [s for paragraph in paragraphs(text) for s in _paragraph_sentences(paragraph)]


def paragraph_sentences(text: str) -> list[list[str]]:
    """The sentences of each paragraph of `text`."""
    return [_paragraph_sentences(paragraph) for paragraph in paragraphs(text)]


@functools.cache
def _jieba_posseg() -> Any:
    import jieba
    import jieba.posseg

    # jieba prints its dictionary loading to stderr at INFO level.
    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.posseg


def jieba_version() -> str:
    try:
        return version("jieba")
    except PackageNotFoundError:  # pragma: no cover - jieba is a dependency
        return "unknown"


def words(text: str, language: str) -> list[Word]:
    """The words of `text` (a sentence or more) in reading order; see the module docstring."""
    if primary_language(language) != CHINESE:
        return [Word(m.group(0), m.group(0).lower()) for m in _WORDS.finditer(text)]
    posseg = _jieba_posseg()
    result: list[Word] = []
    for match in _WORDS_CHINESE.finditer(text):
        if match.group("latin"):
            result.append(Word(match.group(0), match.group(0).lower()))
            continue
        for pair in posseg.lcut(match.group(0), HMM=False):
            result.append(Word(pair.word, pair.word.lower(), pair.flag))
    return result


def tokenizer_name(language: str) -> str:
    """How ContentMetrics.tokenizer names the cutting of a text in `language`."""
    if primary_language(language) == CHINESE:
        return f"jieba {jieba_version()} (precise, HMM off); sentences 。！？；…"
    return "regex words (letters, digits, apostrophes); sentences .!?…"
