"""Restore an upgrade dump (``build_dumps.py``) into the test database as the schema
it stands for, then migrate to the latest: what a team's upgrade does to a database
an older release wrote."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from demo.unsquashed import unsquashed

DUMPS = Path(__file__).resolve().parent / "dumps"


def read(name: str) -> dict[str, Any]:
    dump: dict[str, Any] = json.loads((DUMPS / f"{name}.json").read_text())
    return dump


def _value(kind: str, value: Any) -> Any:
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    if kind == "bool" and value is not None:
        return bool(value)
    return value


def migrate_to(targets: list[tuple[str, str]]) -> None:
    # Through the migrations the squash replaces: it alone cannot go back (demo/unsquashed.py).
    with unsquashed():
        executor = MigrationExecutor(connection)
        executor.migrate(targets)


def latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def restore(dump: dict[str, Any], artifact_dir: Path) -> None:
    """Take storage back to the dump's migration (its tables as they were then, empty
    but for what that migration wrote), write the dump's rows into them and its
    artifact files into ``artifact_dir``."""
    for rel, content in dump["artifacts"].items():
        path = artifact_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(content))
    migrate_to([("storage", dump["migration"])])
    with connection.cursor() as cursor:
        for table, content in dump["tables"].items():
            quote = connection.ops.quote_name
            cursor.execute(f"DELETE FROM {quote(table)}")  # noqa: S608
            if not content["rows"]:
                continue
            columns = ", ".join(quote(c) for c in content["columns"])
            marks = ", ".join(["%s"] * len(content["columns"]))
            rows = [
                [_value(k, v) for k, v in zip(content["types"], row, strict=True)]
                for row in content["rows"]
            ]
            cursor.executemany(
                f"INSERT INTO {quote(table)} ({columns}) VALUES ({marks})",  # noqa: S608
                rows,
            )
            if connection.vendor == "postgresql":
                # As a restore does: each serial column's sequence past the rows.
                for column in content["columns"]:
                    cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [table, column])
                    (sequence,) = cursor.fetchone()
                    if sequence:
                        cursor.execute(
                            f"SELECT setval(%s, (SELECT MAX({quote(column)}) FROM {quote(table)}))",  # noqa: S608
                            [sequence],
                        )
