"""The migrated test database as a template, copied back after each transactional test
instead of Django's flush.

pytest-django ends every ``transaction=True`` test with ``manage.py flush``: it empties
every table (56) and runs post_migrate again, which rewrites the content types and
permissions, and it leaves the database unlike a migrated one (no operators group, no
``conduit_meta`` rows). ``capture`` keeps the database as migrate left it; ``restore``
brings it back after a test, on each engine the cheapest correct way:

- SQLite: the template is a copy of the migrated file, copied back with SQLite's backup
  API into the open connection (other connections, e.g. the "view" alias and the live
  server's, see the new content as after any write): the whole file, schema included.
- PostgreSQL: the template is the rows of the tables migrate filled (and a fingerprint
  of each), and the names of all its tables; a restore drops a table a test made,
  fails naming any table of migrate's a test dropped (a backward migration not
  undone), truncates every table that has a row and was empty in the template, and a
  filled table whose fingerprint changed (with the tables referencing them), and puts
  back the template's rows, in one transaction. A test that wrote nothing costs two
  queries.

Measured per test on this machine (2 cores, the suite's 56 tables, after a test that
wrote a Work, an Event and a user; medians; tests/README.md has the table):

    SQLite       flush 90 ms   backup API from the template file 3.5 ms
                 (close every connection and copy the file instead: 10 ms)
    PostgreSQL   flush 160 ms  DROP + CREATE DATABASE ... TEMPLATE 207 ms (WAL_LOG)
                 or 289 ms (FILE_COPY), and every pooled connection reopened;
                 the changed tables from the template: 77 ms truncating them (kept:
                 a DELETE, 24 ms, left pages of dead rows that changed the plans the
                 plan tests pin); nothing when nothing was written
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Never emptied: flush leaves it too (it is the migration state, not data).
KEEP = frozenset({"django_migrations"})


@dataclass
class Template:
    vendor: str
    sqlite: sqlite3.Connection | None = None
    path: Path | None = None
    # PostgreSQL: table -> (columns, rows, fingerprint) for the tables migrate filled.
    filled: dict[str, tuple[list[str], list[tuple[Any, ...]], str]] = field(default_factory=dict)
    # PostgreSQL: every table migrate made (a restore brings back rows, not tables).
    tables: frozenset[str] = frozenset()

    def close(self) -> None:
        if self.sqlite is not None:
            self.sqlite.close()
            self.sqlite = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def capture(connection: Any) -> Template:
    """The database as it is now (just migrated) as the template ``restore`` copies."""
    connection.ensure_connection()
    if connection.vendor == "sqlite":
        path = Path(f"{connection.settings_dict['NAME']}.template")
        path.unlink(missing_ok=True)
        copy = sqlite3.connect(path)
        connection.connection.backup(copy)
        return Template("sqlite", sqlite=copy, path=path)
    with connection.cursor() as cursor:
        tables = _tables(cursor)
        template = Template(connection.vendor, tables=frozenset(tables))
        for table in _filled(cursor, tables):
            cursor.execute(f'SELECT * FROM "{table}"')
            columns = [d.name for d in cursor.description]
            rows = cursor.fetchall()
            cursor.execute(_fingerprint(table))
            template.filled[table] = (columns, rows, cursor.fetchone()[0])
    return template


def restore(connection: Any, template: Template) -> None:
    """Makes the database equal to the template again (its rows, and on SQLite its
    schema too)."""
    connection.ensure_connection()
    if template.sqlite is not None:
        template.sqlite.backup(connection.connection)
        return
    from django.db import transaction

    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        tables = _tables(cursor)
        missing = sorted(template.tables - set(tables))
        if missing:
            # A test that migrates backwards must migrate forwards again to every app's
            # last migration: the tests after it would fail on a missing table.
            raise RuntimeError(f"the test left the schema without migrate's tables {missing}")
        extra = sorted(set(tables) - template.tables)
        if extra:
            # A table a test made for itself goes, as SQLite's file copy drops it.
            cursor.execute("DROP TABLE " + ", ".join(f'"{t}"' for t in extra) + " CASCADE")
            tables = [t for t in tables if t not in extra]
        changed = [t for t in _changed(cursor, tables, template) if t in tables]
        if not changed:
            return
        # TRUNCATE, not DELETE: it leaves the tables as migrate did (no pages of dead
        # rows), so the planner costs a test's statements as it would on a fresh
        # database (the plan tests pin plans). Every table that references a truncated
        # one is truncated with it (and refilled if migrate filled it).
        changed = _with_referencing(cursor, changed)
        cursor.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in changed))
        refilled = [t for t in changed if t in template.filled]
        for table in refilled:
            columns, rows, _ = template.filled[table]
            names = ", ".join(f'"{c}"' for c in columns)
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', rows)
        # The rows came back with their IDs; a sequence a test moved back (a restore of
        # a backup does) must pass them, or the next insert collides with them.
        for sql in _sequence_resets(connection, refilled):
            cursor.execute(sql)


def _tables(cursor: Any) -> list[str]:
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
    return [row[0] for row in cursor.fetchall() if row[0] not in KEEP]


def _filled(cursor: Any, tables: list[str]) -> list[str]:
    cursor.execute(
        " UNION ALL ".join(f"SELECT '{t}' WHERE EXISTS (SELECT FROM \"{t}\")" for t in tables)
    )
    return [row[0] for row in cursor.fetchall()]


def _fingerprint(table: str) -> str:
    return f"SELECT md5(coalesce(string_agg(r::text, ',' ORDER BY r::text), '')) FROM \"{table}\" r"


def _changed(cursor: Any, tables: list[str], template: Template) -> list[str]:
    """The tables unlike the template's, in one statement: a table migrate left empty
    with a row, or a filled one whose rows' fingerprint changed."""
    parts = []
    for table in tables:
        if table in template.filled:
            fingerprint = template.filled[table][2]
            parts.append(
                f"SELECT '{table}' WHERE ({_fingerprint(table)}) IS DISTINCT FROM '{fingerprint}'"
            )
        else:
            parts.append(f"SELECT '{table}' WHERE EXISTS (SELECT FROM \"{table}\")")
    cursor.execute(" UNION ALL ".join(parts))
    return [row[0] for row in cursor.fetchall()]


def _sequence_resets(connection: Any, tables: list[str]) -> list[str]:
    from django.apps import apps
    from django.core.management.color import no_style

    models = [m for m in apps.get_models(include_auto_created=True) if m._meta.db_table in tables]
    return connection.ops.sequence_reset_sql(no_style(), models) if models else []


def _with_referencing(cursor: Any, tables: list[str]) -> list[str]:
    """``tables`` and every table whose foreign keys reach one of them."""
    cursor.execute(
        "SELECT DISTINCT c.conrelid::regclass::text, c.confrelid::regclass::text"
        " FROM pg_constraint c WHERE c.contype = 'f'"
    )
    edges = [(a.strip('"'), b.strip('"')) for a, b in cursor.fetchall()]
    found = set(tables)
    grew = True
    while grew:
        more = {a for a, b in edges if b in found} - found
        found |= more
        grew = bool(more)
    return sorted(found)
