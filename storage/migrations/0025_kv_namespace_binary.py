"""KV namespaces in binary order (issue 32's KV inspector): ``kv_namespaces`` lists
the distinct namespaces by seeks over the ``kv_key (namespace, key)`` index, so the
index must hold them in the contract's order. On PostgreSQL the column takes
COLLATE "C" (the index is rebuilt with it); SQLite compares in binary already, so
there the table is copied unchanged. Schema only: the schema version stays 1."""

from django.db import migrations

import storage.migrations._frozen_v1


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0024_version_horizon"),
    ]

    operations = [
        migrations.AlterField(
            model_name="kvrow",
            name="namespace",
            field=storage.migrations._frozen_v1.BinaryCharField(max_length=255),
        ),
    ]
