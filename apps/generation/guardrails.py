"""Recognising a safety guardrail's interception in a model's reply.

An interception is recorded with its reason, in this order: the API said it refused (a
`refusal` field), the API stopped the output with a `content_filter` finish reason, the output
is empty, or the output contains one of the language's refusal/deflection patterns (matched
case-insensitively anywhere in the text). Such outputs are kept and flagged, never dropped: a
guardrail cutting a joke short is a defect of the product, not evidence about the model's humor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The patterns LaughLab ships, per language; the admin (Refusal patterns) edits the live list.
# Phrases, not words: a joke may well say "sorry" or "I can't"; a deflection says more.
DEFAULT_REFUSAL_PATTERNS: tuple[tuple[str, str], ...] = (
    ("en", "as an ai language model"),
    ("en", "as an ai, i"),
    ("en", "i'm sorry, but i can't"),
    ("en", "i'm sorry, but i cannot"),
    ("en", "i can't help with that"),
    ("en", "i cannot help with that"),
    ("en", "i can't assist with that"),
    ("en", "i'm not able to help with"),
    ("en", "i cannot fulfill"),
    ("en", "i won't be able to"),
    ("en", "let's talk about something else"),
    ("zh", "哈哈你懂的"),
    ("zh", "作为一个ai"),
    ("zh", "作为一个人工智能"),
    ("zh", "作为人工智能"),
    ("zh", "抱歉，我无法"),
    ("zh", "抱歉，我不能"),
    ("zh", "我无法回答"),
    ("zh", "我不能提供"),
    ("zh", "换个话题吧"),
    ("zh", "我们聊点别的吧"),
    ("zh", "这个问题我无法"),
)

REFUSAL = "refusal"
CONTENT_FILTER = "content_filter"
EMPTY = "empty"
PATTERN = "pattern"


@dataclass(frozen=True)
class Interception:
    reason: str
    detail: str


def language_patterns(patterns: Iterable[tuple[str, str]], language: str) -> list[str]:
    """The patterns of a language; 'zh-tw' also uses 'zh' patterns."""
    base = language.split("-", 1)[0]
    return [p for lang, p in patterns if lang in (language, base)]


def detect_interception(
    *, text: str, finish_reason: str, refusal: str, patterns: Iterable[str]
) -> Interception | None:
    if refusal.strip():
        return Interception(REFUSAL, refusal.strip()[:300])
    if finish_reason == CONTENT_FILTER:
        return Interception(CONTENT_FILTER, finish_reason)
    if not text.strip():
        return Interception(EMPTY, "")
    folded = text.casefold()
    for pattern in patterns:
        if pattern and pattern.casefold() in folded:
            return Interception(PATTERN, pattern[:300])
    return None
