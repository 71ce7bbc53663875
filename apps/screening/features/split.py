"""Where an item's setup ends and its punchline begins.

The rule, applied in this order:

- a multi-turn item: the dialogue turns before it (their texts, one turn per line) are the
  setup, the item's text (the reply) is the punchline;
- a scenario item: the scenario is the setup, the item's text the punchline;
- any other item (or one whose context or scenario is empty) whose text has two sentences or
  more: the last sentence is the punchline, everything before it the setup;
- a text of one sentence: its last 30% of tokens are the punchline (`tail_count`: 30% rounded
  half up, at least one, and at least one token left for the setup). Which tokens depends on the
  feature: surprisal counts the language model's own tokens (the split is left to
  `surprise.py`, marked by `Split.boundary is None`); coherence counts words (runs of
  non-space characters) in spaced languages, and characters in Chinese and Japanese, where a
  run of Latin letters or digits counts as one and punctuation counts as none; an opening
  quote or bracket just before the punchline's first unit goes with the punchline.

Sentences end at 。！？ (no space needed after them), at ! and ? followed by a space, the end or a
CJK character, and at . followed by a space or the end. Closing quotes and brackets after the
mark stay with the sentence they close ("Stop!" he said. -> one sentence, since a lower-case
word goes on after the quote). A period after a common title or initial ("Dr.", "J.") and an
ellipsis followed by a lower-case word do not end a sentence. A Chinese quotation that ends in
its own mark is a sentence (他说：“快跑！”然后就跑了。-> two), as common Chinese splitters have it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apps.screening.features import primary_language

# Languages written without spaces between words: coherence splits them by characters.
UNSPACED_LANGUAGES = frozenset({"zh", "ja"})
TAIL_FRACTION = 0.3

_CLOSERS = "\"'”’」』）)]》〉"
_OPENERS = "“‘「『（(《〈"
# A run of end marks with the closing quotes or brackets after it.
_END = re.compile(rf"(?:[。！？]+[!?！？。…]*|[.!?…]+)[{re.escape(_CLOSERS)}]*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "mt", "e.g", "i.e", "cf", "approx"}
)
_WORDS = re.compile(r"\S+")
# Coherence units of unspaced languages: a run of ASCII letters/digits, or one other letter.
_CHARACTERS = re.compile(r"[A-Za-z0-9]+|[^\W_A-Za-z0-9]")
_HAS_LETTER = re.compile(r"[^\W_]")


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    marks = match.group(0)
    rest = text[match.end() :]
    if not rest.strip():
        return True
    if any(mark in "。！？" for mark in marks):
        return True
    following = rest.lstrip()
    spaced = rest[:1].isspace()
    if (
        "." in marks
        and not any(mark in "!?…" for mark in marks)
        and len(marks.rstrip(_CLOSERS)) == 1
    ):
        if not spaced:
            return False  # 3.5, example.com, e.g.x
        word = re.search(r"([\w.]+)$", text[: match.start()])
        before = word.group(1) if word else ""
        if before.lower() in _ABBREVIATIONS or (len(before) == 1 and before.isupper()):
            return False
    elif not spaced and not _CJK.match(following):
        return False
    # "Stop!" he said. / Well... maybe: the sentence goes on in lower case.
    return not following[:1].islower()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans [start, end) of the sentences of `text`, whitespace trimmed."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _END.finditer(text):
        if match.end() <= start or not _ends_sentence(text, match):
            continue
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    trimmed: list[tuple[int, int]] = []
    for begin, end in spans:
        while begin < end and text[begin].isspace():
            begin += 1
        while end > begin and text[end - 1].isspace():
            end -= 1
        if begin == end:
            continue
        # A piece with no letter at all ("...", a lone quote) joins its neighbour.
        if trimmed and (
            not _HAS_LETTER.search(text[begin:end])
            or not _HAS_LETTER.search(text[trimmed[-1][0] : trimmed[-1][1]])
        ):
            trimmed[-1] = (trimmed[-1][0], end)
        else:
            trimmed.append((begin, end))
    return trimmed


def split_sentences(text: str) -> list[str]:
    return [text[begin:end] for begin, end in sentence_spans(text)]


def tail_count(n_tokens: int) -> int:
    """How many of `n_tokens` form the punchline of a one-sentence text (0: too short)."""
    if n_tokens < 2:
        return 0
    return min(n_tokens - 1, max(1, int(TAIL_FRACTION * n_tokens + 0.5)))


@dataclass(frozen=True)
class Split:
    """An item as setup and punchline.

    `text` is the sequence a language model reads (setup, then punchline); `boundary` is the
    character offset in it where the punchline starts, or None for a one-sentence text, which
    the language model splits by its own tokens. `setup` and `punchline` are what coherence
    compares (for a one-sentence text, split by words or characters); `setup` is empty when the
    text is too short to split.
    """

    text: str
    boundary: int | None
    setup: str
    punchline: str
    how: str  # "context", "scenario", "last_sentence" or "tail"


def _tail_split(text: str, language: str) -> tuple[str, str]:
    pattern = _CHARACTERS if primary_language(language) in UNSPACED_LANGUAGES else _WORDS
    units = list(pattern.finditer(text))
    k = tail_count(len(units))
    if k == 0:
        return "", text
    offset = units[len(units) - k].start()
    # An opening quote or bracket goes with the word it opens.
    while offset > 0 and text[offset - 1] in _OPENERS:
        offset -= 1
    return text[:offset].strip(), text[offset:].strip()


def _turn_text(turn: Any) -> str:
    if isinstance(turn, Mapping):
        return str(turn.get("text", "")).strip()
    return str(turn).strip()


def split_item(
    text: str,
    *,
    language: str,
    level: str = "single",
    context: Sequence[Any] = (),
    scenario: str = "",
) -> Split:
    """Split one item (see the module's documentation for the rule)."""
    text = text.strip()
    setup = ""
    how = ""
    if level == "multi_turn":
        setup = "\n".join(t for t in (_turn_text(turn) for turn in context) if t)
        how = "context"
    elif level == "scenario":
        setup = scenario.strip()
        how = "scenario"
    if setup:
        return Split(
            text=f"{setup}\n{text}",
            boundary=len(setup) + 1,
            setup=setup,
            punchline=text,
            how=how,
        )
    spans = sentence_spans(text)
    if len(spans) >= 2:
        begin = spans[-1][0]
        return Split(
            text=text,
            boundary=begin,
            setup=text[:begin].strip(),
            punchline=text[begin:].strip(),
            how="last_sentence",
        )
    setup, punchline = _tail_split(text, language)
    return Split(text=text, boundary=None, setup=setup, punchline=punchline, how="tail")
