"""Events: acceptance with delivery dedup, routing, recorded Scope, and every scan.

Each scan is one ``EventScan`` (its meaning is ``storage.meaning.events``), so a backend
implements one read, ``_scan_events``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import Conflict, Invalid, NotFound
from ..meaning import series_tally
from ..meaning.events import IDS_MAX, EventScan
from ..records import CorrelationKey, Event, Nanos, Route, StoredEvent
from . import fields
from .base import TxBase


class EventRules(TxBase):
    """The Event operations of ``Tx``."""

    def _validate_envelope(self, event: Event) -> None:
        fields.require_id(event.id, "Event ID")
        fields.require_id(event.source, "Event source")
        fields.require_id(event.delivery_id, "Event delivery_id")
        fields.require_dotted(event.type, "Event type")
        fields.require_text(event.work_id, "Event work_id")
        fields.require_text(event.causation_id, "Event causation_id")
        fields.require_payload(event.payload)
        fields.require_keys(event.keys)
        fields.actor_for(event.source, event.actor)

    def accept_event(self, event: Event) -> tuple[StoredEvent, bool]:
        self._writable()
        self._validate_envelope(event)
        fields.require_storable(event, "Event")
        existing, same_id = self._event_identity(event)
        if existing is not None:
            return existing, False
        if same_id is not None:
            raise Conflict(f"Event ID {event.id!r} already names another delivery")
        if event.causation_id:
            if event.causation_id == event.id:
                raise Invalid("an Event cannot be its own causation")
            if self._get_event(event.causation_id) is None:
                raise NotFound(f"causation Event {event.causation_id!r} does not exist")
        stored = replace(
            event,
            actor=fields.actor_for(event.source, event.actor),
            occurred_at=event.occurred_at or self._now,
            received_at=self._now,
        )
        sequence = self._insert_event(stored)
        self._first_event = self._first_event or sequence
        accepted = StoredEvent(stored, sequence)
        series_tally.add(series_tally.event_keys(accepted), 1, self._series)
        return accepted, True

    def _require_event(self, event_id: str) -> StoredEvent:
        stored = self._get_event(event_id)
        if stored is None:
            raise NotFound(f"Event {event_id!r} does not exist")
        return stored

    def mark_routed(self, event_id: str, work_id: str, disposition: str) -> None:
        self._writable()
        stored = self._require_event(event_id)
        if not disposition:
            raise Invalid("a routing disposition must be nonempty")
        fields.require_text(disposition, "routing disposition", fields.DISPOSITION_MAX_BYTES)
        fields.require_text(work_id, "routed Work ID")
        if disposition == "routed" and not work_id:
            raise Invalid("disposition 'routed' needs a Work")
        if work_id and self._get("work", work_id) is None:
            raise NotFound(f"Work {work_id!r} does not exist")
        if stored.route is not None:
            if (stored.route.work_id, stored.route.disposition) == (work_id, disposition):
                return
            raise Conflict(
                f"Event {event_id} already routed to {stored.route.work_id!r} "
                f"as {stored.route.disposition!r}"
            )
        self._set_route(event_id, Route(work_id, disposition, self._now))
        # The version log's cause of this transaction's changes (``tx.versions``).
        self._first_event = self._first_event or stored.sequence

    def set_event_scope(self, event_id: str, scope_id: str) -> None:
        self._writable()
        if not scope_id:
            raise Invalid("an Event scope must be nonempty")
        fields.require_id(scope_id, "Event scope")
        stored = self._require_event(event_id)
        if not self._exists("scope", scope_id):
            raise NotFound(f"Scope {scope_id!r} does not exist")
        if stored.scope_id == scope_id:
            return
        if stored.scope_id:
            raise Conflict(f"Event {event_id} already has scope {stored.scope_id!r}")
        self._set_event_scope(event_id, scope_id)
        # Its series count moves from "no Scope" to the Scope (the store-wide row's
        # -1 and +1 cancel out).
        series_tally.add(series_tally.event_keys(stored), -1, self._series)
        scoped = replace(stored, scope_id=scope_id)
        series_tally.add(series_tally.event_keys(scoped), 1, self._series)

    def event(self, event_id: str) -> StoredEvent:
        self._check()
        return self._require_event(event_id)

    def event_by_delivery(self, source: str, delivery_id: str) -> StoredEvent:
        self._check()
        stored = self._event_by_delivery(source, delivery_id)
        if stored is None:
            raise NotFound(f"no Event for delivery ({source!r}, {delivery_id!r})")
        return stored

    def _scan(self, scan: EventScan) -> list[StoredEvent]:
        self._check()
        fields.require_limit(scan.limit)
        if scan.after < 0 or scan.before < 0:
            raise Invalid("event cursors are nonnegative acceptance sequences")
        return self._scan_events(scan)

    def events(self, after: int = 0, limit: int = 0) -> list[StoredEvent]:
        return self._scan(EventScan(after=after, limit=limit))

    def unrouted_events(self, after: int = 0, limit: int = 0) -> list[StoredEvent]:
        return self._scan(EventScan(after=after, limit=limit, unrouted=True))

    def work_events(self, work_id: str, after: int = 0, limit: int = 0) -> list[StoredEvent]:
        fields.require_id(work_id, "Work ID")
        return self._scan(EventScan(after=after, limit=limit, work_id=work_id))

    def scope_events(
        self, scope_ids: Sequence[str], after: int = 0, limit: int = 0
    ) -> list[StoredEvent]:
        if isinstance(scope_ids, str):
            raise Invalid("scope_events takes a sequence of Scope IDs")
        return self._scan(EventScan(after=after, limit=limit, scope_ids=tuple(scope_ids)))

    def derived_events(self, event_id: str) -> list[StoredEvent]:
        return self._scan(EventScan(caused_by=event_id))

    def find_events(
        self,
        *,
        after: int = 0,
        before: int = 0,
        limit: int = 0,
        newest_first: bool = False,
        sources: Sequence[str] = (),
        types: Sequence[str] = (),
        actors: Sequence[str] = (),
        key: CorrelationKey | None = None,
        scope_ids: Sequence[str] | None = None,
        work_id: str = "",
        unrouted: bool = False,
        received_since: Nanos | None = None,
        received_before: Nanos | None = None,
        ids: Sequence[str] | None = None,
        causes: Sequence[str] | None = None,
    ) -> list[StoredEvent]:
        """The operator's Event search: sequence strictly between ``after`` and
        ``before`` (0: unbounded), any of ``sources``, any of ``types``, recorded in
        any of ``scope_ids`` ("" = none recorded), naming or routed to ``work_id``,
        unrouted only, accepted in [received_since, received_before) (the dashboard's
        buckets; by the acceptance-time index), with any of ``ids``, caused by any of
        ``causes`` (each at most ``IDS_MAX`` IDs); ascending or newest first; at most
        ``limit``. Every filter is
        served by an index ending in the sequence (``ids`` by the unique ID), so a
        page costs what it returns."""
        named = {"sources": sources, "types": types, "actors": actors, "scope_ids": scope_ids}
        for what, values in named.items():
            if isinstance(values, str):
                raise Invalid(f"find_events {what} takes a sequence, not a string")
        if key is not None and not isinstance(key, CorrelationKey):
            raise Invalid("find_events key takes a CorrelationKey")
        scan = EventScan(
            after=after,
            before=before,
            limit=limit,
            newest_first=newest_first,
            sources=tuple(sources),
            types=tuple(types),
            actors=tuple(actors),
            key=key,
            scope_ids=None if scope_ids is None else tuple(scope_ids),
            work_id=work_id or None,
            unrouted=unrouted,
            received_since=received_since,
            received_before=received_before,
            ids=_id_list(ids, "ids"),
            causes=_id_list(causes, "causes"),
        )
        return self._scan(scan)

    def count_events(
        self,
        *,
        after: int = 0,
        before: int = 0,
        work_id: str = "",
        causes: Sequence[str] | None = None,
    ) -> int:
        """How many Events ``find_events`` selects with these filters and no limit: an
        index count (a Work's Events, or those some Events caused), so it costs the
        Events counted, not the history."""
        scan = EventScan(
            after=after, before=before, work_id=work_id or None, causes=_id_list(causes, "causes")
        )
        self._check()
        if scan.after < 0 or scan.before < 0:
            raise Invalid("event cursors are nonnegative acceptance sequences")
        return self._count_events(scan)

    def latest_sequence(self) -> int:
        self._check()
        return self._latest_sequence()

    def store_version(self) -> int:
        self._check()
        return self._store_version()


def _id_list(values: Sequence[str] | None, what: str) -> tuple[str, ...] | None:
    """``values`` as an EventScan's ID tuple: checked, duplicates dropped, at most
    ``IDS_MAX``; None stays None (the filter is off)."""
    if values is None:
        return None
    listed = fields.require_ids(values, f"find_events {what}")
    if len(listed) > IDS_MAX:
        raise Invalid(f"find_events {what} takes at most {IDS_MAX} IDs, not {len(listed)}")
    return tuple(listed)
