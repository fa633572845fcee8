"""The row-access interface the routed-run rules are written over, once.

A backend supplies ``Rows`` for one contract transaction (or View): keyed rows of JSON
text per table, each with its generation and two indexed columns (``parent``: the
owning ID a list selects by; ``status``: the status *name*). The rules never see a
database or a dict; the reference double and the ORM differ only below this line.

Contract of every method: it runs inside the caller's transaction, sees that
transaction's own earlier writes, and has no effect when it raises.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import ReadOnly

# Every table of the routed-run domain; the ORM names them ``conduit_routed_<name>``.
TABLES: tuple[str, ...] = (
    "meta",
    "deployment",
    "alias",
    "invocation",
    "invocation_request",
    "idempotency",
    "workflow",
    "node",
    "node_transition",
    "run",
    "attempt",
    "run_ledger",
    "service",
    "handoff",
    "child_batch",
    "child_result",
    "control",
    "control_result",
    "desired_state",
    "amendment",
    "envelope",
    "time_ledger",
    "checkpoint",
    "restart",
    "transition",
    "artifact",
    "progress",
)


# The most UTF-8 bytes each indexed column of a row takes (every routed table has the
# same three; ``storage.tx.fields.COLUMN_RULES`` has the others): keys are typed IDs
# (128, ``storage.routed.ids``), aliases (255, ``check_text``) or SHA-256 digests;
# parents are IDs; statuses are enum names. ``RulesBase._row`` checks them all.
COLUMN_LIMITS: dict[str, int] = {"key": 255, "parent": 255, "status": 32, "kind": 64, "reason": 64}

# Tables with the two facet columns besides parent and status (the console's Workflows
# list filters and tallies by them): ``kind`` (the workflow kind) and ``reason`` (its
# terminal reason's name, "" while it has none). Other tables leave them "".
FACET_TABLES: frozenset[str] = frozenset({"workflow"})


@dataclass(frozen=True)
class Row:
    key: str
    body: str
    generation: int = 1
    parent: str = ""
    status: str = ""
    kind: str = ""
    reason: str = ""


@dataclass(frozen=True)
class RowFilter:
    """What a page or a tally selects: each field None (any) or the values one of
    which the column must hold; ``keys`` exact keys, ``key_prefix`` a prefix of the
    key ("" for any). ``kinds`` and ``reasons`` only on ``FACET_TABLES``."""

    parents: Collection[str] | None = None
    statuses: Collection[str] | None = None
    kinds: Collection[str] | None = None
    reasons: Collection[str] | None = None
    keys: Collection[str] | None = None
    key_prefix: str = ""

    def matches(self, row: Row) -> bool:
        return (
            _within(self.parents, row.parent)
            and _within(self.statuses, row.status)
            and _within(self.kinds, row.kind)
            and _within(self.reasons, row.reason)
            and _within(self.keys, row.key)
            and row.key.startswith(self.key_prefix)
        )


def _within(values: Collection[str] | None, value: str) -> bool:
    return values is None or value in values


# The columns a tally can group by.
TALLY_COLUMNS: frozenset[str] = frozenset({"parent", "status", "kind", "reason"})

# One combination of a facet table's four facet columns, (parent, status, kind,
# reason): the key of the counts kept beside the table (``storage.routed.tally``).
FacetKey = tuple[str, str, str, str]


class Rows(Protocol):
    @property
    def read_only(self) -> bool: ...

    def get(self, table: str, key: str) -> Row | None:
        """The row with every column (a facet table's ``kind`` and ``reason`` too: the
        tally takes an update's previous combination from it), or None."""
        ...

    def insert(self, table: str, row: Row) -> bool:
        """Add ``row`` (its generation as given); False, nothing written, if the key
        exists. ``ReadOnly`` in a View."""
        ...

    def update(self, table: str, row: Row, expected: int) -> bool:
        """Replace the row whose key is ``row.key`` and whose generation is
        ``expected`` with ``row`` (whose generation the caller set); False, nothing
        written, when the row is absent or its generation differs (the CAS)."""
        ...

    def scan(
        self, table: str, parent: str | None = None, statuses: Collection[str] | None = None
    ) -> list[Row]:
        """Rows with that parent (any when None) and one of ``statuses`` (any when
        None), in insertion order."""
        ...

    def count(self, table: str, parent: str, statuses: Collection[str]) -> int: ...

    def page(self, table: str, where: RowFilter, before: str | None, limit: int) -> list[Row]:
        """Up to ``limit`` rows ``where`` selects, newest insertion first, starting
        after the row whose key is ``before`` (None: from the newest); none when that
        key does not exist."""
        ...

    def tally(self, table: str, column: str, where: RowFilter) -> dict[str, int]:
        """How many rows ``where`` selects, per value of ``column`` (one of
        ``TALLY_COLUMNS``)."""
        ...

    def with_key_prefix(self, table: str, prefix: str, limit: int) -> list[Row]:
        """Up to ``limit`` rows whose key starts with ``prefix``, in key order."""
        ...

    def add_counts(self, table: str, changes: Mapping[FacetKey, int]) -> None:
        """Add each ``n`` to the count kept for its combination of a ``FACET_TABLES``
        table's facet columns (a missing combination starts at 0). ``ReadOnly`` in a
        View. Only ``storage.routed.tally.TalliedRows`` calls it, beside the row write
        the change describes."""
        ...

    def counted(self, table: str, asks: Sequence[tuple[str, RowFilter]]) -> list[dict[str, int]]:
        """For each ``(column, where)``: the kept counts of the combinations ``where``
        selects, summed per value of ``column`` (one of ``TALLY_COLUMNS``), values
        summing to 0 left out; what ``tally`` would count from the rows. ``where``
        selects by the facet columns only (no ``keys``, no ``key_prefix``: the
        counts know no keys). One statement for all of them."""
        ...

    def kept(self, table: str) -> dict[FacetKey, int]:
        """Every combination whose count is kept, with its count (0 for one whose rows
        all moved on): what a check compares with a full count."""
        ...


class TxRows:
    """What both backends' rows share: the contract transaction they run in."""

    def __init__(self, tx: Any) -> None:
        self._tx = tx

    @property
    def read_only(self) -> bool:
        return bool(self._tx.read_only)

    def _write(self) -> None:
        """Before every write: the Tx is still open and writable; mark it dirty, so
        the store's change counter moves on commit."""
        self._tx.now  # noqa: B018 - raises TxClosed for a Tx used after its callback
        if self._tx.read_only:
            raise ReadOnly("this transaction is read-only (View)")
        self._tx.dirty = True


class PassRows:
    """Rows that hand every call to ``inner``: the base of a layer over the rules' rows
    (``CachedRows``, ``tally.TalliedRows``), which overrides what it changes."""

    def __init__(self, inner: Rows) -> None:
        self._inner = inner

    @property
    def read_only(self) -> bool:
        return self._inner.read_only

    def get(self, table: str, key: str) -> Row | None:
        return self._inner.get(table, key)

    def insert(self, table: str, row: Row) -> bool:
        return self._inner.insert(table, row)

    def update(self, table: str, row: Row, expected: int) -> bool:
        return self._inner.update(table, row, expected)

    def scan(
        self, table: str, parent: str | None = None, statuses: Collection[str] | None = None
    ) -> list[Row]:
        return self._inner.scan(table, parent, statuses)

    def count(self, table: str, parent: str, statuses: Collection[str]) -> int:
        return self._inner.count(table, parent, statuses)

    def page(self, table: str, where: RowFilter, before: str | None, limit: int) -> list[Row]:
        return self._inner.page(table, where, before, limit)

    def tally(self, table: str, column: str, where: RowFilter) -> dict[str, int]:
        return self._inner.tally(table, column, where)

    def with_key_prefix(self, table: str, prefix: str, limit: int) -> list[Row]:
        return self._inner.with_key_prefix(table, prefix, limit)

    def add_counts(self, table: str, changes: Mapping[FacetKey, int]) -> None:
        self._inner.add_counts(table, changes)

    def counted(self, table: str, asks: Sequence[tuple[str, RowFilter]]) -> list[dict[str, int]]:
        return self._inner.counted(table, asks)

    def kept(self, table: str) -> dict[FacetKey, int]:
        return self._inner.kept(table)


class CachedRows(PassRows):
    """Point reads of one transaction answered from its own earlier reads and writes.

    Rules read a row, check it and write it, often reading it again a step later (the
    workflow under a cancel, the run under a claim): within one transaction the row can
    only change through this transaction, so the first read is the answer until it
    writes. A failed insert or update forgets the key (the row is whatever the store
    holds). Scans go to the backend and refresh what they return.
    """

    def __init__(self, inner: Rows) -> None:
        super().__init__(inner)
        self._seen: dict[tuple[str, str], Row | None] = {}

    def get(self, table: str, key: str) -> Row | None:
        slot = (table, key)
        if slot not in self._seen:
            self._seen[slot] = self._inner.get(table, key)
        return self._seen[slot]

    def insert(self, table: str, row: Row) -> bool:
        done = self._inner.insert(table, row)
        self._remember(table, row, done)
        return done

    def update(self, table: str, row: Row, expected: int) -> bool:
        done = self._inner.update(table, row, expected)
        self._remember(table, row, done)
        return done

    def _remember(self, table: str, row: Row, done: bool) -> None:
        if done:
            self._seen[table, row.key] = row
        else:
            self._seen.pop((table, row.key), None)

    def scan(
        self, table: str, parent: str | None = None, statuses: Collection[str] | None = None
    ) -> list[Row]:
        rows = self._inner.scan(table, parent, statuses)
        for row in rows:
            self._seen[table, row.key] = row
        return rows

    # Listing reads (page, tally, with_key_prefix) are not remembered: they serve
    # read-only pages, never a write.
