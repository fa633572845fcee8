"""The KV inspector (``/kv``): the namespaces, then one namespace's keys with their
values and who last wrote each, now or as of a store version or a time."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from console.http import HtmxHttpRequest, page
from console.kv.filters import KvFilter, parse_kv_filter
from console.kv.reads import KeyPage, NamespacePage, read_keys, read_namespaces
from console.urlstate import PAGE_SIZES, FilterError

TEMPLATE = "console/kv.html"


@page
def kv_inspector(request: HtmxHttpRequest) -> HttpResponse:
    """Without ``namespace`` the namespaces, keyset-paged; with it that namespace's
    keys (``prefix``), keyset-paged by key, each value with its last write; with
    ``as_of`` as they were then. Bad input is the page with its errors, a 400."""
    here = reverse("kv")
    try:
        f, after = parse_kv_filter(request.GET)
        found = read_keys(f, after) if f.namespace else read_namespaces(f, after)
    except FilterError as exc:
        return render(request, TEMPLATE, {"errors": exc.errors, "here": here}, status=400)
    context = {"page": found, "filter": f, "sizes": PAGE_SIZES, "here": here}
    return render(request, TEMPLATE, context | _links(here, f, after, found))


def _links(here: str, f: KvFilter, after: str, found: KeyPage | NamespacePage) -> dict[str, Any]:
    """The pager's links, each namespace's, and on a page of keys: back to now, and
    each key as it was before its last write."""
    out: dict[str, Any] = {"first_url": here + f.querystring() if after else ""}
    if found.next_after:
        out["next_url"] = here + f.querystring([("after", found.next_after)])
    if isinstance(found, NamespacePage):
        out["namespaces"] = [(ns, here + f.opened(ns)) for ns in found.rows]
        return out
    out["now_url"] = here + f.now(after)
    # A write's row is newer than the horizon (pruning cuts at it), so the moment
    # before it is always one the log can tell.
    out["rows"] = [
        (row, here + f.at_version(row.write.version - 1, after) if row.write else "")
        for row in found.rows
    ]
    return out
