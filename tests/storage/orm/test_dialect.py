"""The per-engine dialect (``storage/orm/dialect.py``), and what its raw-cursor fast path
assumes about Django's ``CursorWrapper``.

The buffer's point reads skip Django's cursor wrapping when nothing observes
statements: they call the driver's cursor (``CursorWrapper.cursor``) directly, inside
``connection.wrap_database_errors``. These tests pin each assumption that makes that
safe, so a Django upgrade that breaks one fails here rather than in production: an
unobserved cursor is exactly ``CursorWrapper`` holding the driver's cursor; an
observed one (debug cursor, execute wrapper) is not taken past; the fast path answers
what the wrapped cursor answers; and a driver error still arrives as Django's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connections
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.test.utils import CaptureQueriesContext

from storage import Unavailable
from storage.orm import OrmStore, schema
from storage.orm.dialect import JSON_TIMES, PostgresDialect, SqliteDialect, dialect
from storage.orm.errors import translate_errors

from ..support import FakeClock

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

READ = f"SELECT key, value FROM {schema.META} WHERE key >= %s ORDER BY key"  # noqa: S608


@pytest.fixture
def connection() -> Iterator[Any]:
    store = OrmStore(clock=FakeClock())  # writes the metadata rows READ selects
    conn = connections["default"]
    yield conn
    store.close()


def test_an_unobserved_cursor_is_exactly_cursor_wrapper_over_the_driver(connection: Any) -> None:
    with connection.cursor() as cursor:
        assert type(cursor) is CursorWrapper
        driver = cursor.cursor
        assert not isinstance(driver, CursorWrapper)
        assert callable(driver.execute)
        assert callable(driver.fetchall)
    assert connection.execute_wrappers == []


@pytest.mark.sqlite_only
def test_sqlite_driver_cursor_is_a_sqlite3_cursor_taking_qmark_placeholders(
    connection: Any,
) -> None:
    """``SqliteDialect.execute_driver`` calls ``sqlite3.Cursor.execute`` itself, under
    Django's subclass that converts ``%s`` per call."""
    with connection.cursor() as cursor:
        driver = cursor.cursor
        assert isinstance(driver, sqlite3.Cursor)
        sqlite3.Cursor.execute(driver, "SELECT ? + 1", [41])
        assert driver.fetchall() == [(42,)]


def test_the_fast_path_answers_what_the_wrapped_cursor_answers(connection: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(READ, [""])
        wrapped = [tuple(row) for row in cursor.fetchall()]
        fast = dialect(connection).fetchall(connection, cursor, READ, [""])
    assert [tuple(row) for row in fast] == wrapped
    assert {key for key, _ in wrapped} >= {"schema_version", "record_format", "clock"}


def test_a_driver_error_on_the_fast_path_arrives_as_djangos(connection: Any) -> None:
    with connection.cursor() as cursor, pytest.raises(DatabaseError):
        dialect(connection).fetchall(connection, cursor, "SELECT * FROM no_such_table", [])


def test_a_driver_error_on_the_fast_path_becomes_unavailable(connection: Any) -> None:
    with (
        connection.cursor() as cursor,
        pytest.raises(Unavailable, match="database error"),
        translate_errors(),
    ):
        dialect(connection).fetchall(connection, cursor, "SELECT * FROM no_such_table", [])


def test_an_execute_wrapper_sees_every_fast_path_read(connection: Any) -> None:
    seen: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper), connection.cursor() as cursor:
        dialect(connection).fetchall(connection, cursor, READ, [""])
    assert seen == [READ]


def test_a_debug_cursor_logs_every_fast_path_read(connection: Any) -> None:
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        assert isinstance(cursor, CursorDebugWrapper)
        dialect(connection).fetchall(connection, cursor, READ, ["clock"])
    assert [q["sql"] for q in captured.captured_queries][-1].startswith("SELECT key, value")


def test_each_engine_has_its_dialect(connection: Any) -> None:
    found = dialect(connection)
    assert found.vendor == connection.vendor
    assert isinstance(found, SqliteDialect | PostgresDialect)


def test_the_true_literal_selects_true_rows(connection: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 WHERE {dialect(connection).true}")
        assert cursor.fetchall() == [(1,)]


def test_the_position_function_finds_a_substring_and_not_an_absent_one(
    connection: Any,
) -> None:
    position = dialect(connection).position
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {position}('run-abc', %s), {position}('run-abc', %s)", ["abc", "x"])
        assert tuple(cursor.fetchone()) == (5, 0)


def test_the_json_time_expression_reads_the_integer_time(connection: Any) -> None:
    time = dialect(connection).json_nanos("%s", "received_at")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {time}", ['{"received_at": 1700000000000000001}'])
        assert cursor.fetchone()[0] == 1700000000000000001


@pytest.mark.parametrize("engine", [SqliteDialect(), PostgresDialect()], ids=["sqlite", "pg"])
def test_it_refuses_a_json_time_it_has_no_index_for(engine: Any) -> None:
    assert "updated_at" not in JSON_TIMES  # a Work's update time is a column
    with pytest.raises(ValueError, match="no JSON time index"):
        engine.json_nanos("data", "updated_at")


def test_sequences_continue_after_the_highest_event(connection: Any) -> None:
    found = dialect(connection)

    def fetch(sql: str, params: Any) -> list[Any]:
        return found.fetchall(connection, raw, sql, params)

    with connection.cursor() as raw:
        drawn = found.sequences(fetch, schema.EVENT, "seq")
        first, second = next(drawn), next(drawn)
    assert first >= 1
    assert second == first + 1
