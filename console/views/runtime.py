"""The runtime's live state: attempts, Waits, Timers and the Scope tree."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from console.errors import error_page
from console.filters import FilterError, parse_started_filter
from console.http import HtmxHttpRequest
from console.polling import seen_stamp, unchanged
from console.reads import (
    read_active_waits,
    read_live_executions,
    read_scopes,
    read_started_executions,
    read_timers,
)
from console.views.common import page, wants_fragment
from storage import WorkState


def _listing(
    request: HtmxHttpRequest, template: str, listing: object, **extra: object
) -> HttpResponse:
    if listing is None:
        return unchanged()
    context = {"page": listing, **extra}
    if wants_fragment(request):
        return render(request, f"{template}#live", context)
    return render(request, template, context)


@page
def executions(request: HtmxHttpRequest) -> HttpResponse:
    """Live attempts; with ``since`` (and ``until``, ``within``) the attempts first
    claimed in that range instead, which a dashboard's attempts chart links to."""
    try:
        started = parse_started_filter(request.GET)
    except FilterError as exc:
        message = " ".join(exc.errors.values())
        return error_page(request, 400, "Invalid request", message)
    if started is None:
        listing = read_live_executions(seen_stamp(request))
        return _listing(request, "console/executions.html", listing)
    page_ = read_started_executions(started, seen_stamp(request))
    return _listing(
        request, "console/executions.html", page_, started=started, chips=started.chips()
    )


@page
def waits(request: HtmxHttpRequest) -> HttpResponse:
    return _listing(request, "console/waits.html", read_active_waits(seen_stamp(request)))


@page
def timers(request: HtmxHttpRequest) -> HttpResponse:
    due_only = request.GET.get("due", "") == "1"
    listing = read_timers(due_only, seen_stamp(request))
    return _listing(request, "console/timers.html", listing, due_only=due_only)


@page
def scopes(request: HtmxHttpRequest) -> HttpResponse:
    states = [s.value for s in WorkState]
    return _listing(request, "console/scopes.html", read_scopes(seen_stamp(request)), states=states)
