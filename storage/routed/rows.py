"""The row-access interface the routed-run rules are written over, once.

A backend supplies ``Rows`` for one contract transaction (or View): keyed rows of JSON
text per table, each with its generation and two indexed columns (``parent``: the
owning ID a list selects by; ``status``: the status *name*). The rules never see a
database or a dict; the reference double and the ORM differ only below this line.

Contract of every method: it runs inside the caller's transaction, sees that
transaction's own earlier writes, and has no effect when it raises.
"""

from __future__ import annotations

from collections.abc import Collection
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
)


@dataclass(frozen=True)
class Row:
    key: str
    body: str
    generation: int = 1
    parent: str = ""
    status: str = ""


class Rows(Protocol):
    @property
    def read_only(self) -> bool: ...

    def get(self, table: str, key: str) -> Row | None:
        """The row, or None."""
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
