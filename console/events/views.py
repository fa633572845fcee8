"""The Events pages: the global stream and one Event with its causation chain."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from console.events.filters import EVENT_PAGE_SIZE, parse_event_filter
from console.events.reads import read_event, read_events
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
    events = read_events(f, cursor, EVENT_PAGE_SIZE, seen_stamp(request))
    if events is None:
        return unchanged()
    context: dict[str, object] = {
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
    return render_region(request, TEMPLATE, "events", context)


@page
def event_detail(request: HtmxHttpRequest, event_id: str) -> HttpResponse:
    """One Event: envelope, routing, payload, and its causation chain both ways."""
    return render(request, "console/event_detail.html", {"detail": read_event(event_id)})
