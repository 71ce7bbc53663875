"""The offense filter's matcher: which offense terms occur in a text, and where. No Django.

Terms of every language are looked for in every text, since generated jokes mix languages
("这个 bug 真是 shit"). How a term matches depends on its script, not on its list:

- a term written in a script that separates words with spaces (English, most Latin-script and
  other alphabetic text) matches a whole word or phrase, case-insensitively: "ass" is found in
  "what an ass!" but not in "class" or "passed". Inside a phrase any run of whitespace matches a
  space, a hyphen matches a hyphen or whitespace, and a straight apostrophe also matches a curly
  one;
- a term written in a script without spaces between words (Chinese, Japanese kana, Thai) has no
  word boundaries to respect and matches as a substring.

A term mixing both is bounded only at its alphabetic ends.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

# Scripts written without spaces between words: Han (with its extensions and compatibility
# block), Hiragana, Katakana and Thai.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f"
# A letter, digit or underscore of a spaced script: what a word boundary must not touch. A Han
# character next to an English term is a boundary ("真是shit" contains "shit").
_WORD_CHAR = f"[^\\W{_UNSPACED}]"
_BEFORE = f"(?<!{_WORD_CHAR})"
_AFTER = f"(?!{_WORD_CHAR})"
_SPACED_WORD_CHAR = re.compile(_WORD_CHAR)

Term = tuple[str, str]
"""(language, term) as stored in the term list."""


@dataclass(frozen=True)
class Hit:
    """One occurrence of a term: the term as listed, the text as written, its offset."""

    language: str
    term: str
    matched: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.matched)


def _term_pattern(term: str) -> str:
    parts: list[str] = []
    for char in term:
        if char.isspace():
            if not parts or parts[-1] != r"\s+":
                parts.append(r"\s+")
        elif char == "-":
            parts.append(r"(?:-|\s+)")
        elif char in "'’":
            parts.append("['’]")
        else:
            parts.append(re.escape(char))
    body = "".join(parts)
    if _SPACED_WORD_CHAR.match(term[0]):
        body = _BEFORE + body
    if _SPACED_WORD_CHAR.match(term[-1]):
        body = body + _AFTER
    return body


_I_FORMS = str.maketrans({"ı": "i", "İ": "i"})


def _fold(text: str) -> str:
    """Case-folded, with hyphens and runs of whitespace made one space and curly apostrophes
    straight: what the pattern treats as equal is equal here, so a term's folded form occurs in
    the folded text whenever the term matches it (the converse need not hold)."""
    # Dotted and dotless i match i under the pattern's IGNORECASE but not under casefold.
    folded = text.translate(_I_FORMS).casefold().replace("’", "'").replace("-", " ")
    return " ".join(folded.split()) if any(c.isspace() for c in folded) else folded


def normalize_term(term: str) -> str:
    """A term as the matcher keys it: surrounding whitespace dropped, inner runs made one space."""
    return " ".join(term.split())


class Matcher:
    """All terms compiled into one alternation, scanned once per text.

    The longest term is tried first at each position, so "piece of shit" is reported once as
    itself rather than as "shit"; occurrences do not overlap.
    """

    def __init__(self, terms: Iterable[Term]) -> None:
        cleaned = {(language, normalize_term(term)) for language, term in terms}
        self.terms: tuple[Term, ...] = tuple(
            sorted(
                ((language, term) for language, term in cleaned if term),
                key=lambda pair: (-len(pair[1]), pair),
            )
        )
        self._regex: re.Pattern[str] | None = None
        # Every term as a plain substring of the folded text (see _fold): a text containing none
        # of them cannot match, and most texts are decided by these substring tests alone, about
        # a hundred times faster than the lookbehinds of the full pattern (which is compiled
        # only when some text gets past them: compiling it takes a second).
        self._needles = tuple(sorted({_fold(term) for _, term in self.terms}))

    def _pattern(self) -> re.Pattern[str]:
        if self._regex is None:
            alternatives = (
                f"(?P<t{index}>{_term_pattern(term)})" for index, (_, term) in enumerate(self.terms)
            )
            self._regex = re.compile("|".join(alternatives), re.IGNORECASE)
        return self._regex

    def could_match(self, text: str) -> bool:
        """False when no term can occur in the text; True means: look with find()."""
        if not self.terms or not text:
            return False
        folded = _fold(text)
        for needle in self._needles:  # noqa: SIM110 - a plain loop; any() and a generator cost twice as much here
            if needle in folded:
                return True
        return False

    def find(self, text: str) -> list[Hit]:
        if not self.could_match(text):
            return []
        hits: list[Hit] = []
        for found in self._pattern().finditer(text):
            name = found.lastgroup
            if name is None:  # pragma: no cover - every alternative is a named group
                continue
            language, term = self.terms[int(name[1:])]
            hits.append(
                Hit(language=language, term=term, matched=found.group(), start=found.start())
            )
        return hits


@functools.lru_cache(maxsize=8)
def _compiled(terms: frozenset[Term]) -> Matcher:
    return Matcher(terms)


def matcher_for(terms: Iterable[Term]) -> Matcher:
    """The matcher for a term set, compiled once and reused while the set is unchanged."""
    return _compiled(frozenset(terms))


def find_offense(terms: Iterable[Term], text: str) -> list[Hit]:
    return matcher_for(terms).find(text)


@dataclass(frozen=True)
class Excerpt:
    """A match shown in its surroundings: before, the match itself, after."""

    before: str
    matched: str
    after: str


def excerpt(text: str, *, start: int, length: int, width: int = 40) -> Excerpt:
    """The match at `start` with up to `width` characters either side."""
    start = max(0, min(start, len(text)))
    end = min(len(text), start + length)
    left = max(0, start - width)
    right = min(len(text), end + width)
    before = ("…" if left > 0 else "") + text[left:start]
    after = text[end:right] + ("…" if right < len(text) else "")
    return Excerpt(before=before, matched=text[start:end], after=after)
