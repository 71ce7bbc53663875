"""The per-item L1 features (surprise, coherence, valence) as pure functions over strings.

Nothing here touches the database: `apps.screening.services.features` loads items, splits them
(`split.py`), calls these functions with the configured models (`apps.textmodels`), and stores
the results. A feature that cannot be computed for an item is returned as a value of None with
the reason, never as a stand-in number.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.textmodels.languages import language_covered, primary_language

__all__ = ["FeatureValue", "language_covered", "primary_language"]


@dataclass(frozen=True)
class FeatureValue:
    """One feature of one item: a number, or None and why not."""

    value: float | None
    missing: str = ""
