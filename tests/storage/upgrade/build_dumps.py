"""Build the upgrade dumps (issue 30): ``python -m tests.storage.upgrade.build_dumps``.

A database at the latest schema gets a realistic history (``manage.py generate
--realistic``: Work in every state with Events, attempts, Timers, Waits and Scopes over
three weeks) and, for the later dump, the console's seed shapes (correlation keys, a
timed-out Wait, an artifact, run records, routed deployments and workflows). Then, for
each schema a dump stands for, a second database is migrated to exactly that migration
and each of its tables takes the rows of the first, in the columns that table had then,
with the record JSON written as that schema's record format wrote it (fields added by
later formats removed: ``tests/storage/test_record_fields.py`` lists them) and
``conduit_meta`` saying that format. What a later migration creates or backfills (the
triage marks, the tallies, the attempt Scope column, the Event key rows) is left out,
so the upgrade has to rebuild it.

The dumps are JSON, one object per table: its columns, their declared SQLite types
(the loader turns ``bool`` columns into booleans for PostgreSQL) and its rows (bytes as
``{"base64": ...}``), and the artifact folder's files beside them., in
primary-key order. Rebuild them only to add a dump: a shipped one stands for databases
already written.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
# Dump name -> (the storage migration it stands for, its record format).
DUMPS = {
    "schema_0001": ("0001_initial", 1),
    "schema_0020": ("0020_timed_out_groups", 8),
}
# Record fields each format added (test_record_fields.CHANGES), by stored table.
ADDED_AFTER = {
    # format: [(table, path within the stored JSON)]
    2: [("conduit_event", ("actor",))],
    3: [("conduit_execution", ("binding", "pass_env"))],
    4: [("conduit_event", ("scope_id",))],
    5: [("conduit_work", ("exhausted",)), ("conduit_work", ("error_group",))],
}


def _django(db: Path) -> None:
    os.environ["CONDUIT_SQLITE_PATH"] = str(db)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conduit.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _seed() -> None:
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    call_command("generate", "--works", "110", "--seed", "30", "--realistic", "--no-progress")
    from storage import ExecutionState
    from tests.console import factories as f
    from tests.console import routedfactories as rtf
    from tests.console import run_record_factories as rf

    f.scope("up-acme", name="Upgrade Acme")
    f.scope("up-acme/eu", parent="up-acme")
    f.event("up-e1", work_id="", scope_id="up-acme", data={"order": 1}, keys=[("shop", "o-1")])
    f.parked("up-parked", scope_id="up-acme/eu")
    f.running("up-running", scope_id="up-acme")
    f.backoff("up-backoff", message="upstream 502 for order 17")
    f.exhausted("up-exhausted", message="upstream 502 for order 18")
    f.failed("up-failed", message="card declined")
    f.work("up-keyed", keys=[("shop", "o-1")])
    f.timed_out("up-timed-out")
    f.timer("up-t1", work_id="up-parked")
    f.work("up-done", scope_id="up-acme")
    ref = f.publish(b'{"ok": true}', "application/json")
    x = f.start("up-done")
    f.finish(x.id, state=ExecutionState.COMPLETED, artifacts=[ref])
    f.event("up-e2", work_id="up-done", causation="up-e1", route="route:1")
    rf.checkout("checkout/1")
    rf.payment("payment/1")
    dep = rtf.deployment()
    rtf.alias("summarise", dep)
    rtf.running(dep.deployment_id)
    rtf.failed(dep.deployment_id)
    rtf.paused()


def _drop(record: dict[str, Any], path: tuple[str, ...]) -> None:
    for part in path[:-1]:
        inner = record.get(part)
        if isinstance(inner, dict):
            record = inner
        else:
            return
    record.pop(path[-1], None)


def _plain(value: Any) -> Any:
    """A column value as JSON: bytes as ``{"base64": ...}``."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    return value


def _columns(db: Path) -> dict[str, list[tuple[str, str]]]:
    with sqlite3.connect(db) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'conduit%'"
            )
        ]
        return {
            t: [(c[1], c[2].lower()) for c in conn.execute(f'PRAGMA table_info("{t}")')]
            for t in sorted(tables)
        }


def _files(folder: Path) -> dict[str, str]:
    """The artifact folder's files (kept beside the database across an upgrade)."""
    return {
        str(p.relative_to(folder)): base64.b64encode(p.read_bytes()).decode("ascii")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _dump(full: Path, migration: str, record_format: int, out: Path) -> None:
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        then = Path(tmp) / "then.sqlite3"
        env = {**os.environ, "CONDUIT_SQLITE_PATH": str(then)}
        subprocess.run(
            [sys.executable, "manage.py", "migrate_unsquashed", "storage", migration, "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        shapes = _columns(then)
    dropped = [(t, p) for f, added in ADDED_AFTER.items() if f > record_format for t, p in added]
    tables: dict[str, Any] = {}
    with sqlite3.connect(full) as conn:
        for table, columns in shapes.items():
            names = [name for name, _ in columns]
            quoted = ", ".join(f'"{n}"' for n in names)
            query = f'SELECT {quoted} FROM "{table}" ORDER BY 1'  # noqa: S608
            rows = [[_plain(v) for v in r] for r in conn.execute(query)]
            if "data" in names:
                at = names.index("data")
                for row in rows:
                    paths = [p for t, p in dropped if t == table]
                    if paths and row[at]:
                        record = json.loads(row[at])
                        for path in paths:
                            _drop(record, path)
                        row[at] = json.dumps(record, separators=(",", ":"), sort_keys=True)
            if table == "conduit_meta":
                rows = [r for r in rows if r[0] != "record_format"]
                if record_format > 1:
                    rows.append(["record_format", str(record_format)])
            tables[table] = {
                "columns": names,
                "types": [kind for _, kind in columns],
                "rows": rows,
            }
    artifacts = _files(Path(os.environ["CONDUIT_ARTIFACT_DIR"]))
    dump = {
        "migration": migration,
        "record_format": record_format,
        "tables": tables,
        "artifacts": artifacts,
    }
    out.write_text(json.dumps(dump, separators=(",", ":"), sort_keys=True) + "\n")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "full.sqlite3"
        os.environ["CONDUIT_DATA_DIR"] = tmp
        os.environ["CONDUIT_ARTIFACT_DIR"] = str(Path(tmp) / "artifacts")
        os.environ["CONDUIT_ROUTED_STATE_DIR"] = str(Path(tmp) / "routed")
        _django(full)
        _seed()
        from django.db import connections

        connections.close_all()
        for name, (migration, record_format) in DUMPS.items():
            out = HERE / "dumps" / f"{name}.json"
            _dump(full, migration, record_format, out)
            sys.stdout.write(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes\n")


if __name__ == "__main__":
    main()
