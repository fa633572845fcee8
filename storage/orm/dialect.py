"""What differs between the engines the ORM backend runs on, as one object per engine.

As Django's own backends keep vendor differences in ``features_class`` and
``ops_class`` attributes, the backend asks ``dialect(connection)`` and never tests
the vendor where it writes SQL: the literal for true, the substring-position
function, the JSON time expression of the dashboards' indexes, where an Event's
sequence comes from and how its INSERT moves it, how many parameters one statement
may bind, whether writers need the advisory lock, how a flush's writes travel, and
how a point read reaches the driver's cursor.
"""

from __future__ import annotations

import functools
import itertools
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from ..errors import Unavailable

# A read that returns all its rows (the backend's ``_fetch`` without a flush).
Fetch = Callable[[str, Sequence[Any]], list[Any]]

# The record times read from the JSON, never from a column: the dashboards' series
# (received_at, started_at) and the Waits page's order (a Wait's created_at).
JSON_TIMES = frozenset({"received_at", "started_at", "created_at"})
# Text fields of a record's JSON with an expression index (Event.actor: event_actor).
JSON_TEXTS = frozenset({"actor"})

# The key of ``sequence_probe``'s row; no metadata key has a space.
PROBE_KEY = "sequence last_value"

# The sqlite3 module's own execute, under Django's placeholder-converting subclass.
_SQLITE_EXECUTE = sqlite3.Cursor.execute


# Bounded: the SQL texts are ours, but IN lists of every length make them many.
@functools.lru_cache(maxsize=1024)
def _qmark(sql: str) -> str:
    """Our SQL in sqlite3's placeholder style (it holds no literal %)."""
    return sql.replace("%s", "?")


class Dialect:
    """The engine-specific spellings; one instance per engine (``dialect``)."""

    vendor: str
    true: str  # the literal for a true boolean column value
    position: str  # position(haystack, needle) of a substring, 0 when absent
    # The most parameters one statement of a dashboard read binds.
    max_params: int = 30_000
    # The most scalar subqueries one statement of a dashboard read holds (0: no cap
    # but ``max_params``).
    max_subqueries: int = 0
    # A series read with the series tally counts its ranges of records with one
    # correlated subquery per state over a VALUES list of bounds
    # (``orm.series_tally.grid_statement``), not one scalar subquery per range.
    grid_counts: bool = False
    # Writers serialise on an advisory lock held around the transaction
    # (``OrmStore._writers_serialised``); else BEGIN IMMEDIATE does it.
    writers_lock: bool = False

    def json_nanos(self, column: str, name: str) -> str:
        """SQL for the integer ``name`` of the record JSON in ``column``: the one
        spelling of the time indexes (``models.JsonNanos``) and of the reads against
        them, which must match it for the planner to use them. Why an index over the
        JSON rather than a new column: the write path and the schema stay as they are
        (older code keeps running on a migrated database, this code on an unmigrated
        one, only slower), and the JSON already holds the time, so existing rows need
        no backfill."""
        if name not in JSON_TIMES:
            raise ValueError(f"no JSON time index for {name!r}")
        return self._json_integer(column, name)

    def _json_integer(self, column: str, name: str) -> str:
        raise NotImplementedError

    def json_text(self, column: str, name: str) -> str:
        """SQL for the text ``name`` of the record JSON in ``column``, spelled as the
        index over it (migration 0019's event_actor) so the planner uses it."""
        if name not in JSON_TEXTS:
            raise ValueError(f"no JSON text index for {name!r}")
        return self._json_text(column, name)

    def _json_text(self, column: str, name: str) -> str:
        raise NotImplementedError

    def prefix_range(self, column: str, bounded: bool) -> str:
        """A WHERE condition on ``column`` between two parameters in binary (code point)
        order, ``>=`` the first and, when ``bounded``, ``<`` the second, then the ORDER
        BY the same index returns: a prefix search as one index range scan
        (``storage.meaning.ids``). Not LIKE: its wildcards would need escaping and
        SQLite's ignores ASCII case (and then no index serves it)."""
        raise NotImplementedError

    def sequences(
        self, fetch: Fetch, table: str, column: str, last: str | None = None
    ) -> Iterator[int]:
        """The values the database would give ``column`` of this transaction's next
        rows of ``table``, known before the rows are written (at the flush). ``last``:
        what ``sequence_probe`` read, under the writers' lock, if it ran."""
        raise NotImplementedError

    def sequence_probe(self, table: str, column: str) -> str:
        """SQL appended (UNION ALL) to the writer's first read of the metadata rows,
        giving the row (``PROBE_KEY``, the sequence's last value as text or NULL), so
        ``sequences`` needs no statement of its own; "" when there is nothing to read."""
        return ""

    def sequence_value(self, table: str, column: str) -> str:
        """The SQL an INSERT writes a value of ``sequences`` as (its parameter: ``%s``),
        so that the database's own sequence moves past it."""
        return "%s"

    def send(
        self, cursor: Any, statements: Sequence[tuple[str, Sequence[Any]]], then: str = ""
    ) -> None:
        """Run the write statements of a flush, each with its rows of parameters, in
        order, on ``cursor`` (Django's): one ``executemany`` each, which costs no
        round trip in-process; then ``then`` (SQL without parameters), if any."""
        for sql, rows in statements:
            cursor.executemany(sql, rows)
        if then:
            cursor.execute(then)

    def execute_driver(self, driver: Any, sql: str, params: Sequence[Any]) -> None:
        """Run ``sql`` (``%s`` placeholders) on the driver's own cursor."""
        raise NotImplementedError

    def fetchall(
        self, connection: BaseDatabaseWrapper, cursor: Any, sql: str, params: Sequence[Any]
    ) -> list[Any]:
        """All rows of ``sql`` on ``cursor`` (one of ``connection``'s).

        Point reads are most of a large transaction's statements, and Django's cursor
        wrapping (wrappers, checks, SQLite's per-call placeholder regex) costs twice
        the read. So when nothing observes statements (no execute_wrapper, no debug
        cursor logging queries: then the cursor is exactly ``CursorWrapper``) they go
        to the driver's cursor (``CursorWrapper.cursor``), still inside Django's error
        wrapping, so failures reach ``translate_errors`` as the same exceptions.
        ``tests/storage/test_dialect.py`` pins these assumptions about Django."""
        if connection.execute_wrappers or type(cursor) is not CursorWrapper:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
        driver = cursor.cursor
        with connection.wrap_database_errors:
            self.execute_driver(driver, sql, params)
            return list(driver.fetchall())


