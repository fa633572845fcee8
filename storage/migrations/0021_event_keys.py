"""The Events by correlation key: ``conduit_event_key`` holds one row per key an Event
carries (its sequence, source and external ID) under the index ``event_key``, written
with the Event from now on, so "every Event carrying this key" (``find_events(key=)``,
the console's key page and ``/events?key_source=&key_id=``) reads the Events that carry
it, not the history. Additive: the schema version stays 1.

The backfill reads the existing Events in sequence order, a page at a time, and takes
their keys from the record's JSON (``{"keys": [{"source", "external_id"}, ...]}``,
every record format's spelling), frozen here rather than through the live codec."""

import json
from typing import Any

from django.db import migrations, models

PAGE = 2_000


def backfill(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    last = 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT seq, data FROM conduit_event WHERE seq > %s ORDER BY seq LIMIT %s",
                [last, PAGE],
            )
            rows = cursor.fetchall()
            if not rows:
                return
            keys = [
                [seq, k["source"], k["external_id"]]
                for seq, data in rows
                for k in json.loads(data).get("keys") or ()
            ]
            if keys:
                cursor.executemany(
                    "INSERT INTO conduit_event_key (seq, source, external_id) VALUES (%s, %s, %s)",
                    keys,
                )
            last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0020_timed_out_groups"),
    ]

    operations = [
        migrations.CreateModel(
            name="EventKeyRow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.BigIntegerField()),
                ("source", models.CharField(max_length=255)),
                ("external_id", models.CharField(max_length=255)),
            ],
            options={
                "db_table": "conduit_event_key",
                "indexes": [
                    models.Index(fields=["source", "external_id", "seq"], name="event_key")
                ],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
