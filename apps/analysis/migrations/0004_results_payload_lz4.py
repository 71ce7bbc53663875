"""A study's stored results (a 10.8 MB document for a crowd set of 15,000 items) compressed
with LZ4 instead of PostgreSQL's default pglz: storing that document took 475 ms with pglz and
230-350 ms with LZ4, and reading it back is faster too (benchmarks/README.md). PostgreSQL 14
and later, built with LZ4 (Debian's is); elsewhere the column keeps the default."""

from django.db import DatabaseError, migrations, transaction


def _lz4(apps, schema_editor):  # type: ignore[no-untyped-def]
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or connection.pg_version < 140000:
        return
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE analysis_studyresult ALTER COLUMN payload SET COMPRESSION lz4"
            )
    except DatabaseError:  # a server built without LZ4
        pass


def _pglz(apps, schema_editor):  # type: ignore[no-untyped-def]
    connection = schema_editor.connection
    if connection.vendor == "postgresql" and connection.pg_version >= 140000:
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE analysis_studyresult ALTER COLUMN payload SET COMPRESSION pglz"
            )


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0003_compact_results_json"),
    ]

    operations = [migrations.RunPython(_lz4, _pglz)]
