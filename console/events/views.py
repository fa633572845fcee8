"""The Events pages: the global stream and one Event with its causation chain."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from console.events.filters import (
    EVENT_PAGE_SIZE,
    OPERATOR,
    EventFilter,
    SeqCursor,
    parse_event_filter,
)
from console.events.reads import EventPage, read_event, read_events
from console.http import HtmxHttpRequest, page, render_region
from console.polling import seen_stamp, unchanged
from console.urlstate import FilterError

TEMPLATE = "console/event_list.html"


@page
def event_list(request: HtmxHttpRequest) -> HttpResponse:
    """The global Event stream, newest first, with cursor paging on the sequence."""
    try:
        f, cursor = parse_event_filter(request.GET)
    except FilterError as exc:
        invalid = {"errors": exc.errors, "form": request.GET}
        return render(request, TEMPLATE, invalid, status=400)
    actors = f.actors(request.user.get_username())
    events = read_events(f, cursor, EVENT_PAGE_SIZE, seen_stamp(request), actors)
    if events is None:
        return unchanged()
    return render_region(request, TEMPLATE, "events", _paged(f, cursor, events))


def _paged(f: EventFilter, cursor: SeqCursor, events: EventPage) -> dict[str, object]:
    return {
        "filter": f,
        "form": f,
        "page": events,
        "chips": f.chips(),
        # Only the newest page polls: older pages do not change.
        "live": not cursor.before and not cursor.after,
        "older_url": f.querystring([("before", str(events.older))]) if events.older else "",
        "newer_url": f.querystring([("after", str(events.newer))]) if events.newer else "",
        "newest_url": f.querystring() if cursor.before or cursor.after else "",
    }


OPERATOR_TEMPLATE = "console/operator.html"


@page
def operator_actions(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """What one operator did (the Events with actor ``operator:<name>``), newest first,
    in the stream's keyset pages; takes the stream's time filters. The operator need
    not be a user here: a teammate's or a deleted account's actions stay listed."""
    actor = OPERATOR + name
    stream = reverse("events") + EventFilter(actor=actor).querystring()
    context: dict[str, object] = {"name": name, "actor": actor, "stream_url": stream}
    try:
        f, cursor = parse_event_filter(request.GET)
        if f.actor or f.mine:
            raise FilterError({"actor": "This page is one operator's: no actor or mine here."})
    except FilterError as exc:
        context |= {"errors": exc.errors, "form": request.GET}
        return render(request, OPERATOR_TEMPLATE, context, status=400)
    events = read_events(f, cursor, EVENT_PAGE_SIZE, seen_stamp(request), [actor])
    if events is None:
        return unchanged()
    context |= _paged(f, cursor, events)
    return render_region(request, OPERATOR_TEMPLATE, "actions", context)


@page
def event_detail(request: HtmxHttpRequest, event_id: str) -> HttpResponse:
    """One Event: envelope, routing, payload, and its causation chain both ways."""
    return render(request, "console/event_detail.html", {"detail": read_event(event_id)})
