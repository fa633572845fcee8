"""The team dashboards: ``/dashboard`` (every Scope) and ``/dashboard/<scope>`` (a
Scope and its descendants), the time window in ``?window=1h|24h|7d``."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from console.dashboard import (
    DEFAULT_WINDOW,
    LIST_SIZE,
    WINDOWS,
    dashboard_context,
    parse_window,
    read_dashboard,
)
from console.errors import error_page
from console.filters import FilterError
from console.http import HtmxHttpRequest
from console.polling import seen_stamp, unchanged
from console.scopes import SUBTREE_DEPTH
from console.views.common import page, wants_fragment

BUCKET_LABELS = {"1h": "5 minutes", "24h": "hour", "7d": "6 hours"}


@page
def dashboard(request: HtmxHttpRequest, scope_id: str | None = None) -> HttpResponse:
    """Is anything wrong right now, and since when: live figures, the window's
    series, and the lists an operator acts on, every chart linked to its list."""
    try:
        window = parse_window(request.GET.get("window", ""))
    except FilterError as exc:
        return error_page(request, 400, "Invalid request", exc.errors["window"])
    dash = read_dashboard(scope_id, window, seen_stamp(request))
    if dash is None:
        return unchanged()
    context = dashboard_context(dash)
    context.update(
        windows=[
            (f"{request.path}?window={w.key}", w.label, w is window) for w in WINDOWS.values()
        ],
        window_query="" if window.key == DEFAULT_WINDOW else f"?window={window.key}",
        bucket_label=BUCKET_LABELS[window.key],
        list_size=LIST_SIZE,
        depth=SUBTREE_DEPTH,
    )
    if wants_fragment(request):
        return render(request, "console/dashboard.html#live", context)
    return render(request, "console/dashboard.html", context)
