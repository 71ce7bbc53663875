"""Item and judgment files for the upload and import-job tests."""

from __future__ import annotations

import json
from typing import Any


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def item_lines(n: int, *, meta: bool = True) -> list[dict[str, Any]]:
    return [
        {
            "id": f"t{i:03d}",
            "text": f"short humorous text {i}",
            "source": "model-a" if i % 2 else "human",
            **({"meta": {"split": "dev" if i % 5 == 0 else "train", "row": i}} if meta else {}),
        }
        for i in range(n)
    ]


def positional_scores(n_items: int, raters: tuple[str, ...] = ("1", "2", "3")) -> list[dict]:
    """Every "rater" (a grade position, not a person) scores every item: the import warns."""
    return [
        {
            "kind": "score",
            "rater": rater,
            "background": "unknown",
            "item": f"t{i:03d}",
            "funniness": 1 + (i + n) % 7,
            "meta": {"source_row": i, "position": n},
        }
        for i in range(n_items)
        for n, rater in enumerate(raters)
    ]


def person_scores(n_items: int, per_item: int = 2) -> list[dict]:
    """Each grade by its own rater: no warning."""
    return [
        {
            "kind": "score",
            "rater": f"p{i:03d}-{k}",
            "background": "technical",
            "item": f"t{i:03d}",
            "funniness": 1 + (i + k) % 7,
        }
        for i in range(n_items)
        for k in range(per_item)
    ]
