"""A file's lines are split a block at a time (apps.core.lines.numbered_lines), numbered and cut
exactly as `str.splitlines()` cuts the whole text: CR LF pairs, lone CRs, the other separators
splitlines knows, empty lines and a last line without a newline, wherever the blocks end."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.core import lines
from apps.core.lines import numbered_lines, read_records

PIECES = st.lists(
    st.sampled_from(["a", "{}", "笑", "\n", "\r\n", "\r", "\u2028", "\x0c", "\x85", " ", ""]),
    max_size=60,
)


@given(pieces=PIECES, block=st.integers(min_value=1, max_value=12))
@settings(max_examples=400, deadline=None)
def test_the_lines_are_those_of_splitlines_wherever_the_blocks_end(pieces, block):
    text = "".join(pieces)
    original = lines.LINE_BLOCK
    lines.LINE_BLOCK = block
    try:
        assert list(numbered_lines(text)) == list(enumerate(text.splitlines(), start=1))
    finally:
        lines.LINE_BLOCK = original


def test_a_bad_line_in_a_later_block_is_named_by_its_own_number(monkeypatch):
    monkeypatch.setattr(lines, "LINE_BLOCK", 8)
    data = b'{"a": 1}\r\n\r\n{"b": 2}\n{"c": \n{"d": 4}'
    records = list(read_records(data, filename="x.jsonl"))
    assert [getattr(record, "line", None) for record in records] == [1, 3, 4, 5]
    assert [type(record).__name__ for record in records] == [
        "Record",
        "Record",
        "LineError",
        "Record",
    ]


@pytest.mark.parametrize("text", ["", "\n", "no newline at the end", "x\n" * 5])
def test_small_texts(text):
    assert list(numbered_lines(text)) == list(enumerate(text.splitlines(), start=1))
