"""Routed-run rows of the ORM backend (SQLite and PostgreSQL) on the transaction's
connection alias.

Plain SQL through the connection's cursor rather than querysets: building a queryset
costs more than the statement it runs (the profile of benchmark 6 showed two thirds
of an admission in Django's SQL compiler), and these five statements are all the
rows need. Table names come from the models, parameters are always bound, and
``INSERT ... ON CONFLICT (key) DO NOTHING`` (SQLite 3.24+, PostgreSQL 9.5+) reports a
taken key through its row count instead of an IntegrityError, so the outer
transaction stays usable.

The contract's ``transact`` already serialises writers (SQLite ``BEGIN IMMEDIATE``,
PostgreSQL's writers' advisory lock taken before ``BEGIN``); the CAS is still the one
``UPDATE ... WHERE key = %s AND generation = %s`` with its row count checked, as the
house style asks, so it holds for a writer that bypasses the lock too.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from django.db import connections

from .models import MODELS
from .rows import Row, TxRows

if TYPE_CHECKING:
    from ..orm.rows import OrmTx

_COLUMNS = '"key", "body", "generation", "parent", "status"'


def _statements(table: str) -> dict[str, str]:
    # Built once at import from the models' own table names, never from input; every
    # value is a bound parameter.
    t = f'"{table}"'
    return {
        "get": f'SELECT {_COLUMNS} FROM {t} WHERE "key" = %s',  # noqa: S608
        "insert": f"INSERT INTO {t} ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s) "  # noqa: S608
        'ON CONFLICT ("key") DO NOTHING',
        "update": f'UPDATE {t} SET "body" = %s, "generation" = %s, "parent" = %s, '  # noqa: S608
        '"status" = %s WHERE "key" = %s AND "generation" = %s',
        "scan": f"SELECT {_COLUMNS} FROM {t}",  # noqa: S608
        "count": f"SELECT COUNT(*) FROM {t}",  # noqa: S608
    }


_SQL = {name: _statements(model._meta.db_table) for name, model in MODELS.items()}


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
        params = [row.key, row.body, row.generation, row.parent, row.status]
        with self._run(_SQL[table]["insert"], params) as cursor:
            return bool(cursor.rowcount == 1)

    def update(self, table: str, row: Row, expected: int) -> bool:
        self._write()
        params = [row.body, row.generation, row.parent, row.status, row.key, expected]
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
