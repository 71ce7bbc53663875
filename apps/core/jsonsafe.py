"""Parsing JSON from outside (API bodies, JSONL lines, JSON cells of a CSV) within limits.

Python's json module accepts what the stored data cannot hold or the process cannot survive:
`NaN` and `Infinity` (not JSON; PostgreSQL refuses them in a jsonb), numbers such as `1e999` that
become infinite, integers of thousands of digits, and nesting deep enough to exhaust the stack.
`loads` refuses each with a JsonRejected naming where in the document it is (`answers.surprise`,
`context[0].text`), so the caller can answer 400 with that place.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.utils.translation import gettext_noop

from apps.core.sentences import Sentence

# Deeper than any document LaughLab reads (a dialogue context is three levels).
MAX_DEPTH = 32
# Larger integers than a signed 64-bit column holds are refused (19 digits, and a sign).
MAX_INT_DIGITS = 19


class JsonRejected(ValueError):
    """Why a document is refused: `message` in English (the API's text), `sentence` for a page
    in its reader's language."""

    def __init__(self, sentence: Sentence, *, path: str = "") -> None:
        message = sentence.english()
        super().__init__(f"{path}: {message}" if path else message)
        self.sentence = sentence
        self.message = message
        self.path = path


def _said(msgid: str, **params: Any) -> Sentence:
    return Sentence(msgid, params)


def _too_deep(max_depth: int) -> Sentence:
    return _said(gettext_noop("is nested more than %(depth)s levels deep"), depth=max_depth)


class _Bad:
    """A value the parser's hooks refused, left in the document for `_check` to place."""

    __slots__ = ("sentence",)
    # How many were ever made: a parse that made none needs no walk of its document. (Another
    # thread's parse can only make a walk needless, never skip a needed one.)
    made = 0

    def __init__(self, sentence: Sentence) -> None:
        self.sentence = sentence
        _Bad.made += 1


def _constant(name: str) -> _Bad:
    return _Bad(_said(gettext_noop("must be a finite number (%(value)s is not JSON)"), value=name))


def _float(text: str) -> float | _Bad:
    value = float(text)
    if not math.isfinite(value):
        return _Bad(
            _said(
                gettext_noop("must be a finite number (%(value)s is out of range)"),
                value=text[:20],
            )
        )
    return value


def _int(text: str) -> int | _Bad:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return _Bad(
            _said(
                gettext_noop("is too large a number (%(digits)s digits)"),
                digits=len(text.lstrip("-")),
            )
        )
    return int(text)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _check(value: Any, max_depth: int) -> None:
    """Walk the parsed value without recursion: refuse a marker or a too-deep container."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, _Bad):
            raise JsonRejected(node.sentence, path=path)
        if isinstance(node, dict | list):
            if depth >= max_depth:
                raise JsonRejected(_too_deep(max_depth), path=path)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                stack.append((child, _join(path, key), depth + 1))


# One decoder for every call: json.loads with hooks builds a new one each time, which took
# as long as parsing a line of a large import.
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float, parse_int=_int)
_JSON_SPACE = " \t\n\r"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def too_deep(text: str, max_depth: int) -> bool:
    """Whether brackets outside strings nest deeper than `max_depth`, checked before parsing, so
    a document of 50,000 `[` never reaches the recursive parser."""
    if text.count("[") + text.count("{") <= max_depth:
        return False
    depth = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > max_depth:
            return True
    return False


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads within the limits above; JsonRejected (a ValueError) otherwise."""
    if isinstance(text, bytes | bytearray):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonRejected(
                _said(
                    gettext_noop("is not UTF-8 text (%(reason)s at byte %(byte)s)"),
                    reason=exc.reason,
                    byte=exc.start,
                )
            ) from None
    if too_deep(text, max_depth):
        raise JsonRejected(_too_deep(max_depth))
    if text.startswith("\ufeff"):
        # As json.loads says of a str (bytes lose their mark above).
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    made = _Bad.made
    try:
        if text and text[0] not in _JSON_SPACE and text[-1] not in _JSON_SPACE:
            # decode() without its two whitespace matches, which cost a third of a short line.
            value, end = _DECODER.raw_decode(text)
            if end != len(text):
                _DECODER.decode(text)  # raises json.loads's own error for what follows
        else:
            value = _DECODER.decode(text)
    except RecursionError:
        raise JsonRejected(_too_deep(max_depth)) from None
    except json.JSONDecodeError:
        raise
    except (ValueError, TypeError) as exc:  # e.g. bytes that are not UTF-8
        raise JsonRejected(
            _said(gettext_noop("is not valid JSON (%(problem)s)"), problem=str(exc))
        ) from None
    if _Bad.made != made:
        # too_deep has already held the nesting within max_depth; only a refused value is left
        # to find and place.
        _check(value, max_depth)
    return value
