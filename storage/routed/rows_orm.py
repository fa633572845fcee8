"""Routed-run rows of the ORM backend (SQLite and PostgreSQL) on the transaction's
connection alias.

The contract's ``transact`` already serialises writers (SQLite ``BEGIN IMMEDIATE``,
PostgreSQL's writers' advisory lock taken before ``BEGIN``), so a read followed by a
write here cannot interleave with another writer; the CAS is still the one
``UPDATE ... WHERE key = %s AND generation = %s`` with its row count checked, as the
house style asks, so it holds for a writer that bypasses the lock too.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from .models import MODELS
from .rows import Row, TxRows

if TYPE_CHECKING:
    from ..orm import OrmTx

_FIELDS = ("key", "body", "generation", "parent", "status")


class OrmRows(TxRows):
    def __init__(self, tx: OrmTx) -> None:
        super().__init__(tx)
        self._alias = tx.alias

    def _qs(self, table: str) -> Any:
        return MODELS[table]._default_manager.using(self._alias)

    def get(self, table: str, key: str) -> Row | None:
        found = self._qs(table).filter(key=key).values_list(*_FIELDS).first()
        return None if found is None else Row(*found)

    def insert(self, table: str, row: Row) -> bool:
        self._write()
        # Writers are serialised, so the probe cannot race another insert of the key;
        # one that bypassed the lock ends in IntegrityError -> Conflict at commit.
        if self._qs(table).filter(key=row.key).exists():
            return False
        self._qs(table).create(
            key=row.key,
            body=row.body,
            generation=row.generation,
            parent=row.parent,
            status=row.status,
        )
        return True

    def update(self, table: str, row: Row, expected: int) -> bool:
        self._write()
        changed: int = (
            self._qs(table)
            .filter(key=row.key, generation=expected)
            .update(body=row.body, generation=row.generation, parent=row.parent, status=row.status)
        )
        return changed == 1

    def scan(
        self, table: str, parent: str | None = None, statuses: Collection[str] | None = None
    ) -> list[Row]:
        qs = self._qs(table)
        if parent is not None:
            qs = qs.filter(parent=parent)
        if statuses is not None:
            qs = qs.filter(status__in=list(statuses))
        return [Row(*values) for values in qs.order_by("id").values_list(*_FIELDS)]

    def count(self, table: str, parent: str, statuses: Collection[str]) -> int:
        n: int = self._qs(table).filter(parent=parent, status__in=list(statuses)).count()
        return n
