"""Foreign keys of a bulk load checked once per key, not once per row (apps.core.bulk).

PostgreSQL checks a foreign key with a trigger per inserted row: an import of a million
scorecards ran six million one-row look-ups at commit, about a third of the import's time. Inside
`references_checked_in_bulk` (where the database role may turn the triggers off) every foreign
key the bulk rows name is checked by one statement per referenced table instead, and the rows
it names are locked as the triggers would lock them; where the role may not, the triggers check
each row as before. Either way a row naming a missing parent stores nothing.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from functools import partial
from typing import Any

import numpy as np
import psycopg2
import pytest
from django.db import IntegrityError, connection, transaction

from apps.core import bulk
from apps.core.bulk import bulk_insert
from apps.core.bulk_references import _not_among, references_checked_in_bulk
from apps.core.errors import Conflict
from apps.judgments.import_rows import RowWriter
from apps.judgments.models import ScoreResponse
from apps.judgments.services import study_judgments_import
from apps.studies.models import Item
from tests.core.test_bulk import COLUMNS, _rows
from tests.factories import ItemFactory, StudyFactory
from tests.judgments.test_import_stream import _read_first

pytestmark = pytest.mark.django_db

N_ITEMS = 30
N_RATERS = 12  # every rater grades every item: 360 judgments


def _scans() -> dict[str, int]:
    """Scans of each table so far in this transaction (sequential and by index)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, coalesce(seq_scan, 0) + coalesce(idx_scan, 0) "
            "FROM pg_stat_xact_user_tables"
        )
        return dict(cursor.fetchall())


def _judgments(external_ids: list[str]) -> bytes:
    lines = [
        json.dumps(
            {
                "kind": "score",
                "rater": f"r{r:02d}",
                "background": "technical",
                "item": external_id,
                "surprise": (r + k) % 5 + 1,
                "coherence": 3,
                "funniness": (r * k) % 5 + 1,
                "offensive": 0,
            }
        )
        for r in range(N_RATERS)
        for k, external_id in enumerate(external_ids)
    ]
    return "\n".join(lines).encode()


def test_an_import_looks_each_parent_up_once_not_once_per_row(postgres_only):
    study = StudyFactory()
    ids = [ItemFactory(study=study, external_id=f"j{k}").external_id for k in range(N_ITEMS)]
    before = _scans()
    summary = study_judgments_import(study=study, data=_judgments(ids), filename="j.jsonl")
    assert summary.created["score"] == N_ITEMS * N_RATERS
    # Checks still deferred to the commit run now, inside this test's transaction.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    after = _scans()

    def scans(table: str) -> int:
        return after.get(table, 0) - before.get(table, 0)

    n_rows = N_ITEMS * N_RATERS
    # Per row, each parent table was read once for each of the 360 responses (the study, the
    # rater, the session, the item) or of the 1,440 answers (the response, the question). Per
    # key, an item at most once, and a row the import itself created not at all; what is left
    # is the import's own reads, a few per rater at most.
    assert scans("studies_item") <= N_ITEMS + 3
    for table in (
        "studies_study",
        "raters_rater",
        "raters_ratersession",
        "judgments_scoreresponse",
        "studies_question",
    ):
        assert scans(table) < n_rows // 4, table


def _write_checked(rows: list[tuple[object, ...]], *, in_bulk: bool) -> None:
    """Write `rows`, in the block or not, and run the checks still deferred to the commit."""
    with transaction.atomic():
        if in_bulk:
            with references_checked_in_bulk():
                bulk_insert(Item, COLUMNS, rows)
        else:
            bulk_insert(Item, COLUMNS, rows)
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _fail_inside_the_block() -> None:
    with transaction.atomic(), references_checked_in_bulk():
        raise RuntimeError("the caller's own error")


def test_a_row_naming_a_missing_parent_is_refused_by_name_and_stores_nothing(postgres_only):
    study = StudyFactory()
    rows = _rows(study.pk)
    rows.append((study.pk + 10_000, "bad", *rows[0][2:]))
    with pytest.raises(IntegrityError) as info:
        _write_checked(rows, in_bulk=True)
    assert "studies_item.study_id" in str(info.value)
    assert str(study.pk + 10_000) in str(info.value)
    assert not Item.objects.filter(study=study).exists()


def test_a_missing_parent_in_a_later_slice_of_a_chunk_is_refused(postgres_only, monkeypatch):
    """The keys are noted from every slice a chunk is sent in, not only its first."""
    monkeypatch.setattr(bulk, "COPY_SLICE", 2)
    study = StudyFactory()
    rows = _rows(study.pk)
    rows.append((study.pk + 10_000, "bad", *rows[0][2:]))
    assert len(rows) > 2 * bulk.COPY_SLICE
    with pytest.raises(IntegrityError) as info:
        _write_checked(rows, in_bulk=True)
    assert str(study.pk + 10_000) in str(info.value)
    assert not Item.objects.filter(study=study).exists()


def _role() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW session_replication_role")
        return str(cursor.fetchone()[0])


