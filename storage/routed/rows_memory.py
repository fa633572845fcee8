"""Routed-run rows of the reference double: dicts inside the double's ``MemoryState``.

The double copies its state at the start of every transaction and publishes the copy
on commit (``storage.memory``), so these dicts roll back and isolate with the rest of
the state: a Row is immutable, a transaction replaces rows in its own copy.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from ..errors import Invalid
from .rows import FACET_TABLES, TABLES, TALLY_COLUMNS, Row, RowFilter, TxRows

if TYPE_CHECKING:
    from ..memory import MemoryTx

RoutedTables = dict[str, dict[str, Row]]


def empty_tables() -> RoutedTables:
    return {name: {} for name in TABLES}


def copy_tables(tables: RoutedTables) -> RoutedTables:
    return {name: dict(rows) for name, rows in tables.items()}


class MemoryRows(TxRows):
    def __init__(self, tx: MemoryTx) -> None:
        super().__init__(tx)
        self._tables = tx.state.routed

    def get(self, table: str, key: str) -> Row | None:
        return self._tables[table].get(key)

    def insert(self, table: str, row: Row) -> bool:
        self._write()
        rows = self._tables[table]
        if row.key in rows:
            return False
        rows[row.key] = row
        return True

    def update(self, table: str, row: Row, expected: int) -> bool:
        self._write()
        rows = self._tables[table]
        current = rows.get(row.key)
        if current is None or current.generation != expected:
            return False
        rows[row.key] = row
        return True

    def scan(
        self, table: str, parent: str | None = None, statuses: Collection[str] | None = None
    ) -> list[Row]:
        return [
            r
            for r in self._tables[table].values()
            if (parent is None or r.parent == parent) and (statuses is None or r.status in statuses)
        ]

    def count(self, table: str, parent: str, statuses: Collection[str]) -> int:
        return len(self.scan(table, parent, statuses))

    def page(self, table: str, where: RowFilter, before: str | None, limit: int) -> list[Row]:
        if where.kinds is not None or where.reasons is not None:
            _facet_table(table)
        # Dicts keep insertion order, and an update replaces a value in place.
        rows = list(reversed(self._tables[table].values()))
        if before is not None:
            position = next((i for i, r in enumerate(rows) if r.key == before), None)
            rows = [] if position is None else rows[position + 1 :]
        return [r for r in rows if where.matches(r)][:limit]

    def tally(self, table: str, column: str, where: RowFilter) -> dict[str, int]:
        if column in ("kind", "reason") or where.kinds is not None or where.reasons is not None:
            _facet_table(table)
        if column not in TALLY_COLUMNS:
            raise Invalid(f"routed rows are not tallied by {column!r}")
        counts: dict[str, int] = {}
        for row in self._tables[table].values():
            if where.matches(row):
                value = getattr(row, column)
                counts[value] = counts.get(value, 0) + 1
        return counts

    def with_key_prefix(self, table: str, prefix: str, limit: int) -> list[Row]:
        found = sorted(k for k in self._tables[table] if k.startswith(prefix))[:limit]
        return [self._tables[table][k] for k in found]


def _facet_table(table: str) -> None:
    if table not in FACET_TABLES:
        raise Invalid(f"routed table {table!r} has no facet columns")
