"""Operator actions on Work: cancel and retry, one at a time or in bulk.

Each action is a manual Event recorded in one transaction and applied in a second, as
``storage.ops.manual`` lays out step by step (record, apply, recover); that module owns
what a manual Event means and its transaction bodies. This module is the console's
half: the request's checks (``console.actions.common``: reason, idempotency token),
the bulk batching, and what a result says to the operator (``message``).

The console views, ``manage.py console_action`` and the tests all call these functions.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from console.actions.common import BULK_YIELD_MAX, check_request, said
from storage import Guard, Invalid, NotFound, StorageError, Store, StoredEvent, Tx
from storage.ops.manual import (
    Action,
    ActionResult,
    TokenReused,
    apply,
    do_apply_manual_event,
    record,
)

log = logging.getLogger(__name__)

BULK_CAP = 10_000
# Works per transaction. Measured on SQLite (tests/console/test_bulk_at_scale.py): a
# retry costs about 1.4 ms per Work over its two transactions, so 25 keeps each one
# near 20-40 ms; 100 made transactions of 150 ms (up to 0.9 s) and, back to back,
# starved other writers for seconds (SQLite's busy handler polls; it does not queue).
BULK_BATCH = 25
# Progress of a running bulk action, by its form's token, for the confirmation to poll.
PROGRESS_NAMESPACE = "console.bulk-progress"
# Unrouted Events looked at by the recovery pass at the start of an action request.
REQUEST_RECOVERY_SCAN = 200

__all__ = [
    "BULK_CAP",
    "REQUEST_RECOVERY_SCAN",
    "BulkSummary",
    "do_bulk",
    "do_cancel_work",
    "do_retry_work",
    "message",
]


def message(result: ActionResult) -> str:
    """What ``result`` says to the operator, as a flash message or a command's output."""
    if result.done and result.action is Action.CANCEL:
        text = f"Cancelled Work {result.work_id}."
    elif result.done:
        number = f"attempt {result.attempt}" if result.attempt else f"attempt {result.attempt_id}"
        text = f"Retried Work {result.work_id}: {number} is pending."
    elif result.reason:
        text = f"{result.action.verb} of Work {result.work_id} refused: {result.reason}."
    else:
        text = f"{result.action.verb} of Work {result.work_id} was refused."
    return said(text, duplicate=result.duplicate)


@dataclass(frozen=True, slots=True)
class Skip:
    work_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class BulkSummary:
    action: Action
    done: tuple[ActionResult, ...]
    skipped: tuple[Skip, ...]

    @property
    def requested(self) -> int:
        return len(self.done) + len(self.skipped)


# ---------------------------------------------------------------- single actions


def do_cancel_work(
    store: Store, *, username: str, work_id: str, reason: str, token: str
) -> ActionResult:
    return _do_single(store, Action.CANCEL, username, work_id, reason, token)


def do_retry_work(
    store: Store, *, username: str, work_id: str, reason: str, token: str
) -> ActionResult:
    return _do_single(store, Action.RETRY, username, work_id, reason, token)


def _do_single(
    store: Store, action: Action, username: str, work_id: str, reason: str, token: str
) -> ActionResult:
    reason = check_request(username, reason, token)
    stored, added = store.transact(
        Guard(), lambda tx: record(tx, action, username, work_id, reason, token)
    )
    result = do_apply_manual_event(store, stored.id)
    return _as_duplicate(result) if not added else result


# ---------------------------------------------------------------- bulk


