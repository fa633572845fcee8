"""Routed-run rows of the reference double: dicts inside the double's ``MemoryState``.

The double copies its state at the start of every transaction and publishes the copy
on commit (``storage.memory``), so these dicts roll back and isolate with the rest of
the state: a Row is immutable, a transaction replaces rows in its own copy. The
workflow tally's counts (``storage.routed.tally``) are one more dict per facet table,
copied and published with the rows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import Invalid
from . import tally
from .rows import FACET_TABLES, TABLES, TALLY_COLUMNS, FacetKey, Row, RowFilter, TxRows

if TYPE_CHECKING:
    from ..memory import MemoryTx


@dataclass
class RoutedTables:
    rows: dict[str, dict[str, Row]] = field(default_factory=dict)
    # Per facet table, the kept count of each combination (``Rows.add_counts``).
    counts: dict[str, dict[FacetKey, int]] = field(default_factory=dict)


def empty_tables() -> RoutedTables:
    return RoutedTables(
        rows={name: {} for name in TABLES}, counts={name: {} for name in FACET_TABLES}
    )


def copy_tables(tables: RoutedTables) -> RoutedTables:
    return RoutedTables(
        rows={name: dict(rows) for name, rows in tables.rows.items()},
        counts={name: dict(counts) for name, counts in tables.counts.items()},
    )


class MemoryRows(TxRows):
    def __init__(self, tx: MemoryTx) -> None:
        super().__init__(tx)
        self._tables = tx.state.routed.rows
        self._counts = tx.state.routed.counts

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

    def add_counts(self, table: str, changes: Mapping[FacetKey, int]) -> None:
        _facet_table(table)
        self._write()
        counts = self._counts[table]
        for key, n in changes.items():
            counts[key] = counts.get(key, 0) + n

    def counted(self, table: str, asks: Sequence[tuple[str, RowFilter]]) -> list[dict[str, int]]:
        _facet_table(table)
        for column, where in asks:
            tally.check_ask(column, where)
        counts = self._counts[table].items()
        return [tally.sums(counts, column, where) for column, where in asks]

    def kept(self, table: str) -> dict[FacetKey, int]:
        _facet_table(table)
        return dict(self._counts[table])


def _facet_table(table: str) -> None:
    if table not in FACET_TABLES:
        raise Invalid(f"routed table {table!r} has no facet columns")