def test_the_database_checks_rows_again_after_the_block(postgres_only):
    study = StudyFactory()
    with transaction.atomic():
        with references_checked_in_bulk():
            bulk_insert(Item, COLUMNS, _rows(study.pk))
        assert _role() == "origin"
        with pytest.raises(IntegrityError):
            _write_checked([(study.pk + 10_000, "bad", *_rows(study.pk)[0][2:])], in_bulk=False)
    # A block left by an error leaves the triggers on too.
    with pytest.raises(RuntimeError):
        _fail_inside_the_block()
    assert _role() == "origin"


def test_without_the_privilege_each_row_is_checked_as_before(postgres_only):
    """A role that may not turn the triggers off (a deployment's usual, non-superuser role)
    still imports, and a missing parent is still refused, by the trigger."""
    study = StudyFactory()
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE laughlab_plain_role NOSUPERUSER")
        cursor.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO laughlab_plain_role")
        cursor.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO laughlab_plain_role")
        cursor.execute("SET LOCAL ROLE laughlab_plain_role")
    with transaction.atomic(), references_checked_in_bulk():
        assert _role() == "origin"
        pks = bulk_insert(Item, COLUMNS, _rows(study.pk), returning=True)
    assert Item.objects.filter(pk__in=pks).count() == len(pks)
    bad = [(study.pk + 10_000, "bad", *_rows(study.pk)[0][2:])]
    with pytest.raises(IntegrityError):
        _write_checked(bad, in_bulk=True)


@pytest.mark.django_db(transaction=True)
def test_the_rows_named_stay_locked_until_the_load_commits(postgres_only):
    """The triggers lock each parent row a new row names (FOR KEY SHARE), so no other
    transaction deletes it before the load commits; the check per key locks them too."""
    study = StudyFactory()
    dsn = connection.get_connection_params()
    other = psycopg2.connect(**dsn)
    other.autocommit = True

    def lock_taken() -> bool:
        with other.cursor() as cursor:
            try:
                cursor.execute(
                    "SELECT 1 FROM studies_study WHERE id = %s FOR UPDATE NOWAIT", [study.pk]
                )
            except psycopg2.errors.LockNotAvailable:
                return False
            return True

    try:
        with transaction.atomic():
            with references_checked_in_bulk():
                bulk_insert(Item, COLUMNS, _rows(study.pk))
            # Asked from another thread, as another process would.
            seen: list[bool] = []
            thread = threading.Thread(target=lambda: seen.append(lock_taken()))
            thread.start()
            thread.join()
            assert seen == [False]
        assert lock_taken()
    finally:
        other.close()


def test_foreign_keys_are_the_only_triggers_the_block_turns_off(postgres_only):
    """`session_replication_role = replica` turns off every ordinary trigger, not only the
    foreign keys' (a deferrable unique constraint's recheck, say). The schema has no other
    trigger: a migration that adds one must make the block check what it checks too."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgrelid::regclass::text, tgname, proname FROM pg_trigger "
            "JOIN pg_proc ON pg_proc.oid = tgfoid "
            "JOIN pg_class ON pg_class.oid = tgrelid "
            "JOIN pg_namespace ON pg_namespace.oid = relnamespace "
            "WHERE nspname = current_schema() AND proname NOT LIKE 'RI\\_FKey\\_%%'"
        )
        assert cursor.fetchall() == []


@pytest.mark.parametrize("streamed", [True, False], ids=["written-while-read", "read-first"])
def test_an_item_gone_before_the_check_is_a_conflict_that_names_the_change(
    postgres_only, monkeypatch, streamed
):
    """An item deleted between the import's read of it and the check of its rows (here inside
    the import's own transaction, where the deletion skips the triggers too): a 409 saying the
    study's items changed, naming the column and the key, and nothing stored. Both when the rows
    are written as the file is read and when it is read first (a background import)."""
    study = StudyFactory()
    ids = [ItemFactory(study=study, external_id=f"j{k}").external_id for k in range(3)]
    gone = Item.objects.get(study=study, external_id="j0").pk
    write = RowWriter.write

    def write_then_lose_an_item(*args: Any, **kwargs: Any) -> Counter[str]:
        created = write(*args, **kwargs)
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM studies_item WHERE id = %s", [gone])
        return created

    monkeypatch.setattr(RowWriter, "write", write_then_lose_an_item)
    data = _judgments(ids)
    run = (
        partial(study_judgments_import, study=study, data=data, filename="j.jsonl")
        if streamed
        else partial(_read_first, study, data)
    )
    with pytest.raises(Conflict) as info:
        run()
    message = str(info.value)
    assert "items or questions changed during the import" in message
    assert f"judgments_scoreresponse.item_id names studies_item.id {gone}" in message
    assert not ScoreResponse.objects.filter(study=study).exists()
    assert Item.objects.filter(pk=gone).exists()


@pytest.mark.parametrize("seed", range(5))
def test_the_keys_not_among_those_created_are_the_set_difference(seed):
    """The import's own new keys are dropped by binary search before deduplicating."""
    rng = np.random.default_rng(seed)
    created = rng.choice(np.arange(1, 10_000), size=3_000, replace=False)
    keys = rng.integers(0, 12_000, size=20_000)
    left = _not_among(keys, created)
    assert np.array_equal(np.unique(left), np.setdiff1d(keys, created))
    assert np.isin(left, created).sum() == 0
