"""Valence: a sentiment score in [-1, 1] per item, and the penalty for mean-spirited items.

- English: vaderSentiment's compound score (already in [-1, 1]; a lexicon and rules tuned on
  short social-media text, which is close to what a joke looks like).
- Chinese: snownlp's `sentiments`, the probability p in [0, 1] that the text is positive,
  mapped to 2p - 1. snownlp was trained on shopping reviews: it reads plainly hostile insults
  as negative, but leans positive on neutral text, which only lowers a penalty, never raises it.
- Any other language: missing, with the reason.

The whole item text is scored (the punchline with its setup: a mean joke is mean as a whole).

The penalty is `clip((-valence - 0.05) / 0.95, 0, 1)`: 0 for every neutral or positive item
(VADER's own neutral band is |compound| < 0.05), rising linearly to 1 for the most negative.
Dark but not hostile humor usually lands just below the band and gets a small penalty; FunnyScore
weighs it with the fitted coefficient c.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from apps.screening.features import primary_language

NEUTRAL_BAND = 0.05


@dataclass(frozen=True)
class Valence:
    value: float | None
    penalty: float | None
    missing: str = ""


def valence_penalty(valence: float) -> float:
    return min(1.0, max(0.0, (-valence - NEUTRAL_BAND) / (1.0 - NEUTRAL_BAND)))


@functools.cache
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def _english(text: str) -> float:
    return float(_vader().polarity_scores(text)["compound"])


def _chinese(text: str) -> float:
    from snownlp import SnowNLP

    return 2.0 * float(SnowNLP(text).sentiments) - 1.0


_SCORERS = {"en": _english, "zh": _chinese}


def package_used(language: str) -> str:
    """The package and version that scores `language` ("" if none does)."""
    name = {"en": "vaderSentiment", "zh": "snownlp"}.get(primary_language(language))
    return f"{name} {version(name)}" if name else ""


def valence_scores(texts: Sequence[str], languages: Sequence[str]) -> list[Valence]:
    if len(texts) != len(languages):
        raise ValueError("texts and languages must have the same length")
    results = []
    for text, language in zip(texts, languages, strict=True):
        scorer = _SCORERS.get(primary_language(language))
        if scorer is None:
            results.append(
                Valence(None, None, f"no sentiment package for {language or 'an unknown language'}")
            )
        elif not text.strip():
            results.append(Valence(None, None, "empty text"))
        else:
            value = min(1.0, max(-1.0, scorer(text)))
            results.append(Valence(value, valence_penalty(value)))
    return results
