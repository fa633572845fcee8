"""The console's request latency, by resolved view: a Prometheus histogram.

Labelled by the URL pattern's name (``request.resolver_match.view_name``, e.g.
``work_detail``), never the path: the values are the console's named routes, a fixed
set whatever IDs the URLs carry. A request that resolves to no route (a 404 before any
view) counts under ``(unresolved)``, one that resolves to an unnamed route under the
view function's dotted path (a handful: the old /runs redirects). Placed first in
MIDDLEWARE after the proxy check, so it times everything the console does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from console.metrics.instruments import REQUEST_SECONDS

UNRESOLVED = "(unresolved)"
# Methods outside these are counted as "other": a client may send any token as a method.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def view_label(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNRESOLVED
    # Django names an unnamed route by its view's dotted path.
    return str(match.view_name)


class RequestLatency:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        start = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in METHODS else "other"
        REQUEST_SECONDS.labels(view_label(request), method, str(response.status_code)).observe(
            time.perf_counter() - start
        )
        return response
