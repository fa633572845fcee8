"""Load an upgrade fixture (``dump.py``'s file) into the test database, on either
engine: the schema first goes back to the fixture's migration, through the migrations
themselves, then every row is inserted as it was stored (booleans as the engine spells
them, PostgreSQL's sequences moved past the loaded IDs)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection, transaction

HERE = Path(__file__).resolve().parent


def load(name: str) -> dict[str, int]:
    """Migrate storage back to the fixture's schema and load its rows; returns the
    number of rows per table."""
    with gzip.open(HERE / name, "rt") as f:
        fixture = json.load(f)
    # Through the migrations the squash replaces: it alone cannot go back (demo/unsquashed.py).
    call_command("migrate_unsquashed", "storage", fixture["schema"], verbosity=0)
    counts = {}
    with transaction.atomic(), connection.cursor() as cursor:
        for table, data in fixture["tables"].items():
            columns, rows = data["columns"], data["rows"]
            # What the migrations wrote (the schema version rows) is the fixture's too.
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")  # noqa: S608
            if not rows:
                continue
            flags = _booleans(cursor, table)
            names = ", ".join(connection.ops.quote_name(c) for c in columns)
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(
                f"INSERT INTO {connection.ops.quote_name(table)} ({names}) VALUES ({marks})",  # noqa: S608
                [
                    [_value(v, c in flags) for v, c in zip(row, columns, strict=True)]
                    for row in rows
                ],
            )
            counts[table] = len(rows)
        # The models of tables the fixture's schema has (later ones are not there yet).
        existing = set(connection.introspection.table_names(cursor))
        models = [
            m for m in apps.get_app_config("storage").get_models() if m._meta.db_table in existing
        ]
        for statement in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(statement)
    return counts


def _booleans(cursor: Any, table: str) -> set[str]:
    description = connection.introspection.get_table_description(cursor, table)
    kinds = {d.name: connection.introspection.get_field_type(d.type_code, d) for d in description}
    return {name for name, kind in kinds.items() if kind == "BooleanField"}


def _value(value: Any, boolean: bool) -> Any:
    if isinstance(value, dict) and "b64" in value:
        return base64.b64decode(value["b64"])
    if boolean and value is not None:
        return bool(value)
    return value
