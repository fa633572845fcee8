"""Routed-run rows of the ORM backend (SQLite and PostgreSQL) on the transaction's
connection alias.

Plain SQL through the connection's cursor rather than querysets: building a queryset
costs more than the statement it runs (the profile of benchmark 6 showed two thirds
of an admission in Django's SQL compiler), and a handful of statements are all the
rows need. Table names come from the models, parameters are always bound, and
``INSERT ... ON CONFLICT (key) DO NOTHING`` (SQLite 3.24+, PostgreSQL 9.5+) reports a
taken key through its row count instead of an IntegrityError, so the outer
transaction stays usable.

The contract's ``transact`` already serialises writers (SQLite ``BEGIN IMMEDIATE``,
PostgreSQL's writers' advisory lock taken before ``BEGIN``); the CAS is still the one
``UPDATE ... WHERE key = %s AND generation = %s`` with its row count checked, as the
house style asks, so it holds for a writer that bypasses the lock too.

The workflow tally (``storage.routed.tally``) has three statements of its own: the
upsert of a write's changes (``INSERT ... ON CONFLICT (parent, status, kind, reason)
DO UPDATE SET n = n + excluded.n``), the sums a listing reads (one ``UNION ALL`` of
grouped sums) and the full count a bulk load runs (``rebuild_workflow_tally``). A
tally row is touched by every writer of a workflow of its combination; the writers'
serialisation above is what keeps that from making one writer wait on another (were
it dropped, PostgreSQL's SERIALIZABLE would fail one of two writers of the same row,
``Conflict``, and the remedy would be striping each combination over a few rows).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db import connections

from ..errors import Invalid
from ..meaning.ids import prefix_upper
from ..orm.dialect import dialect
from . import tally
from .models import MODELS, RoutedWorkflowTallyRow
from .rows import FACET_TABLES, TALLY_COLUMNS, FacetKey, Row, RowFilter, TxRows

if TYPE_CHECKING:
    from ..orm.rows import OrmTx

_BASE = ("key", "body", "generation", "parent", "status")
_FACETS = ("kind", "reason")


def _statements(name: str, table: str) -> dict[str, str]:
    # Built once at import from the models' own table names, never from input; every
    # value is a bound parameter. A facet table's rows also carry kind and reason.
    t = f'"{table}"'
    names = _BASE + (_FACETS if name in FACET_TABLES else ())
    columns = ", ".join(f'"{c}"' for c in names)
    marks = ", ".join(["%s"] * len(names))
    sets = ", ".join(f'"{c}" = %s' for c in names[1:])
    # Reads return every column: the tally (``tally.TalliedRows``) takes an update's
    # previous combination from the row read before it.
    read = columns
    return {
        "get": f'SELECT {read} FROM {t} WHERE "key" = %s',  # noqa: S608
        "insert": f"INSERT INTO {t} ({columns}) VALUES ({marks}) "  # noqa: S608
        'ON CONFLICT ("key") DO NOTHING',
        "update": f'UPDATE {t} SET {sets} WHERE "key" = %s AND "generation" = %s',  # noqa: S608
        "scan": f"SELECT {read} FROM {t}",  # noqa: S608
        "count": f"SELECT COUNT(*) FROM {t}",  # noqa: S608
        "page": f"SELECT {columns} FROM {t}",  # noqa: S608
        "id_of": f'SELECT "id" FROM {t} WHERE "key" = %s',  # noqa: S608
    }


_SQL = {name: _statements(name, model._meta.db_table) for name, model in MODELS.items()}

# The workflow tally (``storage.routed.tally``) of each facet table, and its statements.
_TALLY = {"workflow": RoutedWorkflowTallyRow._meta.db_table}
_TALLY_KEY = '"parent", "status", "kind", "reason"'
# Rows per upsert: five parameters each, far within every engine's bound (a writing
# transaction moves one or two combinations per workflow it writes).
TALLY_CHUNK = 1_000


def _upsert(table: str, rows: int) -> str:
    t = f'"{_TALLY[table]}"'
    values = ", ".join(["(%s, %s, %s, %s, %s)"] * rows)
    return (
        f'INSERT INTO {t} ({_TALLY_KEY}, "n") VALUES {values} '  # noqa: S608
        f'ON CONFLICT ({_TALLY_KEY}) DO UPDATE SET "n" = {t}."n" + excluded."n"'
    )


def rebuild_workflow_tally(cursor: Any) -> int:
    """Replace the workflow tally by a full count of the workflow rows
    (``tally.count``), in the caller's transaction: for a bulk load that wrote workflow
    rows in plain SQL, past the rules that keep it (benchmark 9's clones). Returns the
    number of tally rows. Migration 0016 spells out the same count for its backfill."""
    t = f'"{_TALLY["workflow"]}"'
    rows = f'"{MODELS["workflow"]._meta.db_table}"'
    cursor.execute(f"DELETE FROM {t}")  # noqa: S608
    cursor.execute(
        f'INSERT INTO {t} ({_TALLY_KEY}, "n") '  # noqa: S608
        f"SELECT {_TALLY_KEY}, COUNT(*) FROM {rows} GROUP BY {_TALLY_KEY}"
    )
    cursor.execute(f"SELECT COUNT(*) FROM {t}")  # noqa: S608
    return int(cursor.fetchone()[0])


def _values(table: str, row: Row) -> list[Any]:
    values: list[Any] = [row.key, row.body, row.generation, row.parent, row.status]
    return [*values, row.kind, row.reason] if table in FACET_TABLES else values


class OrmRows(TxRows):
    def __init__(self, tx: OrmTx) -> None:
        super().__init__(tx)
        self._connection = connections[tx.alias]

    def _run(self, sql: str, params: list[Any]) -> Any:
        cursor = self._connection.cursor()
        cursor.execute(sql, params)
        return cursor

    def get(self, table: str, key: str) -> Row | None:
        with self._run(_SQL[table]["get"], [key]) as cursor:
            found = cursor.fetchone()
        return None if found is None else Row(*found)

    def insert(self, table: str, row: Row) -> bool:
        self._write()
        params = _values(table, row)
        with self._run(_SQL[table]["insert"], params) as cursor:
            return bool(cursor.rowcount == 1)

    def update(self, table: str, row: Row, expected: int) -> bool:
        self._write()
        params = [*_values(table, row)[1:], row.key, expected]
        with self._run(_SQL[table]["update"], params) as cursor:
            return bool(cursor.rowcount == 1)

    def _where(self, parent: str | None, statuses: Collection[str] | None) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if parent is not None:
            clauses.append('"parent" = %s')
            params.append(parent)
        if statuses is not None:
            if not statuses:
                return " WHERE 1 = 0", []
            clauses.append('"status" IN (' + ", ".join(["%s"] * len(statuses)) + ")")
            params.extend(statuses)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def scan(
        self, table: str, parent: str | None = None, statuses: Collection[str] | None = None
    ) -> list[Row]:
        where, params = self._where(parent, statuses)
        with self._run(_SQL[table]["scan"] + where + ' ORDER BY "id"', params) as cursor:
            return [Row(*values) for values in cursor.fetchall()]

    def count(self, table: str, parent: str, statuses: Collection[str]) -> int:
        where, params = self._where(parent, statuses)
        with self._run(_SQL[table]["count"] + where, params) as cursor:
            return int(cursor.fetchone()[0])

    def _facet_where(self, table: str, where: RowFilter) -> tuple[list[str], list[Any]]:
        if table not in FACET_TABLES and (where.kinds is not None or where.reasons is not None):
            raise Invalid(f"routed table {table!r} has no facet columns")
        clauses: list[str] = []
        params: list[Any] = []
        for column, values in (
            ("parent", where.parents),
            ("status", where.statuses),
            ("kind", where.kinds),
            ("reason", where.reasons),
            ("key", where.keys),
        ):
            if values is None:
                continue
            if not values:
                return ["1 = 0"], []
            clauses.append(f'"{column}" IN (' + ", ".join(["%s"] * len(values)) + ")")
            params.extend(values)
        if where.key_prefix:
            # Not LIKE: SQLite's ignores ASCII case and both treat % and _ specially.
            clauses.append('substr("key", 1, %s) = %s')
            params += [len(where.key_prefix), where.key_prefix]
        return clauses, params

    def page(self, table: str, where: RowFilter, before: str | None, limit: int) -> list[Row]:
        clauses, params = self._facet_where(table, where)
        if before is not None:
            # The keyset position is a key; its row's id is the order. An unknown key
            # selects nothing (NULL compares false).
            clauses.append(f'"id" < ({_SQL[table]["id_of"]})')
            params.append(before)
        sql = _SQL[table]["page"]
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        with self._run(sql + ' ORDER BY "id" DESC LIMIT %s', [*params, limit]) as cursor:
            return [Row(*values) for values in cursor.fetchall()]

    def tally(self, table: str, column: str, where: RowFilter) -> dict[str, int]:
        if column not in TALLY_COLUMNS:
            raise Invalid(f"routed rows are not tallied by {column!r}")
        if column in ("kind", "reason") and table not in FACET_TABLES:
            raise Invalid(f"routed table {table!r} has no facet columns")
        clauses, params = self._facet_where(table, where)
        sql = f'SELECT "{column}", COUNT(*) FROM "{MODELS[table]._meta.db_table}"'  # noqa: S608
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        with self._run(sql + f' GROUP BY "{column}"', params) as cursor:
            return {value: int(n) for value, n in cursor.fetchall()}

    def with_key_prefix(self, table: str, prefix: str, limit: int) -> list[Row]:
        upper = prefix_upper(prefix)
        where = dialect(self._connection).prefix_range('"key"', upper is not None)
        params: list[Any] = [prefix, upper, limit] if upper is not None else [prefix, limit]
        sql = f"{_SQL[table]['scan']} WHERE {where} LIMIT %s"
        with self._run(sql, params) as cursor:
            return [Row(*values) for values in cursor.fetchall()]

    def add_counts(self, table: str, changes: Mapping[FacetKey, int]) -> None:
        if table not in _TALLY:
            raise Invalid(f"routed table {table!r} has no facet columns")
        self._write()
        # Key order: two writers (were they ever not serialised) lock the tally rows
        # in the same order. Each key once, as ON CONFLICT DO UPDATE requires.
        rows = sorted((*key, n) for key, n in changes.items())
        for start in range(0, len(rows), TALLY_CHUNK):
            chunk = rows[start : start + TALLY_CHUNK]
            with self._run(_upsert(table, len(chunk)), [v for row in chunk for v in row]):
                pass

    def counted(self, table: str, asks: Sequence[tuple[str, RowFilter]]) -> list[dict[str, int]]:
        if table not in _TALLY:
            raise Invalid(f"routed table {table!r} has no facet columns")
        parts: list[str] = []
        params: list[Any] = []
        for i, (column, where) in enumerate(asks):
            tally.check_ask(column, where)
            clauses, values = self._facet_where(table, where)
            # ``i`` and ``column`` come from this code (checked above), never from input.
            sql = f'SELECT {i}, "{column}", SUM("n") FROM "{_TALLY[table]}"'  # noqa: S608
            if clauses:
                sql += " WHERE " + " AND ".join(clauses)
            parts.append(sql + f' GROUP BY "{column}"')
            params += values
        out: list[dict[str, int]] = [{} for _ in asks]
        if not parts:
            return out
        with self._run(" UNION ALL ".join(parts), params) as cursor:
            for i, value, n in cursor.fetchall():
                if int(n):
                    out[int(i)][value] = int(n)
        return out

    def kept(self, table: str) -> dict[FacetKey, int]:
        if table not in _TALLY:
            raise Invalid(f"routed table {table!r} has no facet columns")
        sql = f'SELECT {_TALLY_KEY}, "n" FROM "{_TALLY[table]}"'  # noqa: S608
        with self._run(sql, []) as cursor:
            return {(p, s, k, r): int(n) for p, s, k, r, n in cursor.fetchall()}
