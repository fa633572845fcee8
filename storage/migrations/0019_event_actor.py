"""An expression index of the Events by actor (``Event.actor`` from the record's JSON,
then the acceptance sequence), so the console's audit by person (``find_events``
with ``actors``: an operator's actions, newest first) reads the rows it shows, not
every Event. Additive: the schema version stays 1, nothing is backfilled (the JSON
already holds the actor; format-1 records without it index as NULL and match no
actor).

The SQL is frozen here, per engine; ``storage.orm.dialect``'s ``json_text`` spells the
reads the same way, which is what lets each planner use it (tests/storage/orm/
test_event_actor_plan.py pins that). The index is not in the models' state: declaring
an expression index there would make this migration import live code."""

from typing import Any

from django.db import migrations

CREATE = {
    # The table quoted as SQLite writes it back after an ALTER TABLE ... RENAME: a rename
    # and its undo then leave sqlite_master byte for byte (test_backend_errors).
    "sqlite": (
        """CREATE INDEX event_actor ON "conduit_event" (json_extract(data, '$.actor'), seq)"""
    ),
    "postgresql": ("CREATE INDEX event_actor ON conduit_event (((data)::jsonb ->> 'actor'), seq)"),
}


def create(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(CREATE[schema_editor.connection.vendor])


def drop(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute("DROP INDEX event_actor")


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0018_execution_no_executor"),
    ]

    operations = [migrations.RunPython(create, drop)]
