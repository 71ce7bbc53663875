"""Language codes as the text models are configured: by primary language subtag."""

from __future__ import annotations

from collections.abc import Sequence


def primary_language(language: str) -> str:
    """'zh-Hans' -> 'zh', 'EN' -> 'en': models are configured by primary language subtag."""
    return language.strip().replace("_", "-").split("-")[0].lower()


def language_covered(language: str, languages: Sequence[str]) -> bool:
    """Whether a model configured for `languages` covers an item in `language`."""
    wanted = primary_language(language)
    return any(primary_language(code) == wanted for code in languages)
