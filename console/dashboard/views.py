"""The team dashboards: ``/dashboard`` (every Scope) and ``/dashboard/<scope>`` (a
Scope and its descendants), the time window in ``?window=1h|24h|7d|30d|all``."""

from __future__ import annotations

from django.http import HttpResponse

from console.dashboard.context import dashboard_context
from console.dashboard.reads import parse_window, read_dashboard
from console.errors import error_page
from console.history.views import dashboard_then
from console.http import HtmxHttpRequest, page, render_region
from console.polling import seen_stamp, unchanged
from console.urlstate import FilterError


@page
def dashboard(request: HtmxHttpRequest, scope_id: str | None = None) -> HttpResponse:
    """Is anything wrong right now, and since when: live figures, the window's
    series, and the lists an operator acts on, every chart linked to its list; the
    Work counts as they were at a moment with ``?as_of=`` (``console.history``)."""
    if "as_of" in request.GET:
        return dashboard_then(request, scope_id or "")
    try:
        raw = request.GET.get("window", "")
        window = parse_window(raw) if raw else None
    except FilterError as exc:
        return error_page(request, 400, "Invalid request", exc.errors["window"])
    dash = read_dashboard(scope_id, window, seen_stamp(request))
    if dash is None:
        return unchanged()
    context = dashboard_context(dash, request.path)
    return render_region(request, "console/dashboard.html", "live", context)
