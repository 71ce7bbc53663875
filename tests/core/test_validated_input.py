"""The rater answers' input check (apps/core/serializers.validated) keeps one serializer per
class and thread: it must check each body exactly as a new serializer does, whatever the body
before it was."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from rest_framework.exceptions import ValidationError

from apps.core.serializers import validated
from apps.judgments.serializers import PairIn, ScorecardIn

GOOD = {
    "assignment": 7,
    "idempotency_key": "key-0000001",
    "active_ms": 4000,
    "answers": {
        "funny": {"value": 3, "at_ms": 1200},
        "surprise": {"not_understood": True, "at_ms": 900},
    },
}
BAD = [
    {**GOOD, "active_ms": -1},
    {**GOOD, "answers": {"funny": {"value": 3, "not_understood": True, "at_ms": 1}}},
    {**GOOD, "answers": {"funny": {"at_ms": 1}}},
    {**GOOD, "answers": {}},
    {**GOOD, "idempotency_key": "short"},
    {"assignment": "seven"},
    [1, 2, 3],
]


def _fresh(serializer_class: Any, data: Any) -> tuple[str, Any]:
    serializer = serializer_class(data=data)
    if serializer.is_valid():
        return "valid", dict(serializer.validated_data)
    return "invalid", serializer.errors


def _reused(serializer_class: Any, data: Any) -> tuple[str, Any]:
    try:
        return "valid", validated(serializer_class, data)
    except ValidationError as e:
        return "invalid", e.detail


def test_each_body_is_checked_as_a_new_serializer_checks_it_whatever_came_before():
    # Good and bad bodies interleaved, so a kept instance's last result could leak into the next.
    bodies = [GOOD, *[b for bad in BAD for b in (bad, GOOD)], BAD[0], BAD[0], GOOD, GOOD]
    for body in bodies:
        assert _reused(ScorecardIn, body) == _fresh(ScorecardIn, body)
    assert _reused(ScorecardIn, GOOD)[1]["answers"]["surprise"] == {
        "not_understood": True,
        "at_ms": 900,
    }


def test_each_serializer_class_checks_its_own_fields():
    pair = {"assignment": 3, "idempotency_key": "key-0000002", "active_ms": 10, "winner": "left"}
    assert _reused(PairIn, pair) == _fresh(PairIn, pair)
    assert _reused(ScorecardIn, pair)[0] == "invalid"  # no answers
    with pytest.raises(ValidationError) as refused:
        validated(PairIn, {**pair, "winner": "both"})
    assert "winner" in refused.value.detail  # type: ignore[operator]


def test_threads_check_at_once_each_with_its_own_serializer():
    outcomes: list[bool] = []
    start = threading.Barrier(4)

    def check(body: Any) -> None:
        start.wait()
        outcomes.extend(_reused(ScorecardIn, body) == _fresh(ScorecardIn, body) for _ in range(200))

    threads = [
        threading.Thread(target=check, args=(body,)) for body in (GOOD, BAD[0], BAD[1], GOOD)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == [True] * 800
