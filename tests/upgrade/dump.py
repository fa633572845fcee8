"""Make an upgrade fixture: ``python tests/upgrade/dump.py DB.sqlite3 OUT.json.gz SCHEMA``.

Reads every ``conduit_*`` table of a SQLite database written by an older checkout (its
own ``manage.py migrate`` and ``manage.py simulate``) into an engine-neutral file: per
table its columns and rows, bytes as ``{"b64": ...}``. ``SCHEMA`` names the storage
migration that database was at. Loaded on either engine by ``tests/upgrade/load.py``.
How the kept fixtures were made is in tests/upgrade/README.md.
"""

from __future__ import annotations

import base64
import gzip
import json
import sqlite3
import sys


def dump(database: str, out: str, schema: str) -> None:
    conn = sqlite3.connect(database)
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'conduit%'"
            " ORDER BY name"
        )
    ]
    tables = {}
    for name in names:
        cursor = conn.execute(f'SELECT * FROM "{name}"')  # noqa: S608 - names from the catalog
        columns = [d[0] for d in cursor.description]
        rows = [
            [{"b64": base64.b64encode(v).decode()} if isinstance(v, bytes) else v for v in row]
            for row in cursor
        ]
        tables[name] = {"columns": columns, "rows": rows}
    with gzip.open(out, "wt") as f:
        json.dump({"schema": schema, "tables": tables}, f, separators=(",", ":"))


if __name__ == "__main__":
    dump(*sys.argv[1:4])
