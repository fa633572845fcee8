"""The Events pages' reads: one ``storage.view`` per page (``console.polling``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.events.filters import EventFilter, SeqCursor
from console.polling import polled_view, read
from console.scopes import subtree
from storage import StoredEvent, Tx

CAUSATION_DEPTH = 50


@dataclass(frozen=True, slots=True)
class EventPage:
    now: int
    stamp: str
    events: list[StoredEvent]  # newest first
    older: int  # "before" cursor of the older page, 0 when none
    newer: int  # "after" cursor of the newer page, 0 when this is the newest


def read_events(
    f: EventFilter, cursor: SeqCursor, size: int, seen: str = "", actors: list[str] | None = None
) -> EventPage | None:
    """A page of the stream, newest first: one indexed ``find_events`` read of at most
    ``size + 1`` Events (the extra one says whether another page exists), after the
    Scopes when ``within`` is set. ``actors``: only Events any of them caused (by the
    event_actor index)."""

    def build(tx: Tx, stamp: str) -> EventPage:
        scope_ids = [f.scope] if f.scope else None
        if f.within:
            tree = subtree(tx.scopes(), f.within).ids
            scope_ids = [s for s in scope_ids if s in tree] if scope_ids else sorted(tree)
        search: dict[str, Any] = {
            "sources": [f.source] if f.source else [],
            "types": [f.type] if f.type else [],
            "actors": actors or [],
            "key": f.key,
            "scope_ids": scope_ids,
            "work_id": f.work,
            "unrouted": f.unrouted,
            "received_since": f.since_ns,
            "received_before": f.until_ns,
        }
        if cursor.after:
            found = tx.find_events(after=cursor.after, limit=size + 1, **search)
            events = found[:size][::-1]
            newer = events[0].sequence if len(found) > size else 0
            older = events[-1].sequence if events else cursor.after + 1
            return EventPage(tx.now, stamp, events, older, newer)
        found = tx.find_events(before=cursor.before, limit=size + 1, newest_first=True, **search)
        events = found[:size]
        older = events[-1].sequence if len(found) > size else 0
        newer = 0
        if cursor.before:
            newer = events[0].sequence if events else cursor.before - 1
        return EventPage(tx.now, stamp, events, older, newer)

    return polled_view(seen, build)


@dataclass(frozen=True, slots=True)
class EventDetail:
    now: int
    stored: StoredEvent
    ancestors: list[StoredEvent]  # the root cause first, the direct cause last
    derived: list[StoredEvent]
    chain_cut: bool  # the causation chain is longer than CAUSATION_DEPTH


def read_event(event_id: str) -> EventDetail:
    def build(tx: Tx) -> EventDetail:
        stored = tx.event(event_id)
        ancestors: list[StoredEvent] = []
        cause = stored.event.causation_id
        while cause and len(ancestors) < CAUSATION_DEPTH:
            parent = tx.event(cause)
            ancestors.append(parent)
            cause = parent.event.causation_id
        return EventDetail(
            now=tx.now,
            stored=stored,
            ancestors=ancestors[::-1],
            derived=tx.derived_events(stored.id),
            chain_cut=bool(cause),
        )

    return read(build)
