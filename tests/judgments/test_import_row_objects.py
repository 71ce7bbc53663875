"""The objects an import makes for each line (the record, the header, the row) are named tuples
since 2026-12-07: a frozen dataclass cost three times as much to make
(``benchmarks/bench_row_objects.py``). What the import relies on stays: they cannot be changed
once made, and two are equal when their fields are."""

from __future__ import annotations

import pytest

from apps.core.lines import Record
from apps.judgments.importing import Header, PairRow, ScoreRow, TuringRow


def _header(line: int = 3) -> Header:
    return Header(line, "r1", "technical", None, None, None, None)


@pytest.mark.parametrize(
    ("made", "field"),
    [
        (Record(1, {"kind": "score"}), "line"),
        (_header(), "rater"),
        (ScoreRow(_header(), "i1", (("funny", 2.0),)), "item"),
        (PairRow(_header(), "i1", "i2", "left", "i1"), "winner"),
        (TuringRow(_header(), "i1", "human"), "guess"),
    ],
)
def test_a_line_s_objects_cannot_be_changed(made: object, field: str) -> None:
    with pytest.raises(AttributeError):
        setattr(made, field, "changed")


def test_a_line_s_objects_are_equal_by_their_fields_and_keep_their_defaults() -> None:
    row = ScoreRow(_header(), "i1", (("funny", 2.0),))
    assert row == ScoreRow(_header(), "i1", (("funny", 2.0),))
    assert row != ScoreRow(_header(4), "i1", (("funny", 2.0),))
    assert (row.explanation_match, row.header.meta, Record(1, {}).from_csv) == ("", None, False)
    assert row.key == ("score", "r1", "i1")
    assert PairRow(_header(), "i2", "i1", "right", "i1").key == ("pair", "r1", "i1", "i2")
    assert hash(row) == hash(ScoreRow(_header(), "i1", (("funny", 2.0),)))
