"""A Work's whole causation (``console.causation.reads``): one page of it."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from console.causation.reads import read_causation
from console.events.filters import parse_cursor
from console.http import HtmxHttpRequest, page
from console.urlstate import FilterError

TEMPLATE = "console/work_causation.html"
SEQ_MAX = 2**63 - 1  # a sequence is a 64-bit integer on both engines


@page
def work_causation(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """The tree of Events behind a Work, a window of its own Events at a time
    (``?after=<sequence>``); an unknown Work is the 404 page."""
    try:
        cursor = parse_cursor(request.GET)
        if cursor.before or cursor.after > SEQ_MAX:
            raise FilterError({"after": "after is an acceptance sequence number."})
    except FilterError as exc:
        return render(request, TEMPLATE, {"errors": exc.errors, "work_id": work_id}, status=400)
    causation = read_causation(work_id, cursor.after)
    return render(request, TEMPLATE, {"page": causation, "work": causation.work})
