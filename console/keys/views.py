"""The page about one correlation key: ``/keys?source=<source>&id=<external ID>``.

The key travels in the query string, not the path: both parts may hold "/" (a path
could not say where the source ends), and any character the storage rules accept is
percent-encoded there like any filter value."""

from __future__ import annotations

from django.http import HttpResponse, QueryDict
from django.shortcuts import render

from console.events.filters import (
    EVENT_PAGE_SIZE,
    EventFilter,
    SeqCursor,
    key_part,
    parse_cursor,
)
from console.http import HtmxHttpRequest, page, render_region
from console.keys.reads import read_key
from console.polling import seen_stamp, unchanged
from console.urlstate import FilterError, querystring
from storage import CorrelationKey

TEMPLATE = "console/key.html"


def parse_key(data: QueryDict) -> CorrelationKey:
    """The key of the query string; either part missing is a 400 naming it."""
    errors: dict[str, str] = {}
    source = key_part("source", data.get("source", ""), errors)
    external_id = key_part("id", data.get("id", ""), errors)
    if not source and "source" not in errors:
        errors["source"] = "source is the key's source (github, shop/eu, ...)."
    if not external_id and "id" not in errors:
        errors["id"] = "id is the key's external ID."
    if errors:
        raise FilterError(errors)
    return CorrelationKey(source, external_id)


def key_url_query(key: CorrelationKey, extra: list[tuple[str, str]] | None = None) -> str:
    return querystring([("source", key.source), ("id", key.external_id), *(extra or [])])


@page
def key_detail(request: HtmxHttpRequest) -> HttpResponse:
    """The Work owning the key, its Waits on it and every Event carrying it."""
    try:
        key = parse_key(request.GET)
        cursor: SeqCursor = parse_cursor(request.GET)
    except FilterError as exc:
        return render(request, TEMPLATE, {"errors": exc.errors}, status=400)
    found = read_key(key, cursor, EVENT_PAGE_SIZE, seen_stamp(request))
    if found is None:
        return unchanged()
    q = key_url_query
    context = {
        "page": found,
        "live": not cursor.before and not cursor.after,
        "older_url": q(key, [("before", str(found.older))]) if found.older else "",
        "newer_url": q(key, [("after", str(found.newer))]) if found.newer else "",
        "newest_url": q(key) if cursor.before or cursor.after else "",
        "events_url": EventFilter(key_source=key.source, key_id=key.external_id).querystring(),
    }
    return render_region(request, TEMPLATE, "key", context)