def do_bulk(
    store: Store,
    *,
    username: str,
    action: Action | str,
    work_ids: Sequence[str],
    reason: str,
    token: str,
    progress: bool = False,
) -> BulkSummary:
    """The action on each Work, ``BULK_BATCH`` Works per transaction: tx 1 records
    one manual Event per Work (delivery ID ``<token>:<work ID>``), tx 2 applies the
    batch. A Work that is missing, or to which the action no longer applies, is
    skipped with the reason. Between transactions it yields the write lock (see
    ``BULK_YIELD_MAX``). With ``progress``, each tx 1 also writes how far the action
    has got under the token (``read_progress``), removed when it ends."""
    action = Action(action)
    reason = check_request(username, reason, token)
    ids = list(dict.fromkeys(work_ids))
    if len(ids) > BULK_CAP:
        raise Invalid(f"a bulk action takes at most {BULK_CAP} Works, not {len(ids)}")
    done: list[ActionResult] = []
    skipped: list[Skip] = []
    for start in range(0, len(ids), BULK_BATCH):
        state = BulkProgress(len(ids), start, len(done), len(skipped)) if progress else None
        record = partial(
            _record_batch,
            action=action,
            username=username,
            work_ids=ids[start : start + BULK_BATCH],
            reason=reason,
            token=token,
            progress=state,
        )
        recorded = _yielding(store, record)
        events: list[tuple[StoredEvent, bool]] = []
        for work_id, outcome in recorded:
            if isinstance(outcome, str):
                skipped.append(Skip(work_id, outcome))
            else:
                events.append(outcome)
        for result in _apply_batch(store, events, skipped):
            (done.append(result) if result.done else skipped.append(_skip_of(result)))
    if progress:
        store.transact(Guard(), lambda tx: tx.kv_delete(PROGRESS_NAMESPACE, token))
    return BulkSummary(action, tuple(done), tuple(skipped))


@dataclass(frozen=True, slots=True)
class BulkProgress:
    """How far a running bulk action has got (written before each batch)."""

    total: int
    processed: int
    done: int
    skipped: int

    def encode(self) -> bytes:
        return json.dumps([self.total, self.processed, self.done, self.skipped]).encode()


def read_progress(tx: Tx, token: str) -> BulkProgress | None:
    """The progress of the bulk action submitted with ``token``, or None (not started,
    already finished, or not a bulk action's token)."""
    try:
        raw = tx.kv_get(PROGRESS_NAMESPACE, token)
    except NotFound:
        return None
    total, processed, done, skipped = json.loads(raw)
    return BulkProgress(total, processed, done, skipped)


def _yielding[T](store: Store, fn: Callable[[Tx], T]) -> T:
    """One transaction, then a pause as long as it held the write lock (capped)."""
    began = time.monotonic()
    try:
        return store.transact(Guard(), fn)
    finally:
        time.sleep(min(time.monotonic() - began, BULK_YIELD_MAX))


def _record_batch(
    tx: Tx,
    action: Action,
    username: str,
    work_ids: Iterable[str],
    reason: str,
    token: str,
    progress: BulkProgress | None,
) -> list[tuple[str, tuple[StoredEvent, bool] | str]]:
    if progress is not None:
        tx.kv_put(PROGRESS_NAMESPACE, token, progress.encode())
    out: list[tuple[str, tuple[StoredEvent, bool] | str]] = []
    for work_id in work_ids:
        try:
            out.append(
                (work_id, record(tx, action, username, work_id, reason, f"{token}:{work_id}"))
            )
        except NotFound:
            out.append((work_id, "no such Work"))
        except TokenReused as exc:
            out.append((work_id, str(exc)))
    return out


def _apply_batch(
    store: Store, events: list[tuple[StoredEvent, bool]], skipped: list[Skip]
) -> list[ActionResult]:
    if not events:
        return []

    def apply_all(tx: Tx) -> list[ActionResult]:
        return [apply(tx, tx.event(stored.id)) for stored, _ in events]

    try:
        results = _yielding(store, apply_all)
    except StorageError:
        # One bad Work must not hold back the batch: apply one by one; a failure leaves
        # that Event unrouted for apply_manual_events to retry.
        log.warning("bulk batch failed; applying its %d Events one by one", len(events))
        results = []
        for stored, _ in events:
            try:
                results.append(do_apply_manual_event(store, stored.id))
            except StorageError as exc:
                skipped.append(Skip(stored.event.work_id, f"not applied yet ({exc})"))
        return results
    return [r if added else _as_duplicate(r) for r, (_, added) in zip(results, events, strict=True)]


def _skip_of(result: ActionResult) -> Skip:
    return Skip(result.work_id, result.reason or "refused earlier")


def _as_duplicate(result: ActionResult) -> ActionResult:
    return replace(result, duplicate=True)
