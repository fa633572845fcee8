"""Operator actions: cancel and retry of Work, one at a time or in bulk.

Each action follows the acceptance and processing checkpoints of the storage contract:

1. tx 1 accepts a ``core.manual`` Event naming the Work, whose actor is
   ``operator:<username>`` (from the signed-in user, never from the client), whose
   payload holds the action and the reason, and whose delivery ID is the form's
   idempotency token: a second submit of the same form finds the same Event
   (``added=False``) and has no second effect.
2. tx 2 (``do_apply_manual_event``) applies the effect through ``storage.control`` and
   ``mark_routed`` in one transaction, unless the Event already has a route. An action
   that no longer applies is routed as "refused" and the reason reported.

If the process dies between the two, the Event stays unrouted; ``apply_manual_events``
(run at the start of every action request and by ``manage.py apply_manual_events``)
finds it and applies it. The route check and the effect share tx 2, so however many
callers race, the effect happens exactly once.

The console view, ``manage.py console_action`` and the tests all call these functions.
"""

from __future__ import annotations

import enum
import json
import logging
import re
import secrets
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import storage
from storage import (
    Event,
    Guard,
    Invalid,
    NotFound,
    Payload,
    StorageError,
    Store,
    StoredEvent,
    Tx,
)
from storage.control import cancel_refusal, cancel_work, retry_refusal, retry_work

log = logging.getLogger(__name__)

MANUAL_SOURCE = "core.manual"
PAYLOAD_SCHEMA = "core.manual.v1"
ROUTED = "routed"
REFUSED = "refused"
BULK_CAP = 1000
BULK_BATCH = 100  # Works per transaction: short transactions, few commits
REASON_MAX = 500
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
# Unrouted Events looked at by the recovery pass at the start of an action request.
REQUEST_RECOVERY_SCAN = 200
_SCAN_PAGE = 500

__all__ = [
    "BULK_CAP",
    "MANUAL_SOURCE",
    "Action",
    "ActionResult",
    "BulkSummary",
    "apply_manual_events",
    "do_apply_manual_event",
    "do_bulk",
    "do_cancel_work",
    "do_retry_work",
    "new_token",
]


class Action(enum.StrEnum):
    CANCEL = "cancel"
    RETRY = "retry"

    @property
    def event_type(self) -> str:
        return f"{MANUAL_SOURCE}.{self.value}"

    @property
    def verb(self) -> str:
        return {"cancel": "Cancel", "retry": "Retry"}[self.value]


_BY_TYPE = {a.event_type: a for a in Action}


def new_token() -> str:
    """An idempotency token for one rendered form."""
    return secrets.token_urlsafe(18)


def retry_attempt_id(event_id: str) -> str:
    """The new attempt's ID is derived from the manual Event, so any replay of the
    Event names the same attempt."""
    return f"retry-{event_id}"


@dataclass(frozen=True, slots=True)
class ActionResult:
    action: Action
    work_id: str
    event_id: str
    disposition: str  # ROUTED or REFUSED
    reason: str = ""  # why it was refused ("" when done, or when refused earlier)
    applied_now: bool = False  # False when an earlier call (or recovery) applied it
    duplicate: bool = False  # the token had been used before: no new Event
    attempt_id: str = ""
    attempt: int = 0

    @property
    def done(self) -> bool:
        return self.disposition == ROUTED

    @property
    def message(self) -> str:
        if self.done and self.action is Action.CANCEL:
            text = f"Cancelled Work {self.work_id}."
        elif self.done:
            number = f"attempt {self.attempt}" if self.attempt else f"attempt {self.attempt_id}"
            text = f"Retried Work {self.work_id}: {number} is pending."
        elif self.reason:
            text = f"{self.action.verb} of Work {self.work_id} refused: {self.reason}."
        else:
            text = f"{self.action.verb} of Work {self.work_id} was refused."
        if self.duplicate:
            text = f"This form was already submitted, nothing was done twice. {text}"
        return text


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
    reason = _check_request(username, reason, token)
    stored, added = store.transact(
        Guard(), lambda tx: _record(tx, action, username, work_id, reason, token)
    )
    result = do_apply_manual_event(store, stored.id)
    return _as_duplicate(result) if not added else result


def do_apply_manual_event(store: Store, event_id: str) -> ActionResult:
    """tx 2: apply a recorded manual Event once; a routed Event is only reported."""
    return store.transact(Guard(), lambda tx: _apply(tx, tx.event(event_id)))


def apply_manual_events(store: Store, *, max_scan: int = 0) -> list[ActionResult]:
    """Apply every unrouted cancel/retry manual Event (left by a crash between tx 1 and
    tx 2), oldest first, each in its own transaction. ``max_scan`` bounds how many
    unrouted Events (of any source) are looked at; 0 looks at all of them."""
    results: list[ActionResult] = []
    after, scanned = 0, 0
    while True:
        page = _SCAN_PAGE if not max_scan else min(_SCAN_PAGE, max_scan - scanned)
        batch = storage.view(store, None, lambda tx, a=after, n=page: tx.unrouted_events(a, n))
        for stored in batch:
            if stored.event.source == MANUAL_SOURCE and stored.event.type in _BY_TYPE:
                results.append(do_apply_manual_event(store, stored.id))
        scanned += len(batch)
        if len(batch) < page or (max_scan and scanned >= max_scan):
            return results
        after = batch[-1].sequence


# ---------------------------------------------------------------- bulk


