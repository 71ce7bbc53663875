"""An item's length in its own units: characters for Chinese, words for other languages.

Chinese is written without spaces, so its natural unit is the character (as its readers count
it, and as Chinese humor studies report it); a word count would depend on a segmenter. Other
languages count words. Punctuation, symbols and spaces count in neither. One function, used by
the style-controlled boards and the anomalous-rater screening alike.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")


def text_length(text: str, language: str) -> int:
    if language.split("-")[0].lower() in ("zh", "cmn"):
        return sum(1 for ch in text if unicodedata.category(ch)[0] in ("L", "N"))
    return len(_WORD.findall(text))