class SqliteDialect(Dialect):
    vendor = "sqlite"
    true = "1"
    position = "instr"
    # SQLite's default cap is 32766 (SQLITE_MAX_VARIABLE_NUMBER since 3.32).
    max_params = 30_000
    # A statement's time grows faster than its scalar subqueries (SQLite 3.40, a
    # 200-bucket series of six states: 1,200 index COUNTs took 5.4 ms in one
    # statement, 1.5 ms in statements of 200, 1.1 ms of 100). In-process, more
    # statements cost no round trip; 200 keeps every console window (at most 7
    # states x 28 buckets) one statement.
    max_subqueries = 200

    def _json_integer(self, column: str, name: str) -> str:
        return f"json_extract({column}, '$.{name}')"

    def _json_text(self, column: str, name: str) -> str:
        return f"json_extract({column}, '$.{name}')"

    def prefix_range(self, column: str, bounded: bool) -> str:
        # Every ID column compares as BINARY (memcmp of UTF-8: code point order), and
        # its primary key or unique index is ordered so.
        upper = f" AND {column} < %s" if bounded else ""
        return f"{column} >= %s{upper} ORDER BY {column}"

    def sequences(
        self, fetch: Fetch, table: str, column: str, last: str | None = None
    ) -> Iterator[int]:
        # AUTOINCREMENT's next values, read once: the writer holds the write lock, rows
        # inserted with these values move ``sqlite_sequence`` as AUTOINCREMENT's own
        # do, and a rollback takes them back likewise.
        high = fetch(
            f"SELECT MAX(n) FROM (SELECT seq AS n FROM sqlite_sequence WHERE name = %s "
            f"UNION ALL SELECT MAX({column}) FROM {table})",
            [table],
        )[0][0]
        return itertools.count(int(high or 0) + 1)

    def execute_driver(self, driver: Any, sql: str, params: Sequence[Any]) -> None:
        # Django's SQLite cursor converts placeholders per call; ours are converted
        # once per distinct statement.
        _SQLITE_EXECUTE(driver, _qmark(sql), params)