def do_bulk(
    store: Store,
    *,
    username: str,
    action: Action | str,
    work_ids: Sequence[str],
    reason: str,
    token: str,
) -> BulkSummary:
    """The action on each Work, ``BULK_BATCH`` Works per transaction: tx 1 records
    one manual Event per Work (delivery ID ``<token>:<work ID>``), tx 2 applies the
    batch. A Work that is missing, or to which the action no longer applies, is
    skipped with the reason."""
    action = Action(action)
    reason = _check_request(username, reason, token)
    ids = list(dict.fromkeys(work_ids))
    if len(ids) > BULK_CAP:
        raise Invalid(f"a bulk action takes at most {BULK_CAP} Works, not {len(ids)}")
    done: list[ActionResult] = []
    skipped: list[Skip] = []
    for start in range(0, len(ids), BULK_BATCH):
        batch = ids[start : start + BULK_BATCH]
        recorded = store.transact(
            Guard(), lambda tx, b=batch: _record_batch(tx, action, username, b, reason, token)
        )
        events: list[tuple[StoredEvent, bool]] = []
        for work_id, outcome in recorded:
            if isinstance(outcome, str):
                skipped.append(Skip(work_id, outcome))
            else:
                events.append(outcome)
        for result in _apply_batch(store, events, skipped):
            (done.append(result) if result.done else skipped.append(_skip_of(result)))
    return BulkSummary(action, tuple(done), tuple(skipped))


def _record_batch(
    tx: Tx, action: Action, username: str, work_ids: Iterable[str], reason: str, token: str
) -> list[tuple[str, tuple[StoredEvent, bool] | str]]:
    out: list[tuple[str, tuple[StoredEvent, bool] | str]] = []
    for work_id in work_ids:
        try:
            out.append(
                (work_id, _record(tx, action, username, work_id, reason, f"{token}:{work_id}"))
            )
        except NotFound:
            out.append((work_id, "no such Work"))
        except _TokenReused as exc:
            out.append((work_id, str(exc)))
    return out


def _apply_batch(
    store: Store, events: list[tuple[StoredEvent, bool]], skipped: list[Skip]
) -> list[ActionResult]:
    if not events:
        return []

    def apply_all(tx: Tx) -> list[ActionResult]:
        return [_apply(tx, tx.event(stored.id)) for stored, _ in events]

    try:
        results = store.transact(Guard(), apply_all)
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


# ---------------------------------------------------------------- transactions


class _TokenReused(Invalid):
    pass


def _check_request(username: str, reason: str, token: str) -> str:
    if not username:
        raise Invalid("an operator action needs the operator's username")
    reason = reason.strip()
    if not reason:
        raise Invalid("give a reason for the action")
    if len(reason) > REASON_MAX:
        raise Invalid(f"the reason is {len(reason)} characters; at most {REASON_MAX}")
    if not _TOKEN.match(token):
        raise Invalid("the form's idempotency token is malformed; reload the page")
    return reason


def _record(
    tx: Tx, action: Action, username: str, work_id: str, reason: str, delivery_id: str
) -> tuple[StoredEvent, bool]:
    """tx 1: accept the manual Event (and record its Scope); NotFound if no such Work."""
    work = tx.work(work_id)
    data = json.dumps({"action": action.value, "reason": reason}).encode()
    event = Event(
        id=str(uuid.uuid4()),
        source=MANUAL_SOURCE,
        delivery_id=delivery_id,
        type=action.event_type,
        work_id=work.id,
        actor=f"operator:{username}",
        payload=Payload(PAYLOAD_SCHEMA, data),
    )
    stored, added = tx.accept_event(event)
    if not added:
        if (stored.event.type, stored.event.work_id) != (event.type, event.work_id):
            raise _TokenReused("this form's token was already used for another action")
        return stored, False
    if work.scope_id:
        tx.set_event_scope(stored.id, work.scope_id)
    return stored, True


def _apply(tx: Tx, stored: StoredEvent) -> ActionResult:
    """tx 2 body: the effect and its routing checkpoint, or nothing if already routed."""
    event = stored.event
    action = _BY_TYPE.get(event.type)
    if stored.event.source != MANUAL_SOURCE or action is None:
        raise Invalid(f"Event {event.id} is not a console cancel or retry")
    attempt_id = retry_attempt_id(event.id) if action is Action.RETRY else ""
    if stored.route is not None:
        return ActionResult(
            action,
            event.work_id,
            event.id,
            stored.route.disposition,
            attempt_id=attempt_id if stored.route.disposition == ROUTED else "",
        )
    try:
        work = tx.work(event.work_id)
    except NotFound:
        tx.mark_routed(event.id, "", REFUSED)
        return ActionResult(action, event.work_id, event.id, REFUSED, "no such Work", True)
    attempt = 0
    if action is Action.CANCEL:
        why = cancel_refusal(work)
        if not why:
            cancel_work(tx, work.id)
    else:
        why = retry_refusal(work, len(tx.live_executions(work.id)))
        if not why:
            attempt = retry_work(tx, work.id, attempt_id).attempt
    tx.mark_routed(event.id, work.id, REFUSED if why else ROUTED)
    if why:
        return ActionResult(action, work.id, event.id, REFUSED, why, applied_now=True)
    if action is Action.RETRY:
        return ActionResult(
            action,
            work.id,
            event.id,
            ROUTED,
            applied_now=True,
            attempt_id=attempt_id,
            attempt=attempt,
        )
    return ActionResult(action, work.id, event.id, ROUTED, applied_now=True)


def _as_duplicate(result: ActionResult) -> ActionResult:
    return replace(result, duplicate=True)
