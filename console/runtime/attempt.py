"""One attempt's page (``/attempts/<Execution ID>``): its lease (owner, epoch, expiry),
claims, outcome, artifacts, Waits and the Events of its Work while it lived, in one
``storage.view``.

The store keeps an attempt's current lease only: ``epoch`` counts its claims (each
claim adds one; a renewal moves the expiry and keeps the epoch), ``started_at`` is the
first claim, ``finished_at`` the end. There is no record of each claim's time or of
each renewal, so the page says what the epoch means rather than drawing a history it
does not have.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.http import HttpResponse

from console.attempts import attempt_label
from console.http import HtmxHttpRequest, page, render_region
from console.polling import polled_view, seen_stamp, unchanged
from storage import Execution, NotFound, StoredEvent, Tx, Wait, Work

EVENTS_MAX = 50
TEMPLATE = "console/attempt.html"


@dataclass(frozen=True, slots=True)
class AttemptPage:
    now: int
    stamp: str
    x: Execution
    work: Work | None
    label: str  # the attempt's state in words (console.attempts)
    lease_expired: bool
    waits: list[Wait]  # this attempt's Waits, newest first
    events: list[StoredEvent]  # its Work's Events accepted while it lived, newest first
    more_events: bool


def read_attempt(execution_id: str, seen: str = "") -> AttemptPage | None:
    """Queries: the stamp, the attempt, its Work, the Work's Waits, and one bounded read
    of the Work's Events in the attempt's lifetime (at most EVENTS_MAX)."""

    def build(tx: Tx, stamp: str) -> AttemptPage:
        x = tx.execution(execution_id)
        try:
            work: Work | None = tx.work(x.work_id)
        except NotFound:
            work = None
        waits = waits_of_attempt(x, tx.waits(x.work_id))
        events, more = events_while_it_lived(tx, x)
        return AttemptPage(
            now=tx.now,
            stamp=stamp,
            x=x,
            work=work,
            label=attempt_label(x, waits, work.state if work else None),
            lease_expired=not x.terminal and 0 < x.lease_expires_at <= tx.now,
            waits=waits,
            events=events,
            more_events=more,
        )

    # The lease countdown moves with time alone: the stamp changes every second.
    return polled_view(seen, build, period=10**9)


def waits_of_attempt(x: Execution, waits: Iterable[Wait]) -> list[Wait]:
    """The attempt's own Waits among its Work's ``waits``, newest first."""
    mine = (w for w in waits if w.execution_id == x.id)
    return sorted(mine, key=lambda w: (w.created_at, w.id), reverse=True)


def events_while_it_lived(tx: Tx, x: Execution) -> tuple[list[StoredEvent], bool]:
    """Its Work's Events accepted from its creation to its end (or now), newest first:
    at most EVENTS_MAX, and whether there were more. One bounded read."""
    events = tx.find_events(
        work_id=x.work_id,
        received_since=x.created_at,
        received_before=x.finished_at + 1 if x.finished_at else None,
        newest_first=True,
        limit=EVENTS_MAX + 1,
    )
    return events[:EVENTS_MAX], len(events) > EVENTS_MAX


@page
def attempt_detail(request: HtmxHttpRequest, execution_id: str) -> HttpResponse:
    """One attempt: lease and claims, outcome, artifacts, Waits and Events."""
    found = read_attempt(execution_id, seen_stamp(request))
    if found is None:
        return unchanged()
    return render_region(request, TEMPLATE, "attempt", {"page": found})
