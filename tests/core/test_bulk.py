"""Bulk inserts (apps.core.bulk): whatever path the database takes (COPY on PostgreSQL, multi-row
INSERT elsewhere), every value comes back as it went in, the new keys come back in the order of
the rows, and a row the database refuses stores nothing of the batch."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from django.db import IntegrityError, connection, models, transaction

from apps.core import bulk
from apps.core.bulk import bulk_insert
from apps.raters.models import RaterSession
from apps.studies.models import Item
from tests.factories import RaterFactory, StudyFactory

SHOWN = (
    "study_id",
    "external_id",
    "text",
    "source",
    "language",
    "context",
    "safety_intercepted",
    "offense_released_at",
)
# The other columns the table requires, at their model defaults (bulk rows carry every value).
REST = [
    f
    for f in Item._meta.concrete_fields
    if not f.primary_key and not f.null and f.attname not in SHOWN
]
COLUMNS = (*SHOWN, *(f.attname for f in REST))
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _default(field: Any) -> Any:
    return NOW if isinstance(field, models.DateTimeField) else field.get_default()


# What COPY's text format must escape, what JSON must keep, and what a NULL must stay.
TEXTS = [
    "tab\there, newline\nthere, return\r, backslash \\ and \\N literally",
    "程序员为什么分不清万圣节和圣诞节？因为 Oct 31 == Dec 25。",
    "x",
    "quotes ' and \" and a trailing backslash \\",
]
CONTEXTS = [{"turns": ["a\tb", 'say "hi"']}, {"键": "值"}, {}, {"n": 1.5, "none": None}]
RELEASED = [None, datetime(2026, 11, 21, 12, 44, 3, 900000, tzinfo=UTC), None, None]


def _rows(study_id: int) -> list[tuple[object, ...]]:
    rest = tuple(_default(f) for f in REST)
    return [
        (
            study_id,
            f"x{k}",
            text,
            "model",
            "zh" if k == 1 else "en",
            ctx,
            k % 2 == 0,
            released,
            *rest,
        )
        for k, (text, ctx, released) in enumerate(zip(TEXTS, CONTEXTS, RELEASED, strict=True))
    ]


def _check_round_trip(study_id: int, pks: list[int]) -> None:
    stored = {item.pk: item for item in Item.objects.filter(study_id=study_id)}
    assert sorted(stored) == sorted(pks)
    for k, pk in enumerate(pks):
        item = stored[pk]
        assert item.external_id == f"x{k}"
        assert item.text == TEXTS[k]
        assert item.context == CONTEXTS[k]
        assert item.safety_intercepted is (k % 2 == 0)
        assert item.offense_released_at == RELEASED[k]
        # An empty string stays empty, not NULL (COPY's text format tells them apart).
        assert item.topic == ""


def _three_times(study_id: int) -> list[tuple[object, ...]]:
    """`_rows` three times over, each time under other external ids: 12 rows."""
    return [(*row[:1], f"{row[1]}-{n}", *row[2:]) for n in range(3) for row in _rows(study_id)]


def _between_two_items(
    study: Any, insert: Callable[[], list[int]]
) -> tuple[list[int], dict[int, Item]]:
    """Run a bulk insert of 12 items between two items created one at a time; its keys are
    its own, after the first's and before the second's. Returns them and the stored items."""
    before = Item.objects.create(study=study, external_id="before", text="t", source="human")
    with transaction.atomic():
        pks = insert()
    after = Item.objects.create(study=study, external_id="after", text="t", source="human")
    assert len(pks) == len(set(pks)) == 12
    assert before.pk < min(pks)
    assert after.pk > max(pks)
    return pks, {item.pk: item for item in Item.objects.filter(pk__in=pks)}


@pytest.mark.django_db
def test_values_and_keys_come_back_as_they_went_in():
    study = StudyFactory()
    with transaction.atomic():
        pks = bulk_insert(Item, COLUMNS, iter(_rows(study.pk)), returning=True)
    _check_round_trip(study.pk, pks)


@pytest.mark.django_db
def test_copy_chunks_keep_the_order_of_the_keys(postgres_only, monkeypatch):
    """Rows span several COPY chunks, and each chunk several slices; each chunk draws its keys
    from the table's sequence, so keys of rows inserted another way before and after never
    collide."""
    monkeypatch.setattr(bulk, "COPY_CHUNK", 5)
    monkeypatch.setattr(bulk, "COPY_SLICE", 2)
    study = StudyFactory()
    rows = _three_times(study.pk)
    pks, by_pk = _between_two_items(study, lambda: bulk_insert(Item, COLUMNS, rows, returning=True))
    assert [by_pk[pk].external_id for pk in pks] == [row[1] for row in rows]
    # The values converted a column at a time (JSON, date-times) stay with their own rows.
    assert [by_pk[pk].context for pk in pks] == CONTEXTS * 3
    assert [by_pk[pk].offense_released_at for pk in pks] == RELEASED * 3


def _topic(pk: int) -> str:
    return f"topic of {pk}"


@pytest.mark.django_db
def test_columns_made_from_the_key_hold_each_rows_own_key(monkeypatch):
    """`from_key` columns are made from the key each row gets, across COPY's chunks and slices
    on PostgreSQL and across statements on SQLite, and rows stored another way before and
    after take keys of their own. Without `returning` the keys still come back."""
    monkeypatch.setattr(bulk, "COPY_CHUNK", 5)
    monkeypatch.setattr(bulk, "COPY_SLICE", 2)
    monkeypatch.setattr(bulk, "_batch_rows", lambda n_columns: 3)
    study = StudyFactory()
    columns = tuple(name for name in COLUMNS if name != "topic")
    rows = [
        tuple(v for name, v in zip(COLUMNS, row, strict=True) if name != "topic")
        for row in _three_times(study.pk)
    ]
    pks, by_pk = _between_two_items(
        study, lambda: bulk_insert(Item, columns, rows, from_key=(("topic", _topic),))
    )
    assert [by_pk[pk].external_id for pk in pks] == [row[1] for row in rows]
    assert [by_pk[pk].topic for pk in pks] == [f"topic of {pk}" for pk in pks]
    assert [by_pk[pk].context for pk in pks] == CONTEXTS * 3


@pytest.mark.django_db(transaction=True)
def test_keys_drawn_before_the_insert_are_never_keys_given_before():
    """Keys drawn for `from_key` follow every key the table ever gave (PostgreSQL's sequence,
    SQLite's AUTOINCREMENT counter), not only the keys still in it, as its own inserts would."""
    study = StudyFactory()
    gone = [
        Item.objects.create(study=study, external_id=f"gone{n}", text="t", source="human").pk
        for n in range(3)
    ]
    Item.objects.filter(pk__in=gone).delete()
    columns = tuple(name for name in COLUMNS if name != "topic")
    rows = [
        tuple(v for name, v in zip(COLUMNS, row, strict=True) if name != "topic")
        for row in _rows(study.pk)
    ]
    with transaction.atomic():
        pks = bulk_insert(Item, columns, rows, from_key=(("topic", _topic),))
    assert min(pks) == max(gone) + 1
    assert list(Item.objects.order_by("pk").values_list("topic", flat=True)) == [
        f"topic of {pk}" for pk in pks
    ]


@pytest.mark.django_db
def test_keys_drawn_ahead_are_the_rows_keys_across_chunks(postgres_only, monkeypatch):
    """Keys drawn ahead (`draw_keys`) for rows written later, across COPY's chunks and slices:
    each row is stored under its own key, and an insert in between takes a key of its own. With
    `from_key` too, the made column is made from the given key."""
    monkeypatch.setattr(bulk, "COPY_CHUNK", 5)
    monkeypatch.setattr(bulk, "COPY_SLICE", 2)
    study = StudyFactory()
    columns = tuple(name for name in COLUMNS if name != "topic")
    rows = [
        tuple(v for name, v in zip(COLUMNS, row, strict=True) if name != "topic")
        for row in _three_times(study.pk)
    ]

    def drawn_then_written() -> list[int]:
        keys = bulk.draw_keys(Item, len(rows))
        Item.objects.create(study=study, external_id="between", text="t", source="human")
        stored = bulk_insert(Item, columns, rows, keys=keys[::-1], from_key=(("topic", _topic),))
        assert stored == keys[::-1]
        return stored

    pks, by_pk = _between_two_items(study, drawn_then_written)
    assert [by_pk[pk].external_id for pk in pks] == [row[1] for row in rows]
    assert [by_pk[pk].topic for pk in pks] == [f"topic of {pk}" for pk in pks]
    assert Item.objects.get(external_id="between").pk > max(pks)


@pytest.mark.django_db
@pytest.mark.parametrize("extra", [-1, 1], ids=["fewer keys", "more keys"])
def test_keys_given_must_be_one_per_row(extra):
    study = StudyFactory()
    rows = _rows(study.pk)
    keys = list(range(900_001, 900_001 + len(rows) + extra))
    with pytest.raises(ValueError, match="keys than rows"), transaction.atomic():
        bulk_insert(Item, COLUMNS, rows, keys=keys)
    assert not Item.objects.filter(study=study).exists()


@pytest.mark.django_db
def test_keys_given_are_the_rows_keys_across_statements(monkeypatch):
    monkeypatch.setattr(bulk, "_batch_rows", lambda n_columns: 5)
    study = StudyFactory()
    rows = _rows(study.pk)
    keys = list(range(900_001, 900_001 + len(rows)))
    with transaction.atomic():
        assert bulk_insert(Item, COLUMNS, rows, keys=keys) == keys
    stored = dict(Item.objects.filter(study=study).values_list("pk", "external_id"))
    assert stored == {key: row[1] for key, row in zip(keys, rows, strict=True)}


@pytest.mark.django_db
def test_keys_are_drawn_ahead_from_the_sequence_on_postgresql_only():
    if connection.vendor != "postgresql":
        with pytest.raises(ValueError, match="PostgreSQL only"):
            bulk.draw_keys(Item, 3)
        return
    keys = bulk.draw_keys(Item, 3)
    assert keys == list(range(keys[0], keys[0] + 3))
    assert bulk.draw_keys(Item, 1)[0] > keys[-1]


@pytest.mark.django_db(transaction=True)
def test_a_refused_row_stores_nothing_of_the_batch():
    study = StudyFactory()
    rows = _rows(study.pk)
    # A study that does not exist: the foreign key refuses the last row.
    rows.append((study.pk + 10_000, "bad", *rows[0][2:]))
    with pytest.raises(IntegrityError), transaction.atomic():
        bulk_insert(Item, COLUMNS, rows, returning=True)
    assert not Item.objects.filter(study=study).exists()


def _sessions_stored(rows: list[tuple[object, ...]]) -> list[RaterSession]:
    """Sessions bulk-inserted from (rater, start, deadline, end, reason) rows, read back in
    the order of the rows."""
    with transaction.atomic():
        pks = bulk_insert(
            RaterSession,
            ("rater_id", "started_at", "deadline", "ended_at", "end_reason"),
            rows,
            returning=True,
        )
    stored = RaterSession.objects.in_bulk(pks)
    return [stored[pk] for pk in pks]


@pytest.mark.django_db
def test_choice_members_and_date_times_are_stored_as_their_values():
    """Columns of TextChoices members and of date-times take the fast column-wise path; what
    is stored is the member's value and the same instant."""
    first, second = RaterFactory(), RaterFactory()
    start = datetime(2026, 12, 5, 1, 2, 3, 456789, tzinfo=UTC)
    later = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
    end = datetime(2026, 12, 5, 3, 30, 0, 1, tzinfo=UTC)
    rows = [
        (first.pk, start, later, later, RaterSession.EndReason.IMPORTED),
        (second.pk, later, end, end, RaterSession.EndReason.IMPORTED),
    ]
    stored = _sessions_stored(rows)
    assert [session.started_at for session in stored] == [start, later]
    assert [session.ended_at for session in stored] == [later, end]
    assert {session.end_reason for session in stored} == {"imported"}


@pytest.mark.parametrize(
    "values",
    [
        [None] * 10,
        [NOW] * 7 + [None] * 3,
        [{}] * 10,
        [{}] * 9 + [{"a": 1}],
        [[]] * 10,
        [[]] * 9 + [["zh"]],
        [{}] * 5 + [[]] * 5,
        [True, 1, 1.0, True, 1, 1.0, True, 1, 1.0, None],
        ["x"] * 9 + ["y"],
        [NOW.replace(microsecond=n) for n in range(10)],
    ],
)
def test_a_column_converted_once_per_distinct_value_is_converted_as_each_value(values):
    calls: list[Any] = []

    def convert(value: Any) -> Any:
        calls.append(value)
        return json.dumps(value, default=str)

    assert bulk._converted(values, convert) == [json.dumps(v, default=str) for v in values]
    if values in ([None] * 10, [{}] * 10, [[]] * 10):
        assert calls == values[:1]


SHANGHAI = timezone(timedelta(hours=8))


@pytest.mark.parametrize(
    "values",
    [
        [NOW] * 10,
        [NOW] * 7 + [None] * 3,
        [None, NOW, NOW.replace(microsecond=1), None, NOW],
        [NOW.replace(microsecond=n) for n in range(10)],
        # The same instant told in two zones: one text for both, the same instant stored.
        [NOW, NOW.astimezone(SHANGHAI), NOW],
        [date(2026, 12, 6)] * 3 + [date(2026, 12, 7)],
    ],
)
def test_a_column_of_instants_is_written_as_each_instant(values):
    """Date-times are formatted once per distinct instant; each row's text still reads back
    as its own instant (or NULL)."""
    texts = bulk._copy_column(values)
    assert len(texts) == len(values)
    for value, text in zip(values, texts, strict=True):
        if value is None:
            assert text == "\\N"
        elif isinstance(value, datetime):
            assert datetime.fromisoformat(text) == value
        else:
            assert date.fromisoformat(text) == value


@pytest.mark.django_db
def test_instants_shared_by_many_rows_are_stored_as_each_rows_own():
    """Sessions sharing a few instants (and one told in another zone) keep each its own."""
    raters = [RaterFactory() for _ in range(4)]
    later = NOW + timedelta(minutes=30)
    starts = [NOW, NOW.astimezone(SHANGHAI), NOW + timedelta(seconds=1), NOW]
    rows = [
        (rater.pk, start, later, None if k % 2 else later, "" if k % 2 else "imported")
        for k, (rater, start) in enumerate(zip(raters, starts, strict=True))
    ]
    stored = _sessions_stored(rows)
    assert [session.started_at for session in stored] == starts
    assert [session.ended_at for session in stored] == [later, None, later, None]


@pytest.mark.django_db
def test_copies_sent_behind_store_every_row_in_order_and_a_read_waits_for_them(
    postgres_only, monkeypatch
):
    """Inside `copies_sent_behind` a thread sends the COPYs while the caller goes on: more
    chunks than may be queued at once all land, with keys drawn from the table's sequence on
    a connection of their own, and a read after them (through the ORM) sees every row."""
    monkeypatch.setattr(bulk, "COPY_CHUNK", 2)
    monkeypatch.setattr(bulk._SentBehind, "QUEUED", 2)
    study = StudyFactory()
    rows = _three_times(study.pk)
    with transaction.atomic():
        before = Item.objects.create(study=study, external_id="before", text="t", source="human")
        with bulk.copies_sent_behind():
            pks = bulk_insert(Item, COLUMNS, rows, returning=True)
            assert Item.objects.filter(pk__in=pks).count() == len(rows)
            drawn = bulk.draw_keys(Item, 2)
        after = Item.objects.create(study=study, external_id="after", text="t", source="human")
    by_pk = Item.objects.in_bulk(pks)
    assert [by_pk[pk].external_id for pk in pks] == [row[1] for row in rows]
    assert [by_pk[pk].context for pk in pks] == CONTEXTS * 3
    assert before.pk < min(pks)
    assert max(pks) < min(drawn)
    assert max(drawn) < after.pk


@pytest.mark.django_db(transaction=True)
def test_a_copy_refused_behind_raises_in_the_caller_and_stores_nothing(postgres_only):
    """A row the database refuses while the thread sends it: the caller gets the ORM's
    IntegrityError (at the block's end, or at its next statement), and the transaction
    stores nothing of the block."""
    study = StudyFactory()
    rows = _rows(study.pk)
    # The same external id twice: the study's unique key refuses the second row.
    rows.append(rows[0])
    with pytest.raises(IntegrityError), transaction.atomic(), bulk.copies_sent_behind():
        bulk_insert(Item, COLUMNS, rows, returning=True)
    assert not Item.objects.filter(study=study).exists()
    reached: list[str] = []

    def insert_then_read() -> None:
        bulk_insert(Item, COLUMNS, rows, returning=True)
        Item.objects.filter(study=study).count()  # waits for the COPY, and raises its error
        reached.append("the read after the refused COPY")

    with pytest.raises(IntegrityError), transaction.atomic(), bulk.copies_sent_behind():
        insert_then_read()
    assert reached == []
    assert not Item.objects.filter(study=study).exists()


@pytest.mark.django_db(transaction=True)
def test_a_copy_refused_behind_stops_the_rows_after_it(postgres_only, monkeypatch):
    """Once a queued COPY has failed, the next chunk raises instead of being made and sent:
    the rest of a large file is not formatted for a transaction that can only roll back."""
    monkeypatch.setattr(bulk, "COPY_CHUNK", 2)
    monkeypatch.setattr(bulk._SentBehind, "QUEUED", 1)
    study = StudyFactory()
    rows = _three_times(study.pk)
    # The first chunk's second row repeats its first: the study's unique key refuses it.
    rows[1] = rows[0]
    taken: list[tuple[object, ...]] = []

    def counted() -> Any:
        for row in rows:
            taken.append(row)
            yield row

    with pytest.raises(IntegrityError), transaction.atomic(), bulk.copies_sent_behind():
        bulk_insert(Item, COLUMNS, counted(), returning=True)
    # The failed chunk, and the one whose sending waited for it: not the other eight rows.
    assert len(taken) == 4
    assert not Item.objects.filter(study=study).exists()


def test_copies_sent_behind_change_nothing_off_postgresql(db):
    if connection.vendor == "postgresql":
        pytest.skip("the other databases' path")
    study = StudyFactory()
    with transaction.atomic(), bulk.copies_sent_behind():
        pks = bulk_insert(Item, COLUMNS, iter(_rows(study.pk)), returning=True)
    _check_round_trip(study.pk, pks)
