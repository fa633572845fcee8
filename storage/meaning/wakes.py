"""Whether an accepted Event wakes a Wait, and when it does not, why.

The runtime (B04, above the storage boundary) routes an Event to a Work and then offers
it to that Work's active Waits; a Wait takes it when the Event was accepted after the
Wait's boundary (``after_sequence``, exclusive), is of one of its types (none listed:
any type) and carries one of its correlation keys (none listed: any Event routed to
the Work). ``misses`` is that rule written once, returning every clause the Event
fails, so the runtime's match (``wakes``: no miss) and the console's "near misses"
(why an Event of the awaited type did not wake it) cannot disagree.
"""

from __future__ import annotations

import enum

from ..records import StoredEvent, Wait


class Miss(enum.StrEnum):
    """One clause of a Wait's predicate an Event fails."""

    BEFORE = "before"  # accepted at or before the Wait's boundary
    TYPE = "type"  # not of a type the Wait lists
    KEY = "key"  # carries none of the keys the Wait lists


def misses(wait: Wait, stored: StoredEvent) -> tuple[Miss, ...]:
    """The clauses of ``wait``'s predicate ``stored`` fails, in the order above; () when
    it matches. Routing (which Work the Event reached) is the caller's: the runtime
    offers a Wait only the Events routed to its Work."""
    out: list[Miss] = []
    if stored.sequence <= wait.after_sequence:
        out.append(Miss.BEFORE)
    if wait.types and stored.event.type not in wait.types:
        out.append(Miss.TYPE)
    if wait.keys and not set(wait.keys) & set(stored.event.keys):
        out.append(Miss.KEY)
    return tuple(out)


def wakes(wait: Wait, stored: StoredEvent) -> bool:
    """Whether ``stored``, routed to the Wait's Work, wakes ``wait``."""
    return not misses(wait, stored)
