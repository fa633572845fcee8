"""Manual Events: an operator's cancel or retry of one Work, recorded, applied, recovered.

An operator action is a ``core.manual`` Event naming the Work, applied exactly once by
two transactions (the outbox recipe of the storage contract's acceptance and processing
checkpoints):

1. **tx 1, record** (``record``): accept the Event. Its actor is
   ``operator:<username>`` (the caller passes the signed-in user, never a value from
   the client), its payload holds the action and the reason, and its delivery ID is
   the caller's idempotency token: recording the same token again finds the same
   Event (``added=False``) and has no second effect; a token already used for another
   action or Work is refused (``TokenReused``). The Event gets the Work's Scope.
2. **tx 2, apply** (``apply``, in ``do_apply_manual_event``): unless the Event already
   has a route, run the effect through ``storage.ops.control`` (``cancel_work``, or
   ``retry_work`` with an attempt ID derived from the Event) and ``mark_routed`` in
   the same transaction. An action that no longer applies is routed as ``refused``
   with the reason; an Event already routed is only reported.
3. **Recovery** (``apply_manual_events``): a process that dies between tx 1 and tx 2
   leaves the Event unrouted; the recovery pass finds every unrouted cancel/retry
   Event, oldest first, and applies each in its own tx 2.

The route check and the effect share tx 2, so however many callers race (the request,
a second submit, the recovery pass of a console request, ``manage.py
apply_manual_events``, the simulated runtime), the effect happens exactly once. What an
action's result says to a person is the console's (``console.actions``).
"""

from __future__ import annotations

import enum
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..api import Store, Tx
from ..errors import Invalid, NotFound
from ..readonly import view
from ..records import Event, Guard, Payload, StoredEvent
from .control import cancel_refusal, cancel_work, retry_refusal, retry_work

__all__ = [
    "MANUAL_SOURCE",
    "PAYLOAD_SCHEMA",
    "REFUSED",
    "ROUTED",
    "Action",
    "ActionResult",
    "TokenReused",
    "apply",
    "apply_manual_events",
    "do_apply_manual_event",
    "prefetch",
    "record",
    "retry_attempt_id",
]

MANUAL_SOURCE = "core.manual"
PAYLOAD_SCHEMA = "core.manual.v1"
ROUTED = "routed"
REFUSED = "refused"
_SCAN_PAGE = 500  # unrouted Events read per View by the recovery pass


class Action(enum.StrEnum):
    CANCEL = "cancel"
    RETRY = "retry"

    @property
    def event_type(self) -> str:
        return f"{MANUAL_SOURCE}.{self.value}"

    @property
    def verb(self) -> str:
        """The action's name as it starts a sentence ("Cancel", "Retry")."""
        return {"cancel": "Cancel", "retry": "Retry"}[self.value]

    @property
    def past(self) -> str:
        """What the action did, as a sentence says it ("cancelled", "retried")."""
        return {"cancel": "cancelled", "retry": "retried"}[self.value]


_BY_TYPE = {a.event_type: a for a in Action}


def retry_attempt_id(event_id: str) -> str:
    """The new attempt's ID is derived from the manual Event, so any replay of the
    Event names the same attempt."""
    return f"retry-{event_id}"


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What applying one manual Event did (or had done, when it was routed before)."""

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


class TokenReused(Invalid):
    """The idempotency token was already used for another action or Work."""


def prefetch(tx: Tx, work_ids: Sequence[str], *, attempts: bool) -> None:
    """Before ``record`` (``attempts`` False) or ``apply`` (True) runs for each of many
    Work in one transaction: their Work, and for ``apply`` their attempts and Timers,
    one read each for the whole batch. It changes no result; a backend that keeps
    what its transaction read (the ORM's write-behind buffer) then answers the
    per-Work reads from memory instead of one statement each, a round trip apiece on
    PostgreSQL. An ID no Work can have is left to the per-Work call to report."""
    try:
        tx.works_of(work_ids)
        if attempts:
            tx.latest_executions(work_ids)
            tx.timers_of(work_ids)
    except Invalid:
        return


def record(
    tx: Tx, action: Action, username: str, work_id: str, reason: str, delivery_id: str
) -> tuple[StoredEvent, bool]:
    """tx 1: accept the manual Event (and record its Scope); ``NotFound`` if no such
    Work, ``TokenReused`` if ``delivery_id`` names another action's Event. Returns the
    Event and whether it is new."""
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
            raise TokenReused("this form's token was already used for another action")
        return stored, False
    if work.scope_id:
        tx.set_event_scope(stored.id, work.scope_id)
    return stored, True


def apply(tx: Tx, stored: StoredEvent) -> ActionResult:
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


def do_apply_manual_event(store: Store, event_id: str) -> ActionResult:
    """tx 2: apply a recorded manual Event once; a routed Event is only reported."""
    return store.transact(Guard(), lambda tx: apply(tx, tx.event(event_id)))


def apply_manual_events(store: Store, *, max_scan: int = 0) -> list[ActionResult]:
    """Apply every unrouted cancel/retry manual Event (left by a crash between tx 1 and
    tx 2), oldest first, each in its own transaction. ``max_scan`` bounds how many
    unrouted Events (of any source) are looked at; 0 looks at all of them."""
    results: list[ActionResult] = []
    after, scanned = 0, 0

    def unrouted(a: int, n: int) -> Callable[[Tx], list[StoredEvent]]:
        return lambda tx: tx.unrouted_events(a, n)

    while True:
        page = _SCAN_PAGE if not max_scan else min(_SCAN_PAGE, max_scan - scanned)
        batch = view(store, None, unrouted(after, page))
        for stored in batch:
            if stored.event.source == MANUAL_SOURCE and stored.event.type in _BY_TYPE:
                results.append(do_apply_manual_event(store, stored.id))
        scanned += len(batch)
        if len(batch) < page or (max_scan and scanned >= max_scan):
            return results
        after = batch[-1].sequence
