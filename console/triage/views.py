"""The Errors page: failed and exhausted Work grouped by their normalised failure."""

from __future__ import annotations

from dataclasses import replace

from django.http import HttpResponse
from django.shortcuts import render

from console.http import HtmxHttpRequest, page, render_region
from console.polling import seen_stamp, unchanged
from console.triage.reads import read_error_groups
from console.urlstate import FilterError
from console.works.filters import parse_work_filter

TEMPLATE = "console/error_groups.html"


@page
def error_groups(request: HtmxHttpRequest) -> HttpResponse:
    """Takes the Work list's filters (``within``, ``kind``, ``since`` ...): the groups
    of the failed and exhausted Work among what they select."""
    try:
        # The group itself is what the page picks: a stray error= is not a filter here.
        f = replace(parse_work_filter(request.GET), error="")
    except FilterError as exc:
        return render(request, TEMPLATE, {"errors": exc.errors}, status=400)
    listing = read_error_groups(f, seen_stamp(request))
    if listing is None:
        return unchanged()
    context = {"page": listing, "filter": f, "chips": f.chips()}
    return render_region(request, TEMPLATE, "live", context)
