"""The storage squash builds what its 22 migrations build (issue 30), on this run's
engine: a database made by ``0001_squashed_0022_execution_live_started`` and one made
through ``0001_initial`` ... ``0022_execution_live_started`` one by one (``demo.unsquashed``)
have the same tables, columns (names, order, types, nullability, defaults, collations),
indexes (unique, partial and expression ones, by their SQL), constraints and rows.
Then the ways a database meets the squash: a new one runs it alone; one the squash made
can be taken back to an older schema and brought forward again; one an older release
left runs the rest of the 22 and counts as squashed after."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder
from django.db.utils import load_backend

from demo.unsquashed import unsquashed

pytestmark = pytest.mark.django_db(transaction=True, databases=["default"])

SQUASH = ("storage", "0001_squashed_0022_execution_live_started")
LAST = ("storage", "0022_execution_live_started")
OLDER = ("storage", "0020_timed_out_groups")
REPLACED = importlib.import_module(f"storage.migrations.{SQUASH[1]}").Migration.replaces
# The migrations after the squash, which every path below runs after it or its chain.
AFTER = sorted(
    path.stem
    for path in (Path(__file__).resolve().parents[3] / "storage" / "migrations").glob("[0-9]*.py")
    if path.stem > LAST[1] and "squashed" not in path.stem
)


@contextmanager
def spare_database(tmp_path: Path, suffix: str) -> Iterator[BaseDatabaseWrapper]:
    """A Django connection to an empty database of this run's engine, beside the test
    database (a file in ``tmp_path``, or a database on the same PostgreSQL server),
    dropped afterwards."""
    base = connections["default"].settings_dict
    alias = f"squash_{suffix}"
    postgres = connections["default"].vendor == "postgresql"
    name: Any = str(tmp_path / f"{suffix}.sqlite3")
    if postgres:
        name = f"{base['NAME']}_{suffix}"[:63]
        with connections["default"].cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            cursor.execute(f'CREATE DATABASE "{name}"')
    # Made here and only handed to ``connections`` (atomic() looks it up there), not
    # named in its settings: Django's test case lets a test open such a connection.
    spare = load_backend(base["ENGINE"]).DatabaseWrapper({**base, "NAME": name}, alias)
    connections[alias] = spare
    try:
        yield spare
    finally:
        spare.close()
        del connections[alias]
        if postgres:
            with connections["default"].cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate(connection: BaseDatabaseWrapper, *targets: tuple[str, str]) -> list[str]:
    """Migrate storage (and what it depends on) to ``targets``, or to its leaf; the
    names of the storage migrations applied or unapplied."""
    executor = MigrationExecutor(connection)
    goal = list(targets) or executor.loader.graph.leaf_nodes("storage")
    plan = executor.migration_plan(goal)
    executor.migrate(goal)
    return [m.name for m, _ in plan if m.app_label == "storage"]


def recorded(connection: BaseDatabaseWrapper) -> set[str]:
    return {
        name for app, name in MigrationRecorder(connection).applied_migrations() if app == "storage"
    }


def _sql(text: str | None) -> str | None:
    return None if text is None else re.sub(r"\s+", " ", text).strip()


def schema(connection: BaseDatabaseWrapper) -> dict[str, Any]:
    """Everything about the storage tables that a query, a constraint or a planner
    could tell apart, and their rows."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
                "AND name LIKE 'conduit%' ORDER BY name"
            )
            tables = cursor.fetchall()
            found: dict[str, Any] = {}
            for table, sql in tables:
                cursor.execute(f'PRAGMA table_xinfo("{table}")')
                columns = cursor.fetchall()
                cursor.execute(f'PRAGMA foreign_key_list("{table}")')
                keys = cursor.fetchall()
                cursor.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                    "AND tbl_name = %s ORDER BY name",
                    [table],
                )
                indexes = [(n, _sql(s)) for n, s in cursor.fetchall()]
                found[table] = {
                    "create": _sql(sql),
                    "columns": columns,
                    "foreign keys": keys,
                    "indexes": indexes,
                }
        else:
            cursor.execute(
                "SELECT table_name, column_name, data_type, character_maximum_length, "
                "is_nullable, column_default, collation_name, is_identity "
                "FROM information_schema.columns WHERE table_schema = 'public' "
                "AND table_name LIKE 'conduit%%' ORDER BY table_name, ordinal_position"
            )
            columns = cursor.fetchall()
            cursor.execute(
                "SELECT tablename, indexname, indexdef FROM pg_indexes "
                "WHERE schemaname = 'public' AND tablename LIKE 'conduit%%' "
                "ORDER BY tablename, indexname"
            )
            indexes = cursor.fetchall()
            cursor.execute(
                "SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid) "
                "FROM pg_constraint WHERE connamespace = 'public'::regnamespace "
                "AND conrelid::regclass::text LIKE 'conduit%%' ORDER BY 1, 2"
            )
            constraints = cursor.fetchall()
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'public' AND table_name LIKE 'conduit%%' ORDER BY 1"
            )
            tables = cursor.fetchall()
            found = {"columns": columns, "indexes": indexes, "constraints": constraints}
        rows = {}
        for table, *_ in tables:
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - names from the catalog
            rows[table] = sorted(map(repr, cursor.fetchall()))
        found["rows"] = rows
    return found


def test_the_squash_builds_what_its_migrations_build(tmp_path: Path) -> None:
    with (
        spare_database(tmp_path, "squashed") as squashed,
        spare_database(tmp_path, "chain") as chain,
    ):
        assert migrate(squashed) == [SQUASH[1], *AFTER]
        with unsquashed():
            through = migrate(chain)
        assert through == [*(name for _, name in REPLACED), *AFTER]
        made, expected = schema(squashed), schema(chain)
        assert made.keys() == expected.keys()
        for part in expected:
            assert made[part] == expected[part], f"the squash differs in {part}"
        assert expected["rows"], "no storage table was read"


def test_a_squashed_database_goes_back_to_an_older_schema_and_forward_again(
    tmp_path: Path,
) -> None:
    with spare_database(tmp_path, "back") as db, spare_database(tmp_path, "older") as older:
        migrate(db)
        assert {SQUASH[1], LAST[1], OLDER[1]} <= recorded(db)
        before = schema(db)
        with unsquashed():
            undone = migrate(db, OLDER)
            migrate(older, OLDER)
        assert undone == [*reversed(AFTER), "0022_execution_live_started", "0021_event_keys"]
        assert schema(db) == schema(older), "taken back, it is not the older schema"
        # What an older release left: plain migrate runs the rest one by one.
        assert migrate(db) == ["0021_event_keys", "0022_execution_live_started", *AFTER]
        assert schema(db) == before
        assert migrate(db) == []


def test_a_database_an_older_release_left_runs_the_rest_and_counts_as_squashed(
    tmp_path: Path,
) -> None:
    with spare_database(tmp_path, "release") as db:
        with unsquashed():
            migrate(db, OLDER)
        assert SQUASH[1] not in recorded(db)
        assert migrate(db) == ["0021_event_keys", "0022_execution_live_started", *AFTER]
        loader = MigrationExecutor(db).loader
        assert SQUASH in loader.applied_migrations
        leaf = ("storage", AFTER[-1]) if AFTER else SQUASH
        assert loader.graph.leaf_nodes("storage") == [leaf]
        assert SQUASH in loader.graph.nodes
