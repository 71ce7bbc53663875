"""A copy of the demo study with four crafted raters, one for each exclusion rule."""

from __future__ import annotations

import json

import pytest

from apps.assignments.models import Assignment
from apps.judgments.services import study_judgments_import
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Item

BASE = {"background": "technical", "age_band": "25-34"}


def _lines(rows: list[dict]) -> bytes:
    return "\n".join(json.dumps({**BASE, **row}) for row in rows).encode()


def _card(rater: str, item: str, t: float, value: int, seconds: float = 20.0) -> dict:
    return {
        "kind": "score",
        "rater": rater,
        "item": item,
        "surprise": value,
        "coherence": value,
        "funniness": value,
        "offensive": 0,
        "active_seconds": seconds,
        "seconds_into_session": t,
        "submitted_at": f"2026-11-22T10:{int(t) // 60:02d}:{int(t) % 60:02d}+00:00",
    }


@pytest.fixture
def crafted(demo_study):
    items = list(
        Item.objects.filter(study=demo_study, is_attention_check=False)
        .order_by("external_id")
        .values_list("external_id", flat=True)
    )
    rows = []
    # A speeder: every task in about a second.
    rows += [_card("speedy", items[i], 10 + i * 2, 3 + i % 3, seconds=1.0) for i in range(8)]
    # A straight-liner: the same value on every scale, six scorecards in a row.
    rows += [_card("flat", items[i], 20 + i * 30, 4) for i in range(6)]
    # Position-only: the left item in all twelve pairs.
    for i in range(12):
        left, right = items[2 * i], items[2 * i + 1]
        rows.append(
            {
                "kind": "pair",
                "rater": "lefty",
                "left": left,
                "right": right,
                "winner": left,
                "active_seconds": 12.0,
                "seconds_into_session": 30 + 20 * i,
                "submitted_at": f"2026-11-22T11:{i:02d}:00+00:00",
            }
        )
    # A careful rater who failed two attention checks (recorded on their assignments).
    rows += [_card("careless", items[40 + i], 30 + i * 30, 2 + i % 4) for i in range(3)]
    study_judgments_import(study=demo_study, data=_lines(rows), filename="crafted.jsonl")
    careless = Rater.objects.get(study=demo_study, external_id="careless")
    session = RaterSession.objects.filter(rater=careless).first()
    for position, item in enumerate(items[50:53], start=1):
        Assignment.objects.create(
            study=demo_study,
            rater=careless,
            session=session,
            kind=Assignment.Kind.SCORECARD,
            status=Assignment.Status.DONE,
            item=Item.objects.get(study=demo_study, external_id=item),
            position=position,
            is_attention_check=True,
            attention_passed=position == 1,
        )
    return demo_study
