"""PostgreSQL for benchmarks 1 and 2, when there is one.

Used when DATABASE_URL is set (its role must be allowed to create databases), or else
when ``scripts/pg-throwaway.sh`` finds the server binaries: a throwaway cluster is
started for the run (``start --durable``: fsync and full_page_writes on, unlike the test
suite's) and removed after it. Each benchmark gets its own new database. The report
names fsync and synchronous_commit as the server reports them.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .proc import ROOT, DataDir, Workspace, child, log, manage

SCRIPT = ROOT / "scripts" / "pg-throwaway.sh"
BASH = shutil.which("bash") or "/bin/bash"
# Tables copied from an SQLite history into a migrated PostgreSQL database, and the
# identity columns whose sequences must continue after the copied rows.
TABLES = (
    "conduit_meta",
    "conduit_scope",
    "conduit_work",
    "conduit_key",
    "conduit_execution",
    "conduit_event",
    "conduit_event_key",
    "conduit_wait",
    "conduit_timer",
    "conduit_kv",
    "conduit_record_version",  # the version log (issue 32; position is its key)
    # Kept by the rules beside the records: without them the copy's facets, counts
    # and series read empty tallies (benchmark 2 once timed PostgreSQL counting 0 Work).
    "conduit_work_tally",
    "conduit_series_tally",
)
IDENTITIES = (
    ("conduit_event", "seq"),
    ("conduit_key", "id"),
    ("conduit_event_key", "id"),
    ("conduit_kv", "id"),
    ("conduit_work_tally", "id"),
    ("conduit_series_tally", "id"),
)


@dataclass
class Postgres:
    url: str  # the server's own database; benchmark databases are created beside it
    origin: str  # where it came from, for the report
    cluster_dir: Path | None = None
    created: list[str] = field(default_factory=list)

    def _admin(self):  # type: ignore[no-untyped-def]
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def describe(self) -> str:
        with self._admin() as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            fsync = conn.execute("SHOW fsync").fetchone()[0]
            fpw = conn.execute("SHOW full_page_writes").fetchone()[0]
            sync = conn.execute("SHOW synchronous_commit").fetchone()[0]
        note = (
            " **fsync is off on this server, so its commits are not durable and its "
            "transaction rates are not comparable with SQLite's synchronous=FULL.**"
            if fsync == "off"
            else ""
        )
        return (
            f"{version} ({self.origin}); fsync={fsync}, full_page_writes={fpw}, "
            f"synchronous_commit={sync} (server default; the storage API's sessions set "
            "synchronous_commit=on, benchmark 1 reads it back from them)." + note
        )

    def database(self, name: str, template: str = "") -> str:
        """A new database, empty or a copy of ``template`` (a URL); returns its URL."""
        db = f"bench_{name}_{os.getpid()}"
        if not re.fullmatch(r"[a-z0-9_]+", db):
            raise ValueError(f"bad database name {db!r}")
        copy = f' TEMPLATE "{urlsplit(template).path.lstrip("/")}"' if template else ""
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
            conn.execute(f'CREATE DATABASE "{db}"{copy}')
        self.created.append(db)
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{db}"))

    def drop(self, url: str) -> None:
        """Drop a benchmark database, best effort: measurements are already taken, and
        a throwaway cluster is removed whole at the end. WITH (FORCE) is refused while
        a session of another role (a superuser's autovacuum worker, say) is attached;
        that must not throw away the benchmark's figures."""
        db = urlsplit(url).path.lstrip("/")
        try:
            with self._admin() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        except Exception as exc:
            log(f"could not drop {db} (left for the cluster cleanup): {exc}")
            return
        if db in self.created:
            self.created.remove(db)

    def close(self) -> None:
        if self.cluster_dir is not None:
            subprocess.run(  # noqa: S603 - our own script
                [BASH, str(SCRIPT), "stop", str(self.cluster_dir)], check=False
            )
            return
        for db in list(self.created):
            try:
                self.drop(f"{self.url.rsplit('/', 1)[0]}/{db}")
            except Exception as exc:  # cleanup goes on
                log(f"could not drop PostgreSQL database {db}: {exc}")


def find(enabled: bool) -> tuple[Postgres | None, str]:
    """The PostgreSQL server to use, or None and the reason there is none."""
    if not enabled:
        return None, "not run (BENCH_PG=0 or --no-pg)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "PostgreSQL not available: psycopg is not installed (pip install -e '.[dev]')"
    url = os.environ.get("DATABASE_URL", "").strip()
    if url:
        return Postgres(url, "DATABASE_URL"), ""
    if not SCRIPT.exists():
        return None, "PostgreSQL not available: no DATABASE_URL and no scripts/pg-throwaway.sh"
    probe = subprocess.run(  # noqa: S603 - our own script
        [BASH, str(SCRIPT), "bindir"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return None, "PostgreSQL not available: no DATABASE_URL and no server binaries installed"
    # Outside the run's private temp folder: as root the script hands its folder to the
    # postgres user, who cannot enter a 0700 folder of root's.
    cluster = Path(tempfile.mkdtemp(prefix="conduit-bench-pg-"))
    started = subprocess.run(  # noqa: S603 - our own script
        [BASH, str(SCRIPT), "start", "--durable", str(cluster)],
        capture_output=True,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        subprocess.run([BASH, str(SCRIPT), "stop", str(cluster)], check=False)  # noqa: S603
        why = started.stderr.strip()
        return None, f"PostgreSQL not available: the throwaway cluster did not start: {why}"
    url = started.stdout.strip().splitlines()[-1]
    return Postgres(url, "durable throwaway cluster from scripts/pg-throwaway.sh", cluster), ""


def copy_history(source: DataDir, url: str) -> None:
    """Copy the storage tables of an SQLite history into a migrated PostgreSQL database
    (COPY, secondary indexes built afterwards from their own definitions), continue its
    sequences and ANALYZE it, as autovacuum would have by then."""
    import psycopg

    src = sqlite3.connect(f"file:{source.db}?mode=ro", uri=True)
    try:
        with psycopg.connect(url) as conn:
            indexes = conn.execute(
                "SELECT i.indexname, i.indexdef FROM pg_indexes i"
                " WHERE i.schemaname = current_schema() AND i.tablename = ANY(%s)"
                " AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)",
                [list(TABLES)],
            ).fetchall()
            for index, _definition in indexes:
                conn.execute(f'DROP INDEX "{index}"')
            for name in TABLES:
                columns = [row[1] for row in src.execute(f"PRAGMA table_info({name})")]
                cols = ", ".join(columns)
                conn.execute(f"DELETE FROM {name}")  # noqa: S608 - fixed table names
                with conn.cursor().copy(f"COPY {name} ({cols}) FROM STDIN") as copy:
                    for row in src.execute(f"SELECT {cols} FROM {name}"):  # noqa: S608
                        copy.write_row(row)
            for _index, definition in indexes:
                conn.execute(definition)
            for name, column in IDENTITIES:
                top = f"coalesce((SELECT max({column}) FROM {name}), 0) + 1"  # noqa: S608
                sequence = f"pg_get_serial_sequence('{name}', '{column}')"
                conn.execute(f"SELECT setval({sequence}, {top}, false)")
            conn.commit()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
    finally:
        src.close()


def on_both_engines(
    ws: Workspace,
    histories: dict[str, DataDir],
    works: dict[str, int],
    pg: Postgres | None,
    name: str,
    task: str,
    **kwargs: object,
) -> dict[tuple[str, str], Any]:
    """``task`` (a ``bench.child`` task) run in a copy of each history (by key, its
    size in ``works``) on SQLite, and on a PostgreSQL copy made before the SQLite child
    writes into it; the results by (engine, key). ``name`` labels the progress lines
    and the copies."""
    results: dict[tuple[str, str], Any] = {}
    for key, size in works.items():
        log(f"{name} at {size:,} Work, SQLite")
        data = ws.copy_of(histories[key], f"{task.split('.')[0]}-{key}")
        url = ""
        if pg is not None:
            started = time.monotonic()
            url = pg.database(f"{task.split('.')[0]}_{key}")
            manage(data.on_postgres(url), "migrate", "--noinput", "-v", "0")
            copy_history(data, url)
            log(f"  copied to PostgreSQL in {time.monotonic() - started:.0f} s")
        results[("SQLite", key)] = child(data, task, **kwargs)
        if pg is not None:
            log(f"{name} at {size:,} Work, PostgreSQL")
            results[("PostgreSQL", key)] = child(data.on_postgres(url), task, **kwargs)
            pg.drop(url)
        ws.discard(data)
    return results
