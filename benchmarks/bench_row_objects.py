"""What a judgments file's line costs in objects: the record, the header and the row made for
each line, as frozen dataclasses (up to 2026-12-07) and as the named tuples they are now, in
one process, each way five times in turn (best of five), twice over.

    .venv/bin/python benchmarks/bench_row_objects.py

A frozen dataclass sets each field through ``object.__setattr__``; a named tuple is made by
``tuple.__new__``. A million-line file makes a million of each.
"""

from __future__ import annotations

import os
import sys
import timeit
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")

import django

django.setup()

from apps.core.lines import Record  # noqa: E402
from apps.judgments.importing import Header, ScoreRow  # noqa: E402

LINES = 100_000


@dataclass(frozen=True, slots=True)
class FrozenHeader:
    line: int
    rater: str
    background: str | None
    age_band: str | None
    seconds_into_session: float | None
    active_seconds: float | None
    submitted_at: Any
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class FrozenScoreRow:
    header: FrozenHeader
    item: str
    answers: tuple[tuple[str, float | None], ...]
    explanation_match: str = ""


@dataclass(frozen=True)
class FrozenRecord:
    line: int
    fields: dict[str, Any]
    from_csv: bool = False


def as_dataclasses() -> None:
    for number in range(LINES):
        record = FrozenRecord(number, {})
        header = FrozenHeader(record.line, "r", "g", None, None, None, None, None)
        FrozenScoreRow(header, "item", (), "")


def as_named_tuples() -> None:
    for number in range(LINES):
        record = Record(number, {})
        header = Header(record.line, "r", "g", None, None, None, None, None)
        ScoreRow(header, "item", (), "")


def main() -> None:
    for _ in range(2):
        best = {}
        for make in (as_dataclasses, as_named_tuples):
            best[make.__name__] = min(timeit.repeat(make, number=1, repeat=5)) / LINES * 1e6
        print(
            f"frozen dataclasses {best['as_dataclasses']:.2f} us a line, named tuples "
            f"{best['as_named_tuples']:.2f} us a line, "
            f"ratio {best['as_named_tuples'] / best['as_dataclasses']:.2f}"
        )


if __name__ == "__main__":
    main()
