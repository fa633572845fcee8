"""``storage.view`` and ``storage.read_only``: reads that can never write.

``view(store, now, callback)`` uses the store's own View when it is a ``Viewer`` (a
snapshot that never waits for writers); otherwise it runs a ``transact`` whose writes
are refused, which waits its turn like any transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from .api import WRITES, Store, Tx, Viewer
from .errors import ReadOnly
from .records import Guard, Nanos

T = TypeVar("T")


class ReadOnlyTx:
    """Wraps a Tx: every read passes through, every write raises ReadOnly."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx

    @property
    def read_only(self) -> bool:
        return True

    @property
    def now(self) -> Nanos:
        return self._tx.now

    def __getattr__(self, name: str) -> Any:
        if name in WRITES:

            def refuse(*args: object, **kwargs: object) -> None:
                raise ReadOnly(f"{name} refused: read-only transaction")

            return refuse
        return getattr(self._tx, name)


def read_only(tx: Tx) -> Tx:
    """``storage.ReadOnly``: the same transaction with every write refused."""
    return cast(Tx, ReadOnlyTx(tx))


def view[T](store: Store, now: Nanos | None, callback: Callable[[Tx], T]) -> T:
    """Read through the backend's View, else a write-refusing transaction."""
    if isinstance(store, Viewer):
        return store.view(callback, now=now)
    clock = (lambda: now) if now is not None else None
    return store.transact(Guard(clock=clock), lambda tx: callback(read_only(tx)))
