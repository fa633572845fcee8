"""The Work pages: the list (home) and one Work's detail."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from console.http import HtmxHttpRequest, page, render_region
from console.polling import seen_stamp, unchanged
from console.urlstate import FilterError
from console.works.filters import (
    apply_search,
    facet_entries,
    filter_form,
    form_choices,
    listing_links,
    parse_cursor,
    parse_search,
    parse_work_filter,
    raw_form,
)
from console.works.reads import find_work, read_work_detail, read_work_list
from storage.default import default_artifacts

TEMPLATE = "console/work_list.html"


@page
def work_list(request: HtmxHttpRequest) -> HttpResponse:
    """Work list (home): filters in the URL, search box, facets, keyset pages."""
    try:
        f = parse_work_filter(request.GET)
        cursor = parse_cursor(request.GET)
        search = parse_search(request.GET.get("q", ""))
        if search.qualifiers:
            f = apply_search(f, search)
    except FilterError as exc:
        invalid = {"errors": exc.errors, "form": raw_form(request.GET)}
        return render(request, TEMPLATE, form_choices(invalid), status=400)
    if len(search.terms) == 1:
        work_id = find_work(search.terms[0])
        if work_id is not None:
            return redirect("work_detail", work_id=work_id)
    if search.qualifiers:
        # The qualifiers become ordinary filters: one canonical, shareable URL.
        rest = [("q", " ".join(search.terms))] if search.terms else []
        return redirect(reverse("home") + f.querystring(rest))
    context: dict[str, Any] = {"filter": f, "form": filter_form(f), "q": " ".join(search.terms)}
    if search.terms:
        context["not_found"] = " ".join(search.terms)
        return render(request, TEMPLATE, form_choices(context))
    listing = read_work_list(f, cursor, seen_stamp(request))
    if listing is None:
        return unchanged()
    context.update(page=listing, facets=facet_entries(f, listing.facets))
    context.update(listing_links(f, listing.next_key, listing.prev_key))
    # A poll refreshes the results; a facet or page link also refreshes the form.
    region = "workspace" if seen_stamp(request) else "navigation"
    return render_region(request, TEMPLATE, region, form_choices(context))


@page
def work_detail(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """One Work: summary, attempts, timeline, Waits and Timers, and its actions."""
    detail = read_work_detail(work_id, seen_stamp(request))
    if detail is None:
        return unchanged()
    # Artifact content lives beside the database: checked after the read, outside it.
    artifacts = default_artifacts()
    missing = {ref.id for x in detail.attempts for ref in x.artifacts if not artifacts.exists(ref)}
    context = {"detail": detail, "work": detail.work, "missing_artifacts": missing}
    return render_region(request, "console/work_detail.html", "work", context)
