"""The version log's horizon on a store that had history before 0023: the log holds
nothing of it, so states are known from the store's version at the upgrade on (the
"version_horizon" metadata row; absent on a new store, which reads as 0). One row
written from the "clock" row ("<last now> <version>"), whatever the store's size.

Frozen: it reads and writes the metadata table by its name, with no project code."""

from typing import Any

from django.db import migrations


def record_horizon(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT value FROM conduit_meta WHERE key = %s", ["clock"])
        found = cursor.fetchone()
        version = int((found[0] if found else "0 0").partition(" ")[2] or 0)
        if version:
            cursor.execute(
                "INSERT INTO conduit_meta (key, value) VALUES (%s, %s)",
                ["version_horizon", str(version)],
            )


def forget_horizon(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DELETE FROM conduit_meta WHERE key = %s", ["version_horizon"])


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0023_record_version"),
    ]

    operations = [
        migrations.RunPython(record_horizon, forget_horizon, elidable=False),
    ]
