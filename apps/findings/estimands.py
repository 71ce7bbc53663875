"""What each shown mean estimates, named where it is shown, and one source for each figure.

Two estimands appear on the results pages and in the report:

- "items and raters random" (`items_and_raters`): a source's mean over its items in general,
  rated by raters in general (apps/analysis/stats/model_comparison.py, crossed-design variance).
  The answer to "which model is funnier", so every per-source mean uses it: the Summary's and
  the report's "by source" tables show the model comparison's means, the same numbers as the
  Models page.
- "these items, raters random" (`these_items`): a group's mean over the items it holds, with
  raters resampled as clusters (apps/analysis/stats/report.py's group bootstrap). Humor types,
  levels, languages and rater backgrounds are described, not generalised to other items.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

ITEMS_AND_RATERS = "items_and_raters"
THESE_ITEMS = "these_items"


def estimand_label(code: str) -> str:
    return {
        ITEMS_AND_RATERS: _("items and raters random"),
        THESE_ITEMS: _("these items, raters random"),
    }.get(code, code)


def group_estimand(document: Mapping[str, Any], dimension: str) -> str:
    if dimension == "source" and ((document.get("models") or {}).get("by_model")):
        return ITEMS_AND_RATERS
    return THESE_ITEMS


def group_means(document: Mapping[str, Any], dimension: str) -> dict[str, Mapping[str, Any]]:
    """Per group of `dimension`, each question's stored interval, by the group's estimand."""
    if group_estimand(document, dimension) == ITEMS_AND_RATERS:
        by_model = (document.get("models") or {}).get("by_model") or {}
        return {name: entry.get("questions") or {} for name, entry in by_model.items()}
    groups = (document.get("groups") or {}).get(dimension) or {}
    return {name: entry.get("questions") or {} for name, entry in groups.items()}
