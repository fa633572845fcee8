from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from console.filters import (
    PAGE_SIZES,
    SORT_LABELS,
    STATE_ORDER,
    FilterError,
    WorkFilter,
    apply_search,
    format_key,
    parse_cursor,
    parse_search,
    parse_work_filter,
)
from console.http import HtmxHttpRequest
from console.polling import seen_stamp, unchanged
from console.reads import WorkListPage, find_work, read_work_detail, read_work_list
from console.stores import get_artifacts
from console.views.common import page, wants_fragment
from storage import WorkOrder

FACET_DIMENSIONS = (
    ("state", "State"),
    ("kind", "Kind"),
    ("source", "Source"),
    ("scope", "Scope"),
    ("executor", "Executor"),
)


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
        context = {"errors": exc.errors, "form": _raw_form(request), "sizes": PAGE_SIZES}
        return render(request, "console/work_list.html", _form_choices(context), status=400)
    if len(search.terms) == 1:
        work_id = find_work(search.terms[0])
        if work_id is not None:
            return redirect("work_detail", work_id=work_id)
    if search.qualifiers:
        # The qualifiers become ordinary filters: one canonical, shareable URL.
        rest = [("q", " ".join(search.terms))] if search.terms else []
        return redirect(reverse("home") + f.querystring(rest))
    context: dict[str, Any] = {"filter": f, "form": _filter_form(f), "q": " ".join(search.terms)}
    if search.terms:
        context["not_found"] = " ".join(search.terms)
        return render(request, "console/work_list.html", _form_choices(context))
    listing = read_work_list(f, cursor, seen_stamp(request))
    if listing is None:
        return unchanged()
    context.update(_listing_context(f, listing))
    if wants_fragment(request):
        # A poll refreshes the results; a facet or page link also refreshes the form.
        name = "workspace" if seen_stamp(request) else "navigation"
        return render(request, f"console/work_list.html#{name}", _form_choices(context))
    return render(request, "console/work_list.html", _form_choices(context))


def _listing_context(f: WorkFilter, listing: WorkListPage) -> dict[str, Any]:
    facets = []
    for name, label in FACET_DIMENSIONS:
        counts: dict[str, int] = getattr(listing.facets, name)
        if name == "state":
            items = [(s.value, counts[s.value]) for s in STATE_ORDER if s.value in counts]
        else:
            items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        entries = [
            {
                "value": value,
                "count": n,
                "url": f.with_value(name, value).querystring() if value else "",
                "active": _active(f, name, value),
            }
            for value, n in items
        ]
        facets.append({"name": name, "label": label, "entries": entries})
    return {
        "page": listing,
        "facets": facets,
        "chips": f.chips(),
        "next_url": f.querystring([("after", format_key(listing.next_key))])
        if listing.next_key
        else "",
        "prev_url": f.querystring([("before", format_key(listing.prev_key))])
        if listing.prev_key
        else "",
        "size_links": [(n, _with(f, size=n).querystring(), n == f.size) for n in PAGE_SIZES],
        "sort_links": {
            "created": _with(f, sort=_toggle(f, "created")).querystring(),
            "updated": _with(f, sort=_toggle(f, "updated")).querystring(),
        },
        "filter_params": f.params(),
    }


def _active(f: WorkFilter, name: str, value: str) -> bool:
    if name == "state":
        return any(s.value == value for s in f.states)
    if name == "source":
        return value in f.sources
    return bool(value) and getattr(f, name) == value


def _with(f: WorkFilter, **changes: Any) -> WorkFilter:
    return replace(f, **changes)


def _toggle(f: WorkFilter, column: str) -> WorkOrder:
    """Clicking a column header sorts by it newest first, then flips the direction."""
    if f.sort.value.lstrip("-") == column and f.sort.descending:
        return WorkOrder(column)
    return WorkOrder(f"-{column}")


def _filter_form(f: WorkFilter) -> dict[str, Any]:
    return {
        "states": {s.value for s in f.states},
        "sources": list(f.sources),
        "scope": f.scope,
        "within": f.within,
        "kind": f.kind,
        "parent": f.parent,
        "executor": f.executor,
        "since": f.since,
        "until": f.until,
        "sort": f.sort.value,
        "size": f.size,
    }


def _raw_form(request: HtmxHttpRequest) -> dict[str, Any]:
    """The submitted values as typed, to show again beside their errors."""
    get = request.GET
    return {
        "states": set(get.getlist("state")),
        "sources": [s for s in get.getlist("source") if s],
        "scope": get.get("scope", ""),
        "within": get.get("within", ""),
        "kind": get.get("kind", ""),
        "parent": get.get("parent", ""),
        "executor": get.get("executor", ""),
        "since": get.get("since", ""),
        "until": get.get("until", ""),
        "sort": get.get("sort", ""),
        "size": get.get("size", ""),
        "q": get.get("q", ""),
    }


def _form_choices(context: dict[str, Any]) -> dict[str, Any]:
    context.setdefault("q", context.get("form", {}).get("q", ""))
    context["state_choices"] = [s.value for s in STATE_ORDER]
    context["sort_choices"] = [(o.value, label) for o, label in SORT_LABELS.items()]
    context["sizes"] = PAGE_SIZES
    return context


@page
def work_detail(request: HtmxHttpRequest, work_id: str) -> HttpResponse:
    """One Work: summary, attempts, timeline, Waits and Timers, and its actions."""
    detail = read_work_detail(work_id, seen_stamp(request))
    if detail is None:
        return unchanged()
    # Artifact content lives beside the database: checked after the read, outside it.
    artifacts = get_artifacts()
    missing = {ref.id for x in detail.attempts for ref in x.artifacts if not artifacts.exists(ref)}
    context = {"detail": detail, "work": detail.work, "missing_artifacts": missing}
    if wants_fragment(request):
        return render(request, "console/work_detail.html#work", context)
    return render(request, "console/work_detail.html", context)
