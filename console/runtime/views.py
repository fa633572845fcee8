"""The runtime's live state: attempts, Waits, Timers and the Scope tree."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.http import HttpResponse
from django.urls import reverse

from console.errors import error_page
from console.http import HtmxHttpRequest, page, render_region
from console.overdue import grace_seconds, overdue_by
from console.polling import seen_stamp, unchanged
from console.runtime.ahead import WINDOWS, AheadFilter, parse_ahead_filter, strip
from console.runtime.execfilter import (
    LEASE,
    STATE_CHOICES,
    format_execution_key,
    parse_execution_cursor,
    parse_execution_filter,
)
from console.runtime.filters import (
    TimerFilter,
    WaitFilter,
    parse_page_cursor,
    parse_started_filter,
    parse_timer_filter,
    parse_wait_filter,
)
from console.runtime.reads import (
    AheadPage,
    KeysetPage,
    read_ahead,
    read_execution_page,
    read_scopes,
    read_started_executions,
    read_timer_page,
    read_wait_page,
)
from console.urlstate import PAGE_SIZES, FilterError, format_key
from storage import WorkState

TEMPLATE = "console/executions.html"


def _listing(
    request: HtmxHttpRequest, template: str, listing: object, **extra: Any
) -> HttpResponse:
    """A polled listing page: 204 when unchanged, else the page or its live region."""
    if listing is None:
        return unchanged()
    return render_region(request, template, "live", {"page": listing, **extra})


@page
def executions(request: HtmxHttpRequest) -> HttpResponse:
    """Attempts, filtered in the URL and paged by keyset (live ones by default); with
    ``since`` (and ``until``, ``within``) the attempts first claimed in that range
    instead, which a dashboard's attempts chart links to."""
    try:
        started = parse_started_filter(request.GET)
        if started is None:
            f = parse_execution_filter(request.GET)
            after = parse_execution_cursor(request.GET, f)
    except FilterError as exc:
        message = " ".join(exc.errors.values())
        return error_page(request, 400, "Invalid request", message)
    if started is not None:
        history = read_started_executions(started, seen_stamp(request))
        return _listing(request, TEMPLATE, history, started=started, chips=started.chips())
    listing = read_execution_page(f, after, seen_stamp(request))
    if listing is None:
        return unchanged()
    nxt = listing.next_key
    context = {
        "page": listing,
        "filter": f,
        "chips": f.chips(),
        "state_choices": STATE_CHOICES,
        "sizes": PAGE_SIZES,
        # Later pages shift as attempts start: only the first one polls.
        "live": after is None,
        "older_url": f.querystring([("after", format_execution_key(nxt))]) if nxt else "",
        "newest_url": f.querystring() if after else "",
        "lease_sort_url": replace(f, sort=LEASE).querystring(),
    }
    return render_region(request, TEMPLATE, "live", context)


def _pager(
    f: WaitFilter | TimerFilter | AheadFilter, page: KeysetPage[Any] | AheadPage
) -> dict[str, str]:
    """The links beside a keyset page: the next and previous pages' cursors, and the
    first page (the filter alone) from any other page."""
    nxt, prev = page.next_key, page.prev_key
    return {
        "next_url": f.querystring([("after", format_key(nxt))]) if nxt else "",
        "prev_url": f.querystring([("before", format_key(prev))]) if prev else "",
        "first_url": "" if page.first else f.querystring(),
    }


@page
def waits(request: HtmxHttpRequest) -> HttpResponse:
    """Active Waits, oldest first, in keyset pages; ``older=1h`` keeps those waiting
    longer than that (a preset)."""
    try:
        f = parse_wait_filter(request.GET)
        cursor = parse_page_cursor(request.GET)
    except FilterError as exc:
        return error_page(request, 400, "Invalid request", " ".join(exc.errors.values()))
    listing = read_wait_page(f, cursor, seen_stamp(request))
    if listing is None:
        return unchanged()
    # Later pages shift as Waits end: only the first one polls.
    context = {"page": listing, "filter": f, "sizes": PAGE_SIZES, **_pager(f, listing)}
    return render_region(request, "console/waits.html", "live", context)


@page
def timers(request: HtmxHttpRequest) -> HttpResponse:
    """Timers, earliest fire time first, in keyset pages; ``due=1`` keeps the due
    ones, ``overdue=1`` those late by more than the grace (a preset)."""
    try:
        f = parse_timer_filter(request.GET)
        cursor = parse_page_cursor(request.GET)
    except FilterError as exc:
        return error_page(request, 400, "Invalid request", " ".join(exc.errors.values()))
    listing = read_timer_page(f, cursor, seen_stamp(request))
    if listing is None:
        return unchanged()
    context = {"page": listing, "filter": f, "sizes": PAGE_SIZES, **_pager(f, listing)}
    context |= {"grace": grace_seconds(), "overdue_at": overdue_by(listing.now)}
    tab = reverse("timers")  # the tabs keep the Scope and the page size
    context["tabs"] = {
        "all": tab + replace(f, due=False, overdue=False).querystring(),
        "due": tab + replace(f, due=True, overdue=False).querystring(),
        "overdue": tab + replace(f, due=False, overdue=True).querystring(),
        "unscoped": tab + replace(f, scope="").querystring(),
    }
    return render_region(request, "console/timers.html", "live", context)


@page
def timers_ahead(request: HtmxHttpRequest) -> HttpResponse:
    """What fires in the next hour or day (``window``), of a Scope tree and a Work kind:
    a density strip with the overdue and due Timers first, and the list below it."""
    try:
        f = parse_ahead_filter(request.GET)
        cursor = parse_page_cursor(request.GET)
    except FilterError as exc:
        return error_page(request, 400, "Invalid request", " ".join(exc.errors.values()))
    ahead = read_ahead(f, cursor, seen_stamp(request))
    if ahead is None:
        return unchanged()
    grace, late_by = grace_seconds(), overdue_by(ahead.now)
    counts = (ahead.overdue, ahead.due - ahead.overdue, ahead.ahead)
    here = reverse("timers_ahead")
    context = {"page": ahead, "filter": f, "sizes": PAGE_SIZES, **_pager(f, ahead)}
    context |= {"grace": grace, "overdue_at": late_by, "here": here}
    context["chart"] = strip(here, f, ahead.now, late_by, counts, grace)
    # The window's tabs keep the Scope, kind and page size, and start at the first page.
    context["windows"] = [
        (w.label, here + replace(f, window=key).querystring(), key == f.window)
        for key, w in WINDOWS.items()
    ]
    return render_region(request, "console/timers_ahead.html", "live", context)


@page
def scopes(request: HtmxHttpRequest) -> HttpResponse:
    states = [s.value for s in WorkState]
    return _listing(request, "console/scopes.html", read_scopes(seen_stamp(request)), states=states)
