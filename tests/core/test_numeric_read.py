"""numeric_columns: the same array as the ORM's rows, on PostgreSQL through a binary COPY."""

from __future__ import annotations

import struct

import factory
import numpy as np
import pytest
from django.db.models import Case, Value, When

from apps.core.numeric_read import binary_copy_decoded, numeric_columns
from apps.judgments.models import PairJudgment, ScoreAnswer
from tests.factories import PairJudgmentFactory, ScoreAnswerFactory

pytestmark = pytest.mark.django_db

ANSWER_COLUMNS = ["response__item_id", "response__rater_id", "question_id", "value"]


def test_answers_come_as_the_orm_gives_them_in_the_queryset_s_order():
    for value in (4, 1, 3.5):
        ScoreAnswerFactory(value=value)
    ScoreAnswerFactory(value=2, response__seconds_into_session=None)
    queryset = ScoreAnswer.objects.order_by("-pk")
    columns = [*ANSWER_COLUMNS, "response__seconds_into_session"]
    expected = np.array(list(queryset.values_list(*columns)), dtype=np.float64)
    got = numeric_columns(queryset, columns, np.float64)
    assert got.dtype == np.float64
    assert got.shape == (4, 5)
    np.testing.assert_array_equal(got, expected)
    # A missing time is NaN, as numpy makes of None.
    assert np.isnan(got[0, 4])
    assert list(got[:, 3]) == [2.0, 3.5, 1.0, 4.0]


def test_integer_columns_and_expressions():
    PairJudgmentFactory()
    PairJudgmentFactory(winner=factory.SelfAttribute("right"))
    code = Case(When(outcome="left", then=Value(0)), default=Value(1))
    queryset = PairJudgment.objects.order_by("pk")
    got = numeric_columns(queryset, ["left_id", "right_id", code, "rater_id"], np.int64)
    expected = np.array(
        [(p.left_id, p.right_id, int(p.outcome != "left"), p.rater_id) for p in queryset],
        dtype=np.int64,
    )
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_no_rows_give_an_empty_array_of_the_columns():
    got = numeric_columns(ScoreAnswer.objects.none(), ANSWER_COLUMNS, np.float64)
    assert got.shape == (0, 4)
    got = numeric_columns(ScoreAnswer.objects.filter(value__gt=1e6), ANSWER_COLUMNS, np.float64)
    assert got.shape == (0, 4)


def test_a_database_error_is_django_s_as_through_the_orm(postgres_only):
    """A value the cast cannot take fails in PostgreSQL; the caller sees Django's DataError,
    as the ORM's own read would raise it, not the driver's."""
    from django.db import DataError, transaction

    from apps.studies.models import Item
    from tests.factories import ItemFactory

    ItemFactory(external_id="not-a-number")
    with pytest.raises(DataError), transaction.atomic():
        numeric_columns(Item.objects.all(), ["external_id"], np.int64)


def test_only_float64_or_int64():
    with pytest.raises(ValueError, match="float64 or int64"):
        numeric_columns(ScoreAnswer.objects.all(), ANSWER_COLUMNS, np.float32)


def _stream(*rows: tuple[int | None, ...]) -> bytes:
    out = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
    for row in rows:
        out += struct.pack(">h", len(row))
        for value in row:
            out += struct.pack(">i", -1) if value is None else struct.pack(">iq", 8, value)
    return out + b"\xff\xff"


def test_a_binary_stream_is_decoded_by_its_fixed_width_rows():
    got = binary_copy_decoded(_stream((1, -2), (3, 2**40)), 2, np.int64)
    np.testing.assert_array_equal(got, [[1, -2], [3, 2**40]])
    assert binary_copy_decoded(_stream(), 2, np.int64).shape == (0, 2)


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (_stream((1, None), (2, 3), (4, 5)), "not a row|NULL"),
        (_stream((1, 2))[:-2], "without its end"),
        (b"COPY" + _stream((1, 2)), "not a binary COPY"),
        (_stream((1, 2, 3)), "not a row|NULL"),
    ],
)
def test_a_stream_of_another_shape_is_refused_not_misread(stream, message):
    with pytest.raises(ValueError, match=message):
        binary_copy_decoded(stream, 2, np.int64)
