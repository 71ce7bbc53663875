"""The per-item L1 features (surprise, coherence, valence) as pure functions over strings.

Nothing here touches the database: `apps.screening.services.features` loads items, splits them
(`split.py`), calls these functions with the configured model paths and languages, and stores
the results. A feature that cannot be computed for an item is returned as a value of None with
the reason, never as a stand-in number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FeatureValue:
    """One feature of one item: a number, or None and why not."""

    value: float | None
    missing: str = ""


def primary_language(language: str) -> str:
    """'zh-Hans' -> 'zh', 'EN' -> 'en': models are configured by primary language subtag."""
    return language.strip().replace("_", "-").split("-")[0].lower()


def language_covered(language: str, languages: Sequence[str]) -> bool:
    """Whether a model configured for `languages` covers an item in `language`."""
    wanted = primary_language(language)
    return any(primary_language(code) == wanted for code in languages)
