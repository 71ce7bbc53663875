"""A study's results stored as PostgreSQL's `json` rather than `jsonb` (`DocumentJSONField`):
the document is written and read whole, never queried inside, and `jsonb` spent most of the
time of storing it parsing it into a tree. Changing a column's type drops its compression
setting, so the results' LZ4 (0004) is set again after the change, in either direction."""

from importlib import import_module

from django.db import migrations

import apps.analysis.models
import apps.core.document_field

_lz4 = import_module("apps.analysis.migrations.0004_results_payload_lz4")._lz4


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0004_results_payload_lz4"),
    ]

    operations = [
        # Backwards, the last step: LZ4 again once the column is `jsonb` again.
        migrations.RunPython(migrations.RunPython.noop, _lz4),
        migrations.AlterField(
            model_name="studyresult",
            name="payload",
            field=apps.core.document_field.DocumentJSONField(
                encoder=apps.analysis.models.CompactJSONEncoder
            ),
        ),
        migrations.RunPython(_lz4, migrations.RunPython.noop),
    ]
