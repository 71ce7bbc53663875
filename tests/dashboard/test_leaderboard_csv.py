"""The leaderboard's CSV carries what its table shows: ties, and an end item's one-sided bound."""

from __future__ import annotations

from apps.dashboard.results.leaderboard import leaderboard_csv


def test_the_leaderboard_csv_gives_ties_and_one_sided_bounds() -> None:
    payload = {
        "items": [{"item": "a", "source": "human", "level": "single", "humor_type": "pun"}],
        "bradley_terry": [
            {
                "item": "a",
                "component": 0,
                "rank": 1,
                "score": None,
                "ci_low": None,
                "ci_high": None,
                "ties": 0,
                "bound": 1.25,
                "bound_side": "lower",
                "flags": ["undefeated"],
            },
            {
                "item": "b",
                "component": 0,
                "rank": 2,
                "score": -0.5,
                "ci_low": -1.0,
                "ci_high": 0.1,
                "ties": 3,
                "bound": None,
                "bound_side": None,
                "flags": [],
            },
        ],
    }
    header, rows = leaderboard_csv(payload, [""])
    cells = [dict(zip(header, row, strict=True)) for row in rows]
    assert header[-3:] == ["ties", "bound", "bound_side"]
    assert (cells[0]["bound"], cells[0]["bound_side"], cells[0]["score"]) == (1.25, "lower", None)
    assert (cells[1]["ties"], cells[1]["bound"], cells[1]["bound_side"]) == (3, None, "")
