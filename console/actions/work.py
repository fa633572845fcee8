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
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from console.actions.common import BULK_YIELD_MAX, check_request, said
from console.actions.observed import bulk_label, observed
from storage import (
    KV_VALUE_LIMIT,
    Guard,
    Invalid,
    NotFound,
    StorageError,
    Store,
    StoredEvent,
    Tx,
    seconds,
)
from storage.ops.manual import (
    Action,
    ActionResult,
    TokenReused,
    apply,
    do_apply_manual_event,
    prefetch,
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
# The plan of a running bulk action (action, operator, reason, its Work IDs), by its
# form's token, kept until it ends, so that any console host can resume it: a host
# that dies mid-bulk leaves it here, and the same form sent again (by the proxy to the
# next host, by the operator, or the progress region's Resume) carries on from it.
# One KV value holds at most KV_VALUE_LIMIT bytes: the IDs are kept in chunks.
JOB_NAMESPACE = "console.bulk-job"
JOB_CHUNK = KV_VALUE_LIMIT // 2
# A progress record not rewritten for this long: the host running the action stopped
# (a batch is two transactions of tens of ms and two pauses of at most 100 ms).
STALLED_AFTER = seconds(10)
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


@observed("cancel_work")
def do_cancel_work(
    store: Store, *, username: str, work_id: str, reason: str, token: str
) -> ActionResult:
    return _do_single(store, Action.CANCEL, username, work_id, reason, token)


@observed("retry_work")
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


@observed(bulk_label("work", frozenset(a.value for a in Action)))
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
    ``BULK_YIELD_MAX``).

    With ``progress``, the run is resumable: its plan is stored under the token first
    (``read_job``), unless one is stored already, which is then the one carried out
    (whatever ``action``, ``username``, ``reason`` and ``work_ids`` say: the form sent
    again after its host died); each tx 1 also writes how far it has got
    (``read_progress``); both are removed when it ends. A resumed run goes through the
    plan from its start: what the dead run did is found by its delivery IDs and
    reported as done by this form, never done twice."""
    action = Action(action)
    reason = check_request(username, reason, token)
    ids = list(dict.fromkeys(work_ids))
    if len(ids) > BULK_CAP:
        raise Invalid(f"a bulk action takes at most {BULK_CAP} Works, not {len(ids)}")
    if progress:
        job = store.transact(
            Guard(), partial(_claim_job, token, BulkJob(action, username, reason, tuple(ids)))
        )
        action, username, reason, ids = job.action, job.username, job.reason, list(job.work_ids)
    done: list[ActionResult] = []
    skipped: list[Skip] = []
    for start in range(0, len(ids), BULK_BATCH):
        state = BulkProgress(len(ids), start, len(done), len(skipped), _OWNER) if progress else None
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
        store.transact(Guard(), partial(_end_job, token))
    return BulkSummary(action, tuple(done), tuple(skipped))


# Who runs a bulk action, as its progress says: this host and process.
_OWNER = f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True, slots=True)
class BulkProgress:
    """How far a running bulk action has got (written before each batch, at ``beat``
    by ``owner``, ``host:pid``)."""

    total: int
    processed: int
    done: int
    skipped: int
    owner: str = ""
    beat: int = 0

    def encode(self) -> bytes:
        fields = [self.total, self.processed, self.done, self.skipped, self.owner, self.beat]
        return json.dumps(fields).encode()

    @property
    def pid(self) -> int:
        return int(self.owner.rpartition(":")[2] or 0)


def read_progress(tx: Tx, token: str) -> BulkProgress | None:
    """The progress of the bulk action submitted with ``token``, or None (not started,
    already finished, or not a bulk action's token)."""
    try:
        raw = tx.kv_get(PROGRESS_NAMESPACE, token)
    except NotFound:
        return None
    return BulkProgress(*json.loads(raw))


def stalled(tx: Tx, progress: BulkProgress) -> bool:
    """Whether the run's host has stopped writing its progress (it died with it)."""
    return tx.now - progress.beat > STALLED_AFTER


@dataclass(frozen=True, slots=True)
class BulkJob:
    """A bulk action's plan, stored while it runs (``JOB_NAMESPACE``)."""

    action: Action
    username: str
    reason: str
    work_ids: tuple[str, ...]


def read_job(tx: Tx, token: str) -> BulkJob | None:
    """The stored plan of the bulk action run with ``token``, or None (finished, or
    never started)."""
    try:
        head = json.loads(tx.kv_get(JOB_NAMESPACE, token))
    except NotFound:
        return None
    ids: list[str] = []
    for n in range(head["chunks"]):
        ids += json.loads(tx.kv_get(JOB_NAMESPACE, f"{token}.{n}"))
    return BulkJob(Action(head["action"]), head["username"], head["reason"], tuple(ids))


def stalled_jobs(tx: Tx) -> list[str]:
    """The tokens of the stored bulk plans whose run stopped: no progress, or progress
    no host has rewritten for ``STALLED_AFTER`` (``resume_bulk_actions``)."""
    tokens = [key for key, _ in tx.kv_list(JOB_NAMESPACE) if "." not in key]
    out = []
    for token in tokens:
        progress = read_progress(tx, token)
        if progress is None or stalled(tx, progress):
            out.append(token)
    return out


def _claim_job(token: str, job: BulkJob, tx: Tx) -> BulkJob:
    """The plan stored under ``token``, else ``job``, stored now."""
    stored = read_job(tx, token)
    if stored is not None:
        return stored
    chunks: list[list[str]] = [[]]
    size = 0
    for work_id in job.work_ids:
        cost = len(json.dumps(work_id).encode()) + 1
        if size + cost > JOB_CHUNK:
            chunks.append([])
            size = 0
        chunks[-1].append(work_id)
        size += cost
    for n, chunk in enumerate(chunks):
        tx.kv_put(JOB_NAMESPACE, f"{token}.{n}", json.dumps(chunk).encode())
    head = {"action": job.action.value, "username": job.username, "reason": job.reason}
    tx.kv_put(JOB_NAMESPACE, token, json.dumps(head | {"chunks": len(chunks)}).encode())
    return job


def _end_job(token: str, tx: Tx) -> None:
    """Forget a finished run's plan and progress (one transaction: never a plan without
    the progress that says it stalled, nor the other way round)."""
    try:
        chunks = json.loads(tx.kv_get(JOB_NAMESPACE, token))["chunks"]
    except NotFound:
        chunks = 0  # another host finished it first
    for n in range(chunks):
        tx.kv_delete(JOB_NAMESPACE, f"{token}.{n}")
    tx.kv_delete(JOB_NAMESPACE, token)
    tx.kv_delete(PROGRESS_NAMESPACE, token)


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
    work_ids: Sequence[str],
    reason: str,
    token: str,
    progress: BulkProgress | None,
) -> list[tuple[str, tuple[StoredEvent, bool] | str]]:
    if progress is not None:
        tx.kv_put(PROGRESS_NAMESPACE, token, replace(progress, beat=tx.now).encode())
    prefetch(tx, work_ids, attempts=False)
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
        prefetch(tx, [stored.event.work_id for stored, _ in events], attempts=True)
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
    # A duplicate was done by an earlier run of this form; an Event that run recorded but
    # did not apply (its host died in between) is applied now, by this run.
    return [
        r if added or r.applied_now else _as_duplicate(r)
        for r, (_, added) in zip(results, events, strict=True)
    ]


def _skip_of(result: ActionResult) -> Skip:
    return Skip(result.work_id, result.reason or "refused earlier")


def _as_duplicate(result: ActionResult) -> ActionResult:
    return replace(result, duplicate=True)
