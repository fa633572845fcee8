"""The Work pages: the list (home) and one Work's detail."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from console.history.views import work_then
from console.http import HtmxHttpRequest, page, render_region
from console.polling import seen_stamp, unchanged
from console.runtime.previews import (
    INLINE_LIMIT,
    PREVIEWED_ATTEMPTS,
    TAIL_BYTES,
    attempt_artifacts,
)
from console.saved.views import work_list_context
from console.urlstate import FilterError
from console.works.filters import (
    QUALIFIERS,
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
from console.works.reads import read_work_detail, read_work_list
from console.works.search import CANDIDATES, MIN_PREFIX, look_up, unknown_values
from storage import Invalid
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
        found = look_up(search.terms[0], f) if len(search.terms) == 1 else None
    except (FilterError, Invalid) as exc:
        errors = exc.errors if isinstance(exc, FilterError) else {"q": f"Cannot search: {exc}."}
        invalid = {"errors": errors, "form": raw_form(request.GET)}
        return render(request, TEMPLATE, form_choices(invalid), status=400)
    if found is not None and found.url:
        return redirect(found.url)
    context: dict[str, Any] = {"filter": f, "form": filter_form(f), "q": " ".join(search.terms)}
    context.update(work_list_context(request, f))  # saved views, the columns chosen
    unknown = unknown_values(f, search.qualifiers) if search.qualifiers else []
    if unknown:
        # Said on the page, not after a redirect to an empty list: the value is wrong.
        context.update(unknown=unknown, q=request.GET.get("q", ""))
        return render(request, TEMPLATE, form_choices(context))
    if search.qualifiers:
        # The qualifiers become ordinary filters: one canonical, shareable URL.
        rest = [("q", " ".join(search.terms))] if search.terms else []
        return redirect(reverse("home") + f.querystring(rest))
    if search.terms:
        context.update(not_found=" ".join(search.terms), lookup=found, qualifiers=QUALIFIERS)
        context.update(min_prefix=MIN_PREFIX, lookup_limit=CANDIDATES)
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
    """One Work: summary, attempts, timeline, Waits and Timers, and its actions; as
    it was at a moment with ``?as_of=`` (``console.history``)."""
    if "as_of" in request.GET:
        return work_then(request, work_id)
    detail = read_work_detail(work_id, seen_stamp(request))
    if detail is None:
        return unchanged()
    # Artifact content lives beside the database: read after the read, outside it.
    artifacts = attempt_artifacts(default_artifacts(), detail.attempts)
    context = {
        "detail": detail,
        "work": detail.work,
        "missing_artifacts": artifacts.missing,
        "mismatched_artifacts": {p.ref.id for p in artifacts.previews if p.digest == "mismatch"},
        "previews": artifacts.previews,
        "artifact_names": artifacts.names,
        "previewed_attempts": PREVIEWED_ATTEMPTS,
        "inline_kib": INLINE_LIMIT // 1024,
        "tail_kib": TAIL_BYTES // 1024,
    }
    return render_region(request, "console/work_detail.html", "work", context)