class PostgresDialect(Dialect):
    vendor = "postgresql"
    true = "true"
    position = "strpos"
    # The same margin as SQLite's, below the protocol's 65535.
    max_params = 30_000
    writers_lock = True
    # Each scalar subquery of a statement is planned apart: a whole-history Work
    # series (200 buckets, six states; 5,000 generated Work over six years) took
    # 264 ms as 1,200 scalar subqueries and 18 ms with the tally and one grid
    # statement; most of the 264 was planning, not rows.
    grid_counts = True

    def _json_integer(self, column: str, name: str) -> str:
        return f"(({column})::jsonb ->> '{name}')::bigint"

    def _json_text(self, column: str, name: str) -> str:
        return f"(({column})::jsonb ->> '{name}')"

    def prefix_range(self, column: str, bounded: bool) -> str:
        # The pattern operators compare bytes whatever the column's collation (the
        # Event ID has the database's, often linguistic), and every ID column has the
        # index that serves them: Django gives each unique or primary-key varchar a
        # second "<table>_<column>_<hash>_like" index in varchar_pattern_ops. The
        # ORDER BY names the same operator, so that index also returns the order and
        # the LIMIT stops the scan.
        upper = f" AND {column} ~<~ %s" if bounded else ""
        return f"{column} ~>=~ %s{upper} ORDER BY {column} USING ~<~"

    def sequences(
        self, fetch: Fetch, table: str, column: str, last: str | None = None
    ) -> Iterator[int]:
        # No statement per row: the values follow the sequence's last value, read by
        # the transaction's first statement (``sequence_probe``), and each INSERT
        # moves the sequence to its own value (``sequence_value``). Exact because
        # writers hold the writers' lock (``OrmStore._writers_serialised``) from
        # before that read to after COMMIT, so no other writer moves it meanwhile;
        # one outside the lock (a raw INSERT) would collide on the unique sequence, a
        # Conflict, as its other rows would. Without the probe's value (a sequence
        # never called, or set with is_called false, as a bulk load does; an OrmTx
        # not opened by transact), the first value is drawn by nextval: one statement
        # per transaction. Only a rollback leaves a gap, as nextval always did. Not
        # drawing ahead in blocks: that left a block's unused values as gaps after
        # every transaction, so a seeded history numbered its Events differently.
        if last is not None:
            return itertools.count(int(last) + 1)
        first = fetch("SELECT nextval(pg_get_serial_sequence(%s, %s))", [table, column])
        return itertools.count(int(first[0][0]))

    def sequence_probe(self, table: str, column: str) -> str:
        # pg_sequence_last_value: NULL while is_called is false (then sequences draws).
        sequence = f"pg_get_serial_sequence('{table}', '{column}')::regclass"
        return f" UNION ALL SELECT '{PROBE_KEY}', pg_sequence_last_value({sequence})::text"

    def sequence_value(self, table: str, column: str) -> str:
        # setval returns the value it sets: the row gets it and the sequence moves
        # to it, in the INSERT's own statement, so the next nextval follows it.
        return f"setval(pg_get_serial_sequence('{table}', '{column}'), %s)"

    def send(
        self, cursor: Any, statements: Sequence[tuple[str, Sequence[Any]]], then: str = ""
    ) -> None:
        # One round trip for the whole flush, not one per statement: each row's
        # statement is bound here as psycopg's client-side cursor (Django's default,
        # no server_side_binding) would bind it, and the texts go out as one simple
        # query, which the server runs in order inside the open transaction; the first
        # failing statement fails it as a whole, as it failed the executemany.
        # A server-side binding cursor (OPTIONS server_side_binding) cannot bind
        # client-side: one executemany per statement then, as on SQLite.
        if not hasattr(cursor.cursor, "mogrify"):
            super().send(cursor, statements, then)
            return
        # Binding quotes strings with the connection: its failures (a lost connection)
        # must reach translate_errors as Django's exceptions, as the execute's do.
        with cursor.db.wrap_database_errors:
            texts = [cursor.mogrify(sql, params) for sql, rows in statements for params in rows]
        if then:
            texts.append(then)
        if len(texts) == 1:
            cursor.execute(texts[0])
        elif texts:
            cursor.execute(";\n".join(texts))

    def execute_driver(self, driver: Any, sql: str, params: Sequence[Any]) -> None:
        driver.execute(sql, params)


_DIALECTS: dict[str, Dialect] = {d.vendor: d for d in (SqliteDialect(), PostgresDialect())}


def dialect(connection: BaseDatabaseWrapper) -> Dialect:
    """The dialect of ``connection``'s engine."""
    try:
        return _DIALECTS[connection.vendor]
    except KeyError:
        raise Unavailable(f"the storage backend does not support {connection.vendor!r}") from None
