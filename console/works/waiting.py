"""Why a Work is waiting: for each active Wait, what would wake it in words, when it
times out, and its near misses (recent Events of the awaited type that did not wake it,
each with the reason), read inside the Work page's View.

The reasons come from the rule the runtime wakes with (``storage.wait_misses``), plus
routing: the runtime offers a Wait only the Events routed to its Work, so an Event the
predicate would take but that went elsewhere, or that no route has taken yet, is a near
miss too. Waits carry no Scope filter (a Wait's keys and types are its whole predicate,
storage contract "Timers, waits"), so no reason names a Scope.

Bounded: one indexed ``find_events`` read per active Wait, of the newest
``NEAR_MISSES`` Events of its types (the event_type index), or, for a Wait that lists
no type, of the Events of its Work (work_events' indexes). A Work has one active Wait
per parked attempt, in practice one; the page shows at most ``WAITS_EXPLAINED`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage import CorrelationKey, StoredEvent, Timer, Tx, Wait, WaitMiss, WaitState, wait_misses

NEAR_MISSES = 20
WAITS_EXPLAINED = 5


@dataclass(frozen=True, slots=True)
class NearMiss:
    stored: StoredEvent
    reasons: list[str]


@dataclass(frozen=True, slots=True)
class WhyWaiting:
    wait: Wait
    wakes_on: str  # the predicate in a sentence
    timeout_at: int  # the timeout Timer's fire time, 0 when none is pending
    timeout_note: str  # no timeout, or its Timer is gone
    near_misses: list[NearMiss]  # newest first
    scanned: int  # how many Events were looked at (NEAR_MISSES at most)
    scanned_what: str  # which Events: "of type a or b" / "of this Work"


def _keys(keys: tuple[CorrelationKey, ...]) -> str:
    return ", ".join(f"{k.source}/{k.external_id}" for k in keys)


def wakes_on(wait: Wait) -> str:
    """The Wait's predicate as an operator reads it."""
    what = " or ".join(wait.types) if wait.types else "any type"
    key = f"carrying key {_keys(wait.keys)}" if wait.keys else "with any key"
    if len(wait.keys) > 1:
        key = f"carrying one of the keys {_keys(wait.keys)}"
    return (
        f"the first Event of {what}, {key}, routed to this Work and accepted after "
        f"#{wait.after_sequence}"
    )


def _reasons(wait: Wait, stored: StoredEvent) -> list[str]:
    e, out = stored.event, []
    for miss in wait_misses(wait, stored):
        if miss is WaitMiss.BEFORE:
            out.append(
                f"arrived before the Wait: #{stored.sequence}, not after #{wait.after_sequence}"
            )
        elif miss is WaitMiss.TYPE:
            out.append(f"another type: {e.type}")
        else:
            have = _keys(e.keys) or "no key"
            out.append(f"another key: {have}, not {_keys(wait.keys)}")
    routed_here = e.work_id == wait.work_id or (
        stored.route is not None and stored.route.work_id == wait.work_id
    )
    if stored.route is None:
        out.append("not routed yet: the runtime has not taken it")
    elif not routed_here:
        target = stored.route.work_id
        out.append(
            f"routed to another Work ({target})"
            if target
            else f"routed {stored.route.disposition}, to no Work"
        )
    if not out:
        # Everything holds and the Wait is still active: the wake is the runtime's next
        # step (it happens in the transaction that routes the Event, so rarely seen).
        out.append("matches: routed here, the wake is not recorded yet")
    return out


def why_waiting(tx: Tx, wait: Wait, timers: list[Timer]) -> WhyWaiting:
    """One active Wait explained; ``timers``: the Work's Timers (already read)."""
    if wait.types:
        found = tx.find_events(types=list(wait.types), newest_first=True, limit=NEAR_MISSES)
        scanned_what = "of type " + " or ".join(wait.types)
    else:
        found = tx.find_events(work_id=wait.work_id, newest_first=True, limit=NEAR_MISSES)
        scanned_what = "of this Work"
    timer = next((t for t in timers if t.id == wait.timeout_timer_id), None)
    note = ""
    if not wait.timeout_timer_id:
        note = "no timeout: it waits until an Event wakes it or someone cancels the Work"
    elif timer is None:
        note = "its timeout has fired (or its Timer was removed): the runtime ends it next"
    return WhyWaiting(
        wait=wait,
        wakes_on=wakes_on(wait),
        timeout_at=timer.fire_at if timer else 0,
        timeout_note=note,
        near_misses=[NearMiss(s, _reasons(wait, s)) for s in found if s.id != wait.woken_by],
        scanned=len(found),
        scanned_what=scanned_what,
    )


def explain_waits(tx: Tx, waits: list[Wait], timers: list[Timer]) -> list[WhyWaiting]:
    """The active Waits among ``waits`` explained, newest first, at most WAITS_EXPLAINED."""
    active = [w for w in waits if w.state is WaitState.ACTIVE]
    active.sort(key=lambda w: (w.created_at, w.id), reverse=True)
    return [why_waiting(tx, w, timers) for w in active[:WAITS_EXPLAINED]]
