"""What an Event scan selects: ``EventScan`` and its meaning for one Event.

The reference double filters with ``EventScan.matches``; the SQL backend must select
the same Events (the shared contract cases check it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import CorrelationKey, Nanos, StoredEvent

# The most IDs ``ids`` or ``causes`` may list: one IN list a statement binds on either
# engine (a page's worth of Events, not a history).
IDS_MAX = 500


@dataclass(frozen=True, slots=True)
class EventScan:
    """One selection of Events, shared by every scan so backends implement one read.
    ``before`` 0 means no upper bound; ``None`` filters are off."""

    after: int = 0
    before: int = 0
    limit: int = 0
    newest_first: bool = False
    unrouted: bool = False
    work_id: str | None = None
    scope_ids: tuple[str, ...] | None = None
    caused_by: str | None = None
    sources: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    # Any of these actors (``Event.actor``: "operator:alice"); () is off.
    actors: tuple[str, ...] = ()
    # Carrying this correlation key (any of its keys); None is off.
    key: CorrelationKey | None = None
    # Acceptance time in [received_since, received_before); None: unbounded.
    received_since: Nanos | None = None
    received_before: Nanos | None = None
    # With any of these IDs; caused by any of these Events (their causation ID is one
    # of them). None is off; a tuple is at most ``IDS_MAX`` IDs, none empty.
    ids: tuple[str, ...] | None = None
    causes: tuple[str, ...] | None = None

    def matches(self, stored: StoredEvent) -> bool:
        """The scan's meaning for one Event (the reference double filters with it)."""
        e, route = stored.event, stored.route
        return (
            stored.sequence > self.after
            and (not self.before or stored.sequence < self.before)
            and (not self.unrouted or route is None)
            and (
                self.work_id is None
                or e.work_id == self.work_id
                or (route is not None and route.work_id == self.work_id)
            )
            and (self.scope_ids is None or stored.scope_id in self.scope_ids)
            and (self.caused_by is None or e.causation_id == self.caused_by)
            and (not self.sources or e.source in self.sources)
            and (not self.types or e.type in self.types)
            and (not self.actors or e.actor in self.actors)
            and (self.key is None or self.key in e.keys)
            and (self.received_since is None or e.received_at >= self.received_since)
            and (self.received_before is None or e.received_at < self.received_before)
            and (self.ids is None or e.id in self.ids)
            and (self.causes is None or e.causation_id in self.causes)
        )
