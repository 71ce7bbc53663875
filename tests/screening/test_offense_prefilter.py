"""The offense matcher's substring prefilter never hides a match the full pattern finds."""

from __future__ import annotations

import pytest

from apps.screening.offense import Matcher
from apps.screening.offense_defaults import DEFAULT_OFFENSE_TERMS

TEXTS = [
    "what an ASS!",
    "a piece  of\nshit",
    "this bug is shit",
    "这个 bug 真是shit",
    "damn-it all",
    "damn it all",
    "shıt with a dotless i",
    "SHİT with a dotted capital I",
    "class passed",
    "nothing offensive here",
    "don’t",
    "",
]


def _terms() -> list[tuple[str, str]]:
    return [(language, term) for language, term, _ in DEFAULT_OFFENSE_TERMS]


@pytest.mark.parametrize("text", TEXTS)
def test_prefilter_keeps_every_match_of_the_full_pattern(text: str) -> None:
    matcher = Matcher([*_terms(), ("en", "piece of shit"), ("en", "damn-it"), ("en", "don't")])
    full = [(found.lastgroup, found.start()) for found in matcher._pattern().finditer(text)]
    hits = matcher.find(text)
    assert [(f"t{matcher.terms.index((h.language, h.term))}", h.start) for h in hits] == full
