"""A simulated teammate who keeps the demo's pile of retry-exhausted Work bounded.

Without one, a long `make run` piles up exhausted Work without bound (278 after twenty
minutes), and the lists an operator triages stop looking like a real shift. Above
``catalog.EXHAUSTED_PILE`` the teammate cancels the longest stuck, through the
operators' own path (``storage.ops.manual``: a recorded ``core.manual`` Event, then its
effect), so the console shows who cancelled each one and why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Protocol, TypeVar

from storage import StorageError, StoredEvent, Tx, WorkOrder, WorkQuery
from storage.ops import manual

from . import catalog

T = TypeVar("T")

REASON = (
    f"simulated teammate: more than {catalog.EXHAUSTED_PILE} Work exhausted, "
    "cancelling the longest stuck"
)


class Runtime(Protocol):
    stats: Counter[str]

    def transact(self, what: str, fn: Callable[[Tx], T]) -> T: ...

    def read(self, fn: Callable[[Tx], T]) -> T: ...

    def failed(self, what: str, exc: StorageError) -> None: ...


def tidy_exhausted(runtime: Runtime) -> None:
    """Cancel up to ``catalog.TIDY_AT_MOST`` of the longest-stuck exhausted Work above
    the pile's size, each in its own two transactions (record, apply)."""
    for work_id in runtime.read(_over_the_pile):
        try:
            stored = runtime.transact("tidy", _recorder(work_id))
            # tx 2 on the runtime's clock (a fake clock must not be pulled to the host's
            # time), as the console's do_apply_manual_event runs it on the wall clock.
            runtime.transact("tidy", _applier(stored.id))
        except StorageError as exc:
            runtime.failed(f"tidy {work_id}", exc)
            continue
        runtime.stats["tidied"] += 1


def _over_the_pile(tx: Tx) -> list[str]:
    over = tx.count_exhausted(WorkQuery()) - catalog.EXHAUSTED_PILE
    if over <= 0:
        return []
    oldest = WorkQuery(order=WorkOrder.UPDATED_ASC, limit=min(over, catalog.TIDY_AT_MOST))
    return [w.id for w in tx.exhausted_works(oldest)]


def _recorder(work_id: str) -> Callable[[Tx], StoredEvent]:
    # The token is derived from the Work: a retried pass records no second Event.
    token = f"{catalog.TEAMMATE}/cancel/{work_id}"
    return lambda tx: manual.record(
        tx, manual.Action.CANCEL, catalog.TEAMMATE, work_id, REASON, token
    )[0]


def _applier(event_id: str) -> Callable[[Tx], manual.ActionResult]:
    return lambda tx: manual.apply(tx, tx.event(event_id))
