"""Which items a shown figure rests on: one rule for every page, the report and the exports.

A stored result holds two documents: all items, and (`evidence_only`) the same analysis without
the items that are not evidence about their model (culture-dependent, safety-intercepted). The
study's setting `exclude_items_not_evidence` picks the default for every figure, so the Summary,
Models and Leaderboard pages and the report show the same number for the same thing; a page can
switch (`?view=`), and says so at the numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VIEWS = ("evidence", "all")


def default_items_view(*, exclude_items_not_evidence: bool) -> str:
    return "evidence" if exclude_items_not_evidence else "all"


def has_evidence_view(document: Mapping[str, Any]) -> bool:
    return bool((document.get("evidence_only") or {}).get("results"))


def shown_document(document: Mapping[str, Any], view: str) -> dict[str, Any]:
    """The document a figure reads in `view`: all items, or the evidence-only analysis (its
    sections replace the full ones; everything it does not hold, such as exclusions and
    provenance, stays)."""
    if view == "evidence" and has_evidence_view(document):
        return {**document, **document["evidence_only"]["results"]}
    return dict(document)


def items_left_out(document: Mapping[str, Any]) -> int:
    """How many items the evidence-only view leaves out."""
    return len((document.get("evidence_only") or {}).get("left_out") or [])
